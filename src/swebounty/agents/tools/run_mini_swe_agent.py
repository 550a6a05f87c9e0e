"""Runs mini-swe-agent (its own DefaultAgent, LitellmModel and LocalEnvironment, unchanged) on the
public task in the workspace, inside swebounty's sandbox, with the interpreter of its own
environment. Its configuration is its own benchmark config (swebench.yaml by default) with the
model pointed at swebounty's proxy ($OPENAI_BASE_URL) and the environment made local.

Its answer, as for SWE-bench, is the patch it submits: the workspace is reset to the base and the
patch applied, so the diff swebounty takes is that patch. An empty submission, or a stop at a
limit or after repeated format errors, is a skip (exit 42). The trajectory is mini-swe-agent's
own file; its exit status goes to $SWEBOUNTY_OUTPUT/agent_exit.json.
"""

import json
import os
import subprocess
import sys

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")  # a local model has no price
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import

from minisweagent.agents.default import DefaultAgent
from minisweagent.config import get_config_from_spec
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models import get_model
from minisweagent.utils.serialize import recursive_merge

OUTPUT = os.environ["SWEBOUNTY_OUTPUT"]


def _exit(status: str, code: int, **extra: object) -> int:
    with open(os.path.join(OUTPUT, "agent_exit.json"), "w") as fh:
        json.dump({"exit_status": status, **extra}, fh)
    return code


def main() -> int:
    task = json.load(sys.stdin)
    settings = json.loads(os.environ.get("SWEBOUNTY_AGENT_SETTINGS") or "{}")
    config = get_config_from_spec(settings.get("config", "swebench.yaml"))
    config = recursive_merge(config, settings.get("overrides", {}))
    model_config = dict(config.get("model", {}))
    model_config.pop("model_class", None)
    model_config["model_name"] = "openai/" + os.environ["SWEBOUNTY_MODEL"]
    model_config["model_kwargs"] = {
        **model_config.get("model_kwargs", {}),
        "api_base": os.environ["OPENAI_BASE_URL"],
        "api_key": os.environ.get("OPENAI_API_KEY", "swebounty"),
    }
    model_config["cost_tracking"] = "ignore_errors"
    env_config = dict(config.get("environment", {}))
    env_config.pop("environment_class", None)
    env_config["cwd"] = os.getcwd()  # the workspace, not the config's /testbed
    agent_config = {
        **config.get("agent", {}),
        "output_path": os.path.join(OUTPUT, "mini-swe-agent.traj.json"),
    }
    agent_config.pop("agent_class", None)
    agent_config.pop("mode", None)
    agent = DefaultAgent(
        get_model(config=model_config), LocalEnvironment(**env_config), **agent_config
    )
    result = agent.run(task["problem_statement"])
    status, submission = result.get("exit_status", ""), result.get("submission") or ""
    if status != "Submitted" or not submission.strip():
        return _exit(status or "unknown", 42)
    # Its answer is the patch it submitted: that alone is what it changed.
    subprocess.run(["git", "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "clean", "-q", "-fd"], check=True)
    applied = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"], input=submission.encode()
    )
    if applied.returncode != 0:
        return _exit(status, 3, error="the submitted patch does not apply")
    return _exit(status, 0)


if __name__ == "__main__":
    sys.exit(main())
