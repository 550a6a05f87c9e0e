"""The test log a run leaves: one line per test with its outcome, as SWE-bench's logs have."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from swebounty.testing import pytest_command


def test_the_log_names_every_test_with_its_outcome_without_the_passes_section(
    tmp_path: Path,
) -> None:
    """`PASSED id` lines stay (SWE-bench's parsers); the quadratic PASSES section goes."""
    (tmp_path / "test_t.py").write_text(
        "def test_a():\n    print(1)\n\ndef test_b():\n    assert 0\n"
    )
    argv = pytest_command([sys.executable, "-m", "pytest"], ["test_t.py"], tmp_path / "j.xml")
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False).stdout
    assert "PASSED test_t.py::test_a" in out and "FAILED test_t.py::test_b" in out
    assert "PASSES" not in out
