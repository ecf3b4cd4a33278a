"""Loading one request: placing an autocluster's jobs one after another on its ranked candidates.

A request (an autocluster's consecutive jobs of one submitter) is offered its best candidate, job
after job, until its jobs run out or something stops it. This module holds the pieces that loop
is made of, so the cycle's job-by-job loop and an evaluator's whole-request loading share them:

* :class:`PoolColumns`, the cycle's working copy of what matches change (amounts, SlotWeight,
  on offer, a version per slot), and :meth:`PoolColumns.take`, one match's deduction;
* :class:`Candidates`, one autocluster's candidate list best first, with :meth:`Candidates.best`
  (re-assessing a slot a match changed since it was assessed), :meth:`Candidates.taken`
  (where a p-slot with room left goes for the next job: depth- or breadth-first) and
  :meth:`Candidates.refill` (the candidates that come next, when a list made in parts runs dry);
* :class:`LoadingLimits`, what may stop a request part-way: its jobs, the submitter's limit,
  the group's room, the headroom of the ConcurrencyLimits its jobs share;
* :func:`load_plainly`, the whole-request loading in Python over any evaluator's ``assess``: the
  classad2 reference's ``load``, and the fast path's for jobs it cannot run in a kernel.

The order of the checks is HTCondor's ``matchmakingAlgorithm`` as the cycle follows it: a job's
ConcurrencyLimits first, then the best candidate, then the submitter's limit, then the group's
quota.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

import numpy as np

from negotiatord.pool.autoclusters import Autocluster

if TYPE_CHECKING:
    from negotiatord.evaluation.protocol import PairEvaluator

EPSILON = 1e-9


class Stop(IntEnum):
    """Why a loading call stopped (the kernels return the number)."""

    JOBS = 0                # it placed every job it was given
    CONCURRENCY = 1         # the next job's ConcurrencyLimits entry ``Loading.blocking`` is full
    NO_MATCH = 2            # no candidate is left for the next job
    SUBMITTER_LIMIT = 3     # the next match would cost more than the submitter's limit left
    GROUP_QUOTA = 4         # ... or than the group's room left
    NEEDS_PYTHON = 5        # (kernels only) a re-assessment needs classad2: go on in Python


class PoolColumns:
    """Mutable per-cycle copy of the slot columns matches change.

    ``version`` counts changes to a slot, so a candidate list built earlier can tell which of its
    entries must be assessed again.
    """

    def __init__(self, amounts: np.ndarray, weights: np.ndarray, available: np.ndarray,
                 consumption_policy: np.ndarray) -> None:
        self.amounts = amounts
        self.weights = weights
        self.available = available
        self.version = np.zeros(len(weights), dtype=np.int64)
        self.consumption_policy = consumption_policy

    def changed(self) -> None:
        """Told after matches changed the columns (:meth:`take`, or a kernel writing in place)."""

    def take(self, row: int, consumption: np.ndarray, cost: float) -> None:
        """Record a match on ``row``: a consumption-policy slot gives up what the job consumes and
        stays on offer while its SlotWeight is positive; any other slot is taken whole."""
        self.version[row] += 1
        self.changed()
        if not self.consumption_policy[row]:
            self.available[row] = False
            return
        taken = np.nan_to_num(consumption, nan=0.0)
        self.amounts[row] = self.amounts[row] - taken
        self.weights[row] = self.weights[row] - cost
        if self.weights[row] <= EPSILON:
            self.available[row] = False


    def withdraw(self, row: int) -> None:
        """Take ``row`` off the offer for the rest of the cycle, whatever is left of it."""
        self.available[row] = False
        self.changed()


class Candidates:
    """One autocluster's candidates best first, as parallel arrays and a head index (most lists
    are only ever asked for their head). Entries before ``head`` are spent.

    The arrays may hold only the first part of the list: ``more``, when given, returns the
    candidates that come next (None once there are none), and :meth:`refill` appends them when
    the list runs dry. A version of -1 marks a candidate to be assessed again before it is offered.
    """

    def __init__(self, rows: np.ndarray, rank: np.ndarray, cost: np.ndarray, consumption: np.ndarray,
                 version: np.ndarray, more: Callable[[], Candidates | None] | None = None) -> None:
        self.rows = rows
        self.rank = rank
        self.cost = cost
        self.consumption = consumption
        self.version = version
        self.head = 0
        self._more = more

    def refill(self) -> bool:
        """The list ran dry: drop the spent entries and append the candidates that come next;
        False if none are left."""
        while self._more is not None:
            block = self._more()
            if block is None:
                self._more = None
                break
            if len(block.rows):
                head = self.head
                self.rows, self.rank, self.cost, self.consumption, self.version = (
                    np.concatenate([mine[head:], theirs]) for mine, theirs in (
                        (self.rows, block.rows), (self.rank, block.rank), (self.cost, block.cost),
                        (self.consumption, block.consumption), (self.version, block.version)))
                self.head = 0
                return True
        return False

    def exhausted(self, pool: PoolColumns) -> bool:
        """Whether no candidate is left: every slot listed is off the offer, and no part is to
        come (asked for a part, ``more`` would make it). Spent entries are passed over as
        :meth:`best` passes them; none is re-assessed."""
        while True:
            if self.head < len(self.rows):
                self.head = self._next_on_offer(self.head, pool)
                if self.head < len(self.rows):
                    return False
            if not self.refill():
                return True

    def best(self, evaluator: PairEvaluator, autocluster: Autocluster, pool: PoolColumns) -> int | None:
        """The position of the best candidate still on offer, re-assessed if a match changed it;
        None if none is left."""
        while self.head < len(self.rows) or self.refill():
            head, row = self.head, int(self.rows[self.head])
            if not pool.available[row]:
                self.head = self._next_on_offer(head, pool)
                continue
            if self.version[head] != pool.version[row] and not self._reassess(evaluator, autocluster, pool, head):
                self.head += 1
                continue
            return head
        return None

    def _next_on_offer(self, start: int, pool: PoolColumns) -> int:
        """The first position from ``start`` whose slot is still on offer (the end if none): one
        numpy pass, as a list may trail hundreds of slots taken since it was built."""
        return start + first_true(pool.available[self.rows[start:]])

    def _reassess(self, evaluator: PairEvaluator, autocluster: Autocluster, pool: PoolColumns, head: int) -> bool:
        """Assess the head's slot again as it is now; False if it no longer matches. Its rank
        stays the one it was listed with."""
        rows = self.rows[head:head + 1]
        assessment = evaluator.assess(autocluster, rows, pool.amounts[rows])
        if not assessment.matched[0]:
            return False
        self.cost[head] = assessment.cost[0]
        self.consumption[head] = assessment.consumption[0]
        self.version[head] = pool.version[rows[0]]
        return True

    def taken(self, pool: PoolColumns, breadth_first: bool) -> None:
        """The head got a job; place it for the next job of this request: a p-slot with room
        left stays first (depth-first) or goes behind the candidates of equal rank (breadth-first)."""
        head = self.head
        if breadth_first and pool.available[int(self.rows[head])]:
            end = equal_ranks_end(self.rank, head)
            for column in (self.rows, self.rank, self.cost, self.consumption, self.version):
                column[head:end] = np.roll(column[head:end], -1, axis=0)


def first_true(mask: np.ndarray) -> int:
    """The position of ``mask``'s first True; its length when it has none."""
    return int(mask.argmax()) if mask.any() else len(mask)


def equal_ranks_end(rank: np.ndarray, start: int) -> int:
    """The end of the run of rows from ``start`` whose ranks (rows of ``rank``) equal its own."""
    return start + first_true(~np.all(rank[start:] == rank[start], axis=1))


def refusal(cost: float, submitter_limit: float, room: float) -> Stop | None:
    """Why a match of ``cost`` may not be made: over the submitter's limit, else over the
    group's room; None if it may."""
    if cost > submitter_limit + EPSILON:
        return Stop.SUBMITTER_LIMIT
    if cost > room + EPSILON:
        return Stop.GROUP_QUOTA
    return None


@dataclass
class LoadingLimits:
    """What may stop one request's loading, and the running figures the loading updates in place.

    The group's room is ``room_allocated`` less the sum of ``room_usage`` in order (one group's
    own usage, or every group's for the ``<none>`` pie of GROUP_AUTOREGROUP submitters); entry
    ``room_term`` is the request's group, which each match's cost is added to. The request's jobs
    share their ConcurrencyLimits: entry ``e`` draws ``concurrency_increments[e]`` of limit
    ``concurrency_names[e]``, whose use is ``concurrency_in_use`` (updated) and whose limit is
    ``concurrency_limits``.
    """

    jobs: int                                  # most matches to make
    submitter_limit: float                     # what the submitter may still spend (updated)
    room_allocated: float
    room_usage: np.ndarray                     # float64[groups] (updated)
    room_term: int
    concurrency_names: np.ndarray              # int64[entries]
    concurrency_increments: np.ndarray         # float64[entries]
    concurrency_in_use: np.ndarray             # float64[names] (updated)
    concurrency_limits: np.ndarray             # float64[names]
    breadth_first: bool                        # PslotLoading.BREADTH_FIRST
    unit_cost_legacy: bool                     # NEGOTIATOR_USE_SLOT_WEIGHTS = False: a legacy slot costs 1
    one_match_per_slot: bool = False           # a matched slot leaves the offer after its first match

    def blocking(self) -> int:
        """The first concurrency entry the next job would exceed, or -1 if it fits."""
        in_use, limits = self.concurrency_in_use, self.concurrency_limits
        for entry, (name, increment) in enumerate(zip(self.concurrency_names.tolist(),
                                                      self.concurrency_increments.tolist())):
            if float(in_use[name]) + increment > float(limits[name]) + EPSILON:
                return entry
        return -1

    def room(self) -> float:
        return self.room_allocated - sum(self.room_usage.tolist())

    def refusal(self, cost: float) -> Stop | None:
        return refusal(cost, self.submitter_limit, self.room())

    def charge(self, cost: float) -> None:
        """One match of ``cost`` made: the submitter's limit, the group's usage and the
        concurrency limits' use follow."""
        self.submitter_limit -= cost
        self.room_usage[self.room_term] += cost
        for name, increment in zip(self.concurrency_names.tolist(), self.concurrency_increments.tolist()):
            self.concurrency_in_use[name] += increment


@dataclass(frozen=True)
class Loading:
    """The matches one loading call made, in order, and why it stopped."""

    rows: np.ndarray               # int64[matches]: slot table rows
    consumption: np.ndarray        # float64[matches, assets]
    cost: np.ndarray               # float64[matches]
    stop: Stop
    blocking: int = -1             # Stop.CONCURRENCY: the concurrency entry that is full

    def then(self, rest: Loading) -> Loading:
        """This call's matches followed by ``rest``'s, stopped as ``rest`` stopped."""
        return Loading(np.concatenate([self.rows, rest.rows]), np.concatenate([self.consumption, rest.consumption]),
                       np.concatenate([self.cost, rest.cost]), rest.stop, rest.blocking)


def load_plainly(evaluator: PairEvaluator, autocluster: Autocluster, candidates: Candidates, pool: PoolColumns,
                 limits: LoadingLimits) -> Loading:
    """Place the request's jobs one by one, in Python, re-assessing changed slots through
    ``evaluator.assess``."""
    rows: list[int] = []
    consumptions: list[np.ndarray] = []
    costs: list[float] = []
    stop, blocking = Stop.JOBS, -1
    while len(rows) < limits.jobs:
        blocking = limits.blocking()
        if blocking >= 0:
            stop = Stop.CONCURRENCY
            break
        head = candidates.best(evaluator, autocluster, pool)
        if head is None:
            stop = Stop.NO_MATCH
            break
        row = int(candidates.rows[head])
        plain = limits.unit_cost_legacy and not pool.consumption_policy[row]
        cost = 1.0 if plain else float(candidates.cost[head])
        refused = limits.refusal(cost)
        if refused is not None:
            stop = refused
            break
        consumption = candidates.consumption[head].copy()
        rows.append(row)
        consumptions.append(consumption)
        costs.append(cost)
        pool.take(row, consumption, cost)
        if limits.one_match_per_slot:
            pool.withdraw(row)
        candidates.taken(pool, limits.breadth_first)
        limits.charge(cost)
    assets = pool.amounts.shape[1]
    return Loading(np.array(rows, dtype=np.int64), np.array(consumptions, dtype=np.float64).reshape(-1, assets),
                   np.array(costs, dtype=np.float64), stop, blocking)
