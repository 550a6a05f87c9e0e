"""bench/real_tasks.py's (real_tasks_verdicts.py) attribution of a gold miss to the sandbox's lack of a network."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from bench_helpers import load_bench
from swebounty.verdicts import TestResult, Verdict

OUTPUT = """\
=================================== FAILURES ===================================
_____________________ TestTimeout.test_connect_timeout ______________________
E   ConnectionError: HTTPConnectionPool(host='10.255.255.1', port=80): [Errno 101] Network is unreachable
____________________________ test_latex_images _____________________________
E   AssertionError: assert '{python-logo}.png' in '...'
----------------------------- Captured stderr call -----------------------------
WARNING: Could not fetch remote image: [Errno -3] Temporary failure in name resolution
______________________________ test_own_bug ________________________________
E   assert 2 == 3
=========================== short test summary info ============================
"""


def bench() -> ModuleType:
    return load_bench("real_tasks_verdicts.py", "real_tasks_bench")


def verdict(tmp_path: Path, *failing: str) -> Verdict:
    (tmp_path / "test_output.txt").write_text(OUTPUT)
    tests = [
        TestResult(test_id=f"t.py::{n}", expected="PASS_TO_PASS", status="failed") for n in failing
    ]
    tests.append(TestResult(test_id="t.py::test_fine", expected="FAIL_TO_PASS", status="passed"))
    return Verdict(instance_id="o__r-1", status="unresolved", tests=tests, log_dir=str(tmp_path))


def test_misses_that_only_failed_reaching_the_network_are_the_networks(tmp_path: Path) -> None:
    rt = bench()
    assert rt.needs_network(verdict(tmp_path, "TestTimeout::test_connect_timeout"))
    # The evidence may be in the test's captured output rather than its assertion.
    assert rt.needs_network(verdict(tmp_path, "test_latex_images"))
    assert rt.needs_network(
        verdict(tmp_path, "test_latex_images", "TestTimeout::test_connect_timeout")
    )


def test_one_miss_of_its_own_makes_it_the_patchs(tmp_path: Path) -> None:
    rt = bench()
    assert not rt.needs_network(verdict(tmp_path, "test_latex_images", "test_own_bug"))
    assert not rt.needs_network(verdict(tmp_path, "test_own_bug"))
    assert not rt.needs_network(verdict(tmp_path))  # nothing missed: not a network miss
    no_log = verdict(tmp_path, "test_latex_images").model_copy(update={"log_dir": "/absent"})
    assert not rt.needs_network(no_log)  # no output to show it
