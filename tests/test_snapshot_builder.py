"""A daemon's snapshot builder reuses per-ad work only while the ad object is unchanged."""

from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.pool.snapshot import Snapshot
from tests.builders import jobs, pslot, settings


def _shape(snapshot):
    return ([s.name for s in snapshot.table.slots], [[j.id for j in a.jobs] for a in snapshot.autoclusters],
            snapshot.significant_attributes, [str(p) for p in snapshot.problems])


def test_a_builder_gives_what_a_fresh_build_gives_cycle_after_cycle():
    config = settings(consumption_policy=True)
    slot_ads = [pslot("a", cpus=4), pslot("b", cpus=8)]
    job_ads = jobs("alice", 3, cluster=1) + jobs("bob", 2, cluster=2, cpus=2)
    builder = SnapshotBuilder()
    first = builder.build(slot_ads, job_ads, config)
    assert _shape(first) == _shape(Snapshot.build(slot_ads, job_ads, config))

    # an update replaces the ad object: the new values count, the unchanged ads are reused
    updated = jobs("bob", 2, cluster=2, cpus=4)
    second = builder.build(slot_ads, job_ads[:3] + updated, config)
    assert _shape(second) == _shape(Snapshot.build(slot_ads, job_ads[:3] + updated, config))
    bob = next(a for a in second.autoclusters if a.submitter == "bob@site")
    assert bob.ad["RequestCpus"] == 4

    # a reload (new settings object) re-prepares the slots
    third = builder.build(slot_ads, job_ads, settings(consumption_policy=False))
    assert not third.table.consumption_policy.any()
