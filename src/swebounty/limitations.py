"""Harness limitations: tasks whose tests the harness cannot run, said as such.

A task no test framework runs (frameworks.FrameworkError: no framework applies, an unknown
pin, an ecosystem nothing decides), or whose PASS_TO_PASS tests cannot even be collected on
the unpatched base (their modules fail to import there: a runner the harness does not know,
settings it does not give, an installed package that breaks on import), gets an `error`
verdict with `harness_limitation` saying why, never `unresolved`: PASS_TO_PASS tests pass
before the fix by definition (SWE-bench's, and swebounty's validation), so no submission can
be their cause, and an error is not counted against the model. `eval` lists these tasks.
"""

from __future__ import annotations

import re

from swebounty.baseline import BaseContext, base_run
from swebounty.frameworks.base import TestRun
from swebounty.tasks import Task
from swebounty.verdicts import Verdict

_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")
MAX_LIMITATION = 400  # of the first uncollected module's reason quoted in a verdict


def limitation(task: Task, verdict: Verdict, tr: TestRun, ctx: BaseContext) -> Verdict:
    """`error` with `harness_limitation` set for a task the harness cannot run (module
    docstring): no framework runs its tests (`tr.limitation`), or an unresolved verdict some of
    whose PASS_TO_PASS tests never ran because their modules do not collect on the unpatched
    base either. The base runs only when this run left such tests unrun for that reason."""
    if tr.limitation:
        words = f"harness limitation: {tr.limitation}"
        return verdict.model_copy(update={"harness_limitation": words, "reason": words})
    if verdict.status != "unresolved" or tr.failure or task.kind == "pick" or not tr.uncollected:
        return verdict
    unrun = [t.test_id for t in verdict.tests if t.expected == "PASS_TO_PASS"
             and t.status in ("missing", "error") and _module_of(t.test_id, tr.uncollected)]  # fmt: skip
    if not unrun:
        return verdict
    base = base_run(task, ctx, tr.env_key, tr.services, tr.framework)
    if not base.uncollected or base.env_key != tr.env_key:
        return verdict
    never = {m: i for i in unrun if (m := _module_of(i, base.uncollected))
             and base.outcomes.get(i, ("missing", ""))[0] in ("missing", "error")}  # fmt: skip
    if not never:
        return verdict
    module = sorted(never)[0]
    why = re.sub(r"^E\s+", "", base.uncollected[module])  # as base runs before 2026-11-28 kept it
    words = (
        f"harness limitation: {module} cannot be collected on the unpatched base either "
        f"({why[:MAX_LIMITATION]}); {len(never)} PASS_TO_PASS test "
        "module(s) do not, and PASS_TO_PASS tests pass before the fix: the harness lacks what "
        "runs them (a runner, settings, a package that imports)"
    )
    return verdict.model_copy(
        update={"status": "error", "harness_limitation": words,
                "reason": f"{words}\n(otherwise: {verdict.reason})"}
    )  # fmt: skip


def _module_of(test_id: str, modules: dict[str, str]) -> str | None:
    """Which of `modules` (test files, `tests/x/test_y.py`) holds `test_id`, as SWE-bench
    names it: `file::...`, or a dotted path inside it (`test_m (x.test_y.Class)`,
    `x.test_y.Class.test_m`: relative to any folder the runner starts in); else None."""
    for module in modules:
        if test_id.startswith(module + "::"):
            return module
    for word in _DOTTED.findall(test_id):
        parts = word.split(".")
        for module in modules:
            dotted = module.removesuffix(".py").replace("/", ".")
            last = dotted.rsplit(".", 1)[-1]
            for k in range(len(parts) - 1, 0, -1):
                head = ".".join(parts[:k])
                if parts[k - 1] == last and (dotted == head or dotted.endswith("." + head)):
                    return module
    return None
