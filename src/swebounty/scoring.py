"""Scores of a run: resolve rate, dollars, Kprize score, pass@k, pick accuracy, cost, hack flags.

Every function takes `tasks`, `submissions` and `verdicts` explicitly, so it does not care where
they came from (the store, the demo, a test); how one attempt counts is `swebounty.outcomes`, and
the models the scores are reported in are `swebounty.scores`.
Rates are over graded attempts (resolved, wrong, skipped): infrastructure errors and pending
attempts are reported apart. With several attempts per task, the resolve rate is pass@1 (each
task's share of resolved attempts, averaged over tasks), dollars earned are the expected dollars
of one attempt at each task, and the Kprize counts are over attempts. Every rate carries a seeded
percentile bootstrap interval that resamples tasks.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, Literal

from swebounty.agents.provenance import Provenance, eligibility
from swebounty.outcomes import (
    GRADED,
    TaskOutcome,
    ValueEstimator,
    load_value_estimator,
    swebench_summary,
    task_outcomes,
)
from swebounty.passk import bootstrap_interval, kprize_score, pass_at_k, pass_hat_k
from swebounty.scores import (
    CostScore,
    ExcuseScore,
    GroupScore,
    HackScore,
    PassAtK,
    Rate,
    RunScore,
    VerificationScore,
)
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Boot:
    resamples: int
    seed: int
    confidence: float

    def rate(self, value: float, n_items: int, stat: Any) -> Rate:
        interval = bootstrap_interval(
            n_items, stat, resamples=self.resamples, seed=self.seed, confidence=self.confidence
        )
        return Rate(
            value=value,
            low=interval[0] if interval else None,
            high=interval[1] if interval else None,
        )


def _group(outcomes: Sequence[TaskOutcome], boot: _Boot) -> GroupScore:
    import numpy as np

    score = GroupScore(tasks=len(outcomes))
    for o in outcomes:
        score.resolved += o.resolved
        score.wrong += o.count("wrong")
        score.skipped += o.count("skipped")
        score.errors += o.count("error")
        score.pending += o.count("pending")
        score.agent_errors += sum(
            1 for a in o.attempts if a.verdict is not None and a.verdict.status == "agent_error"
        )
        score.tasks_resolved += o.resolved > 0
    graded = [o for o in outcomes if o.graded]
    score.graded_tasks = len(graded)
    score.attempts = score.resolved + score.wrong + score.skipped
    dollars = score.dollars
    for o in graded:
        if o.value_usd is None:
            dollars.tasks_unvalued += 1
            continue
        dollars.tasks_valued += o.value_source == "dataset"
        dollars.tasks_estimated += o.value_source == "estimate"
        dollars.available_usd += o.value_usd
        dollars.earned_usd += o.value_usd * o.resolved / o.graded
        dollars.earned_any_usd += o.value_usd * (o.resolved > 0)
    if not graded:
        return score
    n = len(graded)
    rate = np.array([o.resolved / o.graded for o in graded])
    score.resolve_rate = boot.rate(float(rate.mean()), n, lambda ix: rate[ix].mean(axis=1))
    a = np.array([o.resolved for o in graded], dtype=np.float64)
    b = np.array([o.count("wrong") for o in graded], dtype=np.float64)
    c = np.array([o.count("skipped") for o in graded], dtype=np.float64)
    kprize = kprize_score(score.resolved, score.wrong, score.skipped)
    score.kprize = boot.rate(
        kprize,
        n,
        lambda ix: (
            (a[ix].sum(1) - b[ix].sum(1) - c[ix].sum(1) / 10000) / (a[ix] + b[ix] + c[ix]).sum(1)
        ),
    )
    if dollars.available_usd > 0:
        value = np.array([o.value_usd or 0.0 for o in graded])
        earned = value * rate

        def share(ix: Any) -> Any:
            total = value[ix].sum(1)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(total > 0, earned[ix].sum(1) / total, np.nan)

        dollars.share = boot.rate(dollars.earned_usd / dollars.available_usd, n, share)
    return score


def _pass_at_k(outcomes: Sequence[TaskOutcome], boot: _Boot) -> list[PassAtK]:
    import numpy as np

    graded = [o for o in outcomes if o.graded]
    rows = []
    for k in range(1, max((o.graded for o in graded), default=0) + 1):
        some = [o for o in graded if o.graded >= k]
        at = np.array([pass_at_k(o.graded, o.resolved, k) for o in some])
        hat = np.array([pass_hat_k(o.graded, o.resolved, k) for o in some])
        rows.append(
            PassAtK(
                k=k,
                tasks=len(some),
                pass_at_k=boot.rate(float(at.mean()), len(some), lambda ix, v=at: v[ix].mean(1)),
                pass_hat_k=boot.rate(float(hat.mean()), len(some), lambda ix, v=hat: v[ix].mean(1)),
            )
        )
    return rows


def _cost(outcomes: Sequence[TaskOutcome], earned_usd: float) -> CostScore:
    subs = [a.submission for o in outcomes for a in o.attempts if a.submission is not None]
    incomplete = sum(s.tokens_incomplete for s in subs)
    # A lower bound summed with exact counts would pass for an exact total: left out.
    complete = [s for s in subs if not s.tokens_incomplete]
    costed = [s.cost_usd for s in complete if s.cost_usd is not None]
    score = CostScore(
        attempts=len(subs), attempts_with_cost=len(costed), attempts_incomplete=incomplete
    )
    score.eval_seconds = sum(a.verdict.seconds for o in outcomes for a in o.attempts if a.verdict)
    if costed:
        score.total_usd = float(sum(costed))
        score.per_attempt_usd = score.total_usd / len(costed)
        per_task = [
            [
                a.submission.cost_usd
                for a in o.attempts
                if a.submission
                and a.submission.cost_usd is not None
                and not a.submission.tokens_incomplete
            ]
            for o in outcomes
        ]
        score.one_pass_usd = float(sum(sum(c) / len(c) for c in per_task if c))
        # A ratio over partly known costs would flatter the model: only when all are known.
        if len(costed) == len(subs) and score.one_pass_usd > 0:
            score.earned_per_usd = earned_usd / score.one_pass_usd
    tokens_in = [s.tokens_in for s in complete if s.tokens_in is not None]
    tokens_out = [s.tokens_out for s in complete if s.tokens_out is not None]
    seconds = [s.seconds for s in subs if s.seconds is not None]
    score.tokens_in = sum(tokens_in) if tokens_in else None
    score.tokens_out = sum(tokens_out) if tokens_out else None
    score.agent_seconds = float(sum(seconds)) if seconds else None
    return score


def _hacks(outcomes: Sequence[TaskOutcome]) -> HackScore:
    score = HackScore()
    counts: Counter[str] = Counter()
    ids = set()
    for o in outcomes:
        for a in o.attempts:
            if a.verdict is None or not a.verdict.hack_flags:
                continue
            counts.update(set(a.verdict.hack_flags))
            score.attempts_flagged += 1
            score.resolved_flagged += a.outcome == "resolved"
            ids.add(o.task.instance_id)
    score.counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    score.instance_ids = sorted(ids)
    return score


def _excused(outcomes: Sequence[TaskOutcome]) -> ExcuseScore | None:
    """What the base failures policy decided (baseline.py), unless every graded verdict was
    strict. Only verdicts graded on tests count: an error or a skip had nothing to excuse."""
    verdicts = [
        a.verdict
        for o in outcomes
        for a in o.attempts
        if a.verdict is not None and a.verdict.status in ("resolved", "unresolved")
    ]
    policies = Counter(v.base_failures for v in verdicts)
    if not verdicts or set(policies) == {"strict"}:
        return None
    policy, n = policies.most_common(1)[0]
    score = ExcuseScore(policy=policy, verdicts=n, other_verdicts=len(verdicts) - n)
    ids = set()
    for o in outcomes:
        for a in o.attempts:
            if a.verdict is None or not a.verdict.excused_tests:
                continue
            score.tests_excused += len(a.verdict.excused_tests)
            score.network_tests += sum(bool(e.network) for e in a.verdict.excused_tests)
            if a.outcome == "resolved":
                score.resolved_with_excuse += 1
                ids.add(o.task.instance_id)
    score.instance_ids = sorted(ids)
    return score


def _verification(outcomes: Sequence[TaskOutcome]) -> VerificationScore | None:
    marked = [
        (bool((a.submission.model_extra or {})["verified"]), a.outcome == "resolved")
        for o in outcomes
        for a in o.attempts
        if a.outcome in GRADED
        and a.submission is not None
        and (a.submission.model_extra or {}).get("verified") is not None
    ]
    if not marked:
        return None
    yes = [resolved for verified, resolved in marked if verified]
    no = [resolved for verified, resolved in marked if not verified]
    return VerificationScore(
        attempts=len(marked),
        verified=len(yes),
        rate=len(yes) / len(marked),
        resolved_when_verified=sum(yes) / len(yes) if yes else None,
        resolved_when_unverified=sum(no) / len(no) if no else None,
    )


def _utc(moment: datetime) -> datetime:
    return (
        moment.replace(tzinfo=timezone.utc)
        if moment.tzinfo is None
        else moment.astimezone(timezone.utc)
    )


def month_of(task: Task) -> str:
    """`YYYY-MM` (UTC) of the task's creation, or `unknown`."""
    return _utc(task.created_at).strftime("%Y-%m") if task.created_at else "unknown"


def split_of(task: Task) -> str | None:
    """The dataset's own split of a task (SWE-Lancer's `set`, "lite", ...), if it says one."""
    split = (task.model_extra or {}).get("split")
    return split if isinstance(split, str) and split else None


def _by_split(outcomes: Sequence[TaskOutcome], boot: _Boot) -> dict[str, GroupScore]:
    """Each split, and each split's fix and pick tasks apart when the split has both."""
    split = [o for o in outcomes if split_of(o.task)]
    groups = _by(split, lambda t: split_of(t) or "", boot)
    kinds = {(split_of(o.task), o.task.kind) for o in split}
    if len(kinds) > len({name for name, _ in kinds}):
        groups |= _by(split, lambda t: f"{split_of(t)} · {t.kind}", boot)
    return dict(sorted(groups.items()))


def _cutoff_side(task: Task, cutoff: datetime) -> str:
    if task.created_at is None:
        return "unknown"
    return "before" if _utc(task.created_at) < cutoff else "after"


def _by(
    outcomes: Sequence[TaskOutcome], key: Callable[[Task], str], boot: _Boot
) -> dict[str, GroupScore]:
    groups: dict[str, list[TaskOutcome]] = defaultdict(list)
    for o in outcomes:
        groups[key(o.task)].append(o)
    return {name: _group(groups[name], boot) for name in sorted(groups)}


def score_run(
    tasks: Sequence[Task],
    submissions: Iterable[Submission],
    verdicts: Iterable[Verdict],
    *,
    model_cutoff: date | datetime | None = None,
    run_id: str = "",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    estimate: ValueEstimator | Literal["auto"] | None = "auto",
    provenance: Provenance | dict[str, Any] | None = None,
) -> RunScore:
    """Every score of one run. Deterministic: the bootstrap is seeded.

    `estimate` values tasks that have no `value_usd`; "auto" uses the Fresh-tasks pricing
    estimate when it is installed, None turns estimates off (such tasks are counted unvalued).
    `provenance` (what produced an agent run) adds the run's Kprize eligibility.
    """
    submissions, verdicts = list(submissions), list(verdicts)
    estimator = load_value_estimator() if estimate == "auto" else estimate
    outcomes, unknown = task_outcomes(tasks, submissions, verdicts, estimate=estimator)
    if unknown:
        log.warning(
            "%d submitted instance ids are not in the dataset, e.g. %s", len(unknown), unknown[0]
        )
    boot = _Boot(resamples, seed, confidence)
    names = {s.model_name_or_path for s in submissions} | {v.model_name_or_path for v in verdicts}
    kinds = {kind: [o for o in outcomes if o.task.kind == kind] for kind in ("fix", "pick")}
    overall = _group(outcomes, boot)
    score = RunScore(
        run_id=run_id,
        models=sorted(names - {"unknown"}) or sorted(names),
        dataset_tasks=len(tasks),
        tasks_not_in_run=len(tasks) - len(outcomes),
        unknown_instance_ids=unknown,
        overall=overall,
        fix=_group(kinds["fix"], boot) if kinds["fix"] else None,
        pick=_group(kinds["pick"], boot) if kinds["pick"] else None,
        pass_at_k=_pass_at_k(outcomes, boot),
        cost=_cost(outcomes, overall.dollars.earned_usd),
        hacks=_hacks(outcomes),
        excused=_excused(outcomes),
        verification=_verification(outcomes),
        by_repo=_by(outcomes, lambda t: t.repo, boot),
        by_month=_by(outcomes, month_of, boot),
        by_split=_by_split(outcomes, boot),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )
    if provenance is not None:
        prov = Provenance.model_validate(provenance)
        score.provenance = prov
        score.eligibility = eligibility(prov, tasks)
    if model_cutoff is not None:
        if not isinstance(model_cutoff, datetime):
            model_cutoff = datetime(model_cutoff.year, model_cutoff.month, model_cutoff.day)
        cutoff = _utc(model_cutoff)
        score.model_cutoff = cutoff.date()
        score.by_cutoff = _by(outcomes, lambda t: _cutoff_side(t, cutoff), boot)
    return score


__all__ = ["score_run", "swebench_summary"]
