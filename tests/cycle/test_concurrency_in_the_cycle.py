"""Concurrency limits as HTCondor 25.14 counts them in a cycle.

References: ``src/condor_negotiator.V6/Accountant.cpp`` ``LoadLimits`` (every slot ad's
ConcurrencyLimits and PreemptingConcurrencyLimits count, whatever its State) and
``matchmaker.cpp`` ``matchmakingAlgorithm`` (a job ConcurrencyLimits that is no string on its own,
``evaluate_limits_with_match``, is evaluated with each candidate slot as TARGET, and a candidate
on which the limits are full is passed over; the match takes the limits evaluated there).
Each cycle runs on the fast path, the classad2 reference and the job-by-job loop.
"""

from __future__ import annotations

from tests.builders import expr, jobs, settings, static_slot
from tests.cycle.test_preemption import claimed, cycle

PER_NETWORK = expr('strcat("net_", TARGET.Network)')


def test_limits_that_read_the_slot_are_evaluated_against_each_candidate():
    """NET_EAST_LIMIT = 1: of two east slots one is taken, the other passed over for the west one."""
    slots = [static_slot("east1", Network="east"), static_slot("east2", Network="east"),
             static_slot("west1", Network="west")]
    config = settings(concurrency_limits={"net_east": 1.0})
    result = cycle(slots, jobs("alice", 3, ConcurrencyLimits=PER_NETWORK), config)
    assert sorted(m.slot for m in result.matches) == ["east1", "west1"]
    assert [r.reason for r in result.rejections] == ["concurrency limit net_east reached"]


def test_running_jobs_hold_the_limits_their_slot_evaluated_to():
    """A running job's slot shows the limit it holds: net_east is full, so only west is left."""
    slots = [claimed("busy", "bob@site", Network="east", ConcurrencyLimits="net_east"),
             static_slot("east1", Network="east"), static_slot("west1", Network="west")]
    config = settings(concurrency_limits={"net_east": 1.0})
    result = cycle(slots, jobs("alice", 2, ConcurrencyLimits=PER_NETWORK), config)
    assert [m.slot for m in result.matches] == ["west1"]


def test_a_preempting_claims_limits_are_counted():
    """LoadLimits adds PreemptingConcurrencyLimits: the claim waiting to preempt holds the license."""
    slots = [claimed("busy", "bob@site", PreemptingConcurrencyLimits="license"), static_slot("free")]
    config = settings(concurrency_limits={"license": 1.0})
    assert cycle(slots, jobs("alice", 1, ConcurrencyLimits="license"), config).matches == ()


def test_a_slot_in_the_preempting_state_still_holds_its_jobs_limits():
    """LoadLimits counts every slot ad's ConcurrencyLimits, not only Claimed ones': a job being
    vacated (State Preempting) still runs and holds its license."""
    vacating = claimed("busy", "bob@site", State="Preempting", Activity="Vacating", ConcurrencyLimits="license")
    config = settings(concurrency_limits={"license": 1.0})
    result = cycle([vacating, static_slot("free")], jobs("alice", 1, ConcurrencyLimits="license"), config)
    assert result.matches == ()
    assert [r.reason for r in result.rejections] == ["concurrency limit license reached"]
