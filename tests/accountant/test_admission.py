"""Admission fair sharing usage: decay, weights, score, half-life 0 and persistence.

References: Kueue's pkg/util/admissionfairsharing/admission_fair_sharing_test.go
(TestCalculateDecayedConsumedConvergesToUsage: constant usage 2 from nothing is 1, 1.5 and 1.75
after 1, 2 and 3 half-lives; TestCalculateUsageWithDRA's table) and the formulas of KEP-4136 as
the fair sharing design document states them: α = 1 − 0.5^(Δt / half-life),
usage ← (1 − α)·usage + α·current.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from negotiatord.accountant import AccountantState, AccountantStore, CustomerRecord
from negotiatord.accountant.admission import AdmissionUsage, decay_rate, sample_admission_usage, score, weighted
from negotiatord.accountant.quota_timers import QuotaTimer

HALF_LIFE = 3600.0
T0 = 1_700_000_000.0


@pytest.mark.parametrize("samples_per_half_life", [1, 12, 2016])
def test_constant_usage_2_reaches_1_then_1_5_then_1_75(samples_per_half_life):
    """Kueue samples every 5 minutes with a 168 h half-life (2016 samples a half-life); the series
    does not depend on how often it is sampled."""
    usage = AdmissionUsage({}, T0)
    step = HALF_LIFE / samples_per_half_life
    seen = []
    for half_lives in (1, 2, 3):
        for k in range(1, samples_per_half_life + 1):
            now = T0 + (half_lives - 1) * HALF_LIFE + k * step
            usage = usage.sampled(now, {"cpus": 2.0}, HALF_LIFE)
        seen.append(usage.resources["cpus"])
    assert seen == pytest.approx([1.0, 1.5, 1.75])


def test_alpha_follows_the_formula():
    assert decay_rate(HALF_LIFE, HALF_LIFE) == pytest.approx(0.5)
    assert decay_rate(0.0, HALF_LIFE) == 0.0
    assert decay_rate(2 * HALF_LIFE, HALF_LIFE) == pytest.approx(0.75)


def test_a_half_life_of_0_keeps_no_memory():
    """Kueue makes a half-life of 0 a no-op; here it is the limit of the formula: α = 1, so the
    usage is what the submitter holds now."""
    assert decay_rate(60.0, 0.0) == 1.0
    usage = AdmissionUsage({"cpus": 100.0}, T0).sampled(T0 + 60, {"cpus": 3.0}, 0.0)
    assert dict(usage.resources) == {"cpus": 3.0}


def test_an_idle_submitter_decays_by_half_each_half_life_and_resources_are_folded_separately():
    usage = AdmissionUsage({"cpus": 8.0, "gpus": 2.0}, T0).sampled(T0 + HALF_LIFE, {"gpus": 2.0}, HALF_LIFE)
    assert dict(usage.resources) == pytest.approx({"cpus": 4.0, "gpus": 2.0})


def test_a_clock_stepped_back_folds_nothing_in():
    usage = AdmissionUsage({"cpus": 8.0}, T0).sampled(T0 - 100, {"cpus": 0.0}, HALF_LIFE)
    assert dict(usage.resources) == {"cpus": 8.0}
    assert usage.last_update_time == T0


@pytest.mark.parametrize(("resources", "weights", "factor", "expected"), [
    ({"cpus": 4.0, "gpus": 2.0}, {"cpus": 1.0, "gpus": 5.0}, 1.0, 14.0),   # "mixed CPU and DRA resources"
    ({"gpus": 10.0}, {"gpus": 0.0}, 1.0, 0.0),                               # "weight zero contributes nothing"
    ({"gpus": 2.0}, {"gpus": 3.0}, 1.0, 6.0),                                # "DRA resource with explicit weight"
    ({"cpus": 4.0, "memory": 4096.0}, {"cpus": 1.0}, 1.0, 4.0),              # unnamed resources count 0 here
    ({"gpus": 2.0}, {"gpus": 4.0}, 0.5, 4.0),                                # weight 2 is a factor of 1/2
])
def test_score_weighs_resources_and_divides_by_the_submitter_weight(resources, weights, factor, expected):
    assert score(weighted(resources, weights), 0.0, factor) == pytest.approx(expected)


def test_penalty_adds_to_usage_before_the_weight():
    """TestCalculateUsageWithDRA "in both consumed and penalty": 4·(2 + 1) / 2 = 6."""
    assert score(weighted({"gpu": 2.0}, {"gpu": 4.0}), weighted({"gpu": 1.0}, {"gpu": 4.0}), 0.5) == 6.0


@given(st.floats(0, 1e6), st.floats(0, 1e6), st.floats(0, 1e7), st.floats(0, 1e7))
def test_decayed_usage_stays_between_old_and_current(old, current, elapsed, half_life):
    usage = AdmissionUsage({"cpus": old}, T0).sampled(T0 + elapsed, {"cpus": current}, half_life)
    got = usage.resources.get("cpus", 0.0)
    assert min(old, current) - 1e-6 * max(old, current, 1) <= got <= max(old, current) * (1 + 1e-9) + 1e-9


def test_sampling_covers_known_and_new_submitters():
    state = AccountantState(admission={"alice@site": AdmissionUsage({"cpus": 4.0}, T0)})
    sampled = sample_admission_usage(state, T0 + HALF_LIFE, {"bob@site": {"cpus": 2.0}}, HALF_LIFE)
    assert dict(sampled.admission_usage("alice@site").resources) == pytest.approx({"cpus": 2.0})
    assert dict(sampled.admission_usage("bob@site").resources) == {"cpus": 2.0}   # first sample: current


def test_admission_usage_and_quota_timers_survive_reopen(tmp_path: Path):
    path = tmp_path / "accountant.sqlite"
    state = AccountantState(
        [CustomerRecord.fresh("alice@site")],
        admission={"alice@site": AdmissionUsage({"cpus": 1.5, "gpus": 0.25}, T0)},
        quota_timers={"group_a": QuotaTimer("group_a", {"cpus": 8.0}, 600.0, T0)},
    )
    with AccountantStore(path) as store:
        store.commit_cycle(1, T0, state, {})
    with AccountantStore(path) as store:
        loaded = store.load()
    assert loaded.admission_usage("alice@site") == AdmissionUsage({"cpus": 1.5, "gpus": 0.25}, T0)
    assert loaded.quota_timers == {"group_a": QuotaTimer("group_a", {"cpus": 8.0}, 600.0, T0)}


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_an_older_database_is_upgraded_in_place(tmp_path: Path, version: int):
    path = tmp_path / "accountant.sqlite"
    with AccountantStore(path) as store:
        store.commit_cycle(1, T0, AccountantState([CustomerRecord.fresh("alice@site")]), {"alice@site": 1.0})
    raw = sqlite3.connect(path)
    with raw:       # what each later version added, taken away again
        raw.execute("DROP TABLE admin_edits")
        for column in ("ceiling", "floor"):
            raw.execute(f"ALTER TABLE customers DROP COLUMN {column}")
        if version <= 3:
            raw.execute("ALTER TABLE cycles DROP COLUMN match_seq")
        if version <= 2:
            raw.execute("ALTER TABLE quota_timers DROP COLUMN enforced")
        if version == 1:
            for table in ("admission_usage", "admission_clock", "quota_timers"):
                raw.execute(f"DROP TABLE {table}")
        raw.execute("UPDATE schema_version SET version = ?", (version,))
    raw.close()
    with AccountantStore(path) as store:
        assert [r.name for r in store.load().customers()] == ["alice@site"]
        assert store.charges(1) == {"alice@site": 1.0}
        assert store.last_match_seq() == 0          # not known for a cycle committed before
        store.commit_cycle(2, T0 + 1, AccountantState(
            quota_timers={"g": QuotaTimer("g", {"cpus": 1.0}, 5.0, T0)}), {}, match_seq=7)
        assert store.load().quota_timers["g"].due == T0 + 5
        assert store.last_match_seq() == 7
        assert store.load().record("alice@site").ceiling is None     # none before version 5
        store.set_ceiling("alice@site", 4)
        assert store.load().record("alice@site").ceiling == 4
