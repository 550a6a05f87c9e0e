"""Start-up time of the CLI: wall and CPU time of `swebounty --help`, `eval --help` and
`--version`, beside a bare `python -c pass` and typer's own import (the floor), and the import
time of `swebounty.cli` (`python -X importtime`). Every command is run --runs times, interleaved,
so they share the machine's load; the ratio to `python -c pass` of the same run is the figure
to compare across runs, CPU time (user + system of the child) the one load disturbs least.

Target: under 0.2 s for `--help`. Prints a table and writes JSON.

    python bench/startup.py [--runs 7] [--json bench/results/startup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import typer'": [sys.executable, "-c", "import typer"],
    "swebounty --version": [sys.executable, "-m", "swebounty", "--version"],
    "swebounty --help": [sys.executable, "-m", "swebounty", "--help"],
    "swebounty eval --help": [sys.executable, "-m", "swebounty", "eval", "--help"],
    "swebounty score --help": [sys.executable, "-m", "swebounty", "score", "--help"],
}


# As after `pip install`, which compiles the package: an ambient PYTHONDONTWRITEBYTECODE
# would make every start compile swebounty's own modules again (20 ms of CPU here).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU seconds of each command, the commands taking turns (after one
    unmeasured round that leaves the bytecode an installed package has)."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        subprocess.run(argv, capture_output=True, check=True, env=ENV)
    for _ in range(runs):
        for name, argv in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True, env=ENV)
            walls[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {
        name: {"wall_s": statistics.median(walls[name]), "cpu_s": statistics.median(cpus[name])}
        for name in commands
    }


def import_time(module: str) -> float:
    """Cumulative import time of `module`, in seconds, as `-X importtime` reports it."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1e6
    raise RuntimeError(f"no import time for {module}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results/startup.json")
    args = parser.parse_args()
    load = os.getloadavg()
    rows = measure(COMMANDS, args.runs)
    imports = {
        m: statistics.median(import_time(m) for _ in range(args.runs))
        for m in ("swebounty", "swebounty.cli")
    }
    floor = rows["python -c pass"]["wall_s"]
    print(f"{'command':<28} {'wall s':>8} {'cpu s':>8} {'x pass':>8}")
    for name, r in rows.items():
        print(f"{name:<28} {r['wall_s']:>8.3f} {r['cpu_s']:>8.3f} {r['wall_s'] / floor:>8.1f}")
    for module, seconds in imports.items():
        print(f"{'import ' + module:<28} {seconds:>8.3f}")
    help_s = rows["swebounty --help"]["wall_s"]
    verdict = "ok" if help_s < 0.2 else "over"
    print(
        f"target: `swebounty --help` under 0.200 s: {help_s:.3f} s, {verdict} "
        f"({help_s / floor:.1f}x python -c pass; load average {load[0]:.2f}, "
        f"{os.cpu_count()} cpus; median of {args.runs})"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {"commands": rows, "import_s": imports, "runs": args.runs, "loadavg": load},
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
