"""An evaluation's inputs: the dataset and the submissions, loaded and checked.

A dataset is a bundled demo, a file in any known format (formats.py) or a Hugging Face name;
submissions are "gold", "empty", predictions files or `Submission` objects, numbered into
attempts. An input that cannot work is one `EvalInputError` line naming it; a bad record is
not fatal, it comes back as a RecordError.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from swebounty.formats import load_file
from swebounty.tasks import (
    RecordError,
    Submission,
    Task,
    empty_submissions,
    gold_submissions,
    load_predictions,
)

if TYPE_CHECKING:
    from swebounty.store import Store
    from swebounty.verdicts import BaseFailures

DEMO = "demo"

Submissions = Literal["gold", "empty"] | str | Path | Sequence[str | Path] | Sequence[Submission]


class EvalInputError(ValueError):
    """An input that makes the evaluation impossible; the message is one line saying which."""


def load_dataset(
    dataset: str, cache_dir: Path, *, split: str = "test"
) -> tuple[list[Task], list[RecordError], Path | None, str]:
    """Tasks of a dataset: a bundled demo (`demo`, `demo:js`, `demo:web`), a file, or a Hugging
    Face dataset name (from the local cache).

    Also returns the repos dir the demo needs and the label that finds the dataset again (an
    absolute path, `demo`, or `hf://owner/name:split`), stored with the run.
    """
    if dataset == DEMO or dataset.startswith(f"{DEMO}:"):  # demo, demo:js, demo:web
        from swebounty.demo import build_demo

        which = dataset.partition(":")[2] or "python"
        mirror, tasks = build_demo(cache_dir.expanduser() / "demo", which)
        return tasks, [], mirror.parent, dataset
    from swebounty import hub

    name = hub.dataset_name(dataset)
    if name is not None:
        repo_id, split = hub.split_label(name, split)
        tasks, errors = hub.load_hub_dataset(repo_id, split)
        return tasks, errors, None, hub.label(repo_id, split)
    path = Path(dataset).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"dataset {dataset} does not exist (a file, 'demo', or a Hugging Face name "
            "like princeton-nlp/SWE-bench_Lite)"
        )
    tasks, errors = load_file(path)
    return tasks, errors, None, str(path.resolve())


def number_attempts(subs: list[Submission]) -> list[Submission]:
    """Several predictions for one task without an explicit `attempt` become attempts 1, 2, …"""
    seen: dict[str, set[int]] = {}
    for sub in subs:
        taken = seen.setdefault(sub.instance_id, set())
        if "attempt" not in sub.model_fields_set:
            sub.attempt = 1
            while sub.attempt in taken:
                sub.attempt += 1
        taken.add(sub.attempt)
    return subs


def load_submissions(
    tasks: list[Task], submissions: Submissions
) -> tuple[list[Submission], list[RecordError], list[tuple[str, list[Submission]]], str]:
    """(submissions, their record errors, submissions by source file, kind).

    The kind ("gold", "empty", "submissions" or the first file's stem) names the run by default.
    """
    if isinstance(submissions, str) and submissions in ("gold", "empty"):
        make = gold_submissions if submissions == "gold" else empty_submissions
        return make(tasks), [], [], submissions
    if isinstance(submissions, (str, Path)):
        submissions = [submissions]
    items = list(submissions)
    if items and all(isinstance(s, Submission) for s in items):
        subs = number_attempts([s for s in items if isinstance(s, Submission)])
        return subs, [], [("submissions", subs)], "submissions"
    paths = [Path(item) for item in items if not isinstance(item, Submission)]
    if len(paths) != len(items):
        raise EvalInputError("give submissions as Submission objects or as files, not both")
    errors: list[RecordError] = []
    by_file: list[tuple[str, list[Submission]]] = []
    for path in paths:
        try:
            loaded, load_errors = load_predictions(path)
        except FileNotFoundError as exc:
            raise EvalInputError(str(exc)) from exc
        by_file.append((str(path), loaded))
        errors += load_errors
    if not by_file:
        raise EvalInputError("no submissions: give 'gold', 'empty' or predictions files")
    subs = number_attempts([s for _, loaded in by_file for s in loaded])
    return subs, errors, by_file, paths[0].stem


def run_datasets(run: dict[str, Any]) -> list[str]:
    """The datasets a run holds tasks of: its own, then any added with `add_to_run`."""
    config = run.get("config") if isinstance(run.get("config"), dict) else {}
    added = config.get("added_datasets") if isinstance(config, dict) else None
    return [str(run["dataset"]), *(str(a) for a in added or [])]


def dataset_change(run: dict[str, Any] | None, holds: bool, dataset: str) -> str | None:
    """Why a run (its store record; `holds`: it has submissions or verdicts) cannot take tasks
    of `dataset`, or None. A run is one dataset: two in one would share one report and one
    score without anyone asking for it (a JavaScript demo's and a Python dataset's verdicts
    under one `gold` run)."""
    if run is None or not holds:
        return None
    known = run_datasets(run)
    if dataset in known:
        return None
    also = f" (and {len(known) - 1} added)" if len(known) > 1 else ""
    return (
        f"run {run['run_id']} is a run of {known[0]}{also}, not of {dataset}: one run holds one "
        f"dataset, so its report and scores do not mix two. Give another --run-id, or "
        f"add this dataset's tasks to that run on purpose (eval --add-to-run)"
    )


def run_conflict(
    store: Store, run_id: str, dataset: str, policy: BaseFailures, *, add: bool = False
) -> str | None:
    """Why run `run_id` cannot take `dataset`'s tasks graded under `policy`, or None: one
    run never mixes two grading policies, nor (unless `add`) two datasets."""
    from swebounty.baseline import policy_change

    run = store.run(run_id)
    graded = bool(store.statuses(run_id))
    holds = graded or bool(store.submissions(run_id))
    return policy_change(run, graded, policy) or (
        None if add else dataset_change(run, holds, dataset)
    )
