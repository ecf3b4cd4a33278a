"""A daemon's snapshot builder reuses per-ad work, and the last cycle's autoclusters, only while
the ads are unchanged: whatever changed between two cycles, it gives what a fresh build gives."""

import random

import classad2
import pytest

from benchmarks.pool_generator import CONFIG_PATH, generate_pool
from negotiatord.pool.autoclusters import Autoclusters
from negotiatord.pool.builder import SnapshotBuilder, build_snapshot
from negotiatord.pool.snapshot import Snapshot
from negotiatord.settings import load_settings
from tests.builders import jobs, pslot, settings

NOW = 1783286288


def _shape(snapshot):
    return ([s.name for s in snapshot.table.slots], [[j.id for j in a.jobs] for a in snapshot.autoclusters],
            snapshot.significant_attributes, [str(p) for p in snapshot.problems])


def _content(snapshot: Snapshot) -> tuple:
    """All a snapshot holds (the table's arrays as bytes: they do not compare as values)."""
    table = snapshot.table
    arrays = tuple((a.dtype.str, a.shape, a.tobytes()) for a in (
        table.amounts, table.integer_amounts, table.candidate, table.consumption_policy))
    return (table.slots, table.assets, arrays, snapshot.jobs, snapshot.autoclusters,
            snapshot.significant_attributes, snapshot.problems, snapshot.non_idle_jobs)


def _updated(ad: classad2.ClassAd, **changes: object) -> classad2.ClassAd:
    """A new ad object, as a collector update brings: ``ad``'s content with ``changes`` (None
    removes the attribute)."""
    copy = classad2.parseOne(ad.printOld(), classad2.ParserType.Old)
    for name, value in changes.items():
        if value is None:
            if name in copy:
                del copy[name]
        else:
            copy[name] = value
    return copy


@pytest.fixture(scope="module")
def pool():
    return generate_pool(300, 1500, seed=4, now=NOW)


@pytest.fixture(scope="module")
def ospool_settings():
    return load_settings(CONFIG_PATH)


def test_a_builder_gives_what_a_fresh_build_gives_cycle_after_cycle():
    config = settings(consumption_policy=True)
    slot_ads = [pslot("a", cpus=4), pslot("b", cpus=8)]
    job_ads = jobs("alice", 3, cluster=1) + jobs("bob", 2, cluster=2, cpus=2)
    builder = SnapshotBuilder()
    first = builder.build(slot_ads, job_ads, config)
    assert _shape(first) == _shape(build_snapshot(slot_ads, job_ads, config))

    # an update replaces the ad object: the new values count, the unchanged ads are reused
    updated = jobs("bob", 2, cluster=2, cpus=4)
    second = builder.build(slot_ads, job_ads[:3] + updated, config)
    assert _shape(second) == _shape(build_snapshot(slot_ads, job_ads[:3] + updated, config))
    bob = next(a for a in second.autoclusters if a.submitter == "bob@site")
    assert bob.ad["RequestCpus"] == 4

    # a reload (new settings object) re-prepares the slots
    third = builder.build(slot_ads, job_ads, settings(consumption_policy=False))
    assert not third.table.consumption_policy.any()


def test_a_steady_state_rebuild_gives_what_a_fresh_build_gives(pool, ospool_settings):
    """The daemon's steady state: between cycles a few ads are replaced by new objects."""
    builder = SnapshotBuilder()
    slot_ads, job_ads = list(pool.slot_ads), list(pool.job_ads)
    builder.build(slot_ads, job_ads, ospool_settings)
    rng = random.Random(1)
    for _ in range(3):
        for ads in (slot_ads, job_ads):
            for i in rng.sample(range(len(ads)), len(ads) // 20):
                ads[i] = _updated(ads[i])
        rebuilt = builder.build(slot_ads, job_ads, ospool_settings)
        assert _content(rebuilt) == _content(build_snapshot(slot_ads, job_ads, ospool_settings))


@pytest.fixture
def warm(pool, ospool_settings, monkeypatch):
    """A builder that made one snapshot of copies of the pool's ad lists, and the list of the
    times autoclusters are formed afresh from then on."""
    builder = SnapshotBuilder()
    slot_ads, job_ads = list(pool.slot_ads), list(pool.job_ads)
    builder.build(slot_ads, job_ads, ospool_settings)
    formed: list[int] = []
    form = Autoclusters.form
    monkeypatch.setattr(Autoclusters, "form", lambda self, *args: formed.append(1) or form(self, *args))
    return builder, slot_ads, job_ads, formed


def test_the_steady_state_updates_the_autoclusters_instead_of_forming_them_again(warm, ospool_settings):
    builder, slot_ads, job_ads, formed = warm
    job_ads[5], job_ads[500] = _updated(job_ads[5]), _updated(job_ads[500])
    del job_ads[100]
    job_ads.append(_updated(job_ads[7], GlobalJobId="new#1.0#1"))
    rebuilt = builder.build(slot_ads, job_ads, ospool_settings)
    assert not formed
    assert _content(rebuilt) == _content(build_snapshot(slot_ads, job_ads, ospool_settings))


def test_a_group_whose_first_job_changes_splits_as_the_new_first_job_decides(warm, ospool_settings):
    """Past the guard of the OSPool catalog clause (a job with RequestedCatalogs and catalogs), a
    slot may read any job attribute: when such a job moves to the front of its group (a higher
    JobPrio), each job of the group stands alone; when it goes, they group again."""
    builder, slot_ads, job_ads, formed = warm
    idle = [i for i, ad in enumerate(job_ads) if ad.get("JobStatus") == 1]
    original = job_ads[idle[10]]
    sizes = []
    catalog = {"RequestedCatalogs": classad2.ExprTree('{"a"}'),
               "catalogs": classad2.ExprTree('{[Catalog = "a"; CatalogSize = 1]}')}
    for ad in (_updated(original, JobPrio=100, **catalog), _updated(original)):
        job_ads[idle[10]] = ad
        rebuilt = builder.build(slot_ads, job_ads, ospool_settings)
        assert not formed
        assert _content(rebuilt) == _content(build_snapshot(slot_ads, job_ads, ospool_settings))
        formed.clear()                          # the fresh build formed its own
        sizes.append(len(rebuilt.autoclusters))
    assert sizes[0] > sizes[1]


# Job attribute changes that move jobs between autoclusters: requests, an expression that reads an
# attribute nothing read before (the closure grows), the guard of a slot's catalog clause (opened,
# the job may read any attribute and stands alone), priority (the job order), idleness.
JOB_EDITS = [
    {"RequestCpus": 1}, {"RequestCpus": 2},
    {"RequestMemory": 1024}, {"RequestMemory": classad2.ExprTree("1024 * ScaleFactor")},
    {"RequestMemory": classad2.ExprTree("ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 1024)")},
    {"ScaleFactor": 2}, {"ScaleFactor": None}, {"MemoryUsage": 512}, {"MemoryUsage": None},
    {"ProjectName": "Alpha"}, {"ProjectName": "Beta"},
    {"RequestedCatalogs": classad2.ExprTree('{"a"}'),
     "catalogs": classad2.ExprTree('{[Catalog = "a"; CatalogSize = 1]}')},
    {"RequestedCatalogs": None},
    {"JobPrio": 5}, {"JobPrio": 0}, {"JobStatus": 2}, {"JobStatus": 1},
]


def _edit_jobs(rng: random.Random, job_ads: list, serial: list[int]) -> None:
    """One cycle's worth of changes to the job ads, of one kind picked at random."""
    kind = rng.choice(["update", "update", "update", "leave", "join", "move", "twice", "duplicate id", "other"])
    spot = rng.randrange(len(job_ads))
    if kind == "update":
        for i in rng.sample(range(len(job_ads)), 10):
            job_ads[i] = _updated(job_ads[i], **rng.choice(JOB_EDITS))
    elif kind == "leave":
        del job_ads[spot]
    elif kind == "join":
        serial[0] += 1
        job_ads.insert(spot, _updated(rng.choice(job_ads), GlobalJobId=f"new#{serial[0]}.0#1"))
    elif kind == "move":
        other = rng.randrange(len(job_ads))
        job_ads[spot], job_ads[other] = job_ads[other], job_ads[spot]
    elif kind == "twice":
        job_ads.insert(spot, rng.choice(job_ads))
    elif kind == "duplicate id":
        job_ads.insert(spot, _updated(rng.choice(job_ads)))
    else:
        job_ads.insert(spot, classad2.ClassAd({"MyType": "Submitter", "Name": "someone@site"}))


def test_edits_between_cycles_give_what_a_fresh_build_gives(ospool_settings):
    small = generate_pool(60, 300, seed=2, now=NOW)
    slot_ads, job_ads = list(small.slot_ads), list(small.job_ads)
    builder = SnapshotBuilder()
    rng = random.Random(7)
    serial = [0]
    for cycle in range(40):
        rebuilt = builder.build(slot_ads, job_ads, ospool_settings)
        assert _content(rebuilt) == _content(build_snapshot(slot_ads, job_ads, ospool_settings)), cycle
        _edit_jobs(rng, job_ads, serial)
        if cycle % 5 == 4:                      # slots claimed and freed change what is significant
            i = rng.randrange(len(slot_ads))
            slot_ads[i] = _updated(slot_ads[i], State=rng.choice(["Claimed", "Unclaimed"]))
        if cycle % 10 == 9:                     # ads and job ids seen twice go again
            seen: set[object] = set()
            job_ads[:] = [ad for ad in job_ads if _once(ad, seen)]


def _once(ad: classad2.ClassAd, seen: set[object]) -> bool:
    identity = ad.get("GlobalJobId") or id(ad)
    if identity in seen:
        return False
    seen.add(identity)
    return True


def test_a_slot_ad_offered_again_keeps_its_record_within_the_bound():
    """A replay offers a node's own ad object again once its jobs end: a builder keeping entries
    of ads left out (``offered_again``) gives it the Slot record of before, so whatever a cycle
    keeps by record (descriptions, the match space's row, the slot weight) is found again; the
    oldest left out go first past the bound, and a builder keeping none reads the ad again. Each
    snapshot holds what a fresh build of the same ads holds."""
    config = settings(consumption_policy=True)
    a, b, c = pslot("a", cpus=4), pslot("b", cpus=8), pslot("c", cpus=2)
    job_ads = jobs("alice", 3, cluster=1)
    records = {}
    for keep in (0, 1):
        builder = SnapshotBuilder(offered_again=keep)
        offers = [[a, b, c], [b, c], [a, c], [a, b, c]]
        tables = []
        for offer in offers:
            snapshot = builder.build(offer, job_ads, config)
            assert _content(snapshot) == _content(build_snapshot(offer, job_ads, config))
            tables.append({slot.name: slot for slot in snapshot.table.slots})
        records[keep] = tables
    kept, none = records[1], records[0]
    assert kept[2]["a"] is kept[0]["a"]          # left out once, then offered again: the same record
    assert kept[3]["b"] is kept[0]["b"]
    assert kept[3]["c"] is kept[0]["c"]          # offered every cycle
    assert none[2]["a"] is not none[0]["a"]      # keeping none: read again, alike
    assert none[2]["a"] == none[0]["a"]


def test_past_the_bound_the_oldest_ad_left_out_is_read_again():
    config = settings(consumption_policy=True)
    a, b, c = pslot("a", cpus=4), pslot("b", cpus=8), pslot("c", cpus=2)
    builder = SnapshotBuilder(offered_again=1)
    first = {slot.name: slot for slot in builder.build([a, b, c], [], config).table.slots}
    builder.build([c], [], config)               # a and b left out: one kept, the other (a) dropped
    again = {slot.name: slot for slot in builder.build([a, b, c], [], config).table.slots}
    assert again["b"] is first["b"]
    assert again["a"] is not first["a"]
    assert again["a"] == first["a"]              # read again, alike


def test_a_cycle_of_the_very_same_slots_reuses_the_slot_table():
    """The slot table is read-only, so a cycle whose slots are the last cycle's very records, in
    its order, is given the same table; a changed ad, or another order, makes a new one, as a
    fresh build would."""
    config = settings(consumption_policy=True)
    a, b = pslot("a", cpus=4), pslot("b", cpus=8)
    job_ads = jobs("alice", 3, cluster=1)
    builder = SnapshotBuilder()
    first = builder.build([a, b], job_ads, config)
    assert builder.build([a, b], job_ads, config).table is first.table
    for offer in ([b, a], [a, pslot("b", cpus=6)], [a]):
        snapshot = builder.build(offer, job_ads, config)
        assert snapshot.table is not first.table
        assert _content(snapshot) == _content(build_snapshot(offer, job_ads, config))
