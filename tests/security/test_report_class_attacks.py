"""A plugin may report with a TestReport subclass of its own (pytest-subtests' SubTestReport):
the guard accepts one defined by an installed plugin before any conftest.py ran. These
submissions try to pass their own class off as such a plugin's, through the guard's runner
(not a sandbox: what is checked is the report class, the sandbox plays no part).
"""

from __future__ import annotations

import sys
from pathlib import Path

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


def test_a_conftest_report_class_is_refused(tmp_path: Path) -> None:
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, files={"conftest.py": CONFTEST_SUBCLASS}
    )
    assert run is not None
    assert run.statuses["tests/test_x.py::test_bad"] == "passed"  # forged, and flagged:
    assert run.problems[0] == REFUSED.format("conftest.SubTestReport")
    assert any("hook pytest_runtest_makereport" in p for p in run.problems)


def test_a_conftest_report_class_is_refused_beside_an_installed_plugin_s(tmp_path: Path) -> None:
    site = _plugin_site(tmp_path)
    run = _guarded_run(
        Path(sys.prefix), tmp_path / "run", tamper=False, site=site,
        files={"conftest.py": CONFTEST_SUBCLASS},
    )  # fmt: skip
    assert run is not None and run.problems[0] == REFUSED.format("conftest.SubTestReport")


def test_a_class_put_in_the_plugin_s_place_is_refused(tmp_path: Path) -> None:
    # The hook making the reports is the installed plugin's, genuine: only the class tells.
    site = _plugin_site(tmp_path)
    init = "def f():\n    return 1\n" + SPOOFED
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, site=site, files={"pkg/__init__.py": init}
    )
    assert run is not None
    assert run.statuses["tests/test_x.py::test_bad"] == "passed"  # forged, and flagged:
    assert run.problems == [REFUSED.format("reportplugin.PluginReport")]


def test_the_plugin_s_class_changed_after_it_loaded_is_refused(tmp_path: Path) -> None:
    site = _plugin_site(tmp_path)
    init = "def f():\n    return 1\n" + CHANGED
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, site=site, files={"pkg/__init__.py": init}
    )
    assert run is not None
    assert run.statuses["tests/test_x.py::test_bad"] == "passed"  # forged, and flagged:
    assert run.problems == [
        "the test report class <class 'reportplugin.PluginReport'> was changed after the "
        "plugins loaded"
    ]
