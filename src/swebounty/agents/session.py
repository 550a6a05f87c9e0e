"""The agent's side of an attempt: a history-free workspace, the task's environment, the sandbox.

`open_session` builds, in a scratch directory of its own, the workspace at the base commit (one
commit, no history), the task's environment with the workspace installed, a read-only tools
directory (`user-tool`, the command agent's entry point, the public task as JSON) and a
writable output directory. Every command an agent runs goes through `Session.run`: in the
sandbox, no network, the workspace writable, nothing else of the host's files but the
environment and the tools. The hidden tests, the reference patch, the dataset and the store are
never mounted; the workspace's git history ends at the base tree.

The diff that becomes the submission is computed inside the sandbox too (`Session.diff`): the
workspace (its .git included) is the agent's, and running the host's git on it would let a
planted config or attribute run code on the host (principle 9).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from swebounty.envs import EnvBuildError
from swebounty.evalcontext import EvalContext
from swebounty.repos import RepoError
from swebounty.safefs import remove_tree
from swebounty.sandbox import Sandbox, SandboxError
from swebounty.sandbox.base import Mount, Policy, RunResult
from swebounty.tasks import Task
from swebounty.testrun import workspace_and_env

log = logging.getLogger(__name__)

SYSTEM_PYTHON = Path("/usr/bin/python3")
# Files no submission needs: kept out of the diff whatever the repository's .gitignore says.
_EXCLUDE = "__pycache__/\n*.py[cod]\n.pytest_cache/\n*.egg-info/\n"
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_INDEX_FILE": "/tmp/.swebounty-index",
}
# Prints the workspace's tree (tracked and untracked files) from a copy of the index, so the
# agent's own index is untouched; then, given a base tree, the diff from it.
_TREE_AND_DIFF = r"""
set -e
rm -f "$GIT_INDEX_FILE"
if [ -f .git/index ]; then cp .git/index "$GIT_INDEX_FILE"; fi
git add -A
tree=$(git write-tree)
echo "$tree"
if [ -n "$1" ]; then
  git -c diff.noprefix=false -c core.attributesFile=/dev/null diff --binary --no-color \
    --no-ext-diff --no-textconv --no-renames --full-index --src-prefix=a/ --dst-prefix=b/ \
    "$1" "$tree"
fi
"""
HARNESS_STEP_TIMEOUT_S = 300.0


class SessionError(RuntimeError):
    """The session could not be built or used (workspace, environment, sandbox): an
    infrastructure error, never the agent's."""


class WorkspaceGone(RuntimeError):
    """The agent left no readable git workspace behind (it deleted or broke .git): its fault."""


@dataclass
class Session:
    """One attempt's workspace and sandbox, as an agent uses them."""

    workspace: Path
    scratch: Path
    tools_dir: Path
    output_dir: Path
    sandbox: Sandbox
    mounts: list[Mount]
    env: dict[str, str]
    policy: Policy
    deadline: float  # time.monotonic() after which the agent's time is up
    base_tree: str = ""
    commands: int = field(default=0)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float | None = None,
        extra_mounts: list[Mount] | None = None,
        extra_env: dict[str, str] | None = None,
        harness: bool = False,
    ) -> RunResult:
        """Run `argv` in the workspace, in the sandbox. An agent's command never outlives the
        attempt's deadline; `harness` steps (tree, diff) get their own fixed allowance."""
        if harness:
            limit = timeout_s or HARNESS_STEP_TIMEOUT_S
        else:
            limit = self.remaining() if timeout_s is None else min(timeout_s, self.remaining())
        policy = self.policy.model_copy(
            update={"timeout_s": max(limit, 0.1), "env": {**self.env, **(extra_env or {})}}
        )
        if not harness:
            self.commands += 1
        try:
            return self.sandbox.run(
                argv,
                workdir=self.workspace,
                mounts=[*self.mounts, *(extra_mounts or [])],
                policy=policy,
            )
        except SandboxError as exc:
            raise SessionError(f"the sandbox failed: {exc}") from exc

    def bash(self, command: str, *, timeout_s: float | None = None) -> RunResult:
        return self.run(["/bin/bash", "-c", command], timeout_s=timeout_s)

    def tree(self) -> str:
        """The git tree of the workspace as it is now (tracked and untracked, not ignored)."""
        return self._tree_and_diff(with_diff=False)[0]

    def diff(self) -> tuple[str, str]:
        """(final tree, diff from the workspace as the agent got it): the submitted patch."""
        return self._tree_and_diff(with_diff=True)

    def _tree_and_diff(self, *, with_diff: bool) -> tuple[str, str]:
        base = self.base_tree if with_diff else ""
        result = self.run(
            ["/bin/sh", "-c", _TREE_AND_DIFF, "tree-and-diff", base],
            extra_env=_GIT_ENV,
            harness=True,
        )
        if result.returncode != 0 or result.timed_out:
            raise WorkspaceGone(
                "could not read the workspace's changes with git "
                f"(exit {result.returncode}): {result.stderr.strip()[-500:]}"
            )
        if result.truncated:
            raise WorkspaceGone("the workspace's diff is larger than the output limit")
        tree, _, diff = result.stdout.partition("\n")
        if len(tree) not in (40, 64) or not all(c in "0123456789abcdef" for c in tree):
            raise WorkspaceGone(f"git printed no tree id but {tree[:80]!r}")
        return tree, diff


def _tool_files(tools_dir: Path, task_json: str) -> None:
    tools_dir.mkdir(mode=0o755)
    package = resources.files("swebounty.agents") / "tools"
    for name in ("user_tool.py", "agent_entry.py"):
        (tools_dir / name).write_text(package.joinpath(name).read_text(encoding="utf-8"))
    shim = tools_dir / "user-tool"
    shim.write_text(
        '#!/bin/sh\nexec "$SWEBOUNTY_TOOL_PYTHON" -I "$SWEBOUNTY_TOOLS/user_tool.py" "$@"\n'
    )
    shim.chmod(0o755)
    (tools_dir / "task.json").write_text(task_json, encoding="utf-8")


@contextmanager
def open_session(
    task: Task,
    task_json: str,
    ctx: EvalContext,
    sandbox: Sandbox,
    *,
    time_limit_s: float,
) -> Iterator[Session]:
    """Build the attempt's workspace and environment and yield the Session; remove it all after.
    `task_json` is what the agent may know of the task (a PublicTask), given to it as a file.

    Raises SessionError when the workspace, the environment or the install cannot be made.
    """
    scratch = ctx.work_dir / f"agent-{task.instance_id}-{uuid.uuid4().hex[:8]}"
    try:
        try:
            workspace, env = workspace_and_env(task, ctx, scratch)
        except (RepoError, EnvBuildError) as exc:
            raise SessionError(str(exc)) from exc
        # Kept out of the diff: caches and build products the agent's runs leave behind.
        exclude = workspace / ".git" / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        exclude.write_text(_EXCLUDE)
        task_env = ctx.envs.for_task(env, workspace, scratch / "layer")
        tools_dir, output_dir = scratch / "tools", scratch / "out"
        _tool_files(tools_dir, task_json)
        output_dir.mkdir()
        sandbox.prepare_workdir(scratch)
        python = Path(task_env.env["VIRTUAL_ENV"]) / "bin" / "python"
        variables = {
            **task_env.env,
            "PATH": f"{tools_dir}:{task_env.env['PATH']}",
            "SWEBOUNTY_WORKSPACE": str(workspace),
            "SWEBOUNTY_TOOLS": str(tools_dir),
            "SWEBOUNTY_OUTPUT": str(output_dir),
            "SWEBOUNTY_TASK_FILE": str(tools_dir / "task.json"),
            "SWEBOUNTY_PYTHON": str(python),
            "SWEBOUNTY_TOOL_PYTHON": str(SYSTEM_PYTHON if SYSTEM_PYTHON.exists() else python),
            "SWEBOUNTY_TEST_CMD": json.dumps(task_env.test_prefix),
        }
        mounts = [Mount(path=p) for p in [*task_env.ro_paths, tools_dir]]
        mounts += [Mount(path=p, writable=True) for p in [*task_env.rw_paths, output_dir]]
        session = Session(
            workspace=workspace,
            scratch=scratch,
            tools_dir=tools_dir,
            output_dir=output_dir,
            sandbox=sandbox,
            mounts=mounts,
            env=variables,
            policy=ctx.policy,
            deadline=time.monotonic() + time_limit_s,
        )
        if task_env.setup_argv:
            setup = session.run(task_env.setup_argv, harness=True, timeout_s=ctx.policy.timeout_s)
            if setup.returncode != 0 or setup.timed_out:
                raise SessionError(
                    f"installing the workspace failed (exit {setup.returncode}): "
                    f"{setup.stderr.strip()[-1000:]}"
                )
        try:
            session.base_tree = session.tree()
        except WorkspaceGone as exc:
            raise SessionError(f"cannot read the fresh workspace with git: {exc}") from exc
        # The agent's clock starts once everything it needs is ready.
        session.deadline = time.monotonic() + time_limit_s
        yield session
    finally:
        remove_tree(scratch)  # the agent's tree: any depth, links not followed
