"""The constraints that split a pool between negotiators, as HTCondor 25.14's negotiator applies them.

References, in ``src/condor_negotiator.V6/matchmaker.cpp``:

- ``obtainAdsFromCollector``: ``NEGOTIATOR_SLOT_CONSTRAINT`` and ``NEGOTIATOR_SUBMITTER_CONSTRAINT``
  are added to the collector query, so the negotiator never sees a slot or submitter ad outside
  them: no match, no usage, no pool size;
- ``startNegotiateProtocol``: ``NEGOTIATOR_JOB_CONSTRAINT`` goes to the schedd as
  ``NegotiatorJobConstraint``, which offers only the jobs that meet it (schedd.cpp ``negotiate``);
- ``negotiationTime``: ``NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT`` (else the obsolete
  ``GROUP_DYNAMIC_MACH_CONSTRAINT``) limits the slots summed into the pool size
  (``weightedPoolsize``, the quotas' base), not those matched; none matching is a warning;
- the collector and the schedd select an ad by evaluating the constraint in the ad alone, true or a
  non-zero number selecting it (``EvalExprToBool`` then ``IsBooleanValueEquiv``, collector.cpp
  ``collect_op::query_scan``).

The cycles run on the fast path, the classad2 reference and the job-by-job loop
(``tests.cycle.test_preemption.cycle``).
"""

from __future__ import annotations

import classad2
import pytest

from negotiatord.classad.conversion import satisfies
from negotiatord.pool.builder import SnapshotBuilder
from tests.builders import group, jobs, settings, static_slot
from tests.cycle.test_preemption import claimed, cycle


def test_slots_outside_the_slot_constraint_are_none_of_the_cycles():
    slots = [static_slot("a1", Shard="a"), static_slot("b1", Shard="b"), static_slot("b2", Shard="b"),
             claimed("b3", "bob@site", Shard="b")]
    result = cycle(slots, jobs("alice", 4), settings(slot_constraint='Shard == "a"'))
    assert [m.slot for m in result.matches] == ["a1"]
    # bob's claimed slot is outside: not his usage here, and only a1's weight makes the pool
    assert "bob@site" not in result.usage
    assert result.stats.slots == 1 and result.stats.pool_size == 1.0


def test_jobs_outside_the_job_constraint_are_none_of_the_cycles():
    """A constraint naming the job's identity reads each job, not the ad its cluster shares."""
    slots = [static_slot(f"s{n}") for n in range(4)]
    config = settings(job_constraint="ProcId >= 2 && RequestMemory < 500")
    result = cycle(slots, jobs("alice", 4) + jobs("bob", 2, cluster=2, memory=600), config)
    assert sorted(m.job for m in result.matches) == ["alice-schedd#1.2#0", "alice-schedd#1.3#0"]


def test_a_daemons_snapshots_follow_a_job_constraint_changed_by_a_reload():
    slots = [static_slot("s1")]
    ads = jobs("alice", 2, Queue="short") + jobs("bob", 2, cluster=2, Queue="long")
    builder = SnapshotBuilder()
    short = builder.build(slots, ads, settings(job_constraint='Queue == "short"'))
    assert {job.submitter for job in short.jobs} == {"alice@site"}
    long = builder.build(slots, ads, settings(job_constraint='Queue == "long"'))
    assert {job.submitter for job in long.jobs} == {"bob@site"}
    assert len(builder.build(slots, ads, settings()).jobs) == 4


def test_the_pool_size_counts_only_the_slots_the_poolsize_constraint_names():
    """The quotas share out the pool size (``hgq_total_quota``): half of the two counted slots for
    physics, the other half for <none>, two matches in all; the slots outside the constraint are
    matched as any other (s0 and s1 come first)."""
    slots = [static_slot(f"s{n}", Counted=n >= 2) for n in range(4)]
    config = settings(groups=(group("physics", dynamic=0.5),), slot_poolsize_constraint="Counted")
    ads = jobs("alice", 4, group="physics") + jobs("bob", 4, cluster=2)
    result = cycle(slots, ads, config)
    assert result.stats.pool_size == 2.0
    assert sorted((m.group, m.slot) for m in result.matches) == [("<none>", "s1"), ("physics", "s0")]
    everything = cycle(slots, ads, settings(groups=(group("physics", dynamic=0.5),)))
    assert sorted(m.group for m in everything.matches) == ["<none>", "<none>", "physics", "physics"]


def test_no_slot_in_the_poolsize_constraint_is_said_and_leaves_a_pool_of_size_zero():
    result = cycle([static_slot("s1")], jobs("alice", 1), settings(slot_poolsize_constraint="False"))
    assert result.stats.pool_size == 0.0 and result.matches == ()
    assert "0 out of 1 slots match NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT" in result.problems


@pytest.mark.parametrize("constraint, selected", [
    ("Cpus == 4", True), ("Cpus == 2", False),
    ("Cpus", True), ("Cpus - 4", False),             # a number: non-zero is true
    ("Missing", False), ("Missing =?= undefined", True),
    ('Name', False),                                  # a string is no boolean
    ("MY.Cpus == 4", True), ("1/0 == 1", False),      # ERROR selects nothing
])
def test_a_constraint_selects_an_ad_as_the_collector_does(constraint, selected):
    """Checked against classad2's own evaluation of the constraint in the ad, and its boolean
    reading of a number."""
    ad = classad2.ClassAd({"Name": "slot1@host", "Cpus": 4})
    assert satisfies(ad, constraint) is selected
    value = classad2.ExprTree(constraint).eval(ad)
    expected = (value is True) or (isinstance(value, (int, float)) and not isinstance(value, (bool, classad2.Value))
                                   and value != 0)
    assert expected is selected
