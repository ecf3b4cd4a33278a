"""What a negotiation cycle decides: matches, rejections, allocations, charges, statistics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from negotiatord.settings.groups import GroupTree


@dataclass(frozen=True)
class Preemption:
    """A claimed slot the cycle gave to ``job``, preempting ``victim_job``, under ``rule``
    (``priority``, ``rank`` or ``fair_sharing``) and, for fair sharing, ``strategy``; or, under
    ``quota``, a job preempted to enforce its group's maximum, with no job taking the slot
    (``job``, ``submitter`` and ``group`` are None)."""

    victim_job: str | None
    slot: str
    victim_submitter: str
    victim_group: str
    job: str | None
    submitter: str | None
    group: str | None
    rule: str
    strategy: str | None = None


PREEMPTION_RULES = ("priority", "rank", "fair_sharing", "quota")


@dataclass(frozen=True)
class Match:
    job: str
    slot: str
    submitter: str
    group: str
    cost: float
    consumed: dict[str, float]
    preemption: Preemption | None = None   # when the slot was claimed: whose job it preempts, and why

    @property
    def preempts(self) -> str | None:
        """The id of the job this match preempts (None when the slot was not claimed, or its ad
        names no job)."""
        return None if self.preemption is None else self.preemption.victim_job


@dataclass(frozen=True)
class Rejection:
    job: str
    submitter: str
    reason: str


@dataclass(frozen=True)
class GroupReport:
    """A group's figures after the cycle. A group's quota is its subtree's, so ``allocated`` and
    ``usage`` are its subtree's too (as ``condor_userprio`` shows a parent group); the ``own_``
    figures are its own submitters', which its quota's ``own_quota`` part is measured against."""

    name: str
    quota: float
    allocated: float              # the group's and its descendants' allocations
    usage: float                  # the group's and its descendants' usage, this cycle's matches included
    accept_surplus: bool
    own_allocated: float          # what the group's own submitters were allocated
    own_usage: float              # what the group's own submitters use


@dataclass(frozen=True)
class SubmitterReport:
    name: str
    group: str
    effective_priority: float
    limit: float
    usage: float


@dataclass(frozen=True)
class CycleStats:
    """Figures in the spirit of HTCondor's LastNegotiationCycle* attributes."""

    duration_s: float
    matches: int
    rejections: int                 # jobs left refused, counted once per reason (CycleResult.rejections)
    slots: int                      # slot ads negotiated over (the daemon leaves out its stand-ins)
    jobs: int
    autoclusters: int
    pie_spins: int
    pool_size: float
    phase_s: dict[str, float] = field(default_factory=dict)
    pairs: int = 0                  # (autocluster, slot) pairs the evaluator assessed
    classad_fallbacks: int = 0      # expression evaluations the fast path left to classad2
    claimed_slots: int = 0          # claimed slots considered for preemption
    preemptions: int = 0
    quota_shortfalls: int = 0       # due quota enforcements that preemption could not (fully) carry out


@dataclass(frozen=True)
class CycleResult:
    stats: CycleStats
    matches: tuple[Match, ...]
    rejections: tuple[Rejection, ...]   # each refused job once per reason; none that was matched later
    groups: tuple[GroupReport, ...]
    submitters: tuple[SubmitterReport, ...]
    usage: dict[str, float]      # customer (submitter or group) -> weighted usage after the cycle
    charges: dict[str, float]    # customer -> cost of this cycle's matches
    problems: tuple[str, ...]    # slots, jobs and expressions left out, with the reason
    # submitter -> lower-cased resource -> amount held after the cycle (with admission fair sharing
    # or quota preemption on; empty otherwise)
    held: dict[str, dict[str, float]] = field(default_factory=dict)
    preemptions: tuple[Preemption, ...] = ()   # in the order the cycle decided them
    # NEGOTIATOR_MATCH_EXPRS: attributes HTCondor's negotiator inserts into every matched slot ad,
    # for the schedd to copy into the matched job's ad (NegotiatorMatchExpr<NAME> -> expression)
    match_exprs: Mapping[str, str] = field(default_factory=dict)
    enforced_quotas: tuple[str, ...] = ()     # groups whose quota preemption timers the cycle enforced
    # customer -> the slots its claims held as the cycle began, those its usage counted
    running_slots: Mapping[str, int] = field(default_factory=dict)

    def slots_in_use(self, tree: GroupTree) -> dict[str, int]:
        """Each customer's slots after the cycle, and each group's subtree total (HTCondor's
        ``ResourcesUsed``, which counts slots where ``WeightedResourcesUsed`` sums their weights):
        its claims at the start, plus its matches, less the claims the cycle preempted."""
        slots = Counter(self.running_slots)
        slots.update(match.submitter for match in self.matches)
        slots.subtract(preemption.victim_submitter for preemption in self.preemptions)
        return {customer: int(total) for customer, total in tree.roll_up(slots).items()}

    def preemptions_by_rule(self) -> dict[str, int]:
        """How many preemptions each rule allowed (every rule named, at 0 if none)."""
        counts = dict.fromkeys(PREEMPTION_RULES, 0)
        for preemption in self.preemptions:
            counts[preemption.rule] = counts.get(preemption.rule, 0) + 1
        return counts
