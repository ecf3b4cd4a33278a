"""Quota victims being preempted: shown as Preempting to later cycles until their slot shows them gone.

References: YuniKorn's quota preemptor (``pkg/scheduler/objects/quota_preemptor.go``) leaves out
allocations already preempted (``filterAllocations``: ``IsPreempted``) and subtracts a queue's
preempting resources from its usage (``setPreemptableResources``); HTCondor's startd advertises a
slot whose claim it gives up as ``State = "Preempting"`` (``Vacating``, then ``Killing``), which
the negotiator neither charges nor offers (here: no claim is read from it, pool/slots.py).
"""

from __future__ import annotations

from negotiatord.cycle.result import Preemption
from negotiatord.feed import AdKind, AdStore
from negotiatord.feed.api import take_in_text
from negotiatord.feed.store import PoolView
from negotiatord.publish.preempting import BeingPreempted
from negotiatord.settings import GroupSettings
from tests.builders import settings, static_slot

T0 = 1_790_000_000
DELAY = 600.0
CONFIG = settings(groups=(GroupSettings("group_a", None, None, False, False, None, limit={"cpus": 1},
                                        quota_preemption_delay=DELAY),), quota_preemption=True)


def victim(slot: str, job: str) -> Preemption:
    return Preemption(job, slot, "group_a.bob@site", "group_a", None, None, None, "quota")


def view(*slots) -> PoolView:
    store = AdStore()
    store.update(AdKind.SLOT, take_in_text(AdKind.SLOT, "\n".join(s.printOld() for s in slots), "test").accepted,
                 0.0, 1e12)
    return store.view()


def running(name: str, job: str, **attrs) -> object:
    return static_slot(name, State="Claimed", Activity="Busy", AccountingGroup="group_a.bob@site",
                       GlobalJobId=job, **attrs)


def test_a_victim_is_shown_preempting_while_its_slot_shows_it_running():
    preempting = BeingPreempted()
    preempting.add(T0, [victim("s1", "bob#1"), victim("s2", "bob#2")])
    pool = view(running("s1", "bob#1"), running("s2", "bob#2"), running("s3", "bob#3"))
    seen = preempting.apply(pool, CONFIG, T0 + 60)
    assert [(seen.slots[s]["State"], seen.slots[s]["Activity"]) for s in ("s1", "s2", "s3")] == [
        ("Preempting", "Vacating"), ("Preempting", "Vacating"), ("Claimed", "Busy")]
    assert preempting.apply(pool, CONFIG, T0 + 90).slots["s1"] is seen.slots["s1"]   # unchanged ad: same copy
    # a newer ad that still shows the victim (its run time grew) keeps it shown as preempting
    again = preempting.apply(view(running("s1", "bob#1", TotalJobRunTime=120), running("s2", "bob#2")),
                             CONFIG, T0 + 120)
    assert again.slots["s1"]["State"] == "Preempting" and len(preempting) == 2


def test_a_victim_is_forgotten_once_its_slot_shows_it_gone():
    """Another job on the slot, the slot unclaimed, or no ad at all: the victim is gone."""
    preempting = BeingPreempted()
    preempting.add(T0, [victim("s1", "bob#1"), victim("s2", "bob#2"), victim("s3", "bob#3")])
    seen = preempting.apply(view(running("s1", "carol#9"), static_slot("s2", State="Unclaimed")), CONFIG, T0 + 60)
    assert seen.slots["s1"]["State"] == "Claimed" and seen.slots["s2"]["State"] == "Unclaimed"
    assert len(preempting) == 0


def test_a_victim_still_running_after_its_groups_delay_is_shown_as_it_is():
    """Then its group is over its maximum again, and a new timer decides when it may be named."""
    preempting = BeingPreempted()
    preempting.add(T0, [victim("s1", "bob#1")])
    assert preempting.apply(view(running("s1", "bob#1")), CONFIG, T0 + DELAY - 1).slots["s1"]["State"] == "Preempting"
    assert preempting.apply(view(running("s1", "bob#1")), CONFIG, T0 + DELAY).slots["s1"]["State"] == "Claimed"
    assert len(preempting) == 0


def test_only_preemptions_no_job_takes_the_slot_for_are_victims_being_preempted():
    """A match's preemption hands the slot to its job: the match's own hold shows that."""
    preempting = BeingPreempted.from_log([
        (T0, Preemption("bob#1", "s1", "bob@site", "<none>", "alice#1", "alice@site", "<none>", "priority")),
        (T0, victim("s2", "bob#2"))])
    assert len(preempting) == 1
    seen = preempting.apply(view(running("s1", "bob#1"), running("s2", "bob#2")), CONFIG, T0)
    assert (seen.slots["s1"]["State"], seen.slots["s2"]["State"]) == ("Claimed", "Preempting")


def test_switching_quota_preemption_off_forgets_the_victims():
    preempting = BeingPreempted()
    preempting.add(T0, [victim("s1", "bob#1")])
    off = settings(groups=CONFIG.groups, quota_preemption=False)
    assert preempting.apply(view(running("s1", "bob#1")), off, T0).slots["s1"]["State"] == "Claimed"
    assert len(preempting) == 0
