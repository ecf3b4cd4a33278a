"""The OSPool-shaped pool generator (benchmarks/pool_generator.py), on small pools.

Claims are checked against the real ads the generator copies (read here independently) and
against classad2: every match a generated pool yields is re-checked with classad2's own
symmetric match, replayed slot by slot with the consumption HTCondor's cp_override_requested
would put in the job's Request<Res>.
"""

import gzip
from collections import Counter, defaultdict
from dataclasses import replace

import classad2
import pytest

from benchmarks.pool_generator import (
    CONFIG_PATH,
    DATA,
    GeneratedPool,
    generate_pool,
    main,
)
from negotiatord.accountant import AccountantState
from negotiatord.ads import read_ads
from negotiatord.classad.cycle_time import frozen_ad
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.jobs import submitter_of
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings

NOW = 1_795_000_000
# Small pools mostly hold p-slot fragments no job fits; the seeds below are ones whose pools
# have p-slots with room for several jobs, so the tests see depth-first loading.
SLOTS, JOBS = 160, 700


@pytest.fixture(scope="module")
def real_machines():
    text = gzip.open(DATA / "ospool" / "pool_sample.ads.gz", "rt").read()
    return [ad for ad in classad2.parseAds(text, classad2.ParserType.Old) if ad.get("MyType") == "Machine"]


@pytest.fixture(scope="module")
def pool() -> GeneratedPool:
    return generate_pool(SLOTS, JOBS, seed=0)


@pytest.fixture(scope="module")
def settings():
    return load_settings(CONFIG_PATH)


def texts(ads):
    return [ad.printOld() for ad in ads]


def test_counts_and_every_ad_prints_and_parses_back(pool):
    assert len(pool.slot_ads) == SLOTS and len(pool.job_ads) == JOBS
    for ad in [*pool.slot_ads, *pool.job_ads]:
        again = classad2.parseOne(ad.printOld(), classad2.ParserType.Old)
        assert {k: str(ad.lookup(k)) for k in ad.keys()} == {k: str(again.lookup(k)) for k in again.keys()}


def test_slots_carry_the_real_ospool_expressions(pool, real_machines):
    real = {attr: {str(ad.lookup(attr)) for ad in real_machines if attr in ad}
            for attr in ("START", "Requirements", "WithinResourceLimits", "Rank", "SlotWeight")}
    kinds = Counter(ad["SlotType"] for ad in pool.slot_ads)
    assert set(kinds) == {"Partitionable", "Dynamic", "Static"}
    for ad in pool.slot_ads:
        for attr, seen in real.items():
            if attr in ad:
                assert str(ad.lookup(attr)) in seen, (ad["Name"], attr)
    starts = {str(ad.lookup("START")) for ad in pool.slot_ads}
    assert any("time() < GLIDEIN_ToRetire" in s for s in starts)
    assert any("CurrentTime < GLIDEIN_ToRetire" in s for s in starts)


def test_timestamps_sit_where_they_sat_in_the_real_pool_relative_to_now(real_machines):
    generated = generate_pool(60, 10, seed=1, now=NOW)
    real = [ad["GLIDEIN_ToRetire"] - ad["MyCurrentTime"] for ad in real_machines]
    for ad in generated.slot_ads:
        assert ad["MyCurrentTime"] == NOW
        offset = ad["GLIDEIN_ToRetire"] - NOW
        # drawn from a real offset, stretched by at most 10%
        assert any(abs(offset - r) <= abs(r) * 0.1 + 1 for r in real), offset


def test_pslots_are_real_sizes_and_their_children_add_up(pool, real_machines):
    real_sizes = {tuple(float(ad[f"TotalSlot{r}"]) for r in ("Cpus", "Memory", "Disk", "GPUs"))
                  for ad in real_machines if ad["SlotType"] == "Partitionable"}
    children = defaultdict(list)
    for ad in pool.slot_ads:
        if ad["SlotType"] == "Dynamic":
            children[ad["Machine"]].append(ad)
    pslots = [ad for ad in pool.slot_ads if ad["SlotType"] == "Partitionable"]
    assert pslots
    for ad in pslots:
        total = tuple(float(ad[f"TotalSlot{r}"]) for r in ("Cpus", "Memory", "Disk", "GPUs"))
        assert total in real_sizes
        kids = children[ad["Machine"]]
        assert ad["NumDynamicSlots"] == len(kids)
        for i, resource in enumerate(("Cpus", "Memory", "Disk", "GPUs")):
            assert ad[resource] + sum(k[resource] for k in kids) == pytest.approx(total[i])


def test_claimed_slots_run_generated_submitters_in_configured_groups(pool, settings):
    groups = settings.group_tree
    customers = set(pool.submitters)
    claimed = [ad for ad in pool.slot_ads if ad["State"] == "Claimed"]
    assert claimed
    for ad in claimed:
        assert ad.get("AccountingGroup", ad.get("RemoteUser")) in customers
    job_groups = Counter(groups.assigned_group(submitter_of(ad)) for ad in pool.job_ads)
    assert {submitter_of(ad) for ad in pool.job_ads} <= customers
    configured = {g.name for g in settings.groups}
    assert configured <= set(job_groups) | {"group_cms"}   # small pools may lack the smallest group
    assert "group_opportunistic" in job_groups and "<none>" in job_groups


def test_jobs_keep_real_requirements_and_are_idle(pool):
    real_requirements = {
        '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && '
        '(TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)',
        "(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)",
    }
    seen = Counter()
    for ad in pool.job_ads:
        assert ad["JobStatus"] == 1
        text = str(ad.lookup("Requirements")).removesuffix(" && (TARGET.GPUs >= RequestGPUs)")
        seen[text in real_requirements or "Target.OSGVO_OS_STRING" in text] += 1
        assert isinstance(ad.eval("RequestMemory"), int) and ad.eval("RequestMemory") > 0
    assert seen[False] == 0
    assert len({ad["GlobalJobId"] for ad in pool.job_ads}) == JOBS


def _replay_with_classad2(snapshot, result, now, job_ads):
    """Re-check every match with classad2, in match order, on the slot as it was then, with the
    job's own ad (the cycle matched its autocluster's representative)."""
    by_name = {slot.name: slot for slot in snapshot.table.slots}
    own_ads = {ad["GlobalJobId"]: ad for ad in job_ads}
    left = {name: dict(zip(slot.assets, slot.amounts)) for name, slot in by_name.items()}
    taken = set()
    for match in result.matches:
        slot = by_name[match.slot]
        slot_ad = classad2.ClassAd({k: slot.ad.lookup(k) for k in slot.ad.keys()})
        job_ad = own_ads[match.job]
        if slot.has_consumption_policy:
            for asset, amount in match.consumed.items():
                assert 0 <= amount <= left[match.slot][asset], (match, asset)
                slot_ad[asset] = left[match.slot][asset]
                if f"Request{asset}" in job_ad:       # HTCondor's cp_override_requested
                    job_ad[f"Request{asset}"] = amount
            for asset, amount in match.consumed.items():
                left[match.slot][asset] -= amount
        else:
            assert match.slot not in taken, "a slot without consumption policy matched twice"
            taken.add(match.slot)
        assert frozen_ad(job_ad, now).symmetricMatch(frozen_ad(slot_ad, now)), match


def test_small_pool_negotiates_and_classad2_agrees_with_every_match(pool, settings):
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    assert not snapshot.problems
    result = run_cycle(snapshot, AccountantState(), settings, pool.now)
    assert result.matches
    assert any(c > 1 for c in Counter(m.slot for m in result.matches).values()), "no p-slot took two jobs"
    _replay_with_classad2(snapshot, result, pool.now, pool.job_ads)


def test_legacy_baseline_takes_one_job_per_slot_and_classad2_agrees(pool, settings):
    legacy = replace(settings, consumption_policy=False)
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, legacy)
    result = run_cycle(snapshot, AccountantState(), legacy, pool.now)
    assert result.matches
    assert max(Counter(m.slot for m in result.matches).values()) == 1
    _replay_with_classad2(snapshot, result, pool.now, pool.job_ads)


def test_matchmaking_detail_negotiates_exactly_like_the_full_ads(settings):
    """The trimmed ads keep every attribute matchmaking reads: same cycle as the real attribute sets."""
    decided = []
    for detail in ("matchmaking", "full"):
        generated = generate_pool(120, 400, seed=1, now=NOW, detail=detail)
        snapshot = build_snapshot(generated.slot_ads, generated.job_ads, settings)
        result = run_cycle(snapshot, AccountantState(), settings, NOW)
        decided.append([(m.job, m.slot, m.cost, m.consumed) for m in result.matches])
    assert decided[0] and decided[0] == decided[1]
    full = generate_pool(40, 10, seed=5, now=NOW, detail="full")
    trimmed = generate_pool(40, 10, seed=5, now=NOW)
    assert sum(len(ad) for ad in full.slot_ads) > 5 * sum(len(ad) for ad in trimmed.slot_ads)


def test_same_seed_same_pool_other_seed_other_pool():
    first, again = generate_pool(80, 300, seed=11, now=NOW), generate_pool(80, 300, seed=11, now=NOW)
    assert texts(first.slot_ads) == texts(again.slot_ads) and texts(first.job_ads) == texts(again.job_ads)
    other = generate_pool(80, 300, seed=12, now=NOW)
    assert texts(other.job_ads) != texts(first.job_ads)


def test_cli_writes_long_form_files_negotiatord_reads(tmp_path, capsys):
    assert main(["--slots", "50", "--jobs", "0.2k", "--out", str(tmp_path), "--now", str(NOW)]) == 0
    slots, jobs = read_ads(tmp_path / "slots.ads"), read_ads(tmp_path / "jobs.ads")
    assert (len(slots.ads), len(jobs.ads)) == (50, 200)
    assert not slots.problems and not jobs.problems
    assert (tmp_path / "now").read_text().strip() == str(NOW)
    assert f"--now {NOW}" in capsys.readouterr().out


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="slots"):
        generate_pool(0, 10)
    with pytest.raises(ValueError, match="detail"):
        generate_pool(10, 10, detail="some")


def test_job_ads_made_on_reading_are_the_same_ads_by_index_slice_or_iteration(pool):
    listed = [ad.printOld() for ad in pool.job_ads]
    assert [ad.printOld() for ad in pool.job_ads[5:40:7]] == listed[5:40:7]
    assert pool.job_ads[-1].printOld() == listed[-1] and pool.job_ads[0].printOld() == listed[0]
    with pytest.raises(IndexError):
        pool.job_ads[len(listed)]
