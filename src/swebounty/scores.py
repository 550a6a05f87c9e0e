"""Scores: the models a run's numbers are reported in (JSON, the CLI's tables, the HTML report).

A RunScore holds the whole run and its groups (fix and pick tasks, by repository, by month, by
the model's cutoff); each GroupScore has counts, dollars and rates, and every rate is a Rate: a
point estimate with its bootstrap interval. What the numbers mean is DESIGN.md's "Scoring";
computing them from tasks, submissions and verdicts is `scoring.py`'s.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, Field

from swebounty.agents.provenance import Eligibility, Provenance


class Rate(BaseModel):
    """A point estimate with its bootstrap confidence interval (None when undefined)."""

    value: float
    low: float | None = None
    high: float | None = None


class Dollars(BaseModel):
    earned_usd: float = Field(
        default=0.0, description="expected dollars for one attempt at each task"
    )
    earned_any_usd: float = Field(
        default=0.0, description="dollars of tasks resolved by any attempt"
    )
    available_usd: float = Field(
        default=0.0, description="dollars of the graded tasks that have a value"
    )
    share: Rate | None = None
    tasks_valued: int = Field(
        default=0, description="graded tasks whose value comes from the dataset"
    )
    tasks_estimated: int = Field(
        default=0, description="graded tasks valued by the pricing estimate"
    )
    tasks_unvalued: int = Field(
        default=0, description="graded tasks with no value: not counted as $0"
    )


class GroupScore(BaseModel):
    """Scores over one group of tasks (a run, a repo, a month, a kind)."""

    tasks: int = Field(default=0, description="tasks with at least one attempt")
    graded_tasks: int = Field(default=0, description="tasks with at least one graded attempt")
    attempts: int = Field(default=0, description="graded attempts: resolved + wrong + skipped")
    resolved: int = 0
    wrong: int = 0
    skipped: int = 0
    errors: int = Field(
        default=0, description="infrastructure errors, not counted against the model"
    )
    agent_errors: int = Field(
        default=0, description="attempts whose agent crashed: counted as skipped (no patch)"
    )
    pending: int = Field(default=0, description="submitted, not evaluated yet")
    tasks_resolved: int = Field(default=0, description="tasks resolved by at least one attempt")
    resolve_rate: Rate | None = None
    kprize: Rate | None = None
    dollars: Dollars = Field(default_factory=lambda: Dollars())


class PassAtK(BaseModel):
    k: int
    tasks: int = Field(description="tasks with at least k graded attempts")
    pass_at_k: Rate
    pass_hat_k: Rate


class CostScore(BaseModel):
    attempts: int = Field(default=0, description="attempts with a submission")
    attempts_with_cost: int = 0
    attempts_incomplete: int = Field(
        default=0,
        description="attempts whose tokens are a lower bound (an answer had no usage): their "
        "tokens and cost are left out of every total, so attempts_with_cost is short of attempts",
    )
    total_usd: float | None = None
    per_attempt_usd: float | None = None
    one_pass_usd: float | None = Field(
        default=None, description="cost of one attempt at each task: what `earned_usd` cost"
    )
    earned_per_usd: float | None = Field(
        default=None,
        description="earned_usd / one_pass_usd; only when every attempt has a cost",
    )
    tokens_in: int | None = None
    tokens_out: int | None = None
    agent_seconds: float | None = None
    eval_seconds: float = 0.0


class HackScore(BaseModel):
    counts: dict[str, int] = Field(default_factory=dict, description="attempts raising each flag")
    attempts_flagged: int = 0
    resolved_flagged: int = Field(
        default=0, description="resolved attempts with a flag: check these"
    )
    instance_ids: list[str] = Field(default_factory=list)


class ExcuseScore(BaseModel):
    """The base failures policy (baseline.py) in a run: which, and what it decided."""

    policy: str = Field(
        default="all", description="network, all (or strict): the policy of most verdicts"
    )
    verdicts: int = Field(description="verdicts graded under the policy")
    other_verdicts: int = Field(
        default=0, description="verdicts of the run graded under another (a run should not mix)"
    )
    resolved_with_excuse: int = Field(
        default=0, description="resolved attempts that needed an excused PASS_TO_PASS test"
    )
    tests_excused: int = Field(default=0, description="excused tests over every attempt")
    network_tests: int = Field(
        default=0, description="of them, tests whose base run failed for want of the network"
    )
    instance_ids: list[str] = Field(
        default_factory=list, description="tasks with an attempt resolved thanks to an excuse"
    )


class VerificationScore(BaseModel):
    """Agents that check their own work say so (`verified`); how often, and how well."""

    attempts: int
    verified: int
    rate: float
    resolved_when_verified: float | None = None
    resolved_when_unverified: float | None = None


class RunScore(BaseModel):
    run_id: str = ""
    models: list[str] = Field(default_factory=list)
    dataset_tasks: int = Field(default=0, description="tasks given to the scorer")
    tasks_not_in_run: int = Field(default=0, description="tasks with no attempt in this run")
    unknown_instance_ids: list[str] = Field(default_factory=list)
    overall: GroupScore
    fix: GroupScore | None = None
    pick: GroupScore | None = Field(
        default=None, description="pick tasks: accuracy and dollars apart"
    )
    pass_at_k: list[PassAtK] = Field(default_factory=list)
    cost: CostScore = Field(default_factory=lambda: CostScore())
    hacks: HackScore = Field(default_factory=lambda: HackScore())
    excused: ExcuseScore | None = Field(
        default=None,
        description="the base failures policy; None: every graded verdict was strict",
    )
    verification: VerificationScore | None = None
    provenance: Provenance | None = Field(default=None, description="what produced the run")
    eligibility: Eligibility | None = Field(
        default=None, description="the Kprize's rule: open code, open weights, offline, fresh"
    )
    by_repo: dict[str, GroupScore] = Field(default_factory=dict)
    by_month: dict[str, GroupScore] = Field(default_factory=dict)
    by_split: dict[str, GroupScore] = Field(
        default_factory=dict, description="the dataset's own splits (SWE-Lancer's set), if any"
    )
    model_cutoff: date | None = None
    by_cutoff: dict[str, GroupScore] | None = Field(
        default=None, description="'before' / 'after' the model cutoff ('unknown': no created_at)"
    )
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
