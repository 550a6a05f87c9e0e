"""Evaluate the hostile submissions of attacks.py through the real path, once, and look at the host.

Shared by tests/security/test_attacks.py and bench/security_report.py. One demo mirror, one
environment, one run of `evaluate_run` with two workers for every attack. While it runs, the
harness's own environment holds a fake secret: afterwards no log, artifact or store row may
contain it.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from security.attacks import ATTACKS, Attack, Link
from swebounty.demo import build_demo
from swebounty.evalcontext import EvalContext
from swebounty.patches import apply_patch
from swebounty.repos import git, make_workspace
from swebounty.runs import evaluate_run, log_dir_for, pair_submissions
from swebounty.store import Store
from swebounty.tasks import RecordError, Task, load_predictions
from swebounty.testrun import build_task_env
from swebounty.verdicts import Verdict

RUN_ID = "hostile"
SECRET_VARS = ("SWEBOUNTY_FAKE_SECRET", "OPENAI_API_KEY", "GITHUB_TOKEN")


@dataclass
class Outcome:
    """What became of every attack, and what the host looked like afterwards."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    record_errors: dict[str, RecordError] = field(default_factory=dict)
    host_problems: list[str] = field(default_factory=list)
    secret_seen_in: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # attack -> why it was not run
    runs_dir: Path = Path()
    seconds: float = 0.0


def _fill(text: str, canary: Path, port: int, token: str) -> str:
    return (
        text.replace("{canary}", str(canary)).replace("{port}", str(port)).replace("{token}", token)
    )


def _pyc_of_fix(task: Task, mirror: Path, env_python: Path, scratch: Path) -> tuple[str, bytes]:
    """The fixed roman.py compiled by the task's own interpreter as an unchecked-hash .pyc."""
    ws = make_workspace(mirror, task.base_commit, scratch / f"pyc-{uuid.uuid4().hex[:6]}")
    apply_patch(ws, task.patch)
    code = (
        "import py_compile, sys; "
        "print(py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True, "
        "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH))"
    )
    tag = subprocess.run(
        [str(env_python), "-c", "import sys; print(sys.implementation.cache_tag)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    target = scratch / "roman.pyc"
    subprocess.run(
        [str(env_python), "-c", code, str(ws / "tinytext" / "roman.py"), str(target)],
        check=True, capture_output=True,
    )  # fmt: skip
    return f"tinytext/__pycache__/roman.{tag}.pyc", target.read_bytes()


def build_patch(
    attack: Attack, task: Task, mirror: Path, scratch: Path, fill: dict[str, object]
) -> str:
    ws = make_workspace(mirror, task.base_commit, scratch / f"ws-{uuid.uuid4().hex[:8]}")
    if attack.fix:
        apply_patch(ws, task.patch)
    canary, port, token = Path(str(fill["canary"])), int(str(fill["port"])), str(fill["token"])
    for rel, content in attack.files.items():
        if rel == "@@pyc@@":
            rel, content = fill["pyc"]  # type: ignore[misc]
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        if content is None:
            continue
        if content == "@@pyproject@@":
            content = _base_file(mirror, task, rel).replace(
                'testpaths = ["tests"]', 'testpaths = ["tests"]\naddopts = "-p tinytext.evil"'
            )
        if isinstance(content, Link):
            path.symlink_to(_fill(content.target, canary, port, token))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(_fill(content, canary, port, token))
    if attack.code:
        init = ws / "tinytext" / "__init__.py"
        init.write_text(init.read_text() + "\n" + _fill(attack.code, canary, port, token))
    git(ws, "add", "-A")
    return git(ws, "diff", "--cached", "--binary", "HEAD").stdout.decode()


def _base_file(mirror: Path, task: Task, rel: str) -> str:
    return git(mirror, "show", f"{task.base_commit}:{rel}").stdout.decode()


def run_attacks(
    workdir: Path,
    cache_dir: Path,
    *,
    attacks: list[Attack] = ATTACKS,
    workers: int = 2,
    keep_test_infra: bool = False,
) -> Outcome:
    """Evaluate `attacks` (bwrap must work here) and check the host; see the module docstring."""
    start = time.monotonic()
    out = Outcome(runs_dir=workdir / "runs")
    mirror, tasks = build_demo(cache_dir / "demo")
    ctx = EvalContext.create(
        cache_dir=cache_dir, runs_dir=out.runs_dir, repos_dir=cache_dir / "demo",
        workers=workers, timeout_s=20, keep_test_infra=keep_test_infra,
    )  # fmt: skip
    # Small bounds, so the floods hit them in a moment; a work dir of its own, so what other
    # runs on this machine leave is not mistaken for this run's leftovers.
    ctx.policy = ctx.policy.model_copy(update={"disk_bytes": 256 << 20, "disk_inodes": 20_000})
    ctx.work_dir = workdir / "work"
    ctx.work_dir.mkdir(mode=0o711)
    env = build_task_env(tasks[0], ctx)
    token = f"swb{uuid.uuid4().hex[:10]}"
    canary = workdir / "canary"
    canary.mkdir(mode=0o777)
    canary.chmod(0o777)  # world-writable: only the sandbox can stop a write here
    (canary / "keep.txt").write_text("host file\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    secret = f"fake-secret-{uuid.uuid4().hex}"
    saved = {k: os.environ.get(k) for k in SECRET_VARS}
    scratch = workdir / "scratch"
    scratch.mkdir()
    fill: dict[str, object] = {
        "canary": canary, "port": listener.getsockname()[1], "token": token,
        "pyc": _pyc_of_fix(tasks[0], mirror, env.interpreter_executable, scratch),
    }  # fmt: skip
    lines, where = [], {}
    for i, attack in enumerate(attacks):
        if attack.needs_root and os.geteuid() != 0:
            out.skipped[attack.name] = "the bound is a tmpfs only root can mount"
            continue
        task = tasks[attack.task]
        record: dict[str, object] = {
            "instance_id": task.instance_id,
            "model_name_or_path": f"attack-{attack.name}",
            "attempt": i + 1,
        }
        if attack.record is None:
            record["model_patch"] = build_patch(attack, task, mirror, scratch, fill)
        else:
            record["model_patch"] = task.patch
            record.update(
                {k: _fill(v, canary, 0, token) if isinstance(v, str) and k == "instance_id" else v
                 for k, v in attack.record.items()}
            )  # fmt: skip
        lines.append(json.dumps(record))
        where[f"line {len(lines)}"] = attack.name
    preds = workdir / "hostile.jsonl"
    preds.write_text("\n".join(lines) + "\n")
    try:
        for name in SECRET_VARS:
            os.environ[name] = secret
        subs, errors = load_predictions(preds)
        pairs, pair_errors = pair_submissions(tasks, subs, str(preds))
        with Store.open(out.runs_dir / "runs.sqlite") as store:
            store.ensure_run(RUN_ID, "demo", {}, "bwrap", False)
            for err in [*errors, *pair_errors]:
                store.add_record_error(RUN_ID, err)
            evaluate_run(RUN_ID, pairs, ctx, store, workers=workers)
            by_key = {(v.instance_id, v.attempt): v for v in store.verdicts(RUN_ID)}
        for sub in subs:
            name = sub.model_name_or_path.removeprefix("attack-")
            if (sub.instance_id, sub.attempt) in by_key:
                out.verdicts[name] = by_key[sub.instance_id, sub.attempt]
        for err in errors:
            if err.where in where:
                out.record_errors[where[err.where]] = err
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    work_dirs = [ctx.work_dir, *([ctx.memory_dir] if ctx.memory_dir else [])]
    out.host_problems = _host_problems(canary, listener, token, work_dirs, out.runs_dir)
    targets = [Path("/"), Path("/usr"), Path("/etc"), Path(env.interpreter_prefix)]
    targets += list(Path(env.path).glob("lib/python*/site-packages"))
    planted = [str(t / f"pwned-{token}") for t in targets if os.path.lexists(t / f"pwned-{token}")]
    if planted:
        out.host_problems.append(f"written on the host: {planted}")
    listener.close()
    out.secret_seen_in = _secret_seen(secret, [out.runs_dir, cache_dir / "base-runs"])
    out.seconds = time.monotonic() - start
    return out


def _host_problems(
    canary: Path, listener: socket.socket, token: str, work_dirs: list[Path], runs_dir: Path
) -> list[str]:
    problems = []
    if sorted(p.name for p in canary.iterdir()) != ["keep.txt"]:
        problems.append(f"the canary directory holds {sorted(p.name for p in canary.iterdir())}")
    if (canary / "keep.txt").read_text() != "host file\n":
        problems.append("the canary file was changed")
    for path in (Path("/tmp") / f"pwned-{token}", Path("/usr") / f"pwned-{token}",
                 Path("/tmp") / f"flood-{token}", Path("/tmp") / f"escaped-{token}"):  # fmt: skip
        if os.path.lexists(path):
            problems.append(f"{path} exists on the host")
            path.unlink()
    try:
        listener.accept()
        problems.append("the host listener was reached")
    except TimeoutError:
        pass
    time.sleep(5)  # the daemon attack waits 4 s before writing
    if (canary / "daemon").exists():
        problems.append("a daemon outlived its run")
    for work_dir in work_dirs:  # on the disk, and in memory (workdirs.make_memory_work_dir)
        leftovers = [p.name for p in work_dir.glob("demo__tinytext-*")] if work_dir.is_dir() else []
        if leftovers:
            problems.append(f"workspaces left in {work_dir}: {leftovers[:5]}")
    survivors = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if token.encode() in Path(entry.path, "cmdline").read_bytes():
                    survivors.append(entry.name)
            except OSError:
                continue
    if survivors:
        problems.append(f"processes of the run survive: {survivors}")
    if any(p.name.startswith("..") for p in runs_dir.parent.iterdir()):
        problems.append("a record escaped the runs directory")
    return problems


def _secret_seen(secret: str, roots: list[Path]) -> list[str]:
    """Every file under `roots` (and every row of the store) that contains `secret`."""
    needle = secret.encode()
    seen = []
    for root in roots:
        if not root.exists():
            continue
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    if needle in path.read_bytes():
                        seen.append(str(path))
                except OSError:
                    continue
        db = root / "runs.sqlite"
        if db.exists():
            with sqlite3.connect(db) as conn:
                for (dump,) in [(line,) for line in conn.iterdump()]:
                    if secret in dump:
                        seen.append(f"{db}: {dump[:80]}")
    return seen


def log_dir(out: Outcome, verdict: Verdict) -> Path:
    return log_dir_for(out.runs_dir, RUN_ID, verdict.instance_id, verdict.attempt)
