"""Attacks on the browser tests' results (e2e tasks: the app and its hidden pytest + Playwright
tests share one sandbox), through the real path, on the bundled web demo: none of them may
resolve its task (the submission never fixes the app), and each is named.

- a conftest.py of the submission's next to the hidden tests that turns failures into passes;
- a `pytest.py` at the workspace's root, which `python -m pytest` would import instead of
  pytest, writing an all-pass JUnit XML where the command line says and exiting 0;
- the app itself (the submission's code, running beside the tests) rewriting the JUnit XML the
  command line names, or the one the guarded runner has pytest write, as soon as it is written
  (when it wins the race the guard's own records contradict it: flagged, never resolved).

The first two resolved before the browser tests ran through the guarded runner.
"""

from __future__ import annotations

import json

import pytest

from swebounty.demo import build_demo
from swebounty.evalcontext import EvalContext
from swebounty.report.browser import browser_missing
from swebounty.runs import evaluate_one
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Submission
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
NO_BROWSER = browser_missing()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.network,  # the demo's Node and the tests' Python environments, once
    pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}"),
    pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}"),
]

CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""

ALL_PASS = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="3" '
    'failures="0" errors="0">{}</testsuite></testsuites>'
)
CASES = "".join(
    f'<testcase classname="e2e.test_counter" name="{name}" file="e2e/test_counter.py"/>'
    for name in ("test_increments", "test_decrements", "test_reset_shows_zero")
)

FAKE_PYTEST = f"""\
import sys

for arg in sys.argv:
    if arg.startswith("--junitxml="):
        with open(arg.split("=", 1)[1], "w") as f:
            f.write({ALL_PASS.format(CASES)!r})
sys.exit(0)
"""

# Appended to server.js: find the JUnit path on pytest's command line, rewrite it once written.
APP_REWRITES = (
    "\nconst forged = "
    + json.dumps(ALL_PASS.format(CASES))
    + ";\n"
    + """
setInterval(() => {
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) {
    let argv = '';
    try { argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch (e) { continue; }
    const arg = argv.split('\\0').find((a) => a.startsWith('--junitxml='));
    if (arg) rewrite(arg.slice('--junitxml='.length));
  }
  rewrite('/tmp/swebounty-junit.xml'); // where the guarded runner has pytest write it
}, 1);
try { fs.watch('/tmp', () => rewrite('/tmp/swebounty-junit.xml')); } catch (e) { /* polled */ }
function rewrite(out) {
  try {
    if (fs.statSync(out).size && fs.readFileSync(out, 'utf8') !== forged) fs.writeFileSync(out, forged);
  } catch (e) { /* not written yet */ }
}
"""
)

ATTACKS: dict[str, tuple[dict[str, str], set[str]]] = {
    # name: (files the patch adds or appends to, flags the verdict must carry)
    "e2e-conftest": ({"e2e/conftest.py": CONFTEST}, {"modifies_conftest"}),
    "e2e-fake-pytest": ({"pytest.py": FAKE_PYTEST}, set()),
    "e2e-app-rewrites-junit": ({"server.js": APP_REWRITES}, set()),
}


def _patch(files: dict[str, str], workspace_files: dict[str, str]) -> str:
    """A patch that adds each file, or appends to it when the demo has it."""
    out = []
    for path, text in files.items():
        added = "".join(f"+{line}\n" for line in text.splitlines())
        n = len(text.splitlines())
        if path in workspace_files:
            old = workspace_files[path].splitlines()
            ctx = "".join(f" {line}\n" for line in old)
            out.append(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
                       f"@@ -1,{len(old)} +1,{len(old) + n} @@\n{ctx}{added}")  # fmt: skip
        else:
            out.append(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
                       f"+++ b/{path}\n@@ -0,0 +1,{n} @@\n{added}")  # fmt: skip
    return "".join(out)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    from swebounty.repos import git

    root = tmp_path_factory.mktemp("e2e-attacks")
    mirror, (task,) = build_demo(root / "demo", "web")
    server = git(mirror, "show", f"{task.base_commit}:server.js").stdout.decode()
    ctx = EvalContext.create(cache_dir=root / "cache", runs_dir=root / "runs",
                             repos_dir=mirror.parent)  # fmt: skip
    found = {}
    for name, (files, _) in ATTACKS.items():
        sub = Submission(
            instance_id=task.instance_id, model_patch=_patch(files, {"server.js": server})
        )
        found[name] = evaluate_one(task, sub, ctx, root / "runs" / name)
    return found


@pytest.mark.parametrize("name", list(ATTACKS))
def test_no_attack_on_the_browser_tests_resolves(verdicts: dict[str, Verdict], name: str) -> None:
    verdict = verdicts[name]
    assert verdict.status != "resolved", (verdict.reason, verdict.tests)
    assert ATTACKS[name][1] <= set(verdict.hack_flags), verdict.hack_flags
