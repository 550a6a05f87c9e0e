"""What the benches over real tasks with warm environments share (overhead_real.py,
bytecode_cache.py and their parts): the issue's tasks, the options, timing and tables."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.table import Table

# The mix: flask, pylint x2, sympy x2, seaborn, sphinx (environments that build today).
DEFAULT_TASKS = [
    "pallets__flask-4992",
    "pylint-dev__pylint-7228",
    "pylint-dev__pylint-7993",
    "sympy__sympy-23191",
    "sympy__sympy-24152",
    "mwaskom__seaborn-3010",
    "sphinx-doc__sphinx-10466",
]


def task_args(description: str | None) -> argparse.ArgumentParser:
    """The options of a bench over real tasks with warm environments (this one and
    bytecode_cache.py): the dataset, the clones, the cache, which tasks, how many repeats."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--repos-dir", type=Path, required=True, help="clones named owner__name")
    default_cache = Path(os.environ.get("SWEBOUNTY_CACHE", "~/.cache/swebounty"))
    p.add_argument("--cache-dir", type=Path, default=default_cache)
    p.add_argument("-i", "--instance-id", action="append", dest="ids", help="default: 7 tasks")
    p.add_argument("--repeat", type=int, default=3)
    return p


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def junit_time(path: Path) -> float | None:
    """pytest's own session time (the testsuite's `time`), without interpreter start-up."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return sum(float(s.get("time", "0")) for s in suites)


def timed_run(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - start


def table(title: str, columns: list[str], rows: list[list[str]]) -> Table:
    t = Table(title=title)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*r)
    return t
