"""Which files of a Node task are tests, and the test configuration put back as at the base
commit: test files by name and folder (`is_js_test_file`, `js_test_files`), the runner's
configuration files (`TEST_CONFIG`) and the test keys of every package.json
(`restore_test_config`, from the texts `base_packages` read before the patch)."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath

from swebounty import safefs
from swebounty.diffs import parse_patch
from swebounty.patches import reset_files

JS_SOURCE = re.compile(r"\.(?:[cm]?[jt]sx?|vue|svelte)$")
_TEST_NAME = re.compile(r"\.(test|tests|spec|e2e)\.[cm]?[jt]sx?$")
_TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "e2e"}
_HELPER_DIRS = {"fixtures", "fixture", "__fixtures__", "support", "helpers", "__mocks__", "utils"}
# Files that decide how tests run and report: the base commit's version is used.
TEST_CONFIG = re.compile(
    r"(^|/)(jest|vitest|vite|playwright)\.config\.[cm]?[jt]s$|(^|/)\.mocharc(\.[\w]+)?$"
    r"|(^|/)test/mocha\.opts$|(^|/)jest\.setup\.[cm]?[jt]s$|(^|/)karma\.conf\.[cm]?js$"
)
_PACKAGE_TEST_KEYS = ("jest", "mocha", "vitest", "ava", "c8", "nyc")


def is_js_test_file(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if not JS_SOURCE.search(path) or _HELPER_DIRS & set(parts[:-1]):
        return False
    return bool(_TEST_NAME.search(parts[-1])) or bool(_TEST_DIRS & set(parts[:-1]))


def js_test_files(test_patch: str) -> list[str]:
    """The JS/TS test files the test patch adds or changes (not deletes), in patch order."""
    files: list[str] = []
    for diff in parse_patch(test_patch):
        if diff.target and is_js_test_file(diff.target) and diff.target not in files:
            files.append(diff.target)
    return files


def restore_test_config(
    workspace: Path, base_packages: str | dict[str, str] | None, touched: list[str]
) -> list[str]:
    """Put the runner's configuration back as at the base commit; return what was restored.
    `base_packages`: the base commit's package.json files (path -> text; a str is the root's),
    whose test keys (`jest`, `mocha`, ...) the patch may not change: a monorepo's packages
    keep theirs in their own package.json."""
    restored = [p for p in touched if TEST_CONFIG.search(p)]
    reset_files(workspace, restored)
    bases = {"package.json": base_packages} if isinstance(base_packages, str) else base_packages
    for rel, base_text in (bases or {}).items():
        # The patched package.json may be a link (to /proc/kmsg...): read it link-free, bounded.
        data = safefs.read_beneath(workspace, rel, 16 << 20)
        if rel not in touched or data is None:
            continue
        try:
            base = json.loads(base_text)
            now = json.loads(data.decode("utf-8"))
        except ValueError:
            continue
        if not isinstance(base, dict) or not isinstance(now, dict):
            continue
        changed = False
        for key in _PACKAGE_TEST_KEYS:
            if base.get(key) != now.get(key):
                changed = True
                if key in base:
                    now[key] = base[key]
                else:
                    now.pop(key, None)
        if changed:
            safefs.write_beneath(workspace, rel, (json.dumps(now, indent=2) + "\n").encode())
            restored.append(f"{rel} (test keys)")
    return restored


def base_packages(workspace: Path, touched: list[str]) -> dict[str, str]:
    """The base commit's text of every package.json among `touched` (read before patching)."""
    found: dict[str, str] = {}
    for rel in touched:
        if rel == "package.json" or rel.endswith("/package.json"):
            data = safefs.read_beneath(workspace, rel, 16 << 20)
            if data is not None:
                found[rel] = data.decode("utf-8", errors="replace")
    return found
