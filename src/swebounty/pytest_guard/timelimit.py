"""The per-test time limit: a test that runs too long fails alone, and the run goes on.

A test that hangs on the base (a deadlock the fix removes) used to hang the whole run until
the harness's run timeout killed it: the run lost every result and was an infrastructure
error. SWE-bench-style harnesses count such a test as failing; so does this limit.

How (pytest-timeout's "signal" method, made harder to defeat):
- a POSIX timer on the monotonic clock (timer_create, through ctypes) is set at the start of
  each test for its setup, call and teardown together (as pytest-timeout counts by default).
  When it expires the kernel sends a signal to the main thread alone (SIGEV_THREAD_ID), whose
  handler raises pytest's Failed exception where the test is stuck: a blocked
  `lock.acquire()`, `Event.wait()`, `time.sleep()`, `join()` or read is interrupted by a
  signal in Python 3 on Linux, so the test fails at once and the next one runs. The timer
  fires again every `REPEAT_S` seconds while the test still runs (one that swallowed the
  exception and hangs again). No thread: a watchdog thread would make every `fork()` of a
  test warn that the process is multi-threaded (Python 3.12+), a failure where warnings are
  errors, and would show in `threading.enumerate()`;
- the signal is a real-time one (SIGRTMAX - 2), not SIGALRM: pytest-timeout (installed in
  some environments) and tests of `signal.alarm`/`setitimer` keep SIGALRM to themselves;
- the handler raises only inside a test's setup, call or teardown, never in pytest's own code
  between them (which would end the session with an internal error).

Integrity: the outcome is the guard's, not the test's. Whether a test went over its limit is
read from the guard's own clock (a reference to `time.monotonic` taken at import, which a test
that freezes time cannot move) each time pytest makes a report, not from the signal: the
first report made after the limit (the phase that was running) is failed with this module's
message, whatever the test did: caught the exception and passed, skipped, xfailed, replaced or
ignored the handler, blocked the signal. The guard records that report failed
(swebounty_guard.py), so a report changed back to a pass afterwards is a disagreement the
harness flags as tampering, never a pass. Before each test the handler is installed again and
the signal unblocked: a test that disabled them disables the interruption for itself alone.

What it cannot do: a test that blocks the main thread in C code that never returns to Python
(a C extension's own mutex), or that ignores or blocks the signal and hangs for good, stops
only at the run's timeout, as before (an error, never a pass). The first time the signal gets
through, stderr names the test and shows where every thread was.

Python 3.6+ and any pytest from 4.6 on; standard library only.
"""

import ctypes
import ctypes.util
import faulthandler
import os
import signal
import time

import pytest

_now = time.monotonic  # taken before any test could replace it
SIGNAL = signal.SIGRTMAX - 2
REPEAT_S = 2.0  # between two signals to a test that is still running after its limit
MESSAGE = "swebounty: this test ran longer than %s s (the per-test time limit) and was stopped"
CLOCK_MONOTONIC = 1
SIGEV_THREAD_ID = 4  # Linux: the signal goes to the thread sigev_notify_thread_id names


class TimeLimit:
    """The plugin part that enforces the limit; `seconds` falsy: no limit."""

    def __init__(self, seconds):
        self.seconds = float(seconds) if seconds else 0.0
        self.message = MESSAGE % ("%g" % self.seconds)
        self.over = []  # node ids of the tests that ran over the limit, in order
        self._charged = set()  # (nodeid, when) of the reports failed for it
        self._due = set()  # node ids over the limit and not yet charged to a report
        self._item = None  # the node id now running, and its deadline
        self._deadline = None
        self._in_phase = False
        self._timer = None
        self._stderr = None
        if self.seconds:
            # The run's stderr as it is before pytest's capture points fd 2 at a file.
            self._stderr = os.dup(2)
            self._timer = _Timer.create(SIGNAL)
            if self._timer is None:
                self._say("", "no POSIX timer: a test over the limit fails when it ends, "
                              "a hang ends at the run's timeout")  # fmt: skip

    # ------------------------------------------------------------------ per test

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.seconds:
            yield
            return
        self._arm(item.nodeid)
        try:
            yield
        finally:
            self._disarm()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        yield from self._phase()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield from self._phase()

    def _phase(self):
        self._in_phase = True
        try:
            yield
        finally:
            self._in_phase = False

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report is not None:
            self.charged(report)

    def charged(self, report):
        """Whether `report` is failed for the limit: the first one of its test made after the
        limit passed (by the guard's clock, whether or not a signal got through)."""
        if report.nodeid == self._item and self._late():
            self._mark()
        if report.nodeid in self._due:
            self._due.discard(report.nodeid)
            self._charged.add((report.nodeid, report.when))
            if report.outcome != "failed" or self.message not in str(report.longrepr):
                report.longrepr = self.message
            report.outcome = "failed"
            if hasattr(report, "wasxfail"):
                del report.wasxfail  # a test that hangs fails, even one expected to fail
        return (report.nodeid, report.when) in self._charged

    # ------------------------------------------------------------------ the timer

    def _late(self):
        return self._deadline is not None and _now() >= self._deadline

    def _mark(self):
        nodeid = self._item
        if nodeid is not None and nodeid not in self.over:
            self.over.append(nodeid)
            self._due.add(nodeid)
            return True
        return False

    def _arm(self, nodeid):
        self._item, self._deadline = nodeid, _now() + self.seconds
        # Every test starts with the handler in place and the signal deliverable, whatever
        # the previous one did to them (a signal it left pending finds a deadline not passed).
        signal.signal(SIGNAL, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {SIGNAL})
        if self._timer is not None:
            self._timer.set(self.seconds, REPEAT_S)

    def _disarm(self):
        if self._timer is not None:
            self._timer.set(0, 0)
        self._item = self._deadline = None

    def _on_signal(self, signum, frame):
        # Runs in the main thread between two bytecodes; raises only inside a test's setup,
        # call or teardown, where pytest makes a report of it, never in pytest's own code.
        if not self._late():
            return  # left pending by a test that ended
        if self._mark():
            self._say(self._item + ": ", self.message, stacks=True)
        if self._in_phase:
            pytest.fail(self.message, pytrace=True)

    def _say(self, head, text, stacks=False):
        try:
            os.write(self._stderr, ("\n=== %s%s ===\n" % (head, text)).encode("utf-8", "replace"))
            if stacks:  # where each thread is: the deadlock, for whoever reads the log
                faulthandler.dump_traceback(self._stderr, all_threads=True)
        except (OSError, ValueError):
            pass


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _Sigevent(ctypes.Structure):
    # struct sigevent: a union sigval (int or pointer), signo, notify, then a union padded to
    # 64 bytes whose first int is the thread id (13 ints: enough on 32-bit systems too).
    _fields_ = [
        ("sigev_value", ctypes.c_void_p),
        ("sigev_signo", ctypes.c_int),
        ("sigev_notify", ctypes.c_int),
        ("sigev_notify_thread_id", ctypes.c_int),
        ("_pad", ctypes.c_int * 13),
    ]


def _spec(seconds):
    whole = int(seconds)
    return _Timespec(whole, int((seconds - whole) * 1e9))


class _Timer:
    """A POSIX timer on CLOCK_MONOTONIC that signals the main thread (the caller's) alone.
    Not a thread: a watchdog thread would make every fork() in a test warn that the process
    is multi-threaded (Python 3.12+), an error where warnings are errors."""

    def __init__(self, libc, timer_id):
        self._libc = libc
        self._id = timer_id

    @classmethod
    def create(cls, signum):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if not hasattr(libc, "timer_create"):  # glibc before 2.34 keeps it in librt
                libc = ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
            event = _Sigevent()
            event.sigev_signo = signum
            event.sigev_notify = SIGEV_THREAD_ID
            event.sigev_notify_thread_id = os.getpid()  # the main thread's id is the pid's
            timer_id = ctypes.c_void_p()
            if libc.timer_create(CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer_id)):
                return None
            return cls(libc, timer_id)
        except (OSError, AttributeError, TypeError):
            return None

    def set(self, seconds, repeat):
        """Signal in `seconds`, then every `repeat` seconds; (0, 0) stops it."""
        spec = _Itimerspec(_spec(repeat if seconds else 0), _spec(seconds))
        self._libc.timer_settime(self._id, 0, ctypes.byref(spec), None)
