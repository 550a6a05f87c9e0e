"""The harness's stages, timed by wrapping the functions that do them (overhead_real.py)."""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import time
from typing import Any

from benchkit import median

# Stage -> the functions that do it, as (module, attribute path). A function that is not there
# (renamed, moved) is reported and left out; its time then shows under "other".
STAGES: list[tuple[str, str, str]] = [
    ("mirror and commit date", "swebounty.repos", "ensure_mirror"),
    ("mirror and commit date", "swebounty.repos", "commit_date"),
    ("workspace", "swebounty.repos", "make_workspace"),
    ("workspace", "swebounty.pristine", "linked_workspace"),
    ("environment: spec", "swebounty.envs.manager", "EnvManager.spec_for"),
    ("environment: lookup", "swebounty.envs.manager", "EnvManager.ensure"),
    ("patch, reset, test patch", "swebounty.patches", "apply_patch"),
    ("patch, reset, test patch", "swebounty.patches", "reset_files"),
    ("integrity: binaries, test infrastructure", "swebounty.integrity", "strip_compiled"),
    ("integrity: binaries, test infrastructure", "swebounty.integrity", "revert_test_infra"),
    ("integrity: binaries, test infrastructure", "swebounty.integrity", "infra_manifest"),
    ("bytecode cache: plan, compile misses", "swebounty.bytecode", "plan"),
    ("bytecode cache: plan, compile misses", "swebounty.bytecode", "compile_missing"),
    ("bytecode cache: copy into the workspace", "swebounty.bytecode", "seed"),
    ("per-task layer", "swebounty.envs.manager", "EnvManager.for_task"),
    ("font cache", "swebounty.fontcache", "seeds"),
    ("sandbox: workdir to its uid", "swebounty.sandbox.bwrap", "BwrapSandbox.prepare_workdir"),
    ("sandbox run", "swebounty.sandbox.bwrap", "BwrapSandbox.run"),
    ("results: channel, JUnit, cross-check", "swebounty.pytest_guard", "read_channel"),
    ("results: channel, JUnit, cross-check", "swebounty.testing", "parse_junit_bytes"),
    ("results: channel, JUnit, cross-check", "swebounty.pytest_guard", "disagreements"),
    ("base run (failure attribution)", "swebounty.baseline", "base_run"),
    ("grading", "swebounty.grading", "grade"),
    ("store commit", "swebounty.store", "Store.save_verdict"),
    ("cleanup", "swebounty.safefs", "remove_tree"),
]


class Stages:
    """Times the harness's stages by wrapping the functions of STAGES, per task (the thread's
    current task, set by evaluate_one) and per pass; exclusive times (nested stages apart)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.lock = threading.Lock()
        self.passes: list[tuple[str, dict[str, dict[str, float]]]] = []  # (label, per task)
        self.recording = False
        self.missing: list[str] = []
        self._wrap(
            "evaluation glue (logs, verdict)", "swebounty.runs", "evaluate_one", sets_task=True
        )
        for stage, module, attr in STAGES:
            self._wrap(stage, module, attr)

    def _wrap(self, stage: str, module: str, attr: str, sets_task: bool = False) -> None:
        owner: Any = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, name, None)
        if original is None:
            self.missing.append(f"{module}.{attr}")
            return
        stages = self

        @functools.wraps(original)
        def wrapper(*a: Any, **kw: Any) -> Any:
            if sets_task:
                stages.local.task = a[0].instance_id
            return stages._timed(stage, original, a, kw)

        setattr(owner, name, wrapper)
        if not path:  # `from x import f` copies: replace them in every loaded module too
            for mod in list(sys.modules.values()):
                for key, value in list(getattr(mod, "__dict__", {}).items()):
                    if value is original:
                        setattr(mod, key, wrapper)

    def _timed(self, stage: str, fn: Any, a: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        task = getattr(self.local, "task", None)
        if not self.recording or task is None:
            return fn(*a, **kw)
        stack = self.local.__dict__.setdefault("stack", [])
        stack.append(0.0)
        start = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            elapsed = time.perf_counter() - start
            inner = stack.pop()
            if stack:
                stack[-1] += elapsed
            with self.lock:
                per = self.passes[-1][1].setdefault(task, {})
                per[stage] = per.get(stage, 0.0) + elapsed - inner

    def enable(self, label: str = "") -> None:
        self.passes.append((label, {}))
        self.recording = True

    def disable(self) -> None:
        self.recording = False

    def per_task(self, ids: list[str], label: str = "") -> dict[str, dict[str, float]]:
        """task -> stage -> median over the passes of `label` (a stage a pass did not reach
        counts 0)."""
        passes = [p for lbl, p in self.passes if lbl == label]
        names = list(dict.fromkeys(s for p in passes for t in p.values() for s in t))
        return {
            i: {s: median([p.get(i, {}).get(s, 0.0) for p in passes]) for s in names} for i in ids
        }
