"""Per-autocluster candidate lists, sorted once and walked job after job.

Like HTCondor's per-autocluster MatchList cache: the candidates an autocluster matched when it was
first considered, best first by (NEGOTIATOR_PRE_JOB_RANK, job Rank, NEGOTIATOR_POST_JOB_RANK), ties
in slot-table order. A slot changed by a match since it was assessed is assessed again before it is
offered; one that no longer fits is dropped. A consumption-policy slot with room left stays first
in line (depth-first, HTCondor's behaviour) or moves behind the other candidates of equal rank
(breadth-first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from negotiatord.cycle.state import PoolState
from negotiatord.evaluation.protocol import Assessment, PairEvaluator
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
        rows = np.flatnonzero(state.available)
        assessment = evaluator.assess(autocluster, rows, state.amounts[rows])
        self._candidates = _sorted_candidates(assessment, state)

    def best(self) -> Candidate | None:
        """The best candidate still on offer, re-assessed if a match changed it; None if none is left."""
        while self._candidates:
            head = self._candidates[0]
            if not self._state.available[head.row]:
                self._candidates.pop(0)
                continue
            if head.version != self._state.version[head.row]:
                refreshed = self._reassess(head)
                if refreshed is None:
                    self._candidates.pop(0)
                    continue
                self._candidates[0] = head = refreshed
            return head
        return None

    def taken(self, candidate: Candidate) -> None:
        """``candidate`` (the current head) got a job; place it for the next job of this request."""
        if self._loading is PslotLoading.BREADTH_FIRST and self._state.available[candidate.row]:
            self._candidates.pop(0)
            position = 0
            while position < len(self._candidates) and self._candidates[position].rank == candidate.rank:
                position += 1
            self._candidates.insert(position, candidate)

    def _reassess(self, stale: Candidate) -> Candidate | None:
        rows = np.array([stale.row])
        assessment = self._evaluator.assess(self._autocluster, rows, self._state.amounts[rows])
        if not assessment.matched[0]:
            return None
        return Candidate(stale.row, stale.rank, float(assessment.cost[0]), assessment.consumption[0],
                         int(self._state.version[stale.row]))


def _sorted_candidates(assessment: Assessment, state: PoolState) -> list[Candidate]:
    matched = np.flatnonzero(assessment.matched)
    rank = assessment.rank[matched]
    # np.lexsort sorts by the last key first; negate ranks for best-first, slot row breaks ties
    order = np.lexsort((assessment.rows[matched], -rank[:, 2], -rank[:, 1], -rank[:, 0]))
    return [
        Candidate(
            row=int(assessment.rows[i]),
            rank=tuple(float(v) for v in assessment.rank[i]),
            cost=float(assessment.cost[i]),
            consumption=assessment.consumption[i],
            version=int(state.version[assessment.rows[i]]),
        )
        for i in matched[order]
    ]
