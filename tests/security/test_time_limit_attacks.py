"""The per-test time limit (pytest_guard/timelimit.py): a test that runs longer than the limit
fails alone, and the run goes on. The submission's library code, called by the hidden tests,
tries to turn such a hang into a pass: it catches the guard's exception, replaces or ignores
its signal handler, blocks the signal, freezes the clock. None of it may pass the test.

Through the guard's runner (not a sandbox: what is judged is the guard's record of outcomes,
as in test_report_class_attacks.py), with the dev environment's pytest (pytest-timeout is
installed there too, which the limit must not disturb).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import defusedxml.ElementTree as DefusedET
import pytest

from swebounty.pytest_guard import GuardResult, new_key, read_channel, runner_argv, write_config
from swebounty.sandbox import Policy, UnsafeSandbox
from swebounty.testing import pytest_command

LIMIT_S = 1.0
STOPPED = "swebounty: this test ran longer than 1 s (the per-test time limit) and was stopped"

# The submission's package: each function is what one hidden test calls and wants 1 from.
LIBRARY = r"""
import signal
import threading
import time

CATCHABLE = [s for s in range(1, signal.NSIG) if s not in (signal.SIGKILL, signal.SIGSTOP)]


def hang():
    threading.Event().wait()


def deadlock():
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


def swallow():
    try:
        hang()
    except BaseException:
        return 1


def swallow_every_time(times=2):
    for _ in range(times):
        try:
            hang()
        except BaseException:
            pass
    return 1


def swallow_and_skip():
    import pytest

    try:
        hang()
    except BaseException:
        pytest.skip("nothing to see")


def _for_all(how):
    for s in CATCHABLE:
        try:
            signal.signal(s, how)
        except (OSError, ValueError, RuntimeError):
            pass


def replace_handlers():
    _for_all(lambda *args: None)
    time.sleep(3 * LIMIT)
    return 1


def ignore_signals():
    _for_all(signal.SIG_IGN)
    time.sleep(3 * LIMIT)
    return 1


def block_signals():
    signal.pthread_sigmask(signal.SIG_BLOCK, set(CATCHABLE))
    time.sleep(3 * LIMIT)
    return 1


def cancel_alarms():
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.alarm(0)
    hang()


def freeze_clock():
    time.monotonic = time.time = time.perf_counter = lambda: 1.0
    hang()
""".replace("LIMIT", repr(LIMIT_S))

# The hidden tests (the base's): every attack, each followed by a test that hangs honestly,
# which the limit must still stop (what one test did to the handler is not the next's).
ATTACKS = (
    "swallow", "swallow_every_time", "swallow_and_skip", "replace_handlers", "ignore_signals",
    "block_signals", "cancel_alarms", "freeze_clock",
)  # fmt: skip
TESTS = (
    "import pkg\nimport pytest\n\n"
    + "".join(
        f"def test_{name}():\n    assert pkg.{name}() == 1\n\n\n"
        f"def test_{name}_then_a_hang():\n    pkg.deadlock()\n\n\n"
        for name in ATTACKS
    )
    + (
        "def test_fast():\n    assert pkg.swallow is not None\n\n\n"
        # No thread of the guard's: Python 3.12+ warns at each fork() of a multi-threaded process.
        "def test_one_thread():\n    import os\n    assert len(os.listdir('/proc/self/task')) == 1\n\n\n"
        "@pytest.fixture\ndef stuck_in_setup():\n    pkg.hang()\n\n\n"
        "def test_stuck_in_setup(stuck_in_setup):\n    pass\n\n\n"
        "@pytest.fixture\ndef stuck_in_teardown():\n    yield\n    pkg.deadlock()\n\n\n"
        "def test_stuck_in_teardown(stuck_in_teardown):\n    pass\n\n\n"
        "@pytest.mark.xfail(reason='hangs on the base')\n"
        "def test_expected_to_fail():\n    pkg.hang()\n\n\n"
        "@pytest.mark.timeout(30)  # pytest-timeout's own, longer than the limit: the limit wins\n"
        "def test_pytest_timeout_beside():\n    pkg.hang()\n"
    )
)


def guarded(
    tmp: Path,
    tests: str,
    limit: float | None = LIMIT_S,
    timeout: float = 120,
    venv: Path | None = None,
) -> tuple[GuardResult | None, float, str]:
    """One guarded run of `tests` (the base's) over LIBRARY (the submission's): its result,
    how long it took and its stderr."""
    ws = tmp / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "pkg" / "__init__.py").write_text(LIBRARY)
    (ws / "tests" / "test_x.py").write_text(tests)
    junit = tmp / "junit.xml"
    venv = venv or Path(sys.prefix)
    python = str(venv / "bin" / "python")
    base = subprocess.run(
        [python, "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    config = {
        "workspace": str(ws), "infra": {"files": {}, "names": [], "suffixes": []},
        "untrusted_files": [str(ws / "pkg" / "__init__.py")],
        "trusted_dirs": [str(venv), base], "junit": str(junit),
        "args": pytest_command([], ["tests/test_x.py"], junit), "setup": None,
        "test_limit_s": limit,
    }  # fmt: skip
    write_config(tmp / "config.json", config)
    key = new_key()
    policy = Policy(timeout_s=timeout, env={"PYTHONPATH": str(ws), "PATH": "/usr/bin:/bin"})
    start = time.monotonic()
    run = UnsafeSandbox().run(runner_argv(python, tmp / "config.json"), workdir=ws, mounts=[],
                              policy=policy, stdin=key, result_channel=True)  # fmt: skip
    return read_channel(run.channel, key), time.monotonic() - start, run.stderr


def messages(xml: bytes) -> dict[str, str]:
    """test name -> the message and text of its failure or error, from the JUnit XML."""
    found = {}
    for case in DefusedET.fromstring(xml, forbid_dtd=True).iter("testcase"):
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        # pytest before 4 says "test setup failure" and puts the text in the element
        text = "" if bad is None else bad.get("message", "") + "\n" + (bad.text or "")
        found[case.get("name", "")] = text
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> tuple[GuardResult, float, str]:
    run, seconds, stderr = guarded(tmp_path_factory.mktemp("attacks"), TESTS)
    assert run is not None, f"no result from the guarded run: {stderr[-2000:]}"
    assert run.problems == [], run.problems
    assert run.xml is not None, run.xml_problem
    return run, seconds, stderr


@pytest.mark.parametrize("name", ATTACKS)
def test_a_hang_the_submission_dresses_up_as_a_pass_fails(
    attacked: tuple[GuardResult, float, str], name: str
) -> None:
    run = attacked[0]
    assert run.xml is not None
    assert run.statuses[f"tests/test_x.py::test_{name}"] == "failed"
    assert STOPPED in messages(run.xml)[f"test_{name}"]
    # The next test hangs honestly: the limit still stops it, whatever this one did.
    assert run.statuses[f"tests/test_x.py::test_{name}_then_a_hang"] == "failed"
    assert STOPPED in messages(run.xml)[f"test_{name}_then_a_hang"]


def test_the_run_goes_on_and_takes_seconds(attacked: tuple[GuardResult, float, str]) -> None:
    run, seconds, stderr = attacked
    assert run.statuses["tests/test_x.py::test_fast"] == "passed"
    assert run.statuses["tests/test_x.py::test_one_thread"] == "passed"
    assert run.exitstatus == 1
    # 19 tests stopped at 1 s (one swallows a second signal, REPEAT_S later), one sleeps 3 s.
    assert seconds < 60, seconds
    assert f"tests/test_x.py::test_swallow_then_a_hang: {STOPPED}" in stderr  # names the test


def test_a_fixture_that_hangs_errs_its_test(attacked: tuple[GuardResult, float, str]) -> None:
    run = attacked[0]
    assert run.xml is not None
    for name in ("test_stuck_in_setup", "test_stuck_in_teardown"):
        assert run.statuses[f"tests/test_x.py::{name}"] == "error"
        assert STOPPED in messages(run.xml)[name]


def test_an_expected_failure_that_hangs_fails(attacked: tuple[GuardResult, float, str]) -> None:
    run = attacked[0]
    assert run.statuses["tests/test_x.py::test_expected_to_fail"] == "failed"


def test_pytest_timeout_beside_the_limit(attacked: tuple[GuardResult, float, str]) -> None:
    run = attacked[0]
    assert run.xml is not None
    assert run.statuses["tests/test_x.py::test_pytest_timeout_beside"] == "failed"
    assert STOPPED in messages(run.xml)["test_pytest_timeout_beside"]


HANG_FOR_GOOD = (
    "import signal\nimport pkg\n\n\n"
    "def test_ignores_and_hangs():\n"
    "    for s in pkg.CATCHABLE:\n"
    "        try:\n            signal.signal(s, signal.SIG_IGN)\n"
    "        except (OSError, ValueError, RuntimeError):\n            pass\n"
    "    pkg.hang()\n"
)


def test_a_test_that_ignores_the_signal_and_hangs_for_good_ends_at_the_run_timeout(
    tmp_path: Path,
) -> None:
    # The documented limit of the signal method: the run's own timeout still ends it, and no
    # result is sent (an error, never a pass).
    run, seconds, _ = guarded(tmp_path, HANG_FOR_GOOD, timeout=6)
    assert run is None
    assert 5 < seconds < 30


OLD_TESTS = (
    "import pkg\nimport pytest\n\n\n"
    "def test_swallow():\n    assert pkg.swallow() == 1\n\n\n"
    "def test_block_signals():\n    assert pkg.block_signals() == 1\n\n\n"
    "def test_deadlock():\n    pkg.deadlock()\n\n\n"
    "@pytest.fixture\ndef stuck():\n    pkg.hang()\n\n\n"
    "def test_stuck_in_setup(stuck):\n    pass\n\n\n"
    "def test_fast():\n    pass\n"
)


@pytest.mark.network
def test_the_oldest_environments_too(tmp_path: Path) -> None:
    # Python 3.6 and pytest 3.6.4, the oldest era environments are built for.
    from test_pytest_guard import _venv

    run, _, stderr = guarded(tmp_path / "run", OLD_TESTS, venv=_venv(tmp_path, "old"))
    assert run is not None and run.problems == [], stderr[-2000:]
    assert run.xml is not None
    wanted = {"swallow": "failed", "block_signals": "failed", "deadlock": "failed",
              "stuck_in_setup": "error", "fast": "passed"}  # fmt: skip
    assert run.statuses == {f"tests/test_x.py::test_{k}": v for k, v in wanted.items()}
    found = messages(run.xml)
    assert all(STOPPED in found[f"test_{k}"] for k, v in wanted.items() if v != "passed")


def test_the_harness_knows_the_guard_s_message() -> None:
    # validate.py names the tests stopped at the limit by this start of their message.
    from swebounty.pytest_guard import GUARD_DIR
    from swebounty.testlimit import STOPPED as START

    assert STOPPED.startswith(START)
    assert f'MESSAGE = "{START} %s s' in (GUARD_DIR / "timelimit.py").read_text()


# What hung tqdm's runs before PR 1751 after pytest's summary: an atexit handler joins a
# thread stuck on a lock (here, one that never ends), and the interpreter's exit waits.
EXIT_HANG = (
    "import atexit\nimport threading\n\n\n"
    "def test_leaves_a_thread():\n"
    "    stuck = threading.Thread(target=threading.Event().wait)\n"
    "    stuck.start()\n"
    "    atexit.register(stuck.join)\n"
)


def test_a_thread_the_tests_leave_does_not_hang_the_run_s_exit(tmp_path: Path) -> None:
    run, seconds, stderr = guarded(tmp_path, EXIT_HANG, timeout=60)
    assert run is not None, stderr[-2000:]
    assert run.statuses == {"tests/test_x.py::test_leaves_a_thread": "passed"}
    assert seconds < 30  # not the run's timeout


def test_without_a_limit_nothing_is_stopped(tmp_path: Path) -> None:
    tests = "import time\n\n\ndef test_slow():\n    time.sleep(2)\n"
    run, _, _ = guarded(tmp_path, tests, limit=None)
    assert run is not None and run.statuses == {"tests/test_x.py::test_slow": "passed"}
    assert os.path.exists(tmp_path / "junit.xml")
