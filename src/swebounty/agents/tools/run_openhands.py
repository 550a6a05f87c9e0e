"""Runs OpenHands (PyPI `openhands-ai`: its SDK agent and tools, unchanged) on the public task in
the workspace, inside swebounty's sandbox, with the interpreter of its own environment.

The agent is OpenHands' default one without a browser (`get_default_agent(cli_mode=True)`: its
system prompt, its `terminal`, `file_editor` and `task_tracker` tools, `think` and `finish`, its
condenser), in a local conversation whose workspace is the repository: no Docker, no agent
server. Its model is litellm's `openai/<model>` at swebounty's proxy ($OPENAI_BASE_URL), called
with native function calling. Its edits are its answer when it finishes; an error, a stuck loop
or its iteration limit is a skip (exit 42). Its trajectory is its event log, serialized by its
own models; its final status goes to $SWEBOUNTY_OUTPUT/agent_exit.json.
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

OUTPUT = os.environ["SWEBOUNTY_OUTPUT"]
PROMPT = (
    "The repository is checked out in {cwd}. Resolve the issue below by editing its "
    "non-test files; its hidden tests will check the fix.\n\n{problem}"
)


def _exit(status: str, code: int, **extra: object) -> int:
    with open(os.path.join(OUTPUT, "agent_exit.json"), "w") as fh:
        json.dump({"exit_status": status, **extra}, fh)
    return code


def main() -> int:
    task = json.load(sys.stdin)
    settings = json.loads(os.environ.get("SWEBOUNTY_AGENT_SETTINGS") or "{}")
    # Its own caches and notes are not part of the answer.
    with open(os.path.join(".git", "info", "exclude"), "a") as fh:
        fh.write("\n.openhands/\n")

    from openhands.sdk import LLM, Conversation
    from openhands.sdk.conversation.state import ConversationExecutionStatus
    from openhands.tools.preset.default import get_default_agent

    llm = LLM(
        model="openai/" + os.environ["SWEBOUNTY_MODEL"],
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "swebounty"),
        usage_id="agent",
        num_retries=int(settings.get("num_retries", 3)),
        retry_min_wait=1,
        retry_max_wait=10,
        **settings.get("llm", {}),
    )
    agent = get_default_agent(llm, cli_mode=True)
    conversation = Conversation(
        agent=agent,
        workspace=os.getcwd(),
        max_iteration_per_run=int(settings.get("max_iterations", 100)),
        visualizer=None,
    )
    message = settings.get("prompt", PROMPT)
    conversation.send_message(message.format(cwd=os.getcwd(), problem=task["problem_statement"]))
    crash = None
    try:
        conversation.run()
    except Exception as exc:  # its own error event is in the log too
        crash = f"{type(exc).__name__}: {exc}"[:2000]
    state = conversation.state
    events = [event.model_dump(mode="json") for event in state.events]
    with open(os.path.join(OUTPUT, "openhands.events.json"), "w") as fh:
        json.dump(events, fh)
    status = getattr(state.execution_status, "value", str(state.execution_status))
    metrics = state.stats.get_combined_metrics()
    usage: dict[str, object] = {"accumulated_cost": metrics.accumulated_cost}
    if metrics.accumulated_token_usage is not None:
        usage.update(metrics.accumulated_token_usage.model_dump(mode="json"))
    conversation.close()
    if state.execution_status == ConversationExecutionStatus.FINISHED and crash is None:
        return _exit(status, 0, usage=usage)
    errors = [e for e in events if e.get("kind") == "ConversationErrorEvent"]
    why = crash or (errors[-1].get("detail") if errors else None)
    return _exit(status, 42, error=why, usage=usage)


if __name__ == "__main__":
    sys.exit(main())
