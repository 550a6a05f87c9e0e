"""Task, Submission and Attempt: the data that crosses every boundary (files, CLI, store), and
loading datasets and predictions into them. Verdicts are verdicts.py's.

Reads SWE-bench datasets (`.json` list, `.jsonl`, `.parquet`; FAIL_TO_PASS/PASS_TO_PASS as lists
or JSON strings; extra fields kept), Multi-SWE-bench's records (see `multiswe.py`) and SWE-bench
predictions (`.jsonl`, `.json` list, `.json` dict keyed by instance id); `records.py` reads the
files and holds the checks every hostile field passes. Bad records never stop a load: they come
back as `RecordError`s so the caller can report each one and go on.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from swebounty.records import (
    COMMIT_ID,
    REMOTE_HELPER,
    SAFE_REPO,
    bounded_text,
    describe_invalid,
    read_records,
    safe_id,
    strings,
    undecodable_ids,
)
from swebounty.records import (
    RecordError as RecordError,  # defined with the reading, imported from here by callers
)

log = logging.getLogger(__name__)

_ANCESTRY = re.compile(r"(?:\^|~[0-9]{1,3}){1,8}\Z")


MAX_ATTEMPT = 10_000
MAX_PATCH_BYTES = 5 * 1024 * 1024  # a submission's patch (patches.DEFAULT_MAX_PATCH_BYTES)
MAX_TASK_TEXT_BYTES = 32 * 1024 * 1024  # a task's gold or test patch, problem statement
MAX_EXTRA_BYTES = 1024 * 1024  # a submission's fields beyond SWE-bench's


AttemptStatus = Literal["submitted", "skipped", "agent_error", "infra_error"]


class EnvSpec(BaseModel):
    """How to build a task's runtime. Every field is optional: what is missing is inferred."""

    model_config = ConfigDict(extra="forbid")

    python: str | None = Field(None, description="interpreter version ('3.11') or path")
    cutoff: datetime | None = Field(None, description="resolve dependencies as of this date")
    install: list[str] = Field(default_factory=list, description="pip requirement specifiers")
    extras: list[str] = Field(default_factory=list, description="extras of the project")
    requirements: list[str] = Field(
        default_factory=list, description="requirement files of the repo"
    )
    install_project: bool = Field(True, description="install the workspace's own package")
    test_cmd: list[str] | None = Field(None, description="test runner argv before the test files")
    env: dict[str, str] = Field(default_factory=dict, description="variables for the tests")
    # Node tasks (ecosystem "node"): what is not given is inferred from the repository.
    node: str | None = Field(None, description="Node version or range ('20', '18.19.0')")
    app_cmd: list[str] | None = Field(
        None, description="e2e tasks: argv that starts the app in the workspace"
    )
    app_port: int | None = Field(None, description="e2e tasks: the port the app listens on")


class Requirements(BaseModel):
    """What running a task takes beyond what swebounty builds itself, checked before any work
    (needs.py): a task that lacks any is an `error` naming each, never the model's failure."""

    model_config = ConfigDict(extra="forbid")

    local_clone: str | None = Field(
        None, description="the repository must be cloned here already (too large to clone on "
        "demand): how to get it",
    )  # fmt: skip
    files: list[str] = Field(
        default_factory=list, description="absolute paths of files the tests read (flows)"
    )
    programs: list[str] = Field(
        default_factory=list, description="programs on PATH the tests' runtime starts"
    )
    services: list[str] = Field(
        default_factory=list, description="of the service catalog, started beside the tests"
    )
    service_data: dict[str, list[str]] = Field(
        default_factory=dict,
        description="the files a service of `services` reads, by its name (absolute paths: "
        "the recorded flows a replaying backend answers from)",
    )
    browser: bool = Field(False, description="a headless Chromium driven by Playwright")

    @property
    def data_files(self) -> list[str]:
        """Every file of the task's data it names (the tests', the services'): hidden data."""
        return [*self.files, *(f for files in self.service_data.values() for f in files)]


class Task(BaseModel):
    """One unit of work. Field names follow SWE-bench so its datasets load as they are."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str = ""
    hints_text: str = ""
    patch: str = Field("", description="the reference (gold) patch")
    setup_patch: str = Field(
        "",
        description="applied to base_commit to make the task's starting state (SWE-Lancer puts "
        "a fixed bug back); hidden like the reference patch, which it often reveals",
    )
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    version: str | None = None
    environment_setup_commit: str | None = None
    value_usd: float | None = None
    value_source: str | None = None
    kind: Literal["fix", "pick"] = "fix"
    proposals: list[str] = Field(default_factory=list, description="pick tasks: the candidates")
    accepted_proposal: int | None = Field(None, description="pick tasks: index of the real choice")
    env_spec: EnvSpec | None = None
    requires: Requirements | None = Field(
        None, description="what running it takes beyond what swebounty builds (needs.py)"
    )
    repo_url: str | None = Field(None, description="where to clone from, if not GitHub")
    ecosystem: Literal["python", "node"] | None = Field(
        None,
        description="the language of the repository: Python or JavaScript/TypeScript; "
        "unset, the repository's files at the base commit decide (ecosystems.py)",
    )
    test_kind: Literal["unit", "e2e"] = Field(
        "unit",
        description="unit: the project's test runner; e2e: hidden browser tests that "
        "drive the app started by env_spec.app_cmd",
    )

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_string_list(cls, value: Any) -> Any:
        # SWE-bench ships these as JSON strings in some exports and as lists in others.
        if isinstance(value, str):
            value = json.loads(value) if value.strip() else []
        if value is None:
            return []
        return value

    @field_validator("hints_text", "problem_statement", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("instance_id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        return safe_id(value)

    @field_validator("repo")
    @classmethod
    def _check_repo(cls, value: str) -> str:
        if not SAFE_REPO.fullmatch(value) or any(p in (".", "..") for p in value.split("/")):
            raise ValueError(f"repo {value[:80]!r} is not 'owner/name'")
        return value

    @field_validator("base_commit")
    @classmethod
    def _check_commit(cls, value: str) -> str:
        # A commit, or an ancestor of one (`C^`, `C~2`: SWE-Lancer's Manager tasks start at the
        # parent of their fix); git resolves it in the mirror.
        commit = _ANCESTRY.sub("", value)
        if not COMMIT_ID.fullmatch(commit) or ".." in commit:
            raise ValueError(f"base_commit {value[:80]!r} is not a commit id")
        return value

    @field_validator("repo_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        # A dataset says where to clone from, never what git runs or which option it takes.
        if value is not None and (
            value.startswith("-") or REMOTE_HELPER.match(value) or any(c < " " for c in value)
        ):
            raise ValueError(f"repo_url {value[:80]!r} is not a URL or path to clone from")
        return value

    @model_validator(mode="after")
    def _check_text(self) -> Task:
        for field_name in ("patch", "setup_patch", "test_patch", "problem_statement", "hints_text"):
            bounded_text(getattr(self, field_name), MAX_TASK_TEXT_BYTES, field_name)
        for text in strings([*self.FAIL_TO_PASS, *self.PASS_TO_PASS, self.model_extra or {}]):
            bounded_text(text, MAX_TASK_TEXT_BYTES, "a field")
        return self

    @property
    def owner_name(self) -> str:
        """`owner__name`, the folder name SWE-bench tooling uses for a repo."""
        return self.repo.replace("/", "__")


class Submission(BaseModel):
    """What an agent (or a predictions file) proposes for one task."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    model_name_or_path: str = Field("unknown", max_length=500)
    model_patch: str | None = None
    attempt: int = Field(1, ge=1, le=MAX_ATTEMPT)
    pick: int | None = Field(None, ge=0, le=MAX_ATTEMPT)
    cost_usd: float | None = Field(None, ge=0)
    tokens_in: int | None = Field(None, ge=0, le=2**53)
    tokens_out: int | None = Field(None, ge=0, le=2**53)
    tokens_incomplete: bool = Field(
        False, description="tokens and cost are a lower bound (some answer had no usage)"
    )
    seconds: float | None = Field(None, ge=0)

    @field_validator("instance_id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        return safe_id(value)

    @field_validator("cost_usd", "seconds")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _check_text(self) -> Submission:
        bounded_text(self.model_patch or "", MAX_PATCH_BYTES, "model_patch")
        bounded_text(self.model_name_or_path, 2000, "model_name_or_path")
        extra = self.model_extra or {}
        for text in strings(extra):
            bounded_text(text, MAX_EXTRA_BYTES, "a field")
        size = len(json.dumps(extra, default=str))
        if size > MAX_EXTRA_BYTES:
            raise ValueError(f"the extra fields take {size} bytes, over {MAX_EXTRA_BYTES}")
        return self

    @property
    def is_empty(self) -> bool:
        """An empty or null patch is a skip (as in the Kprize), not a wrong answer."""
        return self.pick is None and not (self.model_patch or "").strip()


class Attempt(BaseModel):
    """One agent run on one task: what it submitted, how it got there, what it cost."""

    instance_id: str
    attempt: int = 1
    agent: str
    model: str | None = None
    status: AttemptStatus
    stop_reason: str = Field("", description="submit, skip, step_limit, time_limit, crash, ...")
    error: str = ""
    patch: str = ""
    pick: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    tokens_incomplete: bool = Field(
        False, description="tokens and cost are a lower bound: some answer had no usage"
    )
    seconds: float = 0.0
    verified: bool | None = Field(None, description="ran code on its final state (None: unknown)")
    flags: list[str] = Field(
        default_factory=list, description="hack flags raised while the agent ran"
    )
    workspace: bool | None = Field(
        None,
        description="had a workspace; False: none could be made (a pick task without a clone: "
        "the agent saw the issue and the proposals only); None: the agent uses none",
    )
    started_at: datetime | None = None
    trajectory: list[dict[str, Any]] = Field(default_factory=list, description="JSONL events")

    def submission(self) -> Submission:
        """The attempt as the Submission evaluation and scoring read."""
        return Submission(
            instance_id=self.instance_id,
            model_name_or_path=self.model or self.agent,
            model_patch=self.patch if self.status == "submitted" else "",
            attempt=self.attempt,
            pick=self.pick if self.status == "submitted" else None,
            cost_usd=self.cost_usd,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            tokens_incomplete=self.tokens_incomplete,
            seconds=self.seconds,
            verified=self.verified,
            agent_status=self.status,
        )


# ---------------------------------------------------------------------------- datasets

_NOT_UTF8 = "patch is not valid UTF-8; re-encode the patch as UTF-8"


def _parse(path: Path, model: type[BaseModel]) -> tuple[list[Any], list[RecordError]]:
    items: list[Any] = []
    errors: list[RecordError] = []
    for where, raw in read_records(path):
        if isinstance(raw, Exception):
            errors.append(RecordError(source=str(path), where=where, message=f"not JSON: {raw}"))
            continue
        if not isinstance(raw, dict):
            errors.append(
                RecordError(source=str(path), where=where, message="expected a JSON object")
            )
            continue
        try:
            if model is Task:
                from swebounty.multiswe import is_multi_swe_bench, to_task_record

                if is_multi_swe_bench(raw):
                    try:
                        raw = to_task_record(raw)
                    except (KeyError, TypeError, AttributeError) as exc:
                        raise ValueError(f"not a Multi-SWE-bench record: {exc!r}") from exc
            items.append(model.model_validate(raw))
        except (ValidationError, ValueError, RecursionError) as exc:
            errors.append(RecordError(source=str(path), where=where, message=describe_invalid(exc)))
    return items, errors


def load_tasks(path: str | Path) -> tuple[list[Task], list[RecordError]]:
    """Read a dataset; duplicate instance ids keep the first and report the rest."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset {path} does not exist")
    tasks, errors = _parse(path, Task)
    return first_of_each(tasks, errors, path), errors


def first_of_each(tasks: list[Task], errors: list[RecordError], source: Path) -> list[Task]:
    """The first task of each instance id, in order; every later one is added to `errors`."""
    first: dict[str, Task] = {}
    for task in tasks:
        if task.instance_id not in first:
            first[task.instance_id] = task
            continue
        message = "duplicate instance_id; the first one is used"
        errors.append(RecordError(source=str(source), where=task.instance_id, message=message))
    return list(first.values())


def load_predictions(path: str | Path) -> tuple[list[Submission], list[RecordError]]:
    """Read predictions in SWE-bench's shapes. Patches that are not valid UTF-8 are reported."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"predictions file {path} does not exist")
    raw = path.read_bytes()
    errors: list[RecordError] = []
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Decoding with replacement would silently corrupt a patch; flag the records instead.
        ids = undecodable_ids(raw)
        errors += [RecordError(source=str(path), where=i, message=_NOT_UTF8) for i in ids] or [
            RecordError(source=str(path), where="file", message=f"not valid UTF-8: {exc}")
        ]
    subs, parse_errors = _parse(path, Submission)
    errors.extend(parse_errors)
    bad = {e.where for e in errors if e.message == _NOT_UTF8}
    subs = [s for s in subs if s.instance_id not in bad]
    return subs, errors


def gold_submissions(tasks: Iterable[Task]) -> list[Submission]:
    """The reference patch of every task, as submissions (`--gold`)."""
    return [Submission(instance_id=t.instance_id, model_name_or_path="gold", model_patch=t.patch,
                       pick=t.accepted_proposal if t.kind == "pick" else None)
            for t in tasks]  # fmt: skip


def empty_submissions(tasks: Iterable[Task]) -> list[Submission]:
    """An empty patch for every task (`--empty`): checks that FAIL_TO_PASS really fail."""
    return [
        Submission(instance_id=t.instance_id, model_name_or_path="empty", model_patch="")
        for t in tasks
    ]
