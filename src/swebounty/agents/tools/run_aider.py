"""Runs Aider (PyPI `aider-chat`, unchanged: its own `main`) on the public task in the workspace,
inside swebounty's sandbox, with the interpreter of its own environment: one message (the
problem statement), every confirmation answered yes, no commits, no network but the model
($OPENAI_BASE_URL through swebounty's proxy). Its edits in the workspace are its answer; an
answer with no edit leaves the workspace as it was, which is a skip. Its chat and LLM histories
go to $SWEBOUNTY_OUTPUT; its exit code to $SWEBOUNTY_OUTPUT/agent_exit.json.
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import

OUTPUT = os.environ["SWEBOUNTY_OUTPUT"]


def main() -> int:
    task = json.load(sys.stdin)
    settings = json.loads(os.environ.get("SWEBOUNTY_AGENT_SETTINGS") or "{}")
    message = "/tmp/swebounty-task.md"
    with open(message, "w") as fh:
        fh.write(task["problem_statement"])
    # Its caches are its own, not part of the answer.
    with open(os.path.join(".git", "info", "exclude"), "a") as fh:
        fh.write("\n.aider*\n")
    argv = [
        "--model", "openai/" + os.environ["SWEBOUNTY_MODEL"],
        "--openai-api-base", os.environ["OPENAI_BASE_URL"],
        "--openai-api-key", os.environ.get("OPENAI_API_KEY", "swebounty"),
        "--message-file", message,
        "--yes-always", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore",
        "--no-check-update", "--no-analytics", "--no-show-model-warnings", "--no-pretty",
        "--no-fancy-input", "--no-restore-chat-history", "--no-show-release-notes",
        "--chat-history-file", os.path.join(OUTPUT, "aider.chat.history.md"),
        "--llm-history-file", os.path.join(OUTPUT, "aider.llm.history"),
        "--input-history-file", "/tmp/aider.input.history",
        "--edit-format", str(settings.get("edit_format", "diff")),
        "--map-tokens", str(settings.get("map_tokens", 1024)),
        *[str(a) for a in settings.get("args", [])],
    ]  # fmt: skip
    from aider.main import main as aider

    code = aider(argv) or 0
    with open(os.path.join(OUTPUT, "agent_exit.json"), "w") as fh:
        json.dump({"exit_status": "exited" if code == 0 else f"exit {code}"}, fh)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
