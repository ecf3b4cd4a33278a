"""No slot is left idle that the quotas would give away. After a cycle, no waiting job whose
concurrency limits have room matches a slot the cycle left idle while its group, and every group
above it, accepts surplus: the quotas could not have kept that slot from it (surplus reaches such a
group whenever the pool has room, and remainder rounds hand what is left of a group's allocation
to its submitters one match at a time, so none is held below its limit). Such a job would mean
quota was held for work that could not start (docs/deviations.md, "Demand is what can run").

Checked on the bundled sample (every config), on the OSPool sample with HTCondor's own job ads, and
on random pools with concurrency limits and groups that refuse surplus.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import classad2
import pytest
from hypothesis import HealthCheck, example, given, seed, settings as hsettings, strategies as st

from negotiatord.accountant import AccountantState
from negotiatord.ads.reader import read_ads
from negotiatord.cycle.result import CycleResult, Match
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.store import JobAds, PoolView
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.jobs import job_id, submitter_of
from negotiatord.publish.holds import holds_for
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, load_settings
from tests.builders import group, jobs, settings, static_slot
from tests.commands import test_negotiate as ospool
from tests.cycle.test_properties import POLICIES, slots_of

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_NOW = 1_750_000_000
NOW = 1_700_000_000


def cycle(slot_ads: list[classad2.ClassAd], job_ads: list[classad2.ClassAd], config: Settings,
          now: int) -> CycleResult:
    return run_cycle(build_snapshot(slot_ads, job_ads, config), AccountantState(), config, now)


def left_idle(slot_ads: list[classad2.ClassAd], job_ads: list[classad2.ClassAd], config: Settings,
              result: CycleResult, now: int) -> list[Match]:
    """Waiting jobs that could have started on a slot ``result`` left idle, in groups that (with
    every group above them) accept surplus, on capacity that stayed idle for nobody.

    What could start: the matches of a second cycle over what ``result`` left (its matches held as
    claims, as the daemon holds them) with the same concurrency limits and no group quotas at all.
    Idle for nobody: the pool the allocation gave no group, plus what a group was allocated and
    does not use while none of its waiting jobs could start. Allocation a group with startable
    jobs leaves unused is its own (its quota, or its share of surplus in fractions of a match)."""
    slots, waiting = what_is_left(slot_ads, job_ads, result)
    group_of = {report.name: report.group for report in result.submitters}
    stranded = result.stats.pool_size - sum(report.own_allocated for report in result.groups)
    for report in result.groups:
        own = [ad for ad in waiting if group_of.get(submitter_of(ad)) == report.name]
        if report.own_allocated > report.own_usage and not quota_free_cycle(slots, own, config, now):
            stranded += report.own_allocated - report.own_usage
    return [match for match in quota_free_cycle(slots, waiting, config, now)
            if accepts_surplus(config, group_of[match.submitter]) and match.cost <= stranded + 1e-9]


def what_is_left(slot_ads: list[classad2.ClassAd], job_ads: list[classad2.ClassAd],
                 result: CycleResult) -> tuple[list[classad2.ClassAd], list[classad2.ClassAd]]:
    """The slots after ``result`` (matched ones held as the daemon holds them) and the jobs it left."""
    view = PoolView(slots={ad["Name"]: ad for ad in slot_ads}, jobs=JobAds({job_id(ad): ad for ad in job_ads}))
    slots = dict(view.slots)
    for hold in holds_for(view, result.matches):
        if hold.kind is AdKind.SLOT:
            slots.pop(hold.key)
            stand_in, extras = hold.stand_ins()
            if stand_in is not None:
                slots[hold.key] = stand_in
            slots.update(extras)
    matched = {match.job for match in result.matches}
    return list(slots.values()), [ad for key, ad in view.jobs.items() if key not in matched]


def quota_free_cycle(slot_ads: list[classad2.ClassAd], job_ads: list[classad2.ClassAd], config: Settings,
                     now: int) -> tuple[Match, ...]:
    """What a cycle with ``config``'s concurrency limits and no groups at all would match."""
    return cycle(slot_ads, job_ads, replace(config, groups=()), now).matches


def accepts_surplus(config: Settings, group_name: str) -> bool:
    """Whether surplus can reach ``group_name``'s submitters: the group and each one above it
    accept it (the root ``<none>`` always does, as the cycle allocates)."""
    tree = config.group_tree
    return all(tree.settings_of(name) is None or tree.settings_of(name).accept_surplus
               for name in tree.lineage(group_name))


def sample() -> tuple[list[classad2.ClassAd], list[classad2.ClassAd]]:
    return (list(read_ads(ROOT / "samples" / "slots.ads").ads), list(read_ads(ROOT / "samples" / "jobs.ads").ads))


@pytest.mark.parametrize("config_file", sorted(p.name for p in (ROOT / "config").glob("*.conf")))
@pytest.mark.parametrize("rounds", [1, None])
def test_bundled_sample_leaves_no_slot_idle_that_surplus_could_fill(config_file, rounds):
    """With one allocation round too (GROUP_QUOTA_MAX_ALLOCATION_ROUNDS = 1): a chemistry job its
    concurrency limit blocks must not hold the core another submitter could use."""
    config = load_settings(ROOT / "config" / config_file)
    if rounds is not None:
        config = replace(config, allocation_rounds=rounds)
    slot_ads, job_ads = sample()
    result = cycle(slot_ads, job_ads, config, SAMPLE_NOW)
    assert left_idle(slot_ads, job_ads, config, result, SAMPLE_NOW) == []


def test_bundled_sample_with_a_spare_static_slot_fills_it():
    """A 4-core static slot costs 4 to whoever takes it; a blocked chemistry job whose best
    candidate it is must not reserve those 4 in group_chemistry's quota."""
    config = load_settings(ROOT / "config" / "default.conf")
    slot_ads, job_ads = sample()
    spare = static_slot("slot1@spare.example.org", cpus=4, memory=16384, disk=10_000_000,
                        Arch="X86_64", OpSys="LINUX", Requirements=True)
    result = cycle([*slot_ads, spare], job_ads, config, SAMPLE_NOW)
    assert "slot1@spare.example.org" in {match.slot for match in result.matches}
    assert left_idle([*slot_ads, spare], job_ads, config, result, SAMPLE_NOW) == []


def test_ospool_sample_leaves_no_slot_idle_that_surplus_could_fill():
    """The OSPool's slots with HTCondor's own job ads (and those re-targeted at the OSPool), as
    the dry-run test negotiates them."""
    real = ospool.real_job_ads()
    job_ads = real + [ospool.as_ospool_user_would_submit(ad) for ad in real
                      if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]
    slot_ads = [ad for ad in read_ads(ospool.POOL).ads if ad.get("MyType") == "Machine"]
    config = load_settings(ospool.CONFIG)
    result = cycle(slot_ads, job_ads, config, ospool.NOW)
    assert result.matches
    assert left_idle(slot_ads, job_ads, config, result, ospool.NOW) == []


slot_specs = st.lists(
    st.tuples(st.sampled_from(sorted(POLICIES) + ["static"]), st.integers(1, 8), st.integers(1, 8)),
    min_size=1, max_size=5,
)
job_specs = st.lists(
    st.tuples(st.sampled_from(["alice", "bob", "carol", "dave"]), st.integers(1, 5),
              st.sampled_from([1, 2, 3]), st.sampled_from([100, 700, 2000]),
              st.sampled_from([None, "lic", "lic:2", "lic, db.read", "db.write"])),
    min_size=1, max_size=6,
)
# alice and bob in group_a, carol in group_b, dave in <none>
MEMBERS = {"alice": "group_a", "bob": "group_a", "carol": "group_b"}


@seed(20261125)
@example([("cpu", 8, 8)], [("alice", 4, 1, 100, "lic"), ("dave", 5, 1, 100, None)], 0.6, False, False, 3, 0)
@hsettings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot_specs, job_specs, st.sampled_from([0.0, 0.3, 0.6]), st.booleans(), st.booleans(),
       st.integers(0, 4), st.integers(0, 3))
def test_random_pools_leave_no_slot_idle_that_surplus_could_fill(slot_spec, job_spec, quota_a, surplus_a,
                                                                 surplus_b, lic, db):
    slot_ads = slots_of(slot_spec)
    job_ads = []
    for cluster, (owner, count, cpus, memory, limits) in enumerate(job_spec, start=1):
        extra = {"ConcurrencyLimits": limits} if limits else {}
        job_ads += jobs(owner, count, cluster=cluster, group=MEMBERS.get(owner), cpus=cpus, memory=memory,
                        disk=10, **extra)
    config = settings(
        groups=(group("group_a", dynamic=quota_a, surplus=surplus_a),
                group("group_b", dynamic=0.3, surplus=surplus_b)),
        concurrency_limits={"lic": lic}, concurrency_scope_defaults={"db": db},
    )
    result = cycle(slot_ads, job_ads, config, NOW)
    assert left_idle(slot_ads, job_ads, config, result, NOW) == []
