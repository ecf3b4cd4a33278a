"""Per-autocluster candidate lists, sorted once and walked job after job.

Like HTCondor's per-autocluster MatchList cache: the candidates an autocluster matched when it was
first considered, best first by (NEGOTIATOR_PRE_JOB_RANK, job Rank, NEGOTIATOR_POST_JOB_RANK), ties
in slot-table order. A slot changed by a match since it was assessed is assessed again before it is
offered; one that no longer fits is dropped. A consumption-policy slot with room left stays first
in line (depth-first, the default) or moves behind the other candidates of equal rank
(breadth-first). HTCondor's ``insert_candidate`` re-ranks it instead, and with the default
NEGOTIATOR_PRE_JOB_RANK it sinks to the end, so in effect HTCondor spreads an autocluster's jobs
across slots.

The list is kept as parallel numpy arrays with a head index
(:class:`~negotiatord.evaluation.loading.Candidates`), not as one object per candidate: at OSPool
scale an autocluster matches thousands of slots, and most lists are only ever asked for their
head, so a :class:`Candidate` is made for the head alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from negotiatord.cycle.state import PoolState
from negotiatord.evaluation.loading import Candidates
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
        self.breadth_first = loading is PslotLoading.BREADTH_FIRST
        # As HTCondor's negotiator does with a slot matched without a consumption policy:
        # matchmaker.cpp's negotiate() erases it from the cycle's startd ads (its step 2g). The
        # match still consumes only what the job takes, not the whole SlotWeight.
        self.one_match_per_slot = loading is PslotLoading.ONE_PER_CYCLE
        rows, amounts = state.offered()
        assessment = evaluator.assess(autocluster, rows, amounts)
        matched = np.flatnonzero(assessment.matched)
        rank = assessment.rank[matched]
        # np.lexsort sorts by the last key first; negate ranks for best-first, slot row breaks ties
        order = matched[np.lexsort((assessment.rows[matched], -rank[:, 2], -rank[:, 1], -rank[:, 0]))]
        rows = assessment.rows[order]
        self.candidates = Candidates(rows, assessment.rank[order], assessment.cost[order],
                                     assessment.consumption[order], state.version[rows])

    def best(self) -> Candidate | None:
        """The best candidate still on offer, re-assessed if a match changed it; None if none is left."""
        candidates = self.candidates
        head = candidates.best(self._evaluator, self._autocluster, self._state)
        if head is None:
            return None
        rank = candidates.rank[head]
        return Candidate(int(candidates.rows[head]), (float(rank[0]), float(rank[1]), float(rank[2])),
                         float(candidates.cost[head]), candidates.consumption[head], int(candidates.version[head]))

    def taken(self) -> None:
        """The current head got a job; place it for the next job of this request."""
        if self.one_match_per_slot:
            self._state.withdraw(int(self.candidates.rows[self.candidates.head]))
        self.candidates.taken(self._state, self.breadth_first)
