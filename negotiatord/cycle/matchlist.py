"""Per-autocluster candidate lists, sorted once and walked job after job.

Like HTCondor's per-autocluster MatchList cache: the candidates an autocluster matched when it was
first considered, best first by (NEGOTIATOR_PRE_JOB_RANK, job Rank, NEGOTIATOR_POST_JOB_RANK), ties
in slot-table order. A slot changed by a match since it was assessed is assessed again before it is
offered; one that no longer fits is dropped. A consumption-policy slot with room left stays first
in line (depth-first, the default) or moves behind the other candidates of equal rank
(breadth-first), or leaves the offer after one match as without a consumption policy (one per
cycle). HTCondor's ``insert_candidate`` re-ranks it instead, and with the default
NEGOTIATOR_PRE_JOB_RANK it sinks to the end, so in effect HTCondor spreads an autocluster's jobs
across slots.

The list is kept as parallel numpy arrays with a head index, not as one object per candidate: at
OSPool scale an autocluster matches thousands of slots, and most lists are only ever asked for
their head, so a :class:`Candidate` is made for the head alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from negotiatord.cycle.state import PoolState
from negotiatord.evaluation.protocol import PairEvaluator
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.settings import PslotLoading


@dataclass
class Candidate:
    row: int
    rank: tuple[float, float, float]
    cost: float
    consumption: np.ndarray
    version: int


class MatchList:
    def __init__(self, autocluster: Autocluster, evaluator: PairEvaluator, state: PoolState,
                 loading: PslotLoading) -> None:
        self._autocluster = autocluster
        self._evaluator = evaluator
        self._state = state
        self._loading = loading
        rows, amounts = state.offered()
        assessment = evaluator.assess(autocluster, rows, amounts)
        matched = np.flatnonzero(assessment.matched)
        rank = assessment.rank[matched]
        # np.lexsort sorts by the last key first; negate ranks for best-first, slot row breaks ties
        order = matched[np.lexsort((assessment.rows[matched], -rank[:, 2], -rank[:, 1], -rank[:, 0]))]
        self._rows = assessment.rows[order]
        self._rank = assessment.rank[order]
        self._cost = assessment.cost[order]
        self._consumption = assessment.consumption[order]
        self._version = state.version[self._rows]
        self._head = 0

    def best(self) -> Candidate | None:
        """The best candidate still on offer, re-assessed if a match changed it; None if none is left."""
        state = self._state
        while self._head < len(self._rows):
            head, row = self._head, int(self._rows[self._head])
            if not state.available[row]:
                self._head = self._next_on_offer(head)
                continue
            if self._version[head] != state.version[row] and not self._reassess(head):
                self._head += 1
                continue
            rank = self._rank[head]
            return Candidate(row, (float(rank[0]), float(rank[1]), float(rank[2])), float(self._cost[head]),
                             self._consumption[head], int(self._version[head]))
        return None

    def _next_on_offer(self, start: int) -> int:
        """The first position from ``start`` whose slot is still on offer (the end if none): one
        numpy pass, as a list may trail hundreds of slots taken since it was built."""
        offered = self._state.available[self._rows[start:]]
        return start + (int(offered.argmax()) if offered.any() else len(offered))

    def taken(self, candidate: Candidate) -> None:
        """``candidate`` (the current head) got a job; place it for the next job of this request."""
        if self._loading is PslotLoading.ONE_PER_CYCLE:
            # As HTCondor's negotiator does with a slot matched without a consumption policy:
            # matchmaker.cpp's negotiate() erases it from the cycle's startd ads (its step 2g).
            # The match still consumes only what the job takes, not the whole SlotWeight.
            self._state.withdraw(candidate.row)
        elif self._loading is PslotLoading.BREADTH_FIRST and self._state.available[candidate.row]:
            head = self._head
            equal = np.all(self._rank[head:] == self._rank[head], axis=1)
            end = head + (int(np.argmin(equal)) if not equal.all() else len(equal))
            for column in (self._rows, self._rank, self._cost, self._consumption, self._version):
                column[head:end] = np.roll(column[head:end], -1, axis=0)

    def _reassess(self, head: int) -> bool:
        """Assess the head's slot again as it is now; False if it no longer matches."""
        rows = self._rows[head:head + 1]
        assessment = self._evaluator.assess(self._autocluster, rows, self._state.amounts[rows])
        if not assessment.matched[0]:
            return False
        self._cost[head] = assessment.cost[0]
        self._consumption[head] = assessment.consumption[0]
        self._version[head] = self._state.version[rows[0]]
        return True
