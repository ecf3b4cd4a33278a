"""The feed: filing ads by key, expiry, invalidation, refusals, and match holds.

Ads are real: the OSPool central manager sample (``condor_status -any -l``, 205 ads of ten
kinds) and the bundled sample pool. Holds are checked by running the real cycle over what the
store shows, before and after.
"""

from __future__ import annotations

import gzip

import classad2
import pytest

from negotiatord.ads import read_ads
from negotiatord.accountant import AccountantState
from negotiatord.feed import AdKind, AdStore, take_in, take_in_text
from negotiatord.feed.pull import sort_ads
from negotiatord.feed.store import Source
from negotiatord.pool.builder import build_snapshot
from negotiatord.publish.holds import apply_holds, holds_for
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings

from tests.service_harness import POOL, ROOT

LIFETIME = 900.0


@pytest.fixture(scope="module")
def pool_text() -> str:
    return gzip.decompress(POOL.read_bytes()).decode()


@pytest.fixture(scope="module")
def settings():
    return load_settings(ROOT / "config" / "default.conf")


def _ad(text: str) -> classad2.ClassAd:
    return classad2.parseOne(text, classad2.ParserType.Old)


# --- filing and refusing ---------------------------------------------------------------------

def test_a_mixed_dump_files_its_machine_ads_and_refuses_the_rest_by_position(pool_text):
    intake = take_in_text(AdKind.SLOT, pool_text, "pool_sample")
    reference = list(classad2.parseAds(pool_text, classad2.ParserType.Old))
    types = [ad.get("MyType") for ad in reference]
    assert len(intake.accepted) == types.count("Machine") == 143
    assert [key for key, _ in intake.accepted] == [ad["Name"] for ad in reference if ad.get("MyType") == "Machine"]
    # every other ad is refused, at its own 1-based position, saying what it is
    assert [p.position for p in intake.problems] == [i for i, t in enumerate(types, 1) if t != "Machine"]
    for problem in intake.problems:
        assert f"MyType is {types[problem.position - 1]!r}; slots are Machine ads" == problem.reason


def test_a_malformed_ad_is_refused_with_position_and_line_and_its_neighbours_are_filed():
    text = ('MyType = "Job"\nGlobalJobId = "s#1.0#1"\nJobStatus = 1\n\n'
            'MyType = "Job"\nGlobalJobId = "s#1.1#1"\nRequirements = (Cpus >\n\n'
            'MyType = "Job"\nClusterId = 7\nProcId = 3\n\n'
            'MyType = "Job"\nOwner = "nobody"\n')
    intake = take_in_text(AdKind.JOB, text, "body")
    assert [key for key, _ in intake.accepted] == ["s#1.0#1", "7.3"]   # GlobalJobId, else Cluster.Proc
    bad, unkeyed = intake.problems
    assert (bad.position, bad.line) == (2, 5) and "Requirements" in bad.reason
    assert unkeyed.position == 4 and "no GlobalJobId" in unkeyed.reason


def test_submitters_are_keyed_by_name_and_schedd_like_the_collector():
    text = ('MyType = "Submitter"\nName = "alice@site"\nScheddName = "ap1"\n\n'
            'MyType = "Submitter"\nName = "alice@site"\nScheddName = "ap2"\n')
    store = AdStore()
    store.update(AdKind.SUBMITTER, take_in_text(AdKind.SUBMITTER, text, "b").accepted, 0.0, LIFETIME)
    assert store.counts()["submitters"] == 2


def test_an_update_replaces_the_ad_with_the_same_key_and_an_invalidation_removes_it():
    store = AdStore()
    first = _ad('Name = "slot1@a"\nCpus = 4')
    second = _ad('Name = "slot1@a"\nCpus = 2')
    store.update(AdKind.SLOT, [("slot1@a", first), ("slot2@a", _ad('Name = "slot2@a"'))], 0.0, LIFETIME)
    store.update(AdKind.SLOT, [("slot1@a", second)], 1.0, LIFETIME)
    assert store.view().slots["slot1@a"]["Cpus"] == 2 and len(store.view().slots) == 2
    removed, unknown = store.invalidate(AdKind.SLOT, ["slot1@a", "slot9@a"])
    assert (removed, unknown) == (1, ["slot9@a"])
    assert list(store.view().slots) == ["slot2@a"]


def test_an_updated_job_keeps_its_place_in_the_queue_and_expires_by_its_new_deadline():
    """A schedd's queue keeps its jobs' order when it updates them, and so does the store: an
    update files the new ad in the old one's place (a cycle's snapshot then renumbers none of the
    jobs after it), while its deadline, refreshed, moves it to the back of the expiry queue."""
    store = AdStore(share_cluster_ads=True)
    jobs = [_ad(f'MyType = "Job"\nClusterId = 1\nProcId = {proc}\nJobStatus = 1\nOwner = "alice"\n'
                f'GlobalJobId = "s#1.{proc}#0"') for proc in range(3)]
    store.update(AdKind.JOB, [(f"s#1.{proc}#0", ad) for proc, ad in enumerate(jobs)], 0.0, LIFETIME)
    updated = _ad('MyType = "Job"\nClusterId = 1\nProcId = 0\nJobStatus = 1\nOwner = "alice"\n'
                  'GlobalJobId = "s#1.0#0"\nJobPrio = 5')
    store.update(AdKind.JOB, [("s#1.0#0", updated)], 500.0, LIFETIME)
    assert list(store.view().jobs) == ["s#1.0#0", "s#1.1#0", "s#1.2#0"]
    assert store.view().jobs["s#1.0#0"]["JobPrio"] == 5
    assert store.expire(900.0)[AdKind.JOB] == 2
    assert list(store.view().jobs) == ["s#1.0#0"]


# --- expiry ----------------------------------------------------------------------------------

def test_ads_expire_after_classad_lifetime_unless_refreshed():
    store = AdStore()
    store.update(AdKind.SLOT, [("a", _ad('Name = "a"')), ("b", _ad('Name = "b"'))], 0.0, LIFETIME)
    store.update(AdKind.SLOT, [("a", _ad('Name = "a"'))], 500.0, LIFETIME)    # a refreshed at 500
    assert store.expire(899.0)[AdKind.SLOT] == 0
    assert store.expire(900.0)[AdKind.SLOT] == 1                               # b: 900 s unheard
    assert list(store.view().slots) == ["a"]
    assert store.expire(1400.0)[AdKind.SLOT] == 1 and store.counts()["slots"] == 0


def test_an_ads_own_classad_lifetime_wins_over_the_configured_one():
    # CollectorEngine::cleanHashTable: the ad's ClassAdLifetime, else CLASSAD_LIFETIME
    store = AdStore()
    store.update(AdKind.SLOT, [("short", _ad('Name = "short"\nClassAdLifetime = 60')),
                               ("long", _ad('Name = "long"\nClassAdLifetime = 5000')),
                               ("plain", _ad('Name = "plain"'))], 0.0, LIFETIME)
    store.expire(61.0)
    assert sorted(store.view().slots) == ["long", "plain"]
    store.expire(901.0)
    assert sorted(store.view().slots) == ["long"]


def test_preloaded_ads_never_expire_and_pulled_ads_are_replaced_as_a_set():
    store = AdStore()
    store.update(AdKind.SLOT, [("pre", _ad('Name = "pre"'))], 0.0, LIFETIME, Source.PRELOAD)
    store.update(AdKind.SLOT, [("pushed", _ad('Name = "pushed"'))], 0.0, 10 ** 9)
    store.replace_pulled(AdKind.SLOT, [("p1", _ad('Name = "p1"')), ("p2", _ad('Name = "p2"'))], 0.0, LIFETIME)
    # the next pull no longer lists p1: it goes; what was pushed or preloaded stays
    assert store.replace_pulled(AdKind.SLOT, [("p2", _ad('Name = "p2"'))], 1.0, LIFETIME) == 1
    assert sorted(store.view().slots) == ["p2", "pre", "pushed"]
    store.expire(10.0 ** 8)
    assert sorted(store.view().slots) == ["pre", "pushed"]


def test_a_pull_sorts_a_collector_dump_by_kind(pool_text):
    pulled = sort_ads(pool_text, "collector cm")
    reference = list(classad2.parseAds(pool_text, classad2.ParserType.Old))
    assert len(pulled.ads[AdKind.SLOT]) == sum(ad.get("MyType") == "Machine" for ad in reference)
    assert pulled.ads[AdKind.JOB] == [] and pulled.problems == []


# --- holds -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample_store() -> tuple[AdStore, list, list]:
    slots = take_in(AdKind.SLOT, read_ads(ROOT / "samples" / "slots.ads"), "slots").accepted
    jobs = take_in(AdKind.JOB, read_ads(ROOT / "samples" / "jobs.ads"), "jobs").accepted
    return slots, jobs


def _cycle(store: AdStore, settings, now: int = 1790000000):
    view = store.view()
    result = run_cycle(build_snapshot(view.slots.values(), view.jobs.values(), settings),
                       AccountantState(), settings, now)
    return view, result


def test_matched_jobs_and_slots_are_held_as_their_owners_will_advertise_them(sample_store, settings):
    slots, jobs = sample_store
    store = AdStore()
    store.update(AdKind.SLOT, slots, 0.0, LIFETIME)
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    view, first = _cycle(store, settings)
    assert first.matches
    apply_holds(store, holds_for(view, first.matches))

    after, second = _cycle(store, settings)
    matched_jobs = {m.job for m in first.matches}
    assert not matched_jobs & set(after.jobs)                       # matched jobs are not offered again
    assert not {m.job for m in second.matches} & matched_jobs
    # the pool is as big as before: matched capacity now counts as claimed, not gone
    assert second.stats.pool_size == first.stats.pool_size
    # and it is charged to the submitters as running work, exactly what the matches cost
    cost: dict[str, float] = {}
    for m in first.matches:
        cost[m.submitter] = cost.get(m.submitter, 0.0) + m.cost
    for submitter, amount in cost.items():
        assert second.usage[submitter] == pytest.approx(amount)
    for m in first.matches:
        before = view.slots[m.slot]
        if before.get("PartitionableSlot") is True:
            taken = sum(x.consumed["Cpus"] for x in first.matches if x.slot == m.slot)
            assert after.slots[m.slot]["Cpus"] == before["Cpus"] - taken
            assert isinstance(after.slots[m.slot]["Cpus"], int)
            assert after.slots[f"{m.slot}#{m.job}"]["State"] == "Claimed"
        else:
            assert after.slots[m.slot]["State"] == "Claimed"
            assert after.slots[m.slot]["RemoteUser"] == m.submitter


def test_re_advertising_a_held_ad_releases_it(sample_store, settings):
    slots, jobs = sample_store
    store = AdStore()
    store.update(AdKind.SLOT, slots, 0.0, LIFETIME)
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    view, first = _cycle(store, settings)
    apply_holds(store, holds_for(view, first.matches))
    job = first.matches[0].job
    fresh = _ad(dict(jobs)[job].printOld())
    fresh["NumJobStarts"] = 1
    assert job not in store.view().jobs
    store.update(AdKind.JOB, [(job, fresh)], 5.0, LIFETIME)     # the schedd says it is idle again
    assert store.view().jobs[job] is fresh


def test_an_ad_re_advertised_during_the_cycle_is_not_held(sample_store, settings):
    slots, jobs = sample_store
    store = AdStore()
    store.update(AdKind.SLOT, slots, 0.0, LIFETIME)
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    view, first = _cycle(store, settings)
    job = first.matches[0].job
    newer = _ad(dict(jobs)[job].printOld())
    newer["JobPrio"] = 10
    store.update(AdKind.JOB, [(job, newer)], 1.0, LIFETIME)     # arrives while the cycle commits
    apply_holds(store, holds_for(view, first.matches))
    assert store.view().jobs[job] is newer
