"""A project may ship a pytest plugin of its own, registered as a pytest11 entry point
(anyio's `anyio.pytest_plugin`); installed editable, the entry point loads the workspace's
file. The guard trusts the hooks of entry-point plugins (their code is the environment's),
but not those of the project's own: a submission that changes its plugin to force passes is
flagged, as it is when it changes a conftest.py. Through the guard's runner (not a sandbox:
what is checked is where the hook's code comes from).
"""

from __future__ import annotations

import sys
from pathlib import Path

from security.attacks_grading import FORCE_PASS
from test_pytest_guard import HONEST, _guarded_run


def _entry_point(tmp: Path) -> Path:
    """The metadata of the project's editable install: its plugin, the workspace's file."""
    site = tmp / "site"
    info = site / "tinyproject-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyproject\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\ntinyproject = pkg.plugin\n")
    return site


# An honest plugin of the project's: a fixture and a hook that changes no outcome.
HONEST_PLUGIN = """
import pytest


@pytest.fixture
def numeral():
    return "IV"


def pytest_report_header(config):
    return "tinyproject plugin"
"""


def test_the_project_s_own_plugin_forcing_passes_is_flagged(tmp_path: Path) -> None:
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, site=_entry_point(tmp_path),
        files={"pkg/plugin.py": FORCE_PASS},
    )  # fmt: skip
    assert run is not None
    assert run.statuses["tests/test_x.py::test_bad"] == "passed"  # forged, and flagged:
    assert [p.split(" is implemented by ")[0] for p in run.problems] == [
        "hook pytest_runtest_makereport"
    ]
    assert run.problems[0].endswith("pkg/plugin.py, which the submission changed")


def test_the_project_s_own_plugin_unchanged_is_genuine(tmp_path: Path) -> None:
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, site=_entry_point(tmp_path),
        files={"base:pkg/plugin.py": HONEST_PLUGIN},
    )  # fmt: skip
    assert run is not None and run.problems == [] and run.statuses == HONEST
