"""Claimed partitionable slots, as HTCondor 25.14's negotiator matches them.

A schedd with ``ENABLE_CLAIMABLE_PARTITIONABLE_SLOTS`` claims a p-slot whole when its negotiator
says ``MatchClaimedPslots`` (schedd.cpp ``scheduler_handleMatch``); the startd then shows the
p-slot ``Claimed``, with ``RemoteScheddName``, ``WantMatching`` and the claimant's ``RemoteUser``
(claim.cpp ``Claim::publish``). References, in ``src/condor_negotiator.V6/matchmaker.cpp``:

- ``trimStartdAds_ClaimedPslotLogic``: a claimed p-slot is dropped when ``WantMatching`` is false
  (unset counts as true), or when it names a ``WorkingCM`` and ``MATCH_WORKING_CM_SLOTS`` is false;
- ``matchmakingAlgorithm``: a p-slot with ``RemoteScheddName`` is offered only to jobs of that
  schedd (``pslot_claimer != scheddName``); with ``NEGOTIATOR_CONSIDER_PREEMPTION`` its
  ``RemoteUser`` makes it a running claim, which its claimant's own jobs are refused;
- ``Accountant::CheckMatches``/``IsClaimed``: the claimed p-slot's weight is its claimant's usage.

The real negotiator did this on the minipool (``tests/real_pool/test_claimed_pslots.py`` hands
such a match to a real schedd): with the p-slot claimed whole by the schedd ``vm``, the next cycle
matched the schedd's next job to it, sending the p-slot's own claim id.
"""

from __future__ import annotations

from typing import Any

import classad2

from tests.builders import jobs, pslot, settings, static_slot
from tests.cycle.test_preemption import cycle

NO_PREEMPTION = settings(consider_preemption=False)
# the rest of the pool: 6 cpus no job matches, so that the claimant's share of the pool is not
# spent by the claimed p-slot alone (as HTCondor's pie counts it: see the real pool's test)
REST = static_slot("busy@other", cpus=6, Requirements=False)


def claimed_pslot(name: str = "slot1@host", schedd: str | None = "alice-schedd", **attrs: Any) -> classad2.ClassAd:
    """A p-slot ``schedd`` claimed whole for alice, with 3 of its 4 cpus left, as the startd shows it."""
    base: dict[str, Any] = dict(State="Claimed", Activity="Idle", RemoteUser="alice@site", RemoteOwner="alice@site",
                                WantMatching=True)
    if schedd is not None:
        base["RemoteScheddName"] = schedd
    base.update(attrs)
    return pslot(name, cpus=3, memory=3072, **base)


def test_a_claimed_pslot_takes_a_job_of_the_schedd_that_claimed_it():
    """Its claimant holds its 3 cpus already, of a pool of 9: a pie with room left."""
    result = cycle([REST, claimed_pslot()], jobs("alice", 2), NO_PREEMPTION)
    # no consumption policy (a startd refuses a claim of a p-slot that has one): one match per
    # cycle, the slot taken whole, as matchmaker.cpp takes a p-slot without one
    assert [(m.slot, m.job) for m in result.matches] == [("slot1@host", "alice-schedd#1.0#0")]
    # the claimant already holds the p-slot's 3 cpus, as HTCondor's accountant counts them, and
    # the match costs its SlotWeight on top
    assert result.usage["alice@site"] == 6.0


def test_the_claimed_pslot_alone_can_spend_its_claimants_share():
    """With nothing else in the pool, the claimant's usage (the p-slot's weight) is the whole pool:
    the pie has no room left and HTCondor halts ("no slots available to match ... pieLeft=0"), as
    the minipool showed with the p-slot as its only slot."""
    assert cycle([claimed_pslot()], jobs("alice", 1), NO_PREEMPTION).matches == ()


def test_jobs_of_another_schedd_are_not_offered_it():
    """alice's jobs at another schedd, and bob's at his own, leave the p-slot alone; an unclaimed
    slot serves them."""
    others = jobs("alice", 1, cluster=2, GlobalJobId="elsewhere#2.0#0") + jobs("bob", 1, cluster=3)
    result = cycle([REST, claimed_pslot()], others, NO_PREEMPTION)
    assert result.matches == ()
    result = cycle([REST, claimed_pslot(), pslot("free@host", cpus=1, memory=1024)], others, NO_PREEMPTION)
    assert [m.slot for m in result.matches] == ["free@host"]


def test_a_job_of_the_claiming_schedd_in_an_autocluster_with_another_schedds_jobs():
    """Equal jobs of two schedds fall in one autocluster per schedd (each schedd makes its own, and
    the negotiator negotiates a submitter schedd by schedd), so the p-slot's candidate list of the
    other schedd's jobs does not hold it."""
    theirs = jobs("alice", 1, cluster=2, GlobalJobId="adams-schedd#2.0#0")    # negotiated first (by name)
    mine = jobs("alice", 1, cluster=3)
    result = cycle([REST, claimed_pslot()], theirs + mine, NO_PREEMPTION)
    assert [m.job for m in result.matches] == ["alice-schedd#3.0#0"]


def test_a_claimed_pslot_naming_no_schedd_takes_any_job():
    result = cycle([REST, claimed_pslot(schedd=None)], jobs("bob", 1), NO_PREEMPTION)
    assert [m.submitter for m in result.matches] == ["bob@site"]


def test_want_matching_false_keeps_it_out():
    assert cycle([REST, claimed_pslot(WantMatching=False)], jobs("alice", 1), NO_PREEMPTION).matches == ()


def test_a_slot_working_for_another_central_manager_needs_match_working_cm_slots():
    working = claimed_pslot(WorkingCM="sidecar.example.org")
    assert cycle([REST, working], jobs("alice", 1), NO_PREEMPTION).matches == ()
    taken = cycle([REST, working], jobs("alice", 1), settings(consider_preemption=False, match_working_cm_slots=True))
    assert len(taken.matches) == 1


def test_with_preemption_considered_its_claimant_is_refused_it():
    """NEGOTIATOR_CONSIDER_PREEMPTION (HTCondor's default): matchmakingAlgorithm reads the p-slot's
    RemoteUser as the running claim's, and refuses it to the same user's job ("is from the same
    user as the existing job ... and is not preferred by startd rank")."""
    assert cycle([REST, claimed_pslot()], jobs("alice", 1), settings()).matches == ()


def test_an_unclaimed_pslot_is_offered_to_every_schedd_as_before():
    config = settings(consider_preemption=False, consumption_policy=True)
    result = cycle([pslot("slot1@host", cpus=2)], jobs("alice", 1) + jobs("bob", 1, cluster=2), config)
    assert sorted(m.submitter for m in result.matches) == ["alice@site", "bob@site"]
