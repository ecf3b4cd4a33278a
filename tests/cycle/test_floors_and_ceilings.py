"""Submitter floors and ceilings (``condor_userprio -setfloor`` / ``-setceiling``) in the cycle, as
HTCondor 25.14's negotiator applies them (``src/condor_negotiator.V6/matchmaker.cpp``): the floor
round of ``negotiateWithGroup(isFloorRound)`` over ``findBelowFloorSubmitters``, and the ceiling
``negotiate()`` stops a submitter at. Each cycle runs on the fast path, the classad2 reference and
the job-by-job loop (``tests.cycle.test_preemption.cycle``)."""

from __future__ import annotations

from collections import Counter

from negotiatord.accountant import AccountantState, CustomerRecord
from negotiatord.cycle.bounds import CEILING
from negotiatord.cycle.negotiate import SUBMITTER_LIMIT
from tests.builders import expr, group, jobs, settings, static_slot
from tests.cycle.test_preemption import NOW, claimed, cycle


def record(name: str, priority: float = 0.5, *, ceiling: float | None = None, floor: float | None = None,
           ) -> CustomerRecord:
    return CustomerRecord(f"{name}@site", priority, None, 0.0, 0.0, None, None, NOW, ceiling, floor)


def counts(result) -> Counter:
    return Counter(match.submitter.split("@")[0] for match in result.matches)


def test_a_ceiling_caps_what_a_submitter_holds_whatever_its_share():
    """Alone in a pool of 6, alice would take 6; a ceiling of 4 with 1 running leaves her 3
    (submitterCeiling -= GetWeightedResourcesUsed), and her other jobs are refused for it."""
    slots = [claimed("r0", "alice@site")] + [static_slot(f"s{n}") for n in range(6)]
    result = cycle(slots, jobs("alice", 6), settings(), AccountantState([record("alice", ceiling=4)]))
    assert counts(result) == {"alice": 3}
    assert {rejection.reason for rejection in result.rejections} == {CEILING}


def test_a_ceiling_lets_others_take_what_its_submitter_leaves():
    slots = [static_slot(f"s{n}") for n in range(6)]
    state = AccountantState([record("alice", ceiling=1), record("bob")])
    result = cycle(slots, jobs("alice", 6) + jobs("bob", 6, cluster=2), settings(), state)
    assert counts(result) == {"alice": 1, "bob": 5}


def test_a_ceiling_already_reached_gives_nothing():
    """submitterCeiling <= 0: 'Negotiation with ... skipped because submitterCeiling remaining is 0'."""
    slots = [claimed(f"r{n}", "alice@site") for n in range(2)] + [static_slot("s0")]
    result = cycle(slots, jobs("alice", 1), settings(), AccountantState([record("alice", ceiling=2)]))
    assert not result.matches and [r.reason for r in result.rejections] == [CEILING]


def test_a_ceiling_in_weighted_resources_refuses_a_slot_that_would_cross_it():
    """Ceilings count SlotWeight (the man page: "the sum of the SlotWeight of all running jobs"):
    with a ceiling of 3, one 2-cpu slot fits and a second does not."""
    slots = [static_slot(f"s{n}", cpus=2) for n in range(3)]
    result = cycle(slots, jobs("alice", 3), settings(), AccountantState([record("alice", ceiling=3)]))
    assert counts(result) == {"alice": 1}


def test_a_startd_rank_preemption_stops_at_the_ceiling():
    """negotiate() breaks out once the ceiling is reached, before any candidate is considered: a
    slot whose RANK prefers alice's job is not taken for her beyond her ceiling."""
    slots = [claimed("s1", "bob@site", Rank=expr('TARGET.Owner == "alice" ? 10 : 0'))]
    state = AccountantState([record("alice", ceiling=0), record("bob", 100.0)])
    result = cycle(slots, jobs("alice", 1), settings(), state)
    assert not result.preemptions and not result.matches
    without = cycle(slots, jobs("alice", 1), settings(), AccountantState([record("alice"), record("bob", 100.0)]))
    assert [p.slot for p in without.preemptions] == ["s1"]


def test_no_ceiling_is_unlimited():
    slots = [static_slot(f"s{n}") for n in range(4)]
    assert counts(cycle(slots, jobs("alice", 4), settings(), AccountantState([record("alice")]))) == {"alice": 4}


def test_a_submitter_below_its_floor_is_served_first_up_to_it():
    """Equal shares would split 4 slots 2/2; bob, with a far worse priority, has a floor of 3 and
    holds nothing, so the floor round brings him to 3 before the pie spins."""
    slots = [static_slot(f"s{n}") for n in range(4)]
    state = AccountantState([record("alice", 0.5), record("bob", 500.0, floor=3)])
    result = cycle(slots, jobs("alice", 4) + jobs("bob", 4, cluster=2), settings(), state)
    assert counts(result) == {"bob": 3, "alice": 1}
    no_floor = AccountantState([record("alice", 0.5), record("bob", 500.0)])
    assert counts(cycle(slots, jobs("alice", 4) + jobs("bob", 4, cluster=2), settings(), no_floor))["bob"] <= 1


def test_the_floor_round_brings_a_submitter_to_its_floor_counting_what_it_holds():
    """bob holds 2 of his floor of 3: the round gives him 1, and the pie spins the rest."""
    slots = [claimed(f"r{n}", "bob@site") for n in range(2)] + [static_slot(f"s{n}") for n in range(4)]
    state = AccountantState([record("alice", 0.5), record("bob", 500.0, floor=3)])
    result = cycle(slots, jobs("alice", 4) + jobs("bob", 4, cluster=2), settings(), state)
    assert counts(result) == {"bob": 1, "alice": 3}


def test_a_submitter_at_its_floor_gets_no_floor_round():
    slots = [claimed(f"r{n}", "bob@site") for n in range(3)] + [static_slot(f"s{n}") for n in range(2)]
    state = AccountantState([record("alice", 0.5), record("bob", 500.0, floor=3)])
    assert counts(cycle(slots, jobs("alice", 2) + jobs("bob", 2, cluster=2), settings(), state)) == {"alice": 2}


def test_below_floor_submitters_share_the_floor_round_by_priority():
    """calculateSubmitterLimit in the floor round: each one's share of the pool among the
    below-floor submitters, capped at its floor. Of 4 slots, alice (priority 1) and bob
    (priority 3) both ask for a floor of 4: shares 3/4 and 1/4."""
    slots = [static_slot(f"s{n}") for n in range(4)]
    state = AccountantState([record("alice", 1.0, floor=4), record("bob", 3.0, floor=4)])
    result = cycle(slots, jobs("alice", 4) + jobs("bob", 4, cluster=2), settings(), state)
    assert counts(result) == {"alice": 3, "bob": 1}


def test_a_floor_within_a_group_is_served_within_the_groups_quota():
    """HGQ: the floor round runs in each group's callback, inside the group's allocation."""
    slots = [static_slot(f"s{n}") for n in range(4)]
    config = settings(groups=(group("g", quota=2),))
    state = AccountantState([record("g.alice", 0.5), record("g.bob", 500.0, floor=2)])
    result = cycle(slots, jobs("alice", 4, group="g") + jobs("bob", 4, cluster=2, group="g"), config, state)
    assert Counter(m.submitter for m in result.matches if m.group == "g") == {"g.bob@site": 2}


def test_a_ceiling_caps_the_floor_round_too():
    slots = [static_slot(f"s{n}") for n in range(4)]
    state = AccountantState([record("bob", floor=3, ceiling=1)])
    assert counts(cycle(slots, jobs("bob", 4), settings(), state)) == {"bob": 1}


def test_a_share_limit_is_named_as_such_beside_a_ceiling_that_does_not_bind():
    slots = [static_slot(f"s{n}") for n in range(2)]
    state = AccountantState([record("alice", 0.5, ceiling=10), record("bob", 0.5)])
    result = cycle(slots, jobs("alice", 2) + jobs("bob", 2, cluster=2), settings(), state)
    assert counts(result) == {"alice": 1, "bob": 1}
    assert SUBMITTER_LIMIT in {rejection.reason for rejection in result.rejections}
    assert CEILING not in {rejection.reason for rejection in result.rejections}
