"""Hypothesis's clock and dice out of a test's outcome: the same code gives the same result.

Why: Hypothesis property tests fail for reasons that are not the code's. Under machine load a
test exceeds its `deadline` (DeadlineExceeded, or Flaky when the replay is fast) or a strategy
is too slow for the `too_slow` health check (FailedHealthCheck); and each run draws new
random examples and replays the ones its example database kept from earlier runs. So one test
passed in one validation and failed in the next (mpmath-1026), and two validations of the same
candidates disagreed on its labels (issue 28). Hypothesis's own "ci" profile (6.x) is the same
cure: this rule sets, on top of whatever the project chose,
- `deadline=None` (Hypothesis 3.27+: no per-example time limit);
- the health checks that only measure speed suppressed: `too_slow` (all versions) and
  `hung_test` (Hypothesis 3: five minutes of running; deprecated without effect in 4, gone
  since); the others (`filter_too_much`, `data_too_large`, ...) depend on the examples drawn,
  which the next two settings fix;
- `database=None`: no examples replayed from an earlier run's database;
- `derandomize=True`: the examples are drawn from a seed made of the test's source, the same
  in every run;
- Hypothesis 3 only: `timeout` off (it stopped drawing after 60 s, and failed a test that had
  too few examples by then).
Everything else (max_examples, phases, stateful_step_count, verbosity, ...) is the project's:
each stable settings object is a child of the one it replaces.

When: `@given` keeps the settings of the moment the test is decorated (its module's import),
and a conftest.py anywhere may load its own profile, as may a session fixture. So the rule is
applied to each test just before it is called (pytest: `pytest_runtest_call`, after every
conftest.py and fixture; unittest_guard.py: before `TestCase.run`): the test's own settings
(`_hypothesis_internal_use_settings`, which `@given` reads at each call) and a stateful test
case's (`MyMachine.TestCase.settings`) are replaced by their stable children, and the default
is made the stable child of the current one, as the profile "swebounty-stable", for the
settings made while tests run (a `@given` defined inside a test, `find`).

Validation and evaluation run their tests through the same runners, so a label means the same
in both. Hypothesis is never imported here: the rule does nothing until the tests imported it,
and nothing in a run of Hypothesis's own repository (its tests check deadlines and health
checks). What it cannot stop: a test that sets a deadline inside its own body, or a conftest
hook that changes the settings after this one; the base runs under the same rule, so such a
test is flaky (and excluded) or stable alike in every run, whoever wrote it.

Python 3.6+, Hypothesis 3.x to 6.x, or none; standard library only; never raises.
"""

import contextlib
import os
import sys
import warnings

PROFILE = "swebounty-stable"
SPEED_CHECKS = ("too_slow", "hung_test")  # those a Hypothesis version lacks are left out


class StableHypothesis:
    """The rule for one test run; `workspace`: its checkout (Hypothesis's own is left alone)."""

    def __init__(self, workspace):
        self.workspace = os.path.join(os.path.realpath(workspace), "")
        self._made = {}  # id -> the stable settings objects made here (kept alive for their ids)
        self._children = {}  # id of a project's settings -> (them, their stable child)
        self._stderr = os.dup(2)  # before pytest's capture, which swallows a test's stderr
        self._said = False

    # pytest calls this (a plugin's hook by its name) before the call of each test: after its
    # fixtures, before the test itself. Registered before any conftest.py, it runs after
    # theirs; pytest's own `pytest_runtest_call`, which runs the test, was registered first
    # and so runs last.
    def pytest_runtest_call(self, item):
        self._before(lambda: (getattr(item, "obj", None), getattr(item, "cls", None)))

    def before_case(self, case):
        """unittest: before `TestCase.run` of `case` (its setUp runs after this)."""
        self._before(lambda: (getattr(case, case._testMethodName, None), type(case)))

    def _before(self, what):
        """The rule for the test `what()` names: (its function or bound method, its class)."""
        hypothesis = sys.modules.get("hypothesis")
        if hypothesis is None or self._own_project(hypothesis):
            return
        try:
            # Our own settings objects only: Hypothesis 4 notes hung_test as deprecated when it
            # is named, 6 notes a profile registered while another is active.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._apply(hypothesis, *what())
        except Exception as exc:  # a Hypothesis this does not know: run as the project set it
            self._say("Hypothesis settings not made stable: %r" % (exc,))

    def _apply(self, hypothesis, test, cls):
        settings = hypothesis.settings
        default = settings.default
        if default is not None and id(default) not in self._made:
            settings.register_profile(PROFILE, self._stable(hypothesis, default))
            settings.load_profile(PROFILE)
        function = getattr(test, "__func__", test)  # a method's settings are its function's
        own = getattr(function, "_hypothesis_internal_use_settings", None)
        if isinstance(own, settings) and id(own) not in self._made:
            function._hypothesis_internal_use_settings = self._stable(hypothesis, own)
        # A stateful test (RuleBasedStateMachine.TestCase) runs with its class's settings.
        machine = getattr(cls, "settings", None) if hasattr(cls, "runTest") else None
        if isinstance(machine, settings) and id(machine) not in self._made:
            cls.settings = self._stable(hypothesis, machine)

    def _stable(self, hypothesis, parent):
        """The child of `parent` with the rule's settings: one per parent, shared by its tests."""
        known = self._children.get(id(parent))
        if known is not None and known[0] is parent:
            return known[1]
        changes = {"database": None, "derandomize": True}
        if hasattr(parent, "deadline"):  # Hypothesis 3.27 and later
            changes["deadline"] = None
        suppressed = list(parent.suppress_health_check)
        for name in SPEED_CHECKS:
            check = getattr(hypothesis.HealthCheck, name, None)
            if check is not None and check not in suppressed:
                suppressed.append(check)
        changes["suppress_health_check"] = suppressed
        if getattr(hypothesis, "__version_info__", (0,))[0] == 3:
            changes["timeout"] = getattr(hypothesis, "unlimited", 0)  # 0: none, before 3.16
        stable = hypothesis.settings(parent, **changes)
        self._made[id(stable)] = stable
        self._children[id(parent)] = (parent, stable)
        return stable

    def _own_project(self, hypothesis):
        path = getattr(hypothesis, "__file__", None) or ""
        return os.path.realpath(path).startswith(self.workspace)

    def _say(self, text):
        if self._said:
            return
        self._said = True
        with contextlib.suppress(OSError, ValueError):
            os.write(self._stderr, ("\n=== swebounty: %s ===\n" % text).encode("utf-8", "replace"))
