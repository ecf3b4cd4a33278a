"""One negotiation cycle: a pure function of snapshot, accountant state, settings and evaluator.

The steps follow HTCondor's negotiator (matchmaker.cpp ``negotiationTime``), with the deviations
docs/deviations.md lists:

1. weigh every slot (SlotWeight); the pool size is the sum, claimed slots included;
2. count running work: each claimed slot's weight is charged to its customer, and so to the
   customer's group, that group's ancestors and ``<none>`` (:meth:`GroupTree.roll_up`);
3. build each autocluster's candidate list (with NEGOTIATOR_CONSIDER_PREEMPTION, claimed slots it
   may preempt are candidates too, :mod:`negotiatord.cycle.preemption`); a group's demand is its
   usage plus, for each idle request, the jobs that can start times the cost on its best
   candidate (jobs no slot matches, and jobs the headroom of their concurrency limits does not
   let start, add nothing);
4. share the pool among groups (:mod:`negotiatord.cycle.quotas`) and negotiate group by group in
   GROUP_SORT_EXPR order, pie spins sharing each group's allocation among its submitters; like
   HTCondor's allocation rounds, repeat with demand re-estimated from what is still unmatched and
   can still start while rounds make matches (GROUP_QUOTA_MAX_ALLOCATION_ROUNDS);
5. let submitters of GROUP_AUTOREGROUP groups compete for what is left, as the ``<none>`` group;
6. with NEGOTIATORD_FAIR_SHARING, let jobs still unmatched preempt across groups by Dominant
   Resource Share (:mod:`negotiatord.cycle.fair_share_preemption`), once every job has had the
   free slots;
7. with NEGOTIATORD_QUOTA_PREEMPTION, preempt what groups hold above a lowered maximum whose
   delay has passed (:mod:`negotiatord.cycle.quota_enforcement`).

No I/O happens here, and nothing process-wide is touched: the evaluator that answers the job-slot
questions is handed in, and the garbage-collection policy around the call is the caller's
(:mod:`negotiatord.runtime`), so the daemon, the dry run and a trace replayer run the very same
function.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from contextlib import contextmanager
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from negotiatord.accountant import AccountantState
from negotiatord.cycle.admission_order import AdmissionQueue, held_resources
from negotiatord.cycle.bounds import CEILING, ceiling_left, floor_left
from negotiatord.cycle.concurrency import ConcurrencyLedger, Headroom, LimitsPerSlot
from negotiatord.cycle.group_order import group_order
from negotiatord.cycle.matchlist import Candidate, MatchList
from negotiatord.cycle.claimed import running_job
from negotiatord.cycle.fair_share_preemption import FairSharePreemptor
from negotiatord.cycle.preemption import FAIR_SHARING, QUOTA, RANK, InsertedFigures, PreemptingCandidate, Preemptor
from negotiatord.cycle.quota_enforcement import due_enforcements
from negotiatord.cycle.quotas import GroupAllocation, allocate_quotas
from negotiatord.cycle.requests import Request, Submitter
from negotiatord.cycle.result import (
    CycleResult, CycleStats, GroupReport, Match, Preemption, Rejection, SubmitterReport,
)
from negotiatord.cycle.state import EPSILON, PoolState
from negotiatord.evaluation import PairEvaluator
from negotiatord.classad.conversion import evaluate_string
from negotiatord.evaluation.loading import Loading, LoadingLimits, Stop, refusal
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import Job
from negotiatord.pool.problems import LeftOut
from negotiatord.pool.slots import Slot, SlotKind, shutting_down
from negotiatord.pool.snapshot import Snapshot
from negotiatord.settings import ROOT_GROUP, Settings, SubmitterOrder
from negotiatord.settings.groups import WEIGHT_UNIT

_SUBMITTER = attrgetter("submitter")
NO_MATCH = "no match found"
SUBMITTER_LIMIT = "submitter limit exceeded"
GROUP_QUOTA = "group quota exceeded"
_REFUSALS: dict[Stop | None, str] = {Stop.SUBMITTER_LIMIT: SUBMITTER_LIMIT, Stop.GROUP_QUOTA: GROUP_QUOTA}
CONCURRENCY_LIMIT = "concurrency limit {name} reached"


@dataclass(frozen=True)
class Room:
    """What is left of a pie: ``allocated`` less the own usage of ``group``, or of every group
    (None: the ``<none>`` pie GROUP_AUTOREGROUP submitters compete for)."""

    allocated: float
    own_usage: dict[str, float]
    group: str | None

    def __call__(self) -> float:
        if self.group is None:
            return self.allocated - sum(self.own_usage.values())
        return self.allocated - self.own_usage[self.group]

    def usage(self, group: str) -> tuple[np.ndarray, int]:
        """The usage figures this room is ``allocated`` less, in the order they are summed, and
        which of them is ``group``'s."""
        if self.group is not None:
            return np.array([self.own_usage[self.group]]), 0
        self.own_usage.setdefault(group, 0.0)     # as its first charge would file it: last
        return np.fromiter(self.own_usage.values(), dtype=np.float64), list(self.own_usage).index(group)


def negotiate(
    snapshot: Snapshot,
    accountant: AccountantState,
    settings: Settings,
    evaluator: PairEvaluator,
    now: float | None = None,
) -> CycleResult:
    """Decide this cycle's matches.

    ``evaluator`` answers the job-slot questions about ``snapshot``'s slots at the cycle's
    ``time()`` (it is built for both; nothing else in the cycle asks for ``time()``): the compiled
    fast path, or the classad2 reference (``ClassAdEvaluator``) whose answers the fast path gives,
    to check that. ``now`` is the cycle's time, the evaluator's too; quota preemption timers
    due by then are enforced (it is required with NEGOTIATORD_QUOTA_PREEMPTION)."""
    if settings.quota_preemption and now is None:
        raise ValueError("quota preemption needs the cycle's time")
    if settings.trim_shutdown_threshold > 0 and now is None:
        raise ValueError("NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD needs the cycle's time")
    return _Cycle(snapshot, accountant, settings, evaluator, now).run()


class _Cycle:
    def __init__(self, snapshot: Snapshot, accountant: AccountantState, settings: Settings,
                 evaluator: PairEvaluator, now: float | None = None) -> None:
        self.snapshot = snapshot
        self.now = now
        self.table = snapshot.table
        self.settings = settings
        self.evaluator = evaluator
        self.tree = settings.group_tree
        self.accountant = accountant
        self.phases: dict[str, float] = {}
        self.problems: list[str] = [str(p) for p in snapshot.problems]
        self.usage: dict[str, float] = defaultdict(float)       # customer -> weighted usage
        self.own_usage: dict[str, float] = defaultdict(float)   # group -> its own submitters' usage
        self.running_slots: dict[str, int] = defaultdict(int)   # customer -> slots its claims hold
        # customer -> its assigned group (the tree remembers each); the tree's method, not one of
        # the cycle's: the preemptors made hold it, and holding the cycle would make a reference
        # cycle of every object of the cycle, left to the cyclic garbage collector
        self._account = self.tree.assigned_group
        self.charges: dict[str, float] = defaultdict(float)     # submitter -> cost of its matches
        self.matches: list[Match] = []
        self.rejections: dict[tuple[str, str], Rejection] = {}   # (job, reason) -> its first rejection
        self.pie_spins = 0
        self.entry_penalties: dict[str, float] = {}              # submitter -> admission fair sharing
                                                                 # penalty charged this cycle
        self.match_lists: dict[int, MatchList] = {}
        self.exhausted: set[int] = set()                         # autoclusters that cannot start a job
                                                                 # any more this cycle
        self.preemptions: list[Preemption] = []
        self.preemptor: Preemptor | None = None
        self.fair_sharing: FairSharePreemptor | None = None
        self.group_sequence: list[str] = []                     # the last allocation round's group order
        self.enforced_quotas: list[str] = []                    # groups whose quota timers were enforced
        self._held_before: dict[str, dict[str, float]] | None = None   # what submitters hold at the start
        self.quota_shortfalls = 0                               # quota enforcements preemption could not
                                                                # (fully) carry out

    def run(self) -> CycleResult:
        started = time.perf_counter()
        with self._phase("slot_weights"):
            self.state = PoolState(self.table, self._weights())
            self.initial_weights: list[float] = self.state.weights.tolist()
            pool_size = self.pool_size = self._pool_size()
        with self._phase("running_usage"):
            self.ledger = self._count_running_work()
            self.slot_limits = LimitsPerSlot(self.table)
            self.submitters = self._submitters()
            self.trimmed = self._trimmed()
            if self.trimmed:
                self.state.available[list(self.trimmed)] = False
            if self.settings.consider_preemption and self.submitters:    # no idle job, no preemptor
                self.preemptor = self._preemptor(pool_size)
        with self._phase("match_lists"):
            demand = self._demand()
        with self._phase("matchmaking"):
            allocations = self._allocation_rounds(pool_size, demand)
            self._autoregroup(pool_size)
        if self.settings.fair_sharing:
            with self._phase("fair_sharing"):
                self._fair_share_preemptions(pool_size, allocations)
        if self.settings.quota_preemption:
            with self._phase("quota_preemption"):
                self._enforce_quotas()
        return self._result(time.perf_counter() - started, pool_size, allocations)

    # -- before matchmaking ------------------------------------------------------------------------

    def _weights(self) -> np.ndarray:
        rows = np.arange(len(self.table))
        weights = self.evaluator.slot_weights(rows, self.table.amounts)
        for row in np.flatnonzero(np.isnan(weights)):
            self.problems.append(str(LeftOut("slot", self.table.slots[row].name, "SlotWeight",
                                             "does not evaluate to a number")))
        if not self.settings.use_slot_weights:
            # NEGOTIATOR_USE_SLOT_WEIGHTS = False: every slot without a consumption policy counts 1
            legacy = ~self.table.consumption_policy & ~np.isnan(weights)
            weights = np.where(legacy, 1.0, weights)
        return weights

    def _pool_size(self) -> float:
        """The slots' weights, of those NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT counts only (the
        quotas and shares are of it; the other slots are still matched), as matchmaker.cpp sums
        ``weightedPoolsize``; none counted is HTCondor's warning, and a pool of size 0."""
        weights = self.state.weights
        if self.settings.slot_poolsize_constraint is None:
            return float(np.nansum(weights))
        counted = np.fromiter((slot.counts_in_pool_size for slot in self.table.slots), bool, len(self.table))
        if len(self.table) and not counted.any():
            self.problems.append(f"0 out of {len(self.table)} slots match NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT")
        return float(np.nansum(weights[counted]))

    def _count_running_work(self) -> ConcurrencyLedger:
        """Charge each claim's weight to its customer; count the concurrency limits every slot ad
        holds, as HTCondor's Accountant::LoadLimits does: its ConcurrencyLimits and
        PreemptingConcurrencyLimits, whatever its State (a Preempting slot's job still runs)."""
        running_limits: list[str] = []
        for slot, weight in zip(self.table.slots, self.state.weights.tolist()):
            running_limits.extend(slot.concurrency_limits)
            if slot.claim is None or math.isnan(weight):
                continue
            if not (self.settings.discount_suspended_resources and _suspended(slot)):
                self._charge_usage(slot.claim.customer, weight)
                self.running_slots[slot.claim.customer] += 1
        return ConcurrencyLedger(self.settings, running_limits)

    def _trimmed(self) -> frozenset[int]:
        """NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD: the rows of slots about to shut down, which
        matchmaker.cpp trims from the ads it matches (``trimStartdAds``, after the pool size and
        the accounting): offered to no idle job and preempted for none; they still count in the
        pool size, and their claims in usage."""
        threshold = self.settings.trim_shutdown_threshold
        if threshold <= 0:
            return frozenset()
        assert self.now is not None     # negotiate() checks it
        now = int(self.now)
        return frozenset(row for row, slot in enumerate(self.table.slots) if shutting_down(slot.ad, now, threshold))

    def _preemptor(self, pool_size: float) -> Preemptor:
        """Claimed slots as candidates (:mod:`negotiatord.cycle.preemption`), asked with the
        cycle's figures of the moment. The group quotas inserted are the tree's quotas of the
        pool, which no demand changes (as HTCondor's are computed before it negotiates)."""
        priorities: dict[str, float] = {s.name: s.priority for s in self.submitters.values()}
        accountant, account, settings = self.accountant, self._account, self.settings

        def priority(customer: str) -> float:     # holds no reference to the cycle (see _account)
            if customer not in priorities:
                priorities[customer] = accountant.effective_priority(customer, account(customer), settings)
            return priorities[customer]

        quotas = {name: allocation.quota for name, allocation in
                  allocate_quotas(self.tree, pool_size, self.own_usage, accept_surplus_root=True).items()}
        figures = InsertedFigures(self.table, self.settings, priority, self._account, self.usage,
                                  self.own_usage, quotas)
        snapshot = self.snapshot
        preemptable = snapshot.preemptable if snapshot.preemptable_under is settings else None
        return Preemptor(self.table, self.state, self.settings, self.evaluator, figures, self.trimmed, preemptable)

    def _submitters(self) -> dict[str, Submitter]:
        """The submitters with idle jobs, in the order their first jobs came in."""
        autoclusters: dict[str, list[Autocluster]] = {name: [] for name in dict.fromkeys(
            map(_SUBMITTER, self.snapshot.jobs))}
        for autocluster in self.snapshot.autoclusters:
            autoclusters[autocluster.submitter].append(autocluster)
        submitters = {}
        for name, own in autoclusters.items():
            group = self._account(name)
            submitter = Submitter(name, group, self.accountant.effective_priority(name, group, self.settings))
            submitter.add_autoclusters(own, self.settings.use_global_job_prios)
            submitters[name] = submitter
        return submitters

    def _demand(self) -> dict[str, float]:
        """Each group's own usage plus what its unmatched jobs that can start this cycle would cost
        on their best candidates: quota held for a job that cannot start is denied to every other
        group.

        A request that cannot start a job (nothing matches it, or a concurrency limit it draws on
        is full) adds nothing; it is rejected and closed here (:meth:`_offer`). Of the others, a
        request counts the jobs its concurrency limits' headroom lets start (an autocluster's jobs
        share their ConcurrencyLimits). Headroom shared by several requests is drawn group by
        group: within a group, requests draw on one copy in the order its pie spins offer them
        (submitters by effective priority, each one's requests in queue order), so a group never
        counts a unit of headroom twice and its demand is never more than it could start. Each
        group draws on the whole headroom, because which group reaches a shared limit first
        follows the negotiation order that the allocation itself decides; a group that does not
        get there is blocked at match time, and the next allocation round re-estimates without
        that job, so the quota it held flows to others as surplus.
        """
        demand = defaultdict(float, self.own_usage)
        headroom: dict[str, Headroom] = {}
        for submitter in _in_priority_order(self.submitters.values()):
            drawn = headroom.setdefault(submitter.group, Headroom(self.ledger))
            for request in submitter.open_requests(self.exhausted):
                best = self._offer(request, submitter)
                if best is not None:
                    startable = drawn.draw(request.jobs[0].concurrency_limits, len(request.jobs))
                    demand[submitter.group] += startable * self._cost(best)
        return dict(demand)

    # -- groups ------------------------------------------------------------------------------------

    def _allocation_rounds(self, pool_size: float, demand: dict[str, float]) -> dict[str, GroupAllocation]:
        """Allocate and negotiate; while a round makes matches and work is left, re-estimate demand
        from what is still unmatched and can still start, and go again, so allocation a group could
        not use (a job blocked by a limit another group's match filled, a candidate another group
        took, or demand the first estimate missed) is not stranded for the cycle: as HTCondor's
        ``hgq_negotiate_with_all_groups`` sets a group's request to its usage when it used less
        than its allocation."""
        for _ in range(self.settings.allocation_rounds):
            # the root <none> always accepts surplus, as in HTCondor's hgq_construct_tree
            allocations = allocate_quotas(self.tree, pool_size, demand, accept_surplus_root=True)
            made = self._negotiate_groups(allocations)
            if made == 0 or not any(s.open_requests(self.exhausted) for s in self.submitters.values()):
                break
            demand = self._demand()
        return allocations

    def _negotiate_groups(self, allocations: dict[str, GroupAllocation]) -> int:
        order = group_order(
            self.tree,
            self.settings.group_sort_expr,
            quota={n: a.quota for n, a in allocations.items()},
            in_use=self.tree.roll_up(self.usage),
            allocated={n: a.allocated for n, a in allocations.items()},
        )
        self.group_sequence = order
        made = 0
        for name in order:
            members = [s for s in self.submitters.values() if s.group == name]
            allocated = self._allocated(allocations[name])
            if self.settings.strict_enforce_quota and not self.settings.fair_sharing:
                allocated = self._strictly_enforced(name, allocated, allocations)
            made += self._spin_pie(members, name, allocated, Room(allocated, self.own_usage, name))
        return made

    def _strictly_enforced(self, name: str, allocated: float, allocations: dict[str, GroupAllocation]) -> float:
        """NEGOTIATOR_STRICT_ENFORCE_QUOTA, as GroupEntry::strict_enforce_quota: what ``name``
        negotiates for beyond its usage is capped, at it and at each ancestor that does not accept
        surplus, by what that group's subtree has left of its quota (its configured static quota,
        else its subtree quota) given the subtree's usage as it stands. It matters where usage
        already exceeds a quota, which the allocation alone does not hold back."""
        subtree_usage = self.tree.roll_up(self.usage)
        own = self.own_usage[name]
        extra = allocated - own
        group: str | None = name
        while group is not None and group != ROOT_GROUP:
            configured = self.tree.settings_of(group)
            assert configured is not None       # every group but the root is configured
            if not configured.accept_surplus:
                quota = configured.static_quota if configured.static_quota is not None else allocations[group].quota
                extra = min(extra, max(0.0, quota - subtree_usage.get(group, 0.0)))
            group = allocations[group].parent
        return own + extra

    def _allocated(self, allocation: GroupAllocation) -> float:
        """What a group negotiates with: its HGQ allocation. With NEGOTIATORD_FAIR_SHARING the
        HGQ split does not cap a group, as in Kueue, where a ClusterQueue may borrow whatever its
        cohort has free: it may take any free slot, up to its quota plus its
        GROUP_BORROWING_LIMIT_<g> when that names the weight unit (``matches``); borrowing limits
        on other resources are the fair-sharing rule's to keep. Its quota is still the line
        between reclaiming and borrowing."""
        if not self.settings.fair_sharing:
            return allocation.allocated
        configured = self.tree.settings_of(allocation.name)
        limit = (configured.borrowing_limit or {}).get(WEIGHT_UNIT) if configured else None
        if limit is None:
            return self.pool_size
        return max(allocation.allocated, min(self.pool_size, allocation.quota + limit))

    def _autoregroup(self, pool_size: float) -> None:
        """GROUP_AUTOREGROUP[_<g>]: after every group had its turn, its submitters may also compete,
        as members of ``<none>``, for what nobody took. (HTCondor ignores the per-group knob
        unless the global one is set; here each group's own setting counts.)"""
        regrouped = [s for s in self.submitters.values() if self._autoregroups(s.group)]
        if not regrouped:
            return

        room = Room(pool_size, self.own_usage, None)
        self._spin_pie(regrouped, ROOT_GROUP, room() + sum(self.usage[s.name] for s in regrouped), room)

    def _autoregroups(self, group: str) -> bool:
        configured = self.tree.settings_of(group)
        return configured is not None and configured.autoregroup

    # -- preemption across groups -----------------------------------------------------------------

    def _fair_share_preemptions(self, pool_size: float, allocations: dict[str, GroupAllocation]) -> None:
        """NEGOTIATORD_FAIR_SHARING: groups in the last round's order, each one's submitters by
        effective priority, each request's jobs in queue order take claimed slots while the
        fair-sharing rule lets them. Neither a submitter's limit nor a group's allocation caps
        these preemptions (the rule's shares decide); concurrency limits still do."""
        self.fair_sharing = FairSharePreemptor(
            self.table, self.state.weights, self.state.amounts, self.settings, self.evaluator, self._account,
            pool_size, {name: allocation.quota for name, allocation in allocations.items()}, self.matches,
            self.preemptions, self.trimmed)
        if not len(self.fair_sharing):
            return
        for name in self.group_sequence:
            for submitter in _in_priority_order(s for s in self.submitters.values() if s.group == name):
                for request in submitter.open_requests(set()):
                    self._fair_share_request(request, submitter)

    def _fair_share_request(self, request: Request, submitter: Submitter) -> None:
        """Preempt for ``request``'s jobs while the rule allows; the job it stops at is rejected
        with its reason, as HTCondor's negotiator tells the schedd about each request it leaves
        idle (the matchmaking rounds' rejection may have named a job matched here since)."""
        assert self.fair_sharing is not None
        match_list = self._match_list(request.autocluster)
        while request.jobs:
            blocked = self.ledger.blocking(request.jobs[0].concurrency_limits)
            if blocked is not None:
                self._reject(request.jobs[0], submitter, CONCURRENCY_LIMIT.format(name=blocked))
                return
            candidate = self.fair_sharing.best(request.autocluster, submitter.group)
            if candidate is None:
                self._reject(request.jobs[0], submitter, NO_MATCH)
                return
            limits = self._limits(request, candidate.row)
            blocked = self.ledger.blocking(limits)
            if blocked is not None:      # limits that depend on the slot, full on this one
                self._reject(request.jobs[0], submitter, CONCURRENCY_LIMIT.format(name=blocked))
                return
            if self._over_ceiling(submitter, self._cost(candidate)):
                self._reject(request.jobs[0], submitter, CEILING)
                return
            self._commit(request.jobs.popleft(), submitter, submitter.group, candidate, self._cost(candidate),
                         match_list, limits)

    def _enforce_quotas(self) -> None:
        """NEGOTIATORD_QUOTA_PREEMPTION: each group whose timer is due gives back what it holds
        above its maximum; the victims' slots are preempted with no job to take them (rule
        ``quota``), and why preemption cannot (fully) help goes into the cycle's problems."""
        assert self.now is not None     # negotiate() checks it
        if not any(timer.awaits_enforcement(self.now) for timer in self.accountant.quota_timers.values()):
            return                      # nothing is due: the claimed slots need not be read
        taken = {preemption.slot for preemption in self.preemptions}
        running = [running_job(slot, weight, self._account(slot.claim.customer))
                   for slot, weight in zip(self.table.slots, self.state.weights.tolist())
                   if slot.claim is not None and weight == weight and slot.kind is not SlotKind.PARTITIONABLE
                   and slot.name not in taken]
        for enforcement in due_enforcements(self.tree, self.accountant.quota_timers, running, self.now):
            self.enforced_quotas.append(enforcement.group)
            problems = enforcement.problems()
            self.problems.extend(problems)
            self.quota_shortfalls += bool(problems)
            for victim in enforcement.victims:
                self._charge_usage(victim.submitter, -victim.resources[WEIGHT_UNIT])
                self.preemptions.append(Preemption(victim.job_id, victim.slot, victim.submitter, victim.group,
                                                   None, None, None, QUOTA))

    # -- pie spins ---------------------------------------------------------------------------------

    def _spin_pie(self, members: list[Submitter], group: str, allocated: float, room: Room) -> int:
        """Share ``allocated`` among ``members`` over repeated spins (HTCondor's pie spins).

        ``room()`` is what is left of the pie now. Spin 1 gives each submitter its share of the
        allocation (inverse to effective priority) less what it already holds. Later spins re-share
        what is left among submitters that still have jobs, while spins keep making matches. When a
        spin makes none while the pie has room, remainder rounds offer one match per submitter per
        round in priority order, so no allocation is stranded in fractions of a match (HTCondor
        leaves such remainders unused). Members below their floors get a floor round first
        (:meth:`_floor_round`). Returns the matches made.
        """
        floored = self._floor_round(members, group, allocated, room)
        if self.settings.submitter_order is SubmitterOrder.ADMISSION_FAIR_SHARING:
            return floored + self._admit_in_fair_order(members, group, allocated, room)
        members = _in_priority_order(members)
        # NEGOTIATOR_IGNORE_USER_PRIORITIES: matchmaker.cpp's calculateSubmitterLimit gives every
        # submitter an unbounded limit, so each takes what the group's room allows, in priority order
        unlimited = self.settings.ignore_user_priorities
        for submitter, share in zip(members, _shares(members)):
            submitter.share_limit = allocated if unlimited else share * allocated
        hungry = self._hungry(members)
        total = 0
        first_spin = True
        while hungry and (first_spin or room() > EPSILON):
            self.pie_spins += 1
            pie_left = room()
            made = 0
            for submitter, share in zip(hungry, _shares(hungry)):
                own = self.usage[submitter.name]
                if unlimited:
                    limit = math.inf
                else:
                    limit = max(0.0, share * allocated - own) if first_spin else share * pie_left
                made += self._negotiate_submitter(submitter, group, limit, room)
            total += made
            first_spin = False
            hungry = self._hungry(hungry)
            if made == 0:
                return floored + total + self._remainder_rounds(hungry, group, room)
        return floored + total

    def _floor_round(self, members: list[Submitter], group: str, allocated: float, room: Room) -> int:
        """The floor round (:mod:`negotiatord.cycle.bounds`): one spin over the members holding
        less than their floors, each up to its floor and its share of ``allocated`` among them."""
        below = _in_priority_order(s for s in self._hungry(members)
                                   if floor_left(self.accountant, s.name, self.usage[s.name]) > EPSILON)
        if not below:
            return 0
        self.pie_spins += 1
        made = 0
        for submitter, share in zip(below, _shares(below)):
            held = self.usage[submitter.name]
            limit = min(floor_left(self.accountant, submitter.name, held), max(0.0, share * allocated - held))
            made += self._negotiate_submitter(submitter, group, limit, room)
        return made

    def _admit_in_fair_order(self, members: list[Submitter], group: str, allocated: float, room: Room) -> int:
        """NEGOTIATORD_SUBMITTER_ORDER = admission_fair_sharing: one match at a time to the member
        with the lowest admission score (:class:`AdmissionQueue`), until the group's room is spent
        or no member can take a match; a member offered a match it cannot take leaves the queue,
        since neither its candidates nor the room grow within a cycle. When the cycle considers
        preemption, members are still offered a match once the room is spent, as a pie spin
        offers each submitter its requests whatever is left: a startd's RANK preempts whatever the
        submitter's limit, as in HTCondor."""
        queue = AdmissionQueue(members, self.accountant, self.settings, self.entry_penalties, self.now,
                               self._held_at_start())
        for member in members:
            member.share_limit = allocated
        made = 0
        while (room() > EPSILON or self.preemptor is not None) and (turn := queue.pop()) is not None:
            self.pie_spins += 1
            if self._negotiate_submitter(turn, group, room(), room, max_matches=1):
                made += 1
                queue.admitted(turn, self.matches[-1])
        return made

    def _remainder_rounds(self, hungry: list[Submitter], group: str, room: Room) -> int:
        total = 0
        made = 1
        while made and hungry and room() > EPSILON:
            self.pie_spins += 1
            made = sum(self._negotiate_submitter(s, group, room(), room, max_matches=1) for s in hungry)
            total += made
            hungry = self._hungry(hungry)
        return total

    def _hungry(self, submitters: list[Submitter]) -> list[Submitter]:
        return [s for s in submitters if s.open_requests(self.exhausted)]

    def _negotiate_submitter(self, submitter: Submitter, group: str, limit: float, room: Room,
                             max_matches: int | None = None) -> int:
        """Offer ``submitter``'s requests in order until its limit is spent; returns matches made.

        A request refused for the submitter's limit or the group's room is skipped for the rest of
        this pass; one that cannot start a job any more (:meth:`_offer`) is skipped for the cycle.
        """
        made = 0
        ceiling = ceiling_left(self.accountant, submitter.name, self.usage[submitter.name])
        capped = ceiling < limit
        limit = min(limit, ceiling)
        for request in submitter.open_requests(self.exhausted):
            # a request with no idle candidate left goes job by job: its first offer closes it,
            # or gives it a claimed slot, with no loading call to set up
            if (not self.settings.job_by_job and not self._may_preempt(request)
                    and not self.slot_limits.per_slot(request.autocluster)
                    and not self._match_list(request.autocluster).exhausted()):
                jobs = len(request.jobs) if max_matches is None else min(len(request.jobs), max_matches - made)
                placed, limit, stop = self._load(request, submitter, group, jobs, limit, room, capped)
                made += placed
                if made == max_matches:
                    break
                if stop is not Stop.NO_MATCH or request.autocluster.id in self.exhausted:
                    continue
                # no idle slot is left for it, but a claimed one may be: on job by job
            match_list = self._match_list(request.autocluster)
            while request.jobs and made != max_matches:
                candidate = self._offer(request, submitter)
                if candidate is None:
                    break
                job = request.jobs[0]
                cost = self._cost(candidate)
                reason = self._preemption_refusal(candidate, group, cost, limit, room())
                if self._over_ceiling(submitter, cost):    # a RANK preemption too
                    reason = CEILING
                elif reason == SUBMITTER_LIMIT and capped:
                    reason = CEILING
                if reason is not None:
                    self._reject(job, submitter, reason)
                    break
                limits = self._limits(request, candidate.row)
                request.jobs.popleft()
                self._commit(job, submitter, group, candidate, cost, match_list, limits)
                limit -= cost
                made += 1
            if made == max_matches:
                break
        return made

    def _may_preempt(self, request: Request) -> bool:
        """Whether one of ``request``'s jobs might take a claimed slot while an idle one is left:
        then its jobs go job by job, where each job's best idle candidate is weighed against the
        claimed ones (:meth:`_offer`). Not so when no open claimed candidate ranks above the
        worst idle one its list can hold (:attr:`MatchList.worst_rank`,
        :meth:`Preemptor.may_outrank`): idle candidates are offered best first and keep the rank
        they were listed with, so loading the request in one call onto idle slots gives the same
        matches."""
        if self.preemptor is None:
            return False
        match_list = self._match_list(request.autocluster)
        candidates = match_list.candidates
        left = candidates.head < len(candidates.rows)
        return self.preemptor.may_outrank(request.autocluster, match_list.worst_rank if left else None)

    def _load(self, request: Request, submitter: Submitter, group: str, jobs: int, limit: float,
              room: Room, capped: bool = False) -> tuple[int, float, Stop]:
        """Place up to ``jobs`` of ``request``'s jobs in one evaluator call (the same matches as
        the job-by-job loop above); returns the matches made, the submitter's limit left and why
        the call stopped. ``capped``: the limit is the submitter's ceiling."""
        match_list = self._match_list(request.autocluster)
        entries = request.jobs[0].concurrency_limits
        names = list(dict.fromkeys(name for name, _ in entries))
        usage, term = room.usage(submitter.group)
        limits = LoadingLimits(
            jobs=jobs, submitter_limit=limit, room_allocated=room.allocated, room_usage=usage, room_term=term,
            concurrency_names=np.array([names.index(name) for name, _ in entries], dtype=np.int64),
            concurrency_increments=np.array([increment for _, increment in entries], dtype=np.float64),
            concurrency_in_use=np.array([self.ledger.in_use[name] for name in names], dtype=np.float64),
            concurrency_limits=np.array([self.ledger.limit(name) for name in names], dtype=np.float64),
            breadth_first=match_list.breadth_first, one_match_per_slot=match_list.one_match_per_slot,
            unit_cost_legacy=not self.settings.use_slot_weights,
        )
        loading = self.evaluator.load(request.autocluster, match_list.candidates, self.state, limits)
        self._record(loading, request, submitter, group)
        for name, in_use in zip(names, limits.concurrency_in_use.tolist()):
            self.ledger.in_use[name] = in_use
        if loading.stop is Stop.CONCURRENCY:
            self._close(request, submitter, CONCURRENCY_LIMIT.format(name=entries[loading.blocking][0]))
        elif loading.stop is Stop.NO_MATCH and not self._may_preempt(request):
            self._close(request, submitter, NO_MATCH)
        elif loading.stop is Stop.SUBMITTER_LIMIT:
            self._reject(request.jobs[0], submitter, CEILING if capped else SUBMITTER_LIMIT)
        elif loading.stop is Stop.GROUP_QUOTA:
            self._reject(request.jobs[0], submitter, GROUP_QUOTA)
        return len(loading.rows), limits.submitter_limit, loading.stop

    def _record(self, loading: Loading, request: Request, submitter: Submitter, group: str) -> None:
        """The Match records and charges of one loading call's matches, in order."""
        if not len(loading.rows):
            return
        slots, name, account = self.table.slots, submitter.name, self._account(submitter.name)
        usage, own_usage, charges = self.usage[name], self.own_usage[account], self.charges[name]
        jobs, matches = request.jobs, self.matches
        for row, consumption, cost in zip(loading.rows.tolist(), loading.consumption.tolist(), loading.cost.tolist()):
            slot = slots[row]
            consumed = self._consumed(slot, consumption)
            # one addition per match, in order, as _charge_usage makes them
            usage += cost
            own_usage += cost
            charges += cost
            matches.append(Match(jobs.popleft().id, slot.name, name, group, cost, consumed))
        self.usage[name], self.own_usage[account], self.charges[name] = usage, own_usage, charges

    def _consumed(self, slot: Slot, consumption: Sequence[float] | np.ndarray) -> dict[str, float | int]:
        """What a match on ``slot`` takes of each of its assets, from its consumption row."""
        return {asset: _plain(consumption[column])
                for asset, column in zip(slot.assets, self.table.asset_columns(slot.assets))}

    def _offer(self, request: Request, submitter: Submitter) -> Candidate | None:
        """The best candidate for ``request``'s next job (a claimed slot it preempts when
        HTCondor's order puts one first), or None if that job cannot start this cycle; then the
        request is closed for the cycle and its job rejected.

        Its concurrency limits are checked first, as HTCondor's ``matchmakingAlgorithm`` checks a
        job's literal ConcurrencyLimits before looking at candidates. Neither answer can turn
        within a cycle: limits only fill up, the slots on offer only shrink; and an autocluster's
        jobs share both their ConcurrencyLimits and their candidates."""
        blocked = self.ledger.blocking(request.jobs[0].concurrency_limits)
        if blocked is not None:
            self._close(request, submitter, CONCURRENCY_LIMIT.format(name=blocked))
            return None
        autocluster, match_list = request.autocluster, self._match_list(request.autocluster)
        while True:
            candidate = match_list.best()
            if self.preemptor is not None:
                candidate = self.preemptor.best(autocluster, candidate)
            if candidate is None:
                # HTCondor's diagnostics name a limit that passed a candidate over, if one did
                blocked = self.slot_limits.passed_over.get(autocluster.id)
                self._close(request, submitter, NO_MATCH if blocked is None else CONCURRENCY_LIMIT.format(name=blocked))
                return None
            if not self.slot_limits.per_slot(autocluster):
                return candidate
            # matchmaker.cpp: a candidate on which the job's limits are full is passed over
            full = self.ledger.blocking(self.slot_limits.on(autocluster, candidate.row))
            if full is None:
                return candidate
            self.slot_limits.passed_over[autocluster.id] = full
            if isinstance(candidate, PreemptingCandidate):
                assert self.preemptor is not None
                self.preemptor.refuse(autocluster, candidate.row)
            else:
                match_list.skip()

    def _limits(self, request: Request, row: int) -> tuple[tuple[str, float], ...]:
        """The concurrency limits a match of ``request``'s next job on ``row`` takes."""
        if self.slot_limits.per_slot(request.autocluster):
            return self.slot_limits.on(request.autocluster, row)
        return request.jobs[0].concurrency_limits

    def _preemption_refusal(self, candidate: Candidate, group: str, cost: float, limit: float,
                            room: float) -> str | None:
        """:meth:`_refusal` for a candidate that may preempt: a startd RANK preemption is allowed
        whatever the submitter's limit, as in HTCondor; a preemption within the group gives the
        group back the victim's weight as it charges the job's cost."""
        if not isinstance(candidate, PreemptingCandidate):
            return self._refusal(cost, limit, room)
        if candidate.rule == RANK:
            return None
        for row in candidate.victim_rows:
            claim = self.table.slots[row].claim
            if claim is not None and self._account(claim.customer) == group:
                room += float(self.state.weights[row])
        return self._refusal(cost, limit, room)

    def _refusal(self, cost: float, limit: float, room: float) -> str | None:
        return _REFUSALS.get(refusal(cost, limit, room))

    def _over_ceiling(self, submitter: Submitter, cost: float) -> bool:
        return cost > ceiling_left(self.accountant, submitter.name, self.usage[submitter.name]) + EPSILON

    # -- bookkeeping -------------------------------------------------------------------------------

    def _commit(self, job: Job, submitter: Submitter, group: str, candidate: Candidate, cost: float,
                match_list: MatchList, limits: tuple[tuple[str, float], ...]) -> None:
        slot = self.table.slots[candidate.row]
        consumed = self._consumed(slot, candidate.consumption)
        preemption = None
        if isinstance(candidate, PreemptingCandidate):
            preemption = self._preempt(job, submitter, group, candidate)
            if candidate.victims:
                # ALLOW_PSLOT_PREEMPTION: the victims' resources go back to their p-slot, which
                # the job's dynamic slot is then carved from
                self.state.release(candidate.victim_rows, candidate.row, self.table.amounts)
                self.state.take(candidate.row, candidate.consumption, cost)
        else:
            self.state.take(candidate.row, candidate.consumption, cost)
            match_list.taken()
        self.ledger.take(limits)
        self._charge_usage(submitter.name, cost)
        self.charges[submitter.name] += cost
        self.matches.append(Match(job.id, slot.name, submitter.name, group, cost, consumed, preemption))

    def _preempt(self, job: Job, submitter: Submitter, group: str, candidate: PreemptingCandidate) -> Preemption:
        """Give a claimed slot to ``job``: the slot is not offered again this cycle, and its usage
        moves from the victims' customers to the preemptor's. Returns the first victim's
        preemption (the one the match names)."""
        if self.preemptor is not None:
            self.preemptor.take(candidate)
        if self.fair_sharing is not None and candidate.rule == FAIR_SHARING:
            self.fair_sharing.take(candidate, group)
        strategies = dict(candidate.victims) if candidate.victims else {candidate.row: candidate.strategy}
        made = []
        for row, strategy in strategies.items():
            claim = self.table.slots[row].claim
            assert claim is not None     # victims are claimed slots
            self._charge_usage(claim.customer, -float(self.state.weights[row]))
            made.append(Preemption(
                claim.job, self.table.slots[row].name, claim.customer, self._account(claim.customer),
                job.id, submitter.name, group, candidate.rule, strategy,
            ))
        self.preemptions.extend(made)
        return made[0]

    def _charge_usage(self, customer: str, weight: float) -> None:
        """Usage counts for the customer and for its group's own submitters, which is what the
        group's allocation is measured against. Groups' subtree totals are rolled up from the
        customers' usage when asked for (:meth:`GroupTree.roll_up`)."""
        self.usage[customer] += weight
        self.own_usage[self._account(customer)] += weight

    def _close(self, request: Request, submitter: Submitter, reason: str) -> None:
        self.exhausted.add(request.autocluster.id)
        self._reject(request.jobs[0], submitter, reason)

    def _reject(self, job: Job, submitter: Submitter, reason: str) -> None:
        """Record why ``job`` was refused; once per reason, however many spins refuse it for it."""
        self.rejections.setdefault((job.id, reason), Rejection(job.id, submitter.name, reason))

    def _final_rejections(self) -> tuple[Rejection, ...]:
        """The cycle's outcome for the jobs it refused: each job once per reason, in the order first
        refused, and none that a later spin or round matched after all."""
        matched = {match.job for match in self.matches}
        return tuple(r for r in self.rejections.values() if r.job not in matched)

    def _cost(self, candidate: Candidate) -> float:
        """NEGOTIATOR_USE_SLOT_WEIGHTS = False: a match on a slot without a consumption policy costs 1."""
        if not self.settings.use_slot_weights and not self.table.consumption_policy[candidate.row]:
            return 1.0
        return candidate.cost

    def _match_list(self, autocluster: Autocluster) -> MatchList:
        if autocluster.id not in self.match_lists:
            self.match_lists[autocluster.id] = MatchList(
                autocluster, self.evaluator, self.state, self.settings.pslot_loading,
                slot_ranked=bool(self.settings.pre_job_rank or self.settings.post_job_rank),
                job_ranked=not self.settings.ignore_job_ranks,
            )
        return self.match_lists[autocluster.id]

    def _result(self, duration: float, pool_size: float, allocations: dict[str, GroupAllocation]) -> CycleResult:
        rejections = self._final_rejections()
        submitters = tuple(
            SubmitterReport(s.name, s.group, s.priority, s.share_limit, self.usage[s.name])
            for s in sorted(self.submitters.values(), key=lambda s: (s.group, s.priority, s.name))
        )
        # every submitter with idle jobs is a customer of the cycle, at usage 0 if it holds nothing
        # (self.usage is a defaultdict: the reports above filed it), so the accountant keeps its record
        usage = self.tree.roll_up(self.usage)
        allocated = self.tree.subtree_totals({a.name: a.allocated for a in allocations.values()})
        stats = CycleStats(
            duration_s=duration,
            matches=len(self.matches),
            rejections=len(rejections),
            slots=len(self.table),
            jobs=len(self.snapshot.jobs),
            autoclusters=len(self.snapshot.autoclusters),
            pie_spins=self.pie_spins,
            pool_size=pool_size,
            phase_s=dict(self.phases),
            pairs=self.evaluator.stats.pairs,
            classad_fallbacks=self.evaluator.stats.fallbacks,
            claimed_slots=max(0 if self.preemptor is None else len(self.preemptor.claimed),
                              0 if self.fair_sharing is None else self.fair_sharing.claimed),
            preemptions=len(self.preemptions),
            quota_shortfalls=self.quota_shortfalls,
        )
        return CycleResult(
            stats=stats,
            matches=tuple(self.matches),
            rejections=rejections,
            groups=tuple(
                GroupReport(a.name, a.quota, allocated[a.name], usage.get(a.name, 0.0), a.accept_surplus,
                            own_allocated=a.allocated, own_usage=self.own_usage[a.name])
                for a in allocations.values()
            ),
            submitters=submitters,
            usage=usage,
            charges=self.tree.roll_up(self.charges),
            problems=tuple(self.problems),
            held=self._held(),
            preemptions=tuple(self.preemptions),
            match_exprs=self.settings.match_exprs,
            enforced_quotas=tuple(self.enforced_quotas),
            running_slots=dict(self.running_slots),
        )

    def _held_at_start(self) -> dict[str, dict[str, float]]:
        """What each submitter holds as the cycle starts (its claimed slots), worked out once."""
        if self._held_before is None:
            self._held_before = held_resources(self.table.slots, self.initial_weights, (), ())
        return self._held_before

    def _held(self) -> dict[str, dict[str, float]]:
        """What each submitter holds after the cycle, per resource, for the accountant's admission
        fair sharing sample and quota preemption timers; nothing unless one of them is configured."""
        if (self.settings.submitter_order is not SubmitterOrder.ADMISSION_FAIR_SHARING
                and not self.settings.quota_preemption):
            return {}
        return held_resources(self.table.slots, self.state.weights.tolist(), self.matches, self.preemptions)

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = time.perf_counter() - started


def _in_priority_order(submitters: Iterable[Submitter]) -> list[Submitter]:
    """Best effective priority first, then by name: the order a pie spin serves submitters in."""
    return sorted(submitters, key=lambda s: (s.priority, s.name))


def _shares(members: list[Submitter]) -> list[float]:
    """Each submitter's share of a pie: inverse to effective priority (HTCondor's normal factor)."""
    inverse = [1.0 / s.priority for s in members]
    total = sum(inverse)
    return [value / total for value in inverse]


def _suspended(slot: Slot) -> bool:
    """NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES: as HTCondor's Accountant::IsClaimed, a claimed slot
    whose Activity is Suspended (any case) is not charged to its customer. Its concurrency limits
    still count: HTCondor's LoadLimits counts them whatever the activity."""
    activity = evaluate_string(slot.ad, "Activity")
    return activity is not None and activity.lower() == "suspended"


def _plain(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)
