"""Slots as the negotiator sees them: kind, assets, consumption policy, running claim.

A slot's expressions (Requirements, SlotWeight, Consumption<Res>) come from its own ad; where a
partitionable slot does not carry ``SlotWeight`` or ``Consumption<Res>``, the config's
``SLOT_WEIGHT`` / ``CONSUMPTION_<RES>`` stand in, the way a startd configured with them would have
published them. They are kept beside the ad, never written into it, so the snapshot never mutates
the ads it was built from.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

import classad2

from negotiatord.classad.conversion import as_number, evaluate, evaluate_number, evaluate_string, satisfies
from negotiatord.classad.cycle_time import frozen_expr
from negotiatord.classad.parser import ParseError, parse
from negotiatord.pool.problems import LeftOut
from negotiatord.settings import Settings

SWAP = "swap"
_HELD_LIMITS = ("ConcurrencyLimits", "PreemptingConcurrencyLimits")
DEFAULT_ASSETS = ("Cpus", "Memory", "Disk")


class SlotKind(str, Enum):
    PARTITIONABLE = "partitionable"
    DYNAMIC = "dynamic"
    STATIC = "static"


@dataclass(frozen=True)
class Claim:
    """Work running on a claimed slot, charged to ``customer`` (AccountingGroup, else RemoteUser).

    The rest is what preemption reads from the slot ad: ``remote_user`` is whom a preemption
    takes the slot from (PreemptingAccountingGroup, PreemptingUser, AccountingGroup, RemoteUser,
    in that order, as HTCondor's matchmaker.cpp looks them up), ``current_rank`` the slot's Rank
    for the running job (:attr:`rank_to_beat`: PreemptingRank while a preempting claim waits,
    as addRemoteUserPrios does), ``retiring`` whether RetirementTimeRemaining is positive."""

    customer: str
    remote_user: str = ""
    job: str | None = None              # GlobalJobId, else JobId
    job_start: float | None = None      # JobStart
    job_prio: float | None = None       # JobPrio
    current_rank: float | None = None       # CurrentRank
    preempting_rank: float | None = None    # PreemptingRank: the rank of a claim waiting to start
    retiring: bool = False

    @property
    def rank_to_beat(self) -> float | None:
        """The rank a job must beat to preempt by the slot's RANK: PreemptingRank, else
        CurrentRank (None when the ad has neither: then no job can)."""
        return self.current_rank if self.preempting_rank is None else self.preempting_rank


@dataclass(frozen=True)
class Slot:
    name: str
    ad: classad2.ClassAd
    kind: SlotKind
    state: str
    assets: tuple[str, ...]                     # MachineResources without Swap, as spelled in the ad
    amounts: tuple[float, ...]                  # the assets' current values, parallel to `assets`
    integer_amounts: tuple[bool, ...]           # whether each is an integer literal in the ad (its type
                                                # while unchanged: a match's copy of the ad keeps it)
    requirements: classad2.ExprTree | None
    slot_weight: classad2.ExprTree
    consumption: dict[str, classad2.ExprTree] | None   # asset -> expression; None: no policy
    claim: Claim | None
    # the ConcurrencyLimits and PreemptingConcurrencyLimits the ad shows, whatever its State: the
    # limits its running job and a claim waiting to preempt it hold (Accountant::LoadLimits)
    concurrency_limits: tuple[str, ...] = ()
    # a claimed partitionable slot offered to idle jobs: those of the schedd named here (its
    # RemoteScheddName; "" when the ad names none: any schedd's); None for every other slot
    claimed_for: str | None = None
    counts_in_pool_size: bool = True            # NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT holds for it

    @property
    def has_consumption_policy(self) -> bool:
        return self.consumption is not None

    @property
    def is_candidate(self) -> bool:
        """Unclaimed slots are offered to idle jobs (preemption comes later), and so are the
        claimed partitionable slots :func:`offered_while_claimed` keeps."""
        return (self.claim is None and self.state == "Unclaimed") or self.claimed_for is not None


def considers_priority_preemption(settings: Settings) -> bool:
    """Whether priority preemption can happen at all: not when PREEMPTION_REQUIREMENTS is the
    literal False (HTCondor's default), which no attribute can turn."""
    text = settings.preemption_requirements
    return text is None or not _literal_false(text)


@lru_cache(maxsize=16)
def _literal_false(text: str) -> bool:
    """Whether the expression ``text`` is the literal False: asked for every claimed slot of
    every cycle, so the parse is remembered per text."""
    return str(classad2.ExprTree(text)).strip().lower() == "false"


def may_be_preempted(slot: Slot, settings: Settings) -> bool:
    """Whether an idle job could take ``slot`` from its claim this cycle, as HTCondor's
    negotiator decides what to keep: NEGOTIATOR_CONSIDER_PREEMPTION is on; the slot is claimed and
    not partitionable (``trimStartdAds_PreemptionLogic`` never offers a claimed p-slot); it is not
    retiring (RetirementTimeRemaining > 0) unless NEGOTIATOR_CONSIDER_EARLY_PREEMPTION; and either
    priority preemption is possible or the slot's Rank could exceed its CurrentRank (a missing
    Rank, or a number no greater, never does: ``MY.Rank > MY.CurrentRank`` is not true; the
    OSPool's startds publish ``Rank = (1) + (1) + (1) + (1)`` and ``CurrentRank = 4.0``)."""
    claim = slot.claim
    if not settings.consider_preemption or claim is None or slot.kind is SlotKind.PARTITIONABLE:
        return False
    if claim.retiring and not settings.consider_early_preemption:
        return False
    if considers_priority_preemption(settings):
        return True
    rank = slot.ad.get("Rank")
    if isinstance(rank, classad2.ExprTree):
        constant = _constant_value(str(rank))
        rank = rank if constant is None else constant
    if rank is None or isinstance(rank, bool):
        return False
    to_beat = claim.rank_to_beat
    if to_beat is None and "CurrentRank" not in slot.ad:
        return False         # MY.CurrentRank is undefined: MY.Rank > MY.CurrentRank never holds
    if isinstance(rank, (int, float)) and to_beat is not None:
        return float(rank) > to_beat
    return True


@lru_cache(maxsize=1024)
def _constant_value(text: str) -> float | bool | None:
    """What an expression that names no attribute and calls no function always is (a number or
    a boolean), else None."""
    try:
        tree = parse(text)
    except ParseError:
        return None
    if _refers(tree):
        return None
    value = classad2.ExprTree(text).eval()
    return value if isinstance(value, bool) else as_number(value)


def _refers(node: object) -> bool:
    """Whether a parsed expression names an attribute, calls a function or holds anything the
    fast path's parser leaves to classad2."""
    if not isinstance(node, tuple) or not node or node[0] == "lit":
        return False
    if node[0] in ("attr", "call", "sel", "sub", "rec", "inexact"):
        return True
    return any(_refers(child) for child in node[1:] if isinstance(child, tuple))


def default_consumption(asset: str) -> str:
    """The startd's consumption default for an asset with no ``CONSUMPTION_<asset>`` param
    (HTCondor ``Resource::publish``: ``ifthenelse(target.Request<A> =?= undefined, 0, target.Request<A>)``)."""
    return f"ifThenElse(TARGET.Request{asset} =?= undefined, 0, TARGET.Request{asset})"


def prepare_slot(ad: classad2.ClassAd, settings: Settings) -> Slot | LeftOut:
    """Read one Machine ad into a :class:`Slot`, or explain why it cannot take part."""
    name = evaluate_string(ad, "Name")
    if name is None:
        return LeftOut("slot", "<unnamed>", "Name", "missing or not a string")
    kind = slot_kind(ad)
    assets = _assets(ad)
    amounts = []
    for asset in assets:
        amount = evaluate_number(ad, asset)
        if amount is None:
            return LeftOut("slot", name, asset, "listed in MachineResources but missing or not numeric")
        amounts.append(amount)

    slot_weight = ad.lookup("SlotWeight") if "SlotWeight" in ad else classad2.ExprTree(settings.slot_weight)
    consumption = _consumption_policy(ad, kind, assets, settings)
    state = evaluate_string(ad, "State") or ""
    return Slot(
        name=name,
        ad=ad,
        kind=kind,
        state=state,
        assets=assets,
        amounts=tuple(amounts),
        integer_amounts=tuple(isinstance(ad.get(asset), int) for asset in assets),
        requirements=ad.lookup("Requirements") if "Requirements" in ad else None,
        slot_weight=slot_weight,
        consumption=consumption,
        claim=_claim(ad, state),
        concurrency_limits=tuple(text for name in _HELD_LIMITS if (text := evaluate_string(ad, name))),
        claimed_for=offered_while_claimed(ad, kind, state, settings),
        counts_in_pool_size=(settings.slot_poolsize_constraint is None
                             or satisfies(ad, settings.slot_poolsize_constraint)),
    )


def offered_while_claimed(ad: classad2.ClassAd, kind: SlotKind, state: str, settings: Settings) -> str | None:
    """The schedd a claimed partitionable slot is offered to ("" for any), or None if it is not.

    Since HTCondor 23, a schedd may claim a p-slot whole (``ENABLE_CLAIMABLE_PARTITIONABLE_SLOTS``
    on it and its startd, for a negotiator that says ``MatchClaimedPslots``) and the p-slot stays
    ``Claimed`` while the schedd carves dynamic slots from it. matchmaker.cpp keeps such a slot
    (``trimStartdAds_ClaimedPslotLogic``) unless its ``WantMatching`` is false (unset is true) or it
    names a ``WorkingCM`` and ``MATCH_WORKING_CM_SLOTS`` is false, and ``matchmakingAlgorithm``
    offers it only to jobs of the schedd its ``RemoteScheddName`` names. With
    ``NEGOTIATOR_CONSIDER_PREEMPTION`` on, ``matchmakingAlgorithm`` takes its ``RemoteUser`` for a
    running claim: its claimant's own jobs are refused it and another's may have it only as a
    preemption; negotiatord then offers it to none (docs/cycle.md, "Claimed partitionable slots")."""
    if kind is not SlotKind.PARTITIONABLE or state != "Claimed" or settings.consider_preemption:
        return None
    want_matching = evaluate(ad, "WantMatching")
    if isinstance(want_matching, (bool, int, float)) and not isinstance(want_matching, classad2.Value) \
            and not want_matching:
        return None
    if evaluate_string(ad, "WorkingCM") and not settings.match_working_cm_slots:
        return None
    return evaluate_string(ad, "RemoteScheddName") or ""


def slot_kind(ad: classad2.ClassAd) -> SlotKind:
    """What kind of slot a Machine ad is, by its PartitionableSlot, DynamicSlot and SlotType."""
    if ad.get("PartitionableSlot") is True:
        return SlotKind.PARTITIONABLE
    if ad.get("DynamicSlot") is True or evaluate_string(ad, "SlotType") == "Dynamic":
        return SlotKind.DYNAMIC
    return SlotKind.STATIC


def child_names(ad: classad2.ClassAd) -> tuple[str, ...]:
    """The names of the dynamic slots a partitionable slot's ad lists in ``ChildName``, the
    attribute HTCondor's ``pslotMultiMatch`` finds a p-slot's dynamic slots by; none where the
    list is missing or not a list."""
    children = ad.get("ChildName")
    return tuple(name for name in children if isinstance(name, str)) if isinstance(children, list) else ()


def _assets(ad: classad2.ClassAd) -> tuple[str, ...]:
    listed = evaluate_string(ad, "MachineResources")
    if listed is None:
        return tuple(a for a in DEFAULT_ASSETS if a in ad)
    names = listed.replace(",", " ").split()
    return tuple(n for n in names if n.lower() != SWAP)


def _consumption_policy(
    ad: classad2.ClassAd, kind: SlotKind, assets: tuple[str, ...], settings: Settings
) -> dict[str, classad2.ExprTree] | None:
    """The slot's Consumption<Res> expressions if it supports a consumption policy.

    Follows HTCondor's ``cp_supports_policy``: only partitionable slots, and only when every asset
    in MachineResources (except Swap) has a Consumption<Res>. The config's CONSUMPTION_* fill in for
    p-slots that publish none, unless the slot says ``ConsumptionPolicy = false``.
    """
    if kind is not SlotKind.PARTITIONABLE or not assets:
        return None
    use_config = settings.consumption_policy and ad.get("ConsumptionPolicy") is not False
    policy: dict[str, classad2.ExprTree] = {}
    for asset in assets:
        attr = f"Consumption{asset}"
        if attr in ad:
            policy[asset] = ad.lookup(attr)
        elif use_config:
            text = settings.consumption.get(asset.lower()) or default_consumption(asset)
            policy[asset] = classad2.ExprTree(text)
        else:
            return None
    return policy


_SHUTDOWN = ("DaemonShutdown", "DaemonShutdownFast")


def shutting_down(ad: classad2.ClassAd, now: int, threshold: float) -> bool:
    """Whether a slot would shut down within ``threshold`` seconds (NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD),
    as matchmaker.cpp's ``trimStartdAds_ShutdownLogic`` decides: ``CurrentTime`` set to the ad's
    ``MyCurrentTime`` (else now) plus the threshold, ``DaemonShutdown`` then ``DaemonShutdownFast``
    evaluated as booleans (a number counts, non-zero true; HTCondor's ``LookupBool``), the latter's
    value, when it has one, the answer. ``time()`` is the cycle's ``now``."""
    if not any(name in ad for name in _SHUTDOWN):
        return False
    start = evaluate_number(ad, "MyCurrentTime")
    probe = copy.deepcopy(ad)
    probe["CurrentTime"] = int(start if start is not None else now) + threshold
    shutdown = False
    for name in _SHUTDOWN:
        if name in ad:
            value = frozen_expr(ad.lookup(name), now).eval(probe)
            if isinstance(value, bool):
                shutdown = value
            elif (number := as_number(value)) is not None:
                shutdown = number != 0
    return shutdown


def claimed_job(ad: classad2.ClassAd) -> str | None:
    """The id of the job a claimed slot's ad shows running: GlobalJobId, else JobId."""
    return evaluate_string(ad, "GlobalJobId") or evaluate_string(ad, "JobId")


def claim_of(ad: classad2.ClassAd) -> Claim | None:
    """The work a slot ad shows running, if it is Claimed."""
    return _claim(ad, evaluate_string(ad, "State") or "")


def _claim(ad: classad2.ClassAd, state: str) -> Claim | None:
    if state != "Claimed":
        return None
    customer = (
        evaluate_string(ad, "AccountingGroup")
        or evaluate_string(ad, "RemoteUser")
        or evaluate_string(ad, "RemoteOwner")
    )
    if customer is None:
        return None
    return Claim(
        customer=customer,
        remote_user=(evaluate_string(ad, "PreemptingAccountingGroup") or evaluate_string(ad, "PreemptingUser")
                     or customer),
        job=claimed_job(ad),
        job_start=evaluate_number(ad, "JobStart"),
        job_prio=evaluate_number(ad, "JobPrio"),
        current_rank=evaluate_number(ad, "CurrentRank"),
        preempting_rank=evaluate_number(ad, "PreemptingRank"),
        retiring=(evaluate_number(ad, "RetirementTimeRemaining") or 0.0) > 0,
    )
