"""The CLI package: entry points, --version, and commands that import only what they use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import swebounty
from swebounty.cli import app
from swebounty.cli.collect import FILTER_NAMES
from swebounty.collect.filters import FILTERS

runner = CliRunner()

# Modules a command that does not need them must not pay for at start-up.
HEAVY = (
    "matplotlib",
    "numpy",
    "jinja2",
    "pyarrow",
    "httpx",
    "sqlite3",
    "swebounty.report",
    "swebounty.scoring",
    "swebounty.scores",
    "swebounty.runs",
    "swebounty.envs",
    "swebounty.testrun",
    "swebounty.store",
    "swebounty.tasks",
    "swebounty.collect.github",
    "swebounty.executors",
    "ray",
    # typer's rich help: rich.markdown, markdown-it, pygments (see cli/__init__.py)
    "typer.rich_utils",
    "markdown_it",
)


def _loaded_after(argv: list[str]) -> tuple[int, set[str]]:
    """Run the CLI with `argv` in a fresh interpreter; its exit code and imported modules."""
    code = (
        "import json, sys\n"
        f"sys.argv = ['swebounty', *{argv!r}]\n"
        "from swebounty.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    status = exc.code or 0\n"
        "else:\n    status = 0\n"
        "sys.stderr.write(json.dumps([status, sorted(sys.modules)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    status, modules = json.loads(proc.stderr.splitlines()[-1])
    return status, set(modules)


# typer (0.29+) converts a command's parameters through pydantic, so a command's own --help
# loads it; the top-level --help and --version need not.
@pytest.mark.parametrize(
    ("argv", "also_heavy"),
    [
        (["--help"], ("pydantic",)),
        (["--version"], ("pydantic",)),
        (["eval", "--help"], ()),
        (["score", "--help"], ()),
    ],
)
def test_help_and_version_import_nothing_heavy(
    argv: list[str], also_heavy: tuple[str, ...]
) -> None:
    status, modules = _loaded_after(argv)
    assert status == 0
    heavy_names = (*HEAVY, *also_heavy)
    heavy = sorted(m for m in modules if m.split(".")[0] in heavy_names or m in heavy_names)
    heavy += sorted(m for m in modules if any(m.startswith(h + ".") for h in heavy_names))
    assert not heavy, f"`swebounty {' '.join(argv)}` imported {sorted(set(heavy))}"


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"swebounty {swebounty.__version__}"


def test_python_dash_m_is_the_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "swebounty", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"swebounty {swebounty.__version__}"


def test_every_command_group_is_mounted() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in (
        "eval",
        "runs",
        "score",
        "report",
        "collect",
        "validate",
        "seal",
        "verify-seal",
        "envs",
    ):
        assert command in result.output


def test_filter_names_in_help_match_the_filters() -> None:
    assert tuple(FILTERS) == FILTER_NAMES
