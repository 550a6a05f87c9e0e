"""A command that names its own files works, whatever the form of their paths, or is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_helpers import Demo, needs_bwrap, run_one
from swebounty.agents import create_agent
from swebounty.agents.command_paths import normal_form, normalize


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    agents = tmp_path / "agents"
    (agents / "sub").mkdir(parents=True)
    script = agents / "agent.py"
    script.write_text("print('hi')\n")
    return agents, script


def test_paths_are_put_in_normal_form_in_the_command_and_the_mounts(tmp_path: Path) -> None:
    agents, script = _layout(tmp_path)
    command, paths = normalize(f"python3 {agents}/sub/../agent.py --out=/tmp/x > /dev/null")
    assert command == f"python3 {script} --out=/tmp/x > /dev/null"
    assert paths == [script]  # /tmp and /dev are the sandbox's own
    for spelling in (
        f"{agents}/./agent.py",
        f"{agents}//agent.py",
        f"{agents}/sub/../sub/../agent.py",
    ):
        command, paths = normalize(f"python3 '{spelling}' && echo done")
        assert command == f"python3 '{script}' && echo done" and paths == [script]
    # A path that starts another word stays as written there.
    (agents / "agent.pyc").write_bytes(b"")
    command, _ = normalize(f"python3 {agents}/sub/../agent.py {agents}/sub/../agent.pyc")
    assert command.split()[1] == str(script)
    # Normal paths are left alone (a virtualenv's python symlink stays a symlink).
    link = tmp_path / "python"
    link.symlink_to("/usr/bin/env")
    assert normalize(f"{link} -c 1") == (f"{link} -c 1", [link])


def test_the_folder_is_resolved_as_the_kernel_does(tmp_path: Path) -> None:
    elsewhere = tmp_path / "deep" / "er"
    elsewhere.mkdir(parents=True)
    (tmp_path / "link").symlink_to(elsewhere)
    (tmp_path / "deep" / "agent.py").write_text("")
    # link/.. is deep/ for the kernel (the link's target's parent), not tmp_path.
    assert normal_form(f"{tmp_path}/link/../agent.py") == str(tmp_path / "deep" / "agent.py")
    assert os.path.exists(f"{tmp_path}/link/../agent.py")


def test_a_named_path_that_does_not_exist_is_refused_before_the_run(tmp_path: Path) -> None:
    agents, _ = _layout(tmp_path)
    missing = f"{agents}/sub/../nope.py"
    with pytest.raises(ValueError, match=f"names {missing}, which does not exist"):
        create_agent("command", {"command": f"python3 {missing}"})
    with pytest.raises(ValueError, match="mount /no/such/dir does not exist"):
        create_agent("command", {"command": "true", "mounts": ["/no/such/dir"]})
    create_agent("command", {"command": "echo hi > /tmp/out.txt"})  # the sandbox's /tmp


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    return shared_demo


@pytest.mark.sandbox
@needs_bwrap
def test_a_command_with_dots_in_its_path_runs_in_the_sandbox(demo: Demo, tmp_path: Path) -> None:
    agents, script = _layout(tmp_path)
    script.write_text(
        "import pathlib\n"
        "p = pathlib.Path('tinytext/__init__.py')\n"
        "p.write_text(p.read_text() + '# edited\\n')\n"
    )
    agent = create_agent("command", {"command": f"python3 {agents}/sub/../agent.py"})
    [(attempt, _)] = run_one(demo, tmp_path / "runs", demo.task(1), agent)
    assert attempt.status == "submitted", (attempt.error, attempt.trajectory[-2:])
    assert "# edited" in attempt.patch
