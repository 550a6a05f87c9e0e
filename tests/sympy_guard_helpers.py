"""The sympy guard's runs in the tests (test_sympy_guard.py, test_sympy_guard_attacks.py): a
guarded `bin/test` of minisym (sympy_helpers.py), unsandboxed, with the config the sympy
framework gives it: what is checked is the guard itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swebounty.frameworks.sympy import SYMPY_RUNNER
from swebounty.pytest_guard import GuardResult, new_key, read_channel, runner_argv, write_config
from swebounty.sandbox import Policy, UnsafeSandbox
from sympy_helpers import CALC, PROJECT

TESTS = """\
from minisym import double, name
from minisym.utilities.pytest import XFAIL, SKIP, raises, slow


def check(value, expected):
    assert value == expected


def test_ok():
    check(double(3), 6)


def test_bad():
    check(double(2), 5)


def test_crash():
    raise RuntimeError("boom")


@XFAIL
def test_known_bug():
    assert double(1) == 3


@SKIP("needs a printer")
def test_printer():
    assert False


@slow
def test_slow_one():
    assert name() == "minisym"
"""

FIXED = CALC.replace("x + 2", "x * 2")
TEST_FILE = "minisym/tests/test_x.py"
HONEST = {
    f"{TEST_FILE}::test_ok": "passed",
    f"{TEST_FILE}::test_bad": "failed",
    f"{TEST_FILE}::test_crash": "error",
    f"{TEST_FILE}::test_known_bug": "skipped",
    f"{TEST_FILE}::test_printer": "skipped",
    f"{TEST_FILE}::test_slow_one": "passed",
}


def interpreters() -> list[object]:
    """This one, and the oldest the harness builds environments for (sympy-11400's)."""
    found = sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.6.*/bin/python"))
    usable = [p for p in found if os.access(p, os.X_OK)]
    old = str(usable[0]) if usable else None
    skip = pytest.mark.skipif(old is None, reason="no Python 3.6 on this machine")
    return [sys.executable, pytest.param(old or "python3.6", marks=skip, id="py36")]


def _prefixes(python: str) -> list[str]:
    code = "import sys; print(sys.base_prefix); print(sys.prefix)"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def guarded(
    tmp: Path,
    calc: str = FIXED,
    tests: str = TESTS,
    python: str = sys.executable,
    files: tuple[str, ...] = (TEST_FILE,),
    changed: dict[str, str] | None = None,
    guard: Path = SYMPY_RUNNER,
) -> tuple[GuardResult | None, int | None]:
    """A guarded `bin/test` run of minisym with `calc` as its (untrusted) library code;
    `changed`: more files of the submission's (untrusted); `guard`: the guard's (a copy)."""
    ws = tmp / "ws"
    project = {**PROJECT, "minisym/calc.py": calc, TEST_FILE: tests, **(changed or {})}
    for rel, text in project.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(textwrap.dedent(text) if rel != TEST_FILE else text)
    runner = ["minisym/utilities/runtests.py", "minisym/utilities/pytest.py"]
    config = {
        "workspace": str(ws), "infra": {"files": {}, "names": [], "suffixes": []},
        "untrusted_files": [str(ws / p) for p in ["minisym/calc.py", *(changed or {})]],
        "pinned_files": {p: (ws / p).read_bytes().hex() for p in [*files, *runner]},
        "tests": list(files), "setup": None, "trusted_dirs": _prefixes(python),
        "script": "bin/test", "runner_module": "minisym.utilities.runtests",
        "runner_file": runner[0], "helper_modules": {"minisym.utilities.pytest": runner[1]},
        "args": ["-C", "--verbose", "--no-subprocess", *files],
    }  # fmt: skip
    write_config(tmp / "config.json", config)
    key = new_key()
    policy = Policy(timeout_s=120, env={"PATH": "/usr/bin:/bin"})
    argv = runner_argv(python, tmp / "config.json", guard)
    run = UnsafeSandbox().run(argv, workdir=ws, mounts=[], policy=policy, stdin=key,
                              result_channel=True)  # fmt: skip
    return read_channel(run.channel, key), run.returncode


def statuses(result: GuardResult) -> dict[str, str | None]:
    return {k: v["status"] for k, v in result.tests.items()}
