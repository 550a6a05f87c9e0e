"""Install size of swebounty's core and of each extra, each in a fresh virtual environment.

For each target it makes an empty venv with uv, installs this checkout (not editable) with
that extra, and measures the venv on disk minus an empty venv, and how many distributions it
holds. Needs the package index (or uv's cache). Prints a table and writes JSON.

    python bench/install_size.py [--extras core report parquet hub ray test docs dev] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from uv import find_uv_bin

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["core", "report", "parquet", "hub", "ray", "test", "docs", "dev"]


def tree_size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                total += os.lstat(p).st_size
    return total


def venv(uv: str, where: Path) -> Path:
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(where)], check=True)
    return where / "bin" / "python"


def measure(uv: str, target: str, base_bytes: int, work: Path) -> dict[str, object]:
    where = work / target
    python = venv(uv, where)
    spec = str(ROOT) if target == "core" else f"{ROOT}[{target}]"
    start = time.monotonic()
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), spec],
        check=True,
        env={**os.environ, "UV_LINK_MODE": "copy"},  # sizes of real files, not hard links
    )
    seconds = time.monotonic() - start
    listed = subprocess.run(
        [uv, "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    packages = json.loads(listed.stdout)
    size = tree_size(where) - base_bytes
    shutil.rmtree(where, ignore_errors=True)
    return {"mb": round(size / 1e6, 1), "packages": len(packages), "install_s": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--extras", nargs="*", default=DEFAULT)
    parser.add_argument(
        "--json", type=Path, default=Path(__file__).parent / "results/install_size.json"
    )
    args = parser.parse_args()
    uv = find_uv_bin()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="swebounty-install-") as tmp:
        work = Path(tmp)
        venv(uv, work / "empty")
        base = tree_size(work / "empty")
        for target in args.extras:
            results[target] = measure(uv, target, base, work)
            row = results[target]
            print(f"measured {target}: {row['mb']} MB", file=sys.stderr)
    print(f"{'install':<10} {'MB':>8} {'packages':>9} {'install s':>10}")
    for target, row in results.items():
        name = "core" if target == "core" else f"[{target}]"
        print(f"{name:<10} {row['mb']:>8} {row['packages']:>9} {row['install_s']:>10}")
    print("(each row is a whole install: the core plus that extra)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
