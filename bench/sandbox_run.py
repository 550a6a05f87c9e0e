"""What the harness's sandboxed test run costs beyond bare pytest, one factor at a time.

    python bench/sandbox_run.py --dataset ../shared/data/swebench_7repos.jsonl \\
        --repos-dir ~/clones [--cache-dir DIR] [-i TASK ...] [--repeat 5] [--json PATH]

Each task is evaluated by the harness (`evaluate_run`, gold, warm environment). When the
harness reaches its sandboxed test run, this bench takes that exact call (argv, workspace,
mounts, policy, key) and, before letting it go on, runs it again --repeat times under each
variant, interleaved round by round (the order rotates), timing wall clock and CPU (the
children's rusage: the launcher, bwrap and everything inside):
- harness: the call as it is (overlay on the workspace, the guard, checked-hash pycs, ...);
- one factor changed: no guard (`python -m pytest` with the same arguments), no seccomp
  filter (an allow-all one instead), no cgroups, the workspace bound writable instead of
  overlaid (on a fresh copy), the seeded pycs with timestamp headers (on a fresh copy), every
  pyc already there (a copy one unguarded run warmed: pytest's rewritten test modules, the
  patched and small modules);
- the runner started from its source rather than its precompiled copy (compiled.py);
- outside: bare pytest, unsandboxed, on that warm copy (what overhead_real.py's bare runs are).
As root the workspace is overlaid, so runs on the harness's own workspace all start from the
same files; the variants on a copy put it at the workspace's path (what the pycs record).
Prints a table per task and writes JSON (bench/results/sandbox_run.json). Times a real
machine: hold `flock -x /work/heavy.lock` around it on a shared one.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchkit import median, table, task_args
from rich.console import Console

from swebounty import bytecode, safefs
from swebounty.evalcontext import EvalContext
from swebounty.pytest_guard import RUNNER
from swebounty.runs import build_task_env, evaluate_run
from swebounty.sandbox import _process, bwrap, seccomp
from swebounty.sandbox.base import Mount
from swebounty.store import Store
from swebounty.tasks import gold_submissions, load_tasks
from swebounty.workdirs import work_root

console = Console(stderr=True)
out = Console(width=160)
TASKS = ["pallets__flask-4992", "pylint-dev__pylint-7993", "sympy__sympy-24152"]
ALLOW_ALL = struct.pack("<HBBI", 0x06, 0, 0, 0x7FFF0000)  # BPF_RET|BPF_K SECCOMP_RET_ALLOW


class _NoCgroups:
    def __init__(self, **_: Any) -> None:
        self.join_spec: list[Any] = []

    def signal_all(self) -> None:
        pass

    def remove(self) -> None:
        pass


def _allow_all_fd() -> int:
    fd = os.memfd_create("bench-allow-all", os.MFD_CLOEXEC)
    os.write(fd, ALLOW_ALL)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


_cgroup_cpu: list[float] = []  # CPU seconds of each sandboxed run's v2 group, in order
_remove = _process.RunCgroups.remove


def _remove_counting(self: _process.RunCgroups) -> None:
    """RunCgroups.remove, reading first what the run's tree (launcher, bwrap, everything
    inside) spent: bwrap's own processes are not all reaped into this process's rusage."""
    for d in self.dirs:
        with contextlib.suppress(OSError, ValueError):
            stat = dict(line.split() for line in (d / "cpu.stat").read_text().splitlines())
            _cgroup_cpu.append(int(stat["usage_usec"]) / 1e6)
    _remove(self)


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds: the run's cgroup's, else (unsandboxed) the children's rusage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    counted = len(_cgroup_cpu)
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if len(_cgroup_cpu) > counted:
        return wall, _cgroup_cpu[-1]
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_seed = bytecode.seed


def _reseed(seeded: tuple[Any, ...] | None, root: Path, stamped: bool) -> None:
    """Copy the harness's pycs into `root` again, with timestamp headers or checked hashes."""
    if seeded is None:
        return
    pyc, skip, began = seeded
    for rel in pyc.files:
        parent, _, name = rel.rpartition("/")
        with contextlib.suppress(FileNotFoundError):
            (root / parent / "__pycache__" / f"{name[:-3]}.{pyc.tag}.pyc").unlink()
    _seed(pyc, root, skip, stamp_before=began if stamped else None)


class Probe:
    """Wraps BwrapSandbox.run: the first result-channel run of each task is measured."""

    def __init__(self, repeat: int, scratch: Path, only: list[str] | None = None) -> None:
        self.repeat = repeat
        self.only = only or []
        self.scratch = scratch
        self.results: dict[str, dict[str, list[tuple[float, float]]]] = {}
        self.task = ""
        self.original = bwrap.BwrapSandbox.run
        self.seeded: tuple[Any, ...] | None = None  # bytecode.seed's last arguments

    def install(self) -> None:
        probe = self

        def run(sb: bwrap.BwrapSandbox, argv: list[str], **kw: Any) -> Any:
            if kw.get("result_channel") and probe.task and probe.task not in probe.results:
                probe.measure(sb, argv, kw)
            return probe.original(sb, argv, **kw)

        bwrap.BwrapSandbox.run = run  # type: ignore[method-assign]

        def seeding(pyc: Any, ws: Path, skip: set[str], stamp_before: Any = None) -> int:
            probe.seeded = (pyc, skip, stamp_before)
            return _seed(pyc, ws, skip, stamp_before=stamp_before)

        bytecode.seed = seeding  # type: ignore[assignment]

    def measure(self, sb: bwrap.BwrapSandbox, argv: list[str], kw: dict[str, Any]) -> None:
        ws: Path = kw["workdir"]
        config = json.loads(Path(argv[-1]).read_text())
        args: list[str] = config["args"]
        plain = [argv[0], "-m", "pytest", *args]
        outside_junit = self.scratch / "junit-outside.xml"
        outside = [argv[0], "-m", "pytest"]
        outside += [
            f"--junitxml={outside_junit}" if a.startswith("--junitxml=") else a for a in args
        ]
        bind_mounts = [
            Mount(path=m.path, writable=True) if Path(m.path) == ws else m for m in kw["mounts"]
        ]
        orig = ws.with_name(ws.name + ".orig")

        def go(a: list[str] = argv, **over: Any) -> object:
            return self.original(sb, a, **{**kw, **over})

        @contextlib.contextmanager
        def copy(prepare: Callable[[], object] | None = None) -> Iterator[None]:
            os.rename(ws, orig)
            try:
                subprocess.run(["cp", "-a", str(orig), str(ws)], check=True)
                if prepare:
                    prepare()
                sb.prepare_workdir(ws)
                yield
            finally:
                safefs.remove_tree(ws)
                os.rename(orig, ws)

        def warm() -> None:
            go(plain, mounts=bind_mounts, stdin=b"", result_channel=False)

        variants: dict[str, Callable[[], tuple[float, float]]] = {}
        variants["harness"] = lambda: _timed(go)
        variants["no guard"] = lambda: _timed(lambda: go(plain, stdin=b"", result_channel=False))

        def no_seccomp() -> tuple[float, float]:
            with _patched(seccomp, "filter_fd", _allow_all_fd):
                return _timed(go)

        def no_cgroups() -> tuple[float, float]:
            with _patched(_process, "RunCgroups", _NoCgroups):
                return _timed(go)[0], float("nan")  # no group to read its CPU from

        def copied() -> tuple[float, float]:
            with copy():
                return _timed(go)

        def bound() -> tuple[float, float]:
            with copy():
                return _timed(lambda: go(mounts=bind_mounts))

        def stamped() -> tuple[float, float]:
            with copy(lambda: _reseed(self.seeded, ws, True)):
                return _timed(go)

        def hashed() -> tuple[float, float]:
            with copy(lambda: _reseed(self.seeded, ws, False)):
                return _timed(go)

        def warmed() -> tuple[float, float]:
            with copy(warm):
                return _timed(go)

        def bare() -> tuple[float, float]:
            env = dict(kw["policy"].env)
            with copy(warm):
                return _timed(lambda: subprocess.run(outside, cwd=ws, env=env, capture_output=True))

        if argv[2].endswith(".pyc"):  # the precompiled runner (pytest_guard/compiled.py)
            source = [argv[0], "-S", str(RUNNER), *argv[3:]]
            variants["runner from its source"] = lambda: _timed(lambda: go(source))
        variants.update(
            {
                "no seccomp": no_seccomp,
                "no cgroups": no_cgroups,
                "copy (control)": copied,
                "copy, plain bind": bound,
                "copy, timestamp pycs": stamped,
                "copy, checked-hash pycs": hashed,
                "copy, warm pycs": warmed,
                "outside, warm copy": bare,
            }
        )
        names = [n for n in variants if not self.only or n in self.only]
        got: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
        for r in range(self.repeat):
            for n in names[r % len(names) :] + names[: r % len(names)]:
                got[n].append(variants[n]())
        self.results[self.task] = got


def main() -> None:
    p = task_args(__doc__)
    p.set_defaults(repeat=5)
    p.add_argument("--only", action="append", help="run only this variant (repeatable)")
    p.add_argument("--json", type=Path, default=Path(__file__).parent / "results/sandbox_run.json")
    args = p.parse_args()
    ids = args.ids or TASKS
    by_id = {t.instance_id: t for t in load_tasks(args.dataset)[0]}
    tasks = [by_id[i] for i in ids]
    root = work_root(args.cache_dir.expanduser().resolve())
    root.mkdir(mode=0o711, parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="swebounty-sandbox-run-", dir=root))
    ctx = EvalContext.create(
        cache_dir=args.cache_dir, runs_dir=work / "runs", repos_dir=args.repos_dir, workers=1
    )
    store = Store(work / "runs" / "runs.sqlite")
    probe = Probe(args.repeat, work, args.only)
    load = os.getloadavg()
    try:
        for t in tasks:
            build_task_env(t, ctx)
        # Warm-up: the bytecode cache and the kept checkouts the workspaces link from.
        pairs = list(zip(tasks, gold_submissions(tasks), strict=True))
        evaluate_run("warm", pairs, ctx, store, force=True)
        probe.install()
        _process.RunCgroups.remove = _remove_counting  # type: ignore[method-assign]
        for t, sub in zip(tasks, gold_submissions(tasks), strict=True):
            console.print(f"{t.instance_id}: {args.repeat} rounds")
            probe.task = t.instance_id
            evaluate_run(f"probe-{uuid.uuid4().hex[:6]}", [(t, sub)], ctx, store, force=True)
    finally:
        bwrap.BwrapSandbox.run = probe.original  # type: ignore[method-assign]
        bytecode.seed = _seed
        _process.RunCgroups.remove = _remove  # type: ignore[method-assign]
        shutil.rmtree(work, ignore_errors=True)
    report: dict[str, Any] = {"loadavg_before": load, "loadavg_after": os.getloadavg()}
    for task, got in probe.results.items():
        base_w = median([w for w, _ in got["harness"]])
        base_c = median([c for _, c in got["harness"]])
        rows = []
        for name, samples in got.items():
            w, c = median([s[0] for s in samples]), median([s[1] for s in samples])
            rows.append([name, f"{w:.3f}", f"{w - base_w:+.3f}", f"{c:.3f}", f"{c - base_c:+.3f}"])
        out.print(table(task, ["variant", "wall s", "vs harness", "CPU s", "vs harness"], rows))
        report[task] = got
    out.print(f"load {load[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
