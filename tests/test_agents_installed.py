"""Installed agents (agents/installed.py) without installing one: the registry, the Kprize's
open-code rule, and the choice of the agent environment's interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from env_helpers import tls_refusing_uv
from swebounty.agents import AGENTS, NOT_INSTALLABLE, agent_class, create_agent
from swebounty.agents.installed import AGENT_PYTHON, AgentInstallError, agent_python
from swebounty.agents.provenance import OPEN_AGENTS
from swebounty.envs.interpreters import discover


def test_every_installed_agent_counts_as_open_code() -> None:
    installed = [name for name in AGENTS if getattr(agent_class(name), "installs", False)]
    assert {"mini-swe-agent", "aider", "openhands"} <= set(installed)
    assert set(installed) <= OPEN_AGENTS


def test_an_agent_without_needs_runs_on_the_system_python() -> None:
    assert agent_python("aider", None) == AGENT_PYTHON


def test_the_oldest_interpreter_the_agent_supports_is_chosen() -> None:
    found = discover()
    if not found:
        pytest.skip("no Python 3 interpreter found")
    minors = sorted(i.minor for i in found)
    low, high = minors[0], minors[-1]
    chosen = agent_python("x", f">={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}")
    assert chosen == next(i.executable for i in found if i.minor == low)
    assert "shims" not in chosen.parts and Path(chosen).is_file()  # a real binary, never a shim


def test_no_interpreter_the_agent_supports_says_what_to_do() -> None:
    with pytest.raises(AgentInstallError, match=r"needs Python >=9\.0 .* --option python="):
        agent_python("future-agent", ">=9.0")


def test_the_interpreter_is_mounted_unless_the_sandbox_has_it(tmp_path: Path) -> None:
    from swebounty.agents.installed import InstalledConfig
    from swebounty.agents.openhands import OpenHandsAgent

    config = InstalledConfig(agents_dir=tmp_path, model="m", base_url="http://127.0.0.1:1/v1")
    env = tmp_path / "openhands-0123"
    pyenv = Path("/root/.pyenv/versions/3.12.1")  # under root's 700 home: only a mount reaches it
    agent = OpenHandsAgent(config, env, "1.11.0", pyenv)
    # Its environment is the harness's (under the cache); the interpreter is checked by `run`
    # against what an agent must not see, as a --mount is.
    assert (agent.harness_mounts, agent.mounts()) == ([env], [pyenv])
    assert OpenHandsAgent(config, env, "1.11.0", Path("/usr")).mounts() == []


def test_an_agent_that_does_not_install_says_what_to_do_instead() -> None:
    assert not set(NOT_INSTALLABLE) & set(AGENTS)
    with pytest.raises(ValueError, match=r"SWE-agent is not on PyPI.*--agent command"):
        create_agent("swe-agent", {"model": "m", "base_url": "http://127.0.0.1:1/v1"})


def test_openhands_settings_cannot_point_its_llm_elsewhere(tmp_path: Path) -> None:
    from swebounty.agents.installed import InstalledConfig
    from swebounty.agents.openhands import OpenHandsAgent

    def agent(llm: object) -> OpenHandsAgent:
        config = InstalledConfig(agents_dir=tmp_path, model="m", base_url="http://127.0.0.1:1/v1",
                                 settings={"llm": llm})  # fmt: skip
        return OpenHandsAgent(config, tmp_path / "env", "1.11.0", Path("/usr"))

    with pytest.raises(ValueError, match="base_url of its LLM are the harness's"):
        agent({"base_url": "http://elsewhere/v1", "temperature": 0})
    with pytest.raises(ValueError, match="a dict"):
        agent("gpt-4o")
    assert '"temperature": 0' in agent({"temperature": 0}).env_vars["SWEBOUNTY_AGENT_SETTINGS"]


def test_an_agent_installs_where_only_the_system_certificate_store_trusts_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uv

    from swebounty.agents.installed import install

    monkeypatch.delenv("UV_SYSTEM_CERTS", raising=False)
    before = 'if [ "$1" = venv ]; then mkdir -p "$5"; exit 0; fi\n'
    fake = tls_refusing_uv(tmp_path / "uv", tmp_path / "calls", log="$1", before=before)
    monkeypatch.setattr(uv, "find_uv_bin", lambda: str(fake))
    dest = install(tmp_path / "agents", "a", "a==1", b"runner", "run.py", Path(sys.executable))
    assert (dest / ".complete").read_text() == "a==1"
    assert (tmp_path / "calls").read_text().splitlines() == [" venv", " pip", "1 pip"]
