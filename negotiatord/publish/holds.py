"""What later cycles see of a job or slot that a committed cycle matched, until a newer ad arrives.

HTCondor gets this from the other daemons: the schedd stops offering a matched job, and the startd
of a matched slot enters the Matched state, then Claimed, while the accountant keeps charging the
match (``Accountant::CheckMatches``). A feed sees none of that until the owners advertise again,
so it stands in for them:

* a matched job is left out;
* a matched static slot becomes a claimed copy, charged to the submitter (with the job's
  concurrency limits), so pool size, usage and limits stay as they will be once it is claimed;
* a matched partitionable slot is seen less what the matches consumed (as HTCondor's
  ``cp_deduct_assets`` leaves it within a cycle), beside one claimed dynamic slot per match that
  weighs exactly the match's cost.

The cycle's thread says what to hold (:func:`holds_for`: the ads, their versions, what changed
in each slot), which is all the match log keeps. The stand-ins themselves are copies of slot ads
made through classad2, a fraction of a millisecond each but hundreds of milliseconds for a fill
cycle's thousands of matches; made on the cycle's thread, they took the GIL from the event loop
in switch intervals that a loaded machine stretched, and status requests waited. So they are
made as they are filed, on the event loop, a slice of a few milliseconds at a time
(:func:`file_holds`; :func:`apply_holds` at once, for callers with no event loop to share).

Holds outlive the daemon: the match log keeps, with each match, the version of the job and slot
ads it was matched against, and a restarted daemon holds them again (:class:`RestoredHolds`) when
ads of those versions are filed, whether preloaded, pulled or posted.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import classad2

from negotiatord.classad.conversion import evaluate_number, evaluate_string
from negotiatord.cycle.result import Match, Preemption
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.store import AdStore, PoolView, StoredAd, ad_version
from negotiatord.pool.job_ads import readable_ad

CLAIMED = "Claimed"
# What a claimed slot's ad says about its running job and claim (see _claimed).
_PREEMPTED_CLAIM = ("JobId", "GlobalJobId", "JobStart", "JobPrio", "CurrentRank", "PreemptingRank", "PreemptingUser",
                    "PreemptingAccountingGroup", "RemoteOwner", "EnteredCurrentState", "TotalJobRunTime",
                    "RetirementTimeRemaining")


# How long filing holds keeps the event loop before it lets other work in.
FILING_SLICE_S = 0.005


@dataclass(frozen=True)
class SlotChange:
    """What a committed cycle did to a slot: its matches (with each matched job's ad, for its
    concurrency limits) and the dynamic slots given back to it; its stand-ins are made from these
    and the slot's ad (:func:`slot_after_matches`)."""

    matches: tuple[Match, ...]
    jobs: tuple[classad2.ClassAd | None, ...]
    given_back: tuple[tuple[str, classad2.ClassAd], ...] = ()

    def stand_ins(self, name: str, slot: classad2.ClassAd
                  ) -> tuple[classad2.ClassAd | None, tuple[tuple[str, classad2.ClassAd], ...]]:
        job_ads = {match.job: job for match, job in zip(self.matches, self.jobs)}
        return slot_after_matches(name, slot, self.matches, job_ads.get, self.given_back)


@dataclass(frozen=True)
class Hold:
    kind: AdKind
    key: str
    seen: StoredAd                            # the ad the matching cycle negotiated over (a job's as stored)
    version: str                              # ad_version of the stored ad behind ``seen``
    change: SlotChange | None = None          # a matched slot's; None: left out (a job, a slot given back)

    def stand_ins(self) -> tuple[classad2.ClassAd | None, tuple[tuple[str, classad2.ClassAd], ...]]:
        """What later cycles see instead of ``seen`` (None: nothing), and the claimed dynamic
        slots beside it; made anew by each call."""
        if self.change is None:
            return None, ()
        assert isinstance(self.seen, classad2.ClassAd)      # only jobs are kept as ProcAds
        return self.change.stand_ins(self.key, self.seen)


def holds_for(view: PoolView, matches: Sequence[Match], preemptions: Sequence[Preemption] = ()) -> list[Hold]:
    """The holds a committed cycle over ``view`` calls for.

    A matched job is held by the record the cycle saw, as the store keeps it: a job kept as a
    ProcAd is never made whole here, its version is read from its record (:func:`ad_version`), and
    the store, finding that very record still filed, does not read it again. A slot's stand-ins
    read a matched job's concurrency limits from its cluster's ad (:func:`readable_ad`).

    A dynamic slot preempted for a match on its partitionable slot (ALLOW_PSLOT_PREEMPTION) is
    left out until its startd advertises again: its resources are the p-slot's again, and the
    match's dynamic slot is carved from them."""
    holds = []
    by_slot: dict[str, list[Match]] = defaultdict(list)
    for match in matches:
        job = view.jobs.by_key.get(match.job)
        if job is not None:
            holds.append(Hold(AdKind.JOB, match.job, job, ad_version(job)))
        by_slot[match.slot].append(match)
    given_back = _given_back(view, matches, preemptions, by_slot)
    for name, slot_matches in by_slot.items():
        slot = view.slots.get(name)
        if slot is not None:
            version = view.held_slot_versions.get(name) or ad_version(slot)
            holds.append(_slot_hold(name, slot, version, slot_matches, view.jobs.readable, given_back.get(name, ())))
    for returned in given_back.values():
        for name, dslot in returned:
            holds.append(Hold(AdKind.SLOT, name, dslot, view.held_slot_versions.get(name) or ad_version(dslot)))
    return holds


def _slot_hold(name: str, slot: classad2.ClassAd, version: str, matches: Sequence[Match],
               job_ad: Callable[[str], classad2.ClassAd | None],
               given_back: Sequence[tuple[str, classad2.ClassAd]] = ()) -> Hold:
    """The hold on slot ``name`` (ad ``slot``, stored as ``version``) that ``matches`` call for;
    ``job_ad`` finds a matched job's ad, for its concurrency limits."""
    change = SlotChange(tuple(matches), tuple(job_ad(match.job) for match in matches), tuple(given_back))
    return Hold(AdKind.SLOT, name, slot, version, change)


def _given_back(view: PoolView, matches: Sequence[Match], preemptions: Sequence[Preemption],
                by_slot: Mapping[str, Sequence[Match]]) -> dict[str, list[tuple[str, classad2.ClassAd]]]:
    """The dynamic slots each partitionable slot got back for this cycle's matches on it: the
    victims' slots that are not themselves a matched slot, by the p-slot's name."""
    pslot_of = {match.job: match.slot for match in matches}
    returned: dict[str, list[tuple[str, classad2.ClassAd]]] = defaultdict(list)
    for preemption in preemptions:
        pslot = pslot_of.get(preemption.job) if preemption.job is not None else None
        dslot = view.slots.get(preemption.slot)
        if pslot is not None and preemption.slot not in by_slot and dslot is not None:
            returned[pslot].append((preemption.slot, dslot))
    return returned


def slot_after_matches(name: str, slot: classad2.ClassAd, matches: Sequence[Match],
                       job_ad: Callable[[str], classad2.ClassAd | None],
                       given_back: Sequence[tuple[str, classad2.ClassAd]] = ()
                       ) -> tuple[classad2.ClassAd | None, tuple[tuple[str, classad2.ClassAd], ...]]:
    """What slot ``name`` (ad ``slot``) is once its startd has acted on ``matches``: the slot
    itself (a p-slot with the resources of the dynamic slots ``given_back`` to it, less what the
    matches consumed, None if an asset is not a number; a static slot claimed by the first), and
    one claimed dynamic slot per match of a p-slot, by name. The daemon holds these until the
    startd advertises; a trace replay builds its pool from them."""
    if slot.get("PartitionableSlot") is True:
        extras = tuple((f"{name}#{m.job}", claimed_dynamic_slot(slot, m, job_ad(m.job))) for m in matches)
        return what_is_left(slot, matches, [dslot for _, dslot in given_back]), extras
    return _claimed(copy_ad(slot), matches[0], job_ad(matches[0].job)), ()


def apply_holds(store: AdStore, holds: Iterable[Hold]) -> None:
    """Make and file the stand-ins of ``holds`` at once (:func:`file_holds` shares the event loop)."""
    for _ in _filing(store, holds):
        pass


async def file_holds(store: AdStore, holds: Iterable[Hold]) -> None:
    """Make and file the stand-ins of ``holds`` on the event loop, letting other work in every
    FILING_SLICE_S."""
    deadline = time.perf_counter() + FILING_SLICE_S
    for _ in _filing(store, holds):
        if time.perf_counter() > deadline:
            await asyncio.sleep(0)
            deadline = time.perf_counter() + FILING_SLICE_S


def _filing(store: AdStore, holds: Iterable[Hold]) -> Iterator[None]:
    """File each hold in turn, its stand-ins made just before (a step each); a job or slot
    advertised anew since the cycle saw it is not held (:meth:`~negotiatord.feed.store.AdTable.hold`)."""
    for hold in holds:
        store.table(hold.kind).hold(hold.key, hold.seen, hold.version, *hold.stand_ins())
        yield


@dataclass
class RestoredHolds:
    """The holds a previous run of the daemon made, read back from the match log at start-up.

    A restarted daemon's store starts empty, or with the preloaded ads; without these, its first
    cycle would match again every job whose match was already published. A job or slot is held
    again when an ad of the version it was matched against is filed, and forgotten once a newer
    one is: the same rule that ends a hold in a running daemon.
    """

    jobs: dict[str, str] = field(default_factory=dict)                           # key -> version
    slots: dict[str, tuple[str, list[Match]]] = field(default_factory=dict)      # key -> version, matches

    @classmethod
    def from_log(cls, rows: Iterable[tuple[Match, str | None, str | None]]) -> RestoredHolds:
        """From the published matches, oldest first, with their job and slot ad versions: a job is
        held by its last match; a slot by its matches against the version its last match saw (a
        partitionable slot takes many, over several cycles)."""
        restored = cls()
        for match, job_version, slot_version in rows:
            if job_version is not None:
                restored.jobs[match.job] = job_version
            if slot_version is not None:
                version, matches = restored.slots.get(match.slot, (None, []))
                restored.slots[match.slot] = (slot_version, matches + [match] if version == slot_version
                                              else [match])
        return restored

    def __len__(self) -> int:
        return len(self.jobs) + len(self.slots)

    def take(self, store: AdStore) -> list[Hold]:
        """The holds on what is now filed under a restored key with the version it was matched
        against, for :func:`file_holds`; keys filed with another version are forgotten, keys not
        filed yet wait."""
        jobs, slots = store.table(AdKind.JOB), store.table(AdKind.SLOT)
        holds = []
        for key in [key for key in self.jobs if key in jobs]:
            version, record = self.jobs.pop(key), jobs.record(key)
            if record is not None and ad_version(record) == version:
                holds.append(Hold(AdKind.JOB, key, record, version))

        def job_ad(key: str) -> classad2.ClassAd | None:
            record = jobs.record(key)
            return None if record is None else readable_ad(record)

        for key in [key for key in self.slots if key in slots]:
            (version, matches), ad = self.slots.pop(key), slots.get(key)
            if ad_version(ad) == version:
                holds.append(_slot_hold(key, ad, version, matches, job_ad))
        return holds


def copy_ad(ad: classad2.ClassAd) -> classad2.ClassAd:
    """A copy of ``ad`` whose changes leave ``ad`` (and whoever else reads it) as it was."""
    copy = classad2.ClassAd()
    for name in ad.keys():
        copy[name] = ad.lookup(name)
    return copy


def _claimed(slot: classad2.ClassAd, match: Match, job: classad2.ClassAd | None) -> classad2.ClassAd:
    """``slot`` as its startd will advertise it once the match's claim is active. A slot that
    was claimed (the match preempts its job) loses what its ad said of the preempted job and
    claim; the new job's start and the startd's rank for it are not known until the startd
    advertises, so a later cycle's PREEMPTION_REQUIREMENTS cannot read a stale JobStart or
    EnteredCurrentState and preempt the new job at once."""
    for name in _PREEMPTED_CLAIM:
        if name in slot:
            del slot[name]
    slot["GlobalJobId"] = match.job
    slot["State"] = CLAIMED
    slot["Activity"] = "Busy"
    slot["RemoteUser"] = match.submitter
    slot["AccountingGroup"] = match.submitter
    limits = evaluate_string(job, "ConcurrencyLimits") if job is not None else None
    if limits:
        slot["ConcurrencyLimits"] = limits
    elif "ConcurrencyLimits" in slot:
        del slot["ConcurrencyLimits"]
    return slot


def what_is_left(slot: classad2.ClassAd, matches: Sequence[Match],
                  given_back: Sequence[classad2.ClassAd] = ()) -> classad2.ClassAd | None:
    """The p-slot with the assets of the dynamic slots ``given_back`` to it, less what ``matches``
    consumed; integer assets stay integers when the result is whole (HTCondor's
    ``assign_preserve_integers``). None if a consumed asset is not a number."""
    left = copy_ad(slot)
    change: dict[str, float] = defaultdict(float)
    for match in matches:
        for asset, amount in match.consumed.items():
            change[asset] -= amount
    for dslot in given_back:
        for asset in change:
            change[asset] += evaluate_number(dslot, asset) or 0.0
    for asset, amount in change.items():
        before = evaluate_number(slot, asset)
        if before is None:
            return None
        after = before + amount
        whole = isinstance(slot.eval(asset), int) and not isinstance(slot.eval(asset), bool)
        left[asset] = int(after) if whole and float(after).is_integer() else after
    return left


def claimed_dynamic_slot(pslot: classad2.ClassAd, match: Match, job: classad2.ClassAd | None) -> classad2.ClassAd:
    """A claimed dynamic slot holding what ``match`` consumed, weighing the match's cost."""
    dslot = classad2.ClassAd({
        "MyType": "Machine",
        "Name": f"{evaluate_string(pslot, 'Name')}#{match.job}",
        "SlotType": "Dynamic",
        "DynamicSlot": True,
        "PartitionableSlot": False,
        "MachineResources": " ".join(match.consumed),
        "SlotWeight": match.cost,
        "Requirements": False,
    })
    for asset, amount in match.consumed.items():
        dslot[asset] = amount
    return _claimed(dslot, match, job)
