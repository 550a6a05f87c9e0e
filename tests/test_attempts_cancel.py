"""An interrupted `swebounty run` (attempts.run_agent) stops at once: its main thread waits for
the attempts in slices (interruptible.py), so a Ctrl-C it could not take while blocked still
reaches it; queued attempts are dropped, running sandboxes are ended, and neither the attempt
cut short nor a verdict for it is saved."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, cast

import pytest

from run_helpers import one_attempt
from swebounty import attempts
from swebounty.sandbox import _process
from swebounty.store import Store
from swebounty.tasks import Attempt, Task
from test_interruptible import interrupt_the_waiting_main_thread, python_takes_ctrl_c


def test_a_ctrl_c_the_main_thread_could_not_take_while_it_waited_stops_the_agent_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _, ctx = one_attempt(tmp_path / "runs", executor="local", node=None, base_failures=None)
    killed = threading.Event()
    ended: dict[str, bool] = {}
    ran: list[int] = []

    def kill_running() -> int:
        killed.set()
        return 1

    monkeypatch.setattr(_process, "kill_running", kill_running)

    def agent_in_its_sandbox(task: Task, number: int, *_: Any) -> Attempt:
        ran.append(number)
        interrupt_the_waiting_main_thread()
        ended["by the kill"] = killed.wait(timeout=10)  # a sandbox runs until it is killed
        return Attempt(instance_id=task.instance_id, attempt=number, agent="a",
                       status="agent_error", error="its sandbox was killed")  # fmt: skip

    monkeypatch.setattr(attempts, "run_attempt", agent_in_its_sandbox)
    with python_takes_ctrl_c(), Store.open(tmp_path / "runs.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            attempts.run_agent("r", [task], cast(Any, None), cast(Any, ctx), store, attempts=3)
        assert ended == {"by the kill": True}, "the run waited for the attempt to end"
        assert ran == [1], "queued attempts ran after the interruption"
        assert store.attempts("r") == [] and store.verdicts("r") == [], "a cut attempt was saved"
    assert ctx.cancelled.is_set()
