"""A store that keeps the jobs of a cluster as ProcAds sharing one cluster ad loses nothing.

HTCondor's schedd keeps its queue the same way (a proc ad chained to its cluster ad, holding only
what differs: ``ProcId``, ``GlobalJobId``). Checked here against a store that keeps every ad
whole (``share_cluster_ads=False``): the daemon's snapshots and matches over several cycles with
updates, invalidations and holds in between, on the bundled sample, on a generated OSPool-shaped
pool and on a cluster whose ads read their identity in various ways; and the store's own rules
(an ad asked for by key comes whole; update, invalidation, expiry and holds as before).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import classad2
import pytest

from benchmarks.pool_generator import CONFIG_PATH, generate_pool
from negotiatord.accountant import AccountantState
from negotiatord.ads import read_ads
from negotiatord.feed import AdKind, AdStore
from negotiatord.feed.kinds import ad_key
from negotiatord.feed.store import ad_version
from negotiatord.pool.builder import SnapshotBuilder, build_snapshot
from negotiatord.pool.job_ads import ProcAd
from negotiatord.publish.holds import RestoredHolds, apply_holds, holds_for
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, load_settings
from tests.builders import WITHIN_LIMITS, expr, pslot, settings
from tests.pool.test_repeated_job_ads import CLUSTER_VARIANTS

NOW = 1783286288
LIFETIME = 900.0
SAMPLES = Path(__file__).resolve().parents[2] / "samples"

Change = Callable[[AdStore, list[tuple[str, classad2.ClassAd]]], None]


def _keyed(kind: AdKind, ads: list[classad2.ClassAd]) -> list[tuple[str, classad2.ClassAd]]:
    return [(ad_key(kind, ad), ad) for ad in ads]


def _copy(ad: classad2.ClassAd) -> classad2.ClassAd:
    return classad2.parseOne(ad.printOld(), classad2.ParserType.Old)


def _daemon_cycles(slots: list[classad2.ClassAd], jobs: list[classad2.ClassAd], config: Settings,
                   share: bool, changes: list[Change]) -> tuple[list[tuple], AdStore]:
    """What a daemon's cycles see and do over a store (its SnapshotBuilder kept across cycles,
    the holds of each cycle applied), ``changes`` made to the store between cycles."""
    store = AdStore(share_cluster_ads=share)
    store.update(AdKind.SLOT, _keyed(AdKind.SLOT, slots), 0.0, LIFETIME)
    keyed = _keyed(AdKind.JOB, jobs)
    store.update(AdKind.JOB, keyed, 0.0, LIFETIME)
    builder = SnapshotBuilder()
    seen = []
    for change in [None, *changes]:
        if change is not None:
            change(store, keyed)
        view = store.view()
        snapshot = builder.build(view.slots.values(), view.jobs.records(), config)
        result = run_cycle(snapshot, AccountantState(), config, NOW)
        holds = holds_for(view, result.matches)
        # the versions the match log keeps with each match, for a restarted daemon to hold again
        versions = sorted((hold.kind.value, hold.key, hold.version) for hold in holds)
        seen.append((snapshot.jobs, [[job.id for job in a.jobs] for a in snapshot.autoclusters],
                     snapshot.significant_attributes, snapshot.problems, snapshot.non_idle_jobs,
                     result.matches, result.rejections, versions))
        apply_holds(store, holds)
    return seen, store


def _re_advertised(share: float, change: Callable[[classad2.ClassAd], None] | None = None) -> Change:
    """Re-advertise a share of the jobs as new ad objects, changed by ``change`` if given."""
    def run(store: AdStore, keyed: list[tuple[str, classad2.ClassAd]]) -> None:
        picked = random.Random(len(keyed)).sample(keyed, int(share * len(keyed)))
        fresh = []
        for key, ad in picked:
            ad = _copy(ad)
            if change is not None:
                change(ad)
            fresh.append((key, ad))
        store.update(AdKind.JOB, fresh, 1.0, LIFETIME)
    return run


def _invalidated(share: float) -> Change:
    def run(store: AdStore, keyed: list[tuple[str, classad2.ClassAd]]) -> None:
        picked = random.Random(len(keyed) + 1).sample(keyed, int(share * len(keyed)))
        store.invalidate(AdKind.JOB, [key for key, _ in picked])
    return run


def _prio(ad: classad2.ClassAd) -> None:
    ad["JobPrio"] = 7


CHANGES = [_re_advertised(0.1), _re_advertised(0.1, _prio), _invalidated(0.1)]


def _same_daemon(slots: list[classad2.ClassAd], jobs: list[classad2.ClassAd], config: Settings,
                 changes: list[Change] = CHANGES) -> AdStore:
    """Asserts the compact store's cycles are those of a store keeping every ad; the compact store."""
    whole, _ = _daemon_cycles(slots, jobs, config, False, changes)
    compact, store = _daemon_cycles(slots, jobs, config, True, changes)
    assert len(compact) == len(whole)
    for got, expected in zip(compact, whole):
        assert got == expected
    return store


def _proc_ads(store: AdStore) -> int:
    return sum(isinstance(record, ProcAd) for record in store.view().jobs.records())


def test_the_bundled_sample_negotiates_the_same_cycle_after_cycle() -> None:
    slots = read_ads(SAMPLES / "slots.ads").ads
    jobs = read_ads(SAMPLES / "jobs.ads").ads
    config = load_settings(SAMPLES.parent / "config" / "default.conf")
    store = _same_daemon(slots, jobs, config)
    assert _proc_ads(store) > 0


def test_a_one_off_build_over_the_stores_records_is_that_over_whole_ads() -> None:
    slots = read_ads(SAMPLES / "slots.ads").ads
    jobs = read_ads(SAMPLES / "jobs.ads").ads
    config = load_settings(SAMPLES.parent / "config" / "default.conf")
    store = AdStore()
    store.update(AdKind.JOB, _keyed(AdKind.JOB, jobs), 0.0, LIFETIME)
    records = list(store.view().jobs.records())
    assert any(isinstance(record, ProcAd) for record in records)
    compact, whole = build_snapshot(slots, records, config), build_snapshot(slots, jobs, config)
    assert compact.jobs == whole.jobs and compact.problems == whole.problems
    assert run_cycle(compact, AccountantState(), config, NOW).matches == \
        run_cycle(whole, AccountantState(), config, NOW).matches


def test_a_generated_ospool_shaped_pool_negotiates_the_same_cycle_after_cycle() -> None:
    pool = generate_pool(300, 1500, seed=4, now=NOW)
    store = _same_daemon(pool.slot_ads, list(pool.job_ads), load_settings(CONFIG_PATH))
    # the generator's clusters (real OSPool job shapes) are each kept as one ad
    clusters = {id(record.cluster) for record in store.view().jobs.records() if isinstance(record, ProcAd)}
    assert _proc_ads(store) > 1000 and len(clusters) < _proc_ads(store) / 3


def _cluster(first: dict[str, str], procs: int = 4) -> list[classad2.ClassAd]:
    """``procs`` job ads of cluster 7, each ``first`` but for its identity."""
    ads = []
    for proc in range(procs):
        lines = {"MyType": '"Job"', "ClusterId": "7", "ProcId": str(proc), "GlobalJobId": f'"ap#7.{proc}#1"',
                 "RequestCpus": "1", "RequestMemory": "100", "Owner": '"alice"', "JobStatus": "1",
                 "Requirements": "TARGET.Cpus >= RequestCpus", **first}
        ads.append(classad2.parseOne("\n".join(f"{name} = {value}" for name, value in lines.items()),
                                     classad2.ParserType.Old))
    return ads


@pytest.mark.parametrize("first", [
    *CLUSTER_VARIANTS,
    {"ProcId": '"zero"'},                                  # an identity that is no plain integer
], ids=repr)
def test_a_cluster_negotiates_the_same(first: dict[str, str]) -> None:
    """Whatever the cluster's ads say, each job is matched, left out or reported as its own ad
    says (HTCondor's schedd reads each proc ad through its cluster ad)."""
    config = settings(consumption_policy=True)
    _same_daemon([pslot("a", cpus=3)], _cluster(first), config, [_re_advertised(0.5), _invalidated(0.25)])


def test_slots_that_read_a_jobs_identity_see_each_jobs_own() -> None:
    """A slot whose Requirements read GlobalJobId, arriving between cycles, sees each job's own: the
    jobs read under sharing are read again (the sharing rules changed), as a store of whole ads
    would give them."""
    config = settings(consumption_policy=True)
    picky = pslot("picky", cpus=4, Requirements=expr(f'{WITHIN_LIMITS} && TARGET.GlobalJobId =!= "ap#7.1#1"'))

    def add_picky_slot(store: AdStore, keyed: list[tuple[str, classad2.ClassAd]]) -> None:
        store.invalidate(AdKind.SLOT, ["a"])
        store.update(AdKind.SLOT, [("picky", picky)], 1.0, LIFETIME)

    seen, _ = _daemon_cycles([pslot("a", cpus=1)], _cluster({}), config, True, [add_picky_slot])
    assert [m.job for m in seen[1][5]] == ["ap#7.2#1", "ap#7.3#1"]      # not 7.1; 7.0 was matched first
    _same_daemon([pslot("a", cpus=1)], _cluster({}), config, [add_picky_slot])


# --- the store's own rules ---------------------------------------------------------------------


def test_the_jobs_of_a_cluster_share_one_ad_and_each_comes_whole_by_key() -> None:
    store = AdStore()
    jobs = _keyed(AdKind.JOB, _cluster({}))
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    table = store.table(AdKind.JOB)
    records = list(store.view().jobs.records())
    assert all(isinstance(record, ProcAd) for record in records)
    assert len({id(record.cluster) for record in records}) == 1
    for key, ad in jobs:
        got = table.get(key)
        assert got is not None and dict(got.items()) == dict(ad.items())
        assert store.view().jobs[key].printJson() == ad.printJson()
        assert ad_version(got) == ad_version(ad)


def test_a_job_whose_expressions_read_its_identity_keeps_its_own_ad() -> None:
    store = AdStore()
    jobs = _keyed(AdKind.JOB, _cluster({"Rank": "ProcId"}))
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    assert [store.view().jobs.by_key[key] for key, _ in jobs] == [ad for _, ad in jobs]


def test_replacing_and_removing_jobs_of_a_cluster_keeps_the_others_and_frees_the_last_ad() -> None:
    store = AdStore()
    jobs = _keyed(AdKind.JOB, _cluster({}))
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    store.take_graveyard()
    changed = _copy(jobs[0][1])
    changed["JobPrio"] = 3
    store.update(AdKind.JOB, [(jobs[0][0], changed)], 1.0, LIFETIME)      # a new cluster ad of its own
    assert store.table(AdKind.JOB).get(jobs[0][0])["JobPrio"] == 3
    assert store.table(AdKind.JOB).get(jobs[1][0]).get("JobPrio") is None
    removed, unknown = store.invalidate(AdKind.JOB, [key for key, _ in jobs[1:]])
    assert (removed, unknown) == (3, [])
    assert jobs[0][1] in store.take_graveyard()       # the cluster's ad went with its last job
    assert list(store.view().jobs) == [jobs[0][0]]
    assert store.expire(1.0 + LIFETIME + 1)[AdKind.JOB] == 1
    assert not store.view().jobs


def test_a_held_job_stays_held_when_re_advertised_unchanged_and_is_released_by_a_newer_ad() -> None:
    config = settings(consumption_policy=True)
    store = AdStore()
    store.update(AdKind.SLOT, [("a", pslot("a", cpus=1))], 0.0, LIFETIME)
    jobs = _keyed(AdKind.JOB, _cluster({}))
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    view = store.view()
    result = run_cycle(SnapshotBuilder().build(view.slots.values(), view.jobs.records(), config),
                       AccountantState(), config, NOW)
    (match,) = result.matches
    apply_holds(store, holds_for(view, result.matches))
    assert match.job not in store.view().jobs
    own = dict(jobs)[match.job]
    store.update(AdKind.JOB, [(match.job, _copy(own))], 1.0, LIFETIME)   # the same ad again
    assert match.job not in store.view().jobs
    newer = _copy(own)
    newer["NumJobStarts"] = 1
    store.update(AdKind.JOB, [(match.job, newer)], 2.0, LIFETIME)
    assert store.view().jobs[match.job] is newer


# --- versions: what the match log keeps of the ads it held -------------------------------------


def _odd_identities(ads: list[classad2.ClassAd]) -> list[classad2.ClassAd]:
    """``ads`` with GlobalJobIds that JSON and ClassAd strings both escape."""
    odd = [_copy(ad) for ad in ads]
    for ad in odd:
        ad["GlobalJobId"] = f'ap "quoted"\\é#7.{ad["ProcId"]}#1'
    return odd


def _marked(ads: list[classad2.ClassAd]) -> list[classad2.ClassAd]:
    """``ads`` with a schedd's update marks and query stamp."""
    marked = [_copy(ad) for ad in ads]
    for ad in marked:
        ad["UpdateSequenceNumber"] = 12
        ad["ServerTime"] = NOW
    return marked


# (name, job ads, whether the store keeps some of them as ProcAds)
VERSION_CASES = [("sample", lambda: read_ads(SAMPLES / "jobs.ads").ads, True),
                 ("generated", lambda: list(generate_pool(50, 600, seed=5, now=NOW).job_ads), True),
                 ("odd identities", lambda: _odd_identities(_cluster({})), True),
                 ("update marks", lambda: _marked(_cluster({})), True),
                 ("concurrency limits", lambda: _cluster(CLUSTER_VARIANTS[-1]), True),
                 ("rank reads ProcId", lambda: _cluster({"Rank": "ProcId"}), False)]


@pytest.mark.parametrize(("name", "jobs", "compact"), VERSION_CASES, ids=[case[0] for case in VERSION_CASES])
def test_a_compact_jobs_version_is_that_of_the_same_job_stored_whole(
        name: str, jobs: Callable[[], list[classad2.ClassAd]], compact: bool) -> None:
    """The version of a job kept as a ProcAd (its cluster's ad chained to its own ProcId and
    GlobalJobId, as HTCondor's schedd chains each proc ad to its cluster ad: ``ChainToAd`` in
    qmgmt.cpp) is that of the same job kept whole: a match log written by either store restores
    the holds of the other, and of a daemon from before jobs were kept compactly."""
    keyed = _keyed(AdKind.JOB, jobs())
    compact_store, whole_store = AdStore(), AdStore(share_cluster_ads=False)
    for store in (compact_store, whole_store):
        store.update(AdKind.JOB, keyed, 0.0, LIFETIME)
    records = {key: compact_store.table(AdKind.JOB).record(key) for key, _ in keyed}
    assert any(isinstance(record, ProcAd) for record in records.values()) == compact
    for key, ad in keyed:
        record = records[key]
        assert record is not None
        assert ad_version(record) == ad_version(whole_store.table(AdKind.JOB).record(key)) == ad_version(ad)
    versions = {ad_version(record) for record in records.values() if record is not None}
    marks = name == "update marks"
    assert len(versions) == (1 if marks else len(keyed))     # a job's identity is content; marks are not


def test_the_version_of_an_ad_without_update_marks_digests_its_content_as_the_match_log_keeps_it() -> None:
    """Versions outlive the daemon in its match log: the digest of a job ad without update marks
    (HTCondor's schedd answers queries without UpdateSequenceNumber) stays the SHA-256 of the JSON
    of its (lower-cased name, value) pairs in name order, less ServerTime."""
    for ad in [*_cluster({"ServerTime": str(NOW)}), *_odd_identities(_cluster({}))]:
        content = sorted((name.lower(), str(ad.lookup(name))) for name in ad.keys() if name.lower() != "servertime")
        expected = "sha256:" + hashlib.sha256(json.dumps(content).encode()).hexdigest()
        store = AdStore()
        store.update(AdKind.JOB, _keyed(AdKind.JOB, [ad]), 0.0, LIFETIME)
        (record,) = store.view().jobs.records()
        assert ad_version(ad) == ad_version(record) == expected


def test_a_restarted_compact_store_holds_again_what_a_store_of_whole_ads_logged() -> None:
    """A daemon restarted over a match log whose versions were taken of whole job ads holds the
    same jobs again when it files them compactly, and the matched slot with them."""
    config = settings(consumption_policy=True)
    slots, jobs = [pslot("a", cpus=2)], _keyed(AdKind.JOB, _cluster({"ConcurrencyLimits": '"db"'}))
    before = AdStore(share_cluster_ads=False)
    before.update(AdKind.SLOT, _keyed(AdKind.SLOT, slots), 0.0, LIFETIME)
    before.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    view = before.view()
    result = run_cycle(SnapshotBuilder().build(view.slots.values(), view.jobs.records(), config),
                       AccountantState(), config, NOW)
    assert len(result.matches) == 2
    versions = {(hold.kind, hold.key): hold.version for hold in holds_for(view, result.matches)}
    restored = RestoredHolds.from_log([(m, versions[(AdKind.JOB, m.job)], versions[(AdKind.SLOT, m.slot)])
                                       for m in result.matches])
    after = AdStore()
    after.update(AdKind.SLOT, _keyed(AdKind.SLOT, slots), 0.0, LIFETIME)
    after.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    taken = restored.take(after)
    apply_holds(after, taken)
    assert len(taken) == 3                  # two jobs and their slot
    held = after.view()
    assert set(held.jobs) == {key for key, _ in jobs} - {m.job for m in result.matches}
    # the claimed dynamic slots read each matched job's concurrency limits
    assert [held.slots[f"a#{m.job}"]["ConcurrencyLimits"] for m in result.matches] == ["db", "db"]
