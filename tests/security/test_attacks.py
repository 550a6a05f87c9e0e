"""Hostile submissions through the real evaluation path: the exact verdict, the flags, the host.

See attacks.py for the catalogue (every class of issue 8) and harness.py for how they run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from security.attacks import ATTACKS, KEPT_INFRA, Attack
from security.harness import Outcome, run_attacks
from swebounty.sandbox import bwrap_available

OK, WHY = bwrap_available()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.network,  # the demo environment comes from the package index once
    pytest.mark.skipif(not OK, reason=f"no bwrap sandbox: {WHY}"),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One demo mirror and one environment for every run of this module.
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Outcome:
    return run_attacks(tmp_path_factory.mktemp("hostile"), cache)


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Outcome:
    return run_attacks(
        tmp_path_factory.mktemp("kept"), cache, attacks=KEPT_INFRA, keep_test_infra=True
    )


def test_the_catalogue_covers_every_class_with_at_least_forty_attacks() -> None:
    assert len(ATTACKS) >= 40
    assert {a.klass for a in ATTACKS} == {"host", "grading", "laundering", "resources", "records"}
    assert len({a.name for a in ATTACKS}) == len(ATTACKS)


def test_the_host_is_untouched(outcome: Outcome) -> None:
    assert outcome.host_problems == []


def test_the_harness_secret_is_in_no_log_artifact_or_store_row(outcome: Outcome) -> None:
    assert outcome.secret_seen_in == []


@pytest.mark.parametrize("attack", KEPT_INFRA, ids=lambda a: a.name)
def test_keep_test_infra(kept: Outcome, attack: Attack) -> None:
    assert kept.host_problems == [] and kept.secret_seen_in == []
    check(kept, attack)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack(outcome: Outcome, attack: Attack) -> None:
    check(outcome, attack)


def check(outcome: Outcome, attack: Attack) -> None:
    if attack.name in outcome.skipped:
        pytest.skip(outcome.skipped[attack.name])
    if attack.status == "record_error":
        assert attack.name in outcome.record_errors, "the bad record was not refused"
        assert attack.name not in outcome.verdicts
        return
    verdict = outcome.verdicts.get(attack.name)
    assert verdict is not None, "no verdict: the run did not go on"
    assert verdict.status == attack.status, verdict.reason
    assert set(verdict.hack_flags) == set(attack.flags), verdict.reason
    reverted = {p.removesuffix(" (after the install)") for p in verdict.test_infra_reverted}
    assert reverted == set(attack.reverted)
    assert attack.reason in verdict.reason
    assert Path(verdict.log_dir or "").is_dir()
