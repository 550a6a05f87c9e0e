"""A plugin may report with a TestReport subclass of its own (pytest-subtests' SubTestReport):
the guard accepts one defined by an installed plugin before any conftest.py ran. These
submissions try to pass their own class off as such a plugin's, through the guard's runner
(not a sandbox: what is checked is the report class, the sandbox plays no part).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_pytest_guard import _guarded_run, _plugin_site

REFUSED = "a test report is a <class '{}'>, not pytest's TestReport nor an installed plugin's"

# A conftest.py of the submission's with a report class whose outcome is always a pass.
CONFTEST_SUBCLASS = """
import pytest
from _pytest.reports import TestReport


class SubTestReport(TestReport):
    outcome = property(lambda self: "passed", lambda self, value: None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    return SubTestReport.from_item_and_call(item, call)
"""

# The package, imported by the tests, puts a class of its own where the installed plugin's
# genuine hook finds its class: under the plugin's module and name.
SPOOFED = """
import reportplugin
from _pytest.reports import TestReport


class PluginReport(TestReport):
    outcome = property(lambda self: "passed", lambda self, value: None)


PluginReport.__module__ = "reportplugin"
reportplugin.PluginReport = PluginReport
"""

# The package gives the installed plugin's accepted class an outcome that always passes.
CHANGED = """
import reportplugin

reportplugin.PluginReport.outcome = property(lambda self: "passed", lambda self, value: None)
"""


INIT = "def f():\n    return 1\n"  # the package the tests import, before the submission's lines
HOOK = (
    "hook pytest_runtest_makereport is implemented by WS/conftest.py, which the submission changed"
)
CHANGED_AFTER = (
    "the test report class <class 'reportplugin.PluginReport'> was changed after the plugins loaded"
)
# attack -> (an installed plugin beside it, the submission's files, every problem the guard names)
ATTACKS = {
    "conftest-class": (
        False, {"conftest.py": CONFTEST_SUBCLASS}, [REFUSED.format("conftest.SubTestReport"), HOOK]
    ),
    "conftest-class-beside-an-installed-plugin-s": (
        True, {"conftest.py": CONFTEST_SUBCLASS}, [REFUSED.format("conftest.SubTestReport"), HOOK]
    ),
    # The hook making the reports is the installed plugin's, genuine: only the class tells.
    "a-class-put-in-the-plugin-s-place": (
        True, {"pkg/__init__.py": INIT + SPOOFED}, [REFUSED.format("reportplugin.PluginReport")]
    ),
    "the-plugin-s-class-changed-after-it-loaded": (
        True, {"pkg/__init__.py": INIT + CHANGED}, [CHANGED_AFTER]
    ),
}  # fmt: skip


@pytest.mark.parametrize(("plugin", "files", "problems"), ATTACKS.values(), ids=ATTACKS)
def test_a_forged_report_class_is_refused(
    tmp_path: Path, plugin: bool, files: dict[str, str], problems: list[str]
) -> None:
    site = _plugin_site(tmp_path) if plugin else None
    run = _guarded_run(Path(sys.prefix), tmp_path / "run", tamper=False, site=site, files=files)
    assert run is not None
    assert run.statuses["tests/test_x.py::test_bad"] == "passed"  # forged, and flagged:
    ws = str(tmp_path / "run" / "ws")
    assert [p.replace(ws, "WS") for p in run.problems] == problems
