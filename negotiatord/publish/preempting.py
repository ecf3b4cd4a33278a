"""Quota victims being preempted: named by one committed cycle, not named again by the next ones.

When HTCondor's negotiator or schedd tells a startd to give up a claim, the startd advertises the
slot as ``Preempting`` (activity ``Vacating``, then ``Killing``) until the job is gone, and the
negotiator does not preempt such a slot again. A feed sees none of that until the
startd advertises, and a consumer of ``/v1/matches`` may take a while to act on a preemption no
job takes the slot for (rule ``quota``): until then the victim's slot still shows it running, and
each cycle would name it, and the group's excess would still count it, so further victims would be
named. So, as YuniKorn's quota preemptor leaves out allocations already preempted
(``Allocation.IsPreempted``) and subtracts the resources a queue is preempting from its usage
(``setPreemptableResources``), the daemon shows each victim's slot to later cycles as its startd
will show it, ``State = "Preempting"``, ``Activity = "Vacating"``, while its ad still shows the
victim running: it is then offered to no job and named by no rule, and, as negotiatord reads a
claim from ``Claimed`` slots only, charged to nobody. (HTCondor's ``Accountant::IsClaimed`` also
charges a ``Preempting`` slot to its customer; here the victim's usage stops when it is named,
which is what lets the group's excess count it as released.)

The victim is forgotten as soon as the slot's ad shows anything else (another job, no claim, the
startd's own Preempting state) or is gone, and once its group's quota preemption delay has passed
since it was named: if it still runs then, the group is over its maximum again, its timer starts
again, and the victim may be named once more when that delay has passed. The victims are rebuilt
from the match log at start-up, so a restart does not name them again either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import classad2

from negotiatord.classad.conversion import evaluate_string
from negotiatord.cycle.preemption import QUOTA
from negotiatord.cycle.result import Preemption
from negotiatord.feed.store import PoolView
from negotiatord.pool.slots import claimed_job
from negotiatord.publish.holds import copy_ad
from negotiatord.settings import Settings

PREEMPTING = "Preempting"
VACATING = "Vacating"


@dataclass(frozen=True)
class _Victim:
    job: str             # the victim job's id, as the cycle read it from the slot ad
    group: str           # the group whose maximum it was preempted for
    named: float         # the time of the cycle that named it


class BeingPreempted:
    """The quota victims named by committed cycles, by slot name, still being preempted."""

    def __init__(self) -> None:
        self._victims: dict[str, _Victim] = {}
        # by slot: the ad last shown as Preempting and its stand-in, reused while the ad is unchanged
        # (a copy of a glidein's slot ad costs about as much as a few hundred dictionary look-ups)
        self._shown: dict[str, tuple[classad2.ClassAd, classad2.ClassAd]] = {}

    def __len__(self) -> int:
        return len(self._victims)

    @classmethod
    def from_log(cls, published: Iterable[tuple[float, Preemption]]) -> BeingPreempted:
        """From the published preemptions no job took the slot for, with their cycle's time, oldest
        first (:meth:`~negotiatord.publish.matchlog.MatchLog.quota_preemptions`)."""
        victims = cls()
        for named, preemption in published:
            victims.add(named, (preemption,))
        return victims

    def add(self, named: float, preemptions: Iterable[Preemption]) -> None:
        """Take in a committed cycle's preemptions at its time ``named``: those no job takes the
        slot for are victims being preempted from now on."""
        for preemption in preemptions:
            if preemption.job is None and preemption.rule == QUOTA and preemption.victim_job is not None:
                self._victims[preemption.slot] = _Victim(preemption.victim_job, preemption.victim_group, named)
                self._shown.pop(preemption.slot, None)

    def apply(self, view: PoolView, settings: Settings, now: float) -> PoolView:
        """``view`` with each victim's slot shown as Preempting while its ad still shows the victim
        running and its group's delay since it was named has not passed; every other victim is
        forgotten."""
        shown: dict[str, classad2.ClassAd] = {}
        for slot, victim in list(self._victims.items()):
            ad = view.slots.get(slot)
            if ad is not None and now < victim.named + _delay(settings, victim.group):
                before = self._shown.get(slot)
                if before is not None and before[0] is ad:
                    shown[slot] = before[1]
                    continue
                if _runs(ad, slot, victim.job):
                    shown[slot] = _preempting(ad)
                    self._shown[slot] = (ad, shown[slot])
                    continue
            del self._victims[slot]
            self._shown.pop(slot, None)
        return replace(view, slots={**view.slots, **shown}) if shown else view


def _runs(ad: classad2.ClassAd, slot: str, job: str) -> bool:
    """Whether slot ``slot``'s ad shows job ``job`` running on its claim (the job's id read as the
    cycle reads a claim's: GlobalJobId, else JobId, else the slot's name)."""
    if evaluate_string(ad, "State") != "Claimed":
        return False
    return (claimed_job(ad) or slot) == job


def _delay(settings: Settings, group: str) -> float:
    """How long a victim of ``group`` is taken to be on its way out: the group's quota preemption
    delay (0, which switches enforcement off, as when quota preemption is off or the group is gone)."""
    configured = settings.group_tree.settings_of(group) if settings.quota_preemption else None
    return 0.0 if configured is None else configured.quota_preemption_delay


def _preempting(ad: classad2.ClassAd) -> classad2.ClassAd:
    """The slot as its startd shows it while it vacates the job."""
    shown = copy_ad(ad)
    shown["State"] = PREEMPTING
    shown["Activity"] = VACATING
    return shown
