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

A list holds only as many candidates as its request can use (its jobs, and a margin for slots
other requests take meanwhile), and is refilled when it runs dry (:class:`RankedOffer`): the
candidates that come next are those the whole list would have had next, ranked on the pool as
it was when the list was made, so the order is the same as if every slot had been ranked at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from negotiatord.classad.parser import ParseError, parse
from negotiatord.cycle.state import PoolState
from negotiatord.evaluation.loading import Candidates, first_true
from negotiatord.evaluation.protocol import Assessment, PairEvaluator
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.settings import PslotLoading

MARGIN = 16            # candidates beyond a request's jobs: slots other requests take meanwhile
FIRST_CHUNK = 256      # slots assessed at first when ranks are constant; each next chunk doubles
WHOLE_LIST = 1024      # matched slots a list sorts whole at once: on so few, parts cost more than they save


def best_first(rows: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The order that puts ``rows`` best first: by their three ranks, highest first, then by slot
    row (HTCondor's candidate order, ties in slot-table order)."""
    # np.lexsort sorts by the last key first; ranks are negated for best-first
    return np.lexsort((rows, -rank[:, 2], -rank[:, 1], -rank[:, 0]))


@dataclass
class Candidate:
    row: int
    rank: tuple[float, float, float]
    cost: float
    consumption: np.ndarray
    version: int


class MatchList:
    def __init__(self, autocluster: Autocluster, evaluator: PairEvaluator, state: PoolState,
                 loading: PslotLoading, slot_ranked: bool = True, job_ranked: bool = True) -> None:
        """``slot_ranked``: NEGOTIATOR_PRE_JOB_RANK or NEGOTIATOR_POST_JOB_RANK is configured (they
        may read the slot); without them and with a literal job Rank, or none asked
        (``job_ranked`` False: NEGOTIATOR_IGNORE_JOB_RANKS), every slot ranks alike."""
        self._autocluster = autocluster
        self._evaluator = evaluator
        self._state = state
        self.breadth_first = loading is PslotLoading.BREADTH_FIRST
        # As HTCondor's negotiator does with a slot matched without a consumption policy:
        # matchmaker.cpp's negotiate() erases it from the cycle's startd ads (its step 2g). The
        # match still consumes only what the job takes, not the whole SlotWeight.
        self.one_match_per_slot = loading is PslotLoading.ONE_PER_CYCLE
        offer = RankedOffer(autocluster, evaluator, state, len(autocluster.jobs) + MARGIN,
                            constant_rank=(not slot_ranked and not self.breadth_first
                                           and (not job_ranked or _literal_rank(autocluster))),
                            whole_ties=self.breadth_first)
        self._offer = offer
        first = offer.next()
        assert first is not None        # the first call always answers, if with no candidate
        self.candidates = Candidates(first.rows, first.rank, first.cost, first.consumption, first.version,
                                     offer.next)

    @property
    def worst_rank(self) -> tuple[float, ...] | None:
        """The lowest ranks any candidate of the whole list has (the list keeps the ranks it was
        made with, so no candidate still listed ranks lower); None if not known yet, or if no
        slot matched."""
        return self._offer.worst_rank

    def exhausted(self) -> bool:
        """Whether no candidate is left on offer (:meth:`best` would answer None), found without
        assessing any slot: False while a part of the list is still to come."""
        return self._offer.complete and self.candidates.exhausted(self._state)

    def best(self) -> Candidate | None:
        """The best candidate still on offer, re-assessed if a match changed it; None if none is left."""
        candidates = self.candidates
        head = candidates.best(self._evaluator, self._autocluster, self._state)
        if head is None:
            return None
        rank = candidates.rank[head]
        return Candidate(int(candidates.rows[head]), (float(rank[0]), float(rank[1]), float(rank[2])),
                         float(candidates.cost[head]), candidates.consumption[head], int(candidates.version[head]))

    def skip(self) -> None:
        """Pass over the current head for this autocluster for the rest of the cycle (its job's
        concurrency limits are full on it, and limits only fill up within a cycle)."""
        self.candidates.head += 1

    def taken(self) -> None:
        """The current head got a job; place it for the next job of this request."""
        if self.one_match_per_slot:
            self._state.withdraw(int(self.candidates.rows[self.candidates.head]))
        self.candidates.taken(self._state, self.breadth_first)


class RankedOffer:
    """The slots on offer when a candidate list is made, handed out best first a part at a time.

    The whole list would be every slot that matched then, sorted by rank (higher first) and slot
    row, each with the answers of that assessment and re-assessed when it reaches the head if a
    match changed it since. Each part here is the next stretch of that order, worked out when it
    is asked for: the slots it may hold are placed by an assessment at the amounts they had when
    the list was made (so the match, the rank and hence the place are the same as then), a slot
    since taken is left out (it would be skipped), and one whose amounts changed since is marked
    for re-assessment (version -1, as its version would differ).

    * Constant ranks (no pre/post job rank, a literal job Rank, depth-first): the order is
      slot-row order, so only as many slots are assessed, chunk after chunk, as it takes to find
      the part's candidates.
    * Otherwise every slot is assessed (its rank decides its place). If at most
      :data:`WHOLE_LIST` of them match, the whole list is sorted at once and is the one part.
      Else only the best of them are sorted and kept whole; of the others only the slot row and
      the ranks are kept. A list that runs dry sorts those once; each part then takes the next
      of them still on offer, with the ranks they were listed with, marked to be assessed again
      when they reach the head (version -1), as a slot a match changed since would be.

    Each part holds at least ``need`` candidates (if there are that many), twice as many as the
    part before. With ``whole_ties`` (breadth-first) a part also holds every candidate ranked as
    its last one, since a p-slot with room left moves behind all candidates of its rank.
    """

    def __init__(self, autocluster: Autocluster, evaluator: PairEvaluator, state: PoolState, need: int,
                 constant_rank: bool, whole_ties: bool) -> None:
        self._autocluster = autocluster
        self._evaluator = evaluator
        self._state = state
        self._rows, self._amounts = state.offered_to(autocluster.schedd)
        self._need = need
        self._constant_rank = constant_rank
        self._whole_ties = whole_ties
        self._assessed = 0                                      # constant ranks: slots assessed so far
        self._left_rows = np.empty(0, dtype=np.int32)           # otherwise: the matched slots not handed
        self._left_rank = np.empty((0, 3))                      # out yet, and their ranks;
        self._sorted = False                                    # sorted best first from the first refill,
        self._next = 0                                          # handed out up to _next
        self._done = False
        self._first = True                                      # no match changed the pool since
        self.worst_rank: tuple[float, ...] | None = None        # see MatchList.worst_rank

    @property
    def complete(self) -> bool:
        """Whether every part of the list has been handed out."""
        return self._done

    def next(self) -> Candidates | None:
        """The next part of the list (perhaps empty on the first call); None once it is complete."""
        if self._done:
            return None
        part = self._in_row_order() if self._constant_rank else self._best_ranked()
        self._need *= 2
        self._first = False
        if self._done:        # the list is complete: let the pool as it was go
            del self._rows, self._amounts, self._left_rows, self._left_rank
        return part

    def _in_row_order(self) -> Candidates:
        parts: list[Candidates] = []
        found, chunk, total = 0, FIRST_CHUNK, len(self._rows)
        while found < self._need and self._assessed < total:
            positions = np.arange(self._assessed, min(total, self._assessed + chunk))
            self._assessed += len(positions)
            chunk *= 2
            assessment = self._assess(positions)
            matched = np.flatnonzero(assessment.matched)
            parts.append(self._candidates(assessment, matched))
            found += len(matched)
            if len(matched) and self.worst_rank is None:       # every slot ranks alike
                self.worst_rank = tuple(assessment.rank[matched[0]].tolist())
        self._done = self._assessed >= total
        return _joined(parts, self._state.amounts.shape[1])

    def _best_ranked(self) -> Candidates:
        if self._first:
            assessment = self._assess(np.arange(len(self._rows)))
            matched = np.flatnonzero(assessment.matched)
            rows, rank = assessment.rows[matched], assessment.rank[matched]
            if len(rows) <= WHOLE_LIST:
                order = best_first(rows, rank)
                self.worst_rank = tuple(rank[order[-1]].tolist()) if len(order) else None
                self._done = True
                return self._candidates(assessment, matched[order])
            self.worst_rank = _lowest(rank)
            chosen = self._best(rows, rank)
            left = np.ones(len(rows), dtype=bool)
            left[chosen] = False
            self._left_rows, self._left_rank = rows[left], rank[left]
            self._done = not left.any()
            return self._candidates(assessment, matched[chosen])
        if not self._sorted:
            # the list ran dry once, so it is likely to again: sort what is left, once
            order = best_first(self._left_rows, self._left_rank)
            self._left_rows, self._left_rank = self._left_rows[order].astype(np.int32), self._left_rank[order]
            self._sorted = True
        rows, rank = self._left_rows[self._next:], self._left_rank[self._next:]
        on_offer = np.flatnonzero(self._state.available[rows])
        count = min(self._need, len(on_offer))
        if self._whole_ties and count:
            count += first_true(~(rank[on_offer[count:]] == rank[on_offer[count - 1]]).all(axis=1))
        taken = on_offer[:count]
        self._next += int(taken[-1]) + 1 if count else len(rows)
        self._done = count == len(on_offer)
        return _to_assess_again(rows[taken], rank[taken], self._state.amounts.shape[1])

    def _best(self, rows: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """The positions of the ``need`` best entries, best first (with ``whole_ties``, and every
        entry ranked as the last of them). Only those are sorted: the need-th best is found rank
        by rank with np.partition, as HTCondor's sort would place it."""
        need, count = self._need, len(rows)
        if count > need:
            parts, tied, k = [], np.arange(count), need
            for column in range(3):
                values = -rank[tied, column]
                kth = np.partition(values, k - 1)[k - 1]
                better = tied[values < kth]
                parts.append(better)
                k -= len(better)
                tied = tied[values == kth]
            parts.append(tied[:k])             # equal in every rank: lowest slot rows first
            if self._whole_ties:
                parts.append(tied[k:])
            chosen = np.concatenate(parts)
        else:
            chosen = np.arange(count)
        return chosen[best_first(rows[chosen], rank[chosen])]

    def _assess(self, positions: np.ndarray) -> Assessment:
        """Assess the slots at ``positions`` of the offer as they were then; a slot since taken is
        left out. The whole offer, unchanged, is passed as it is: the evaluator may have gathered
        it for other lists already."""
        if self._first and len(positions) == len(self._rows):
            return self._evaluator.assess(self._autocluster, self._rows, self._amounts)
        if not self._first:
            positions = positions[self._state.available[self._rows[positions]]]
        return self._evaluator.assess(self._autocluster, self._rows[positions], self._amounts[positions])

    def _candidates(self, assessment: Assessment, chosen: np.ndarray) -> Candidates:
        """Candidates of ``assessment``'s entries ``chosen``, in that order."""
        rows = assessment.rows[chosen]
        if self._first:       # assessed on the pool as it is
            return Candidates(rows, assessment.rank[chosen], assessment.cost[chosen], assessment.consumption[chosen],
                              self._state.version[rows])
        then = self._amounts[np.searchsorted(self._rows, rows)]
        now = self._state.amounts[rows]
        same = ((then == now) | (np.isnan(then) & np.isnan(now))).all(axis=1)
        version = np.where(same, self._state.version[rows], -1)
        return Candidates(rows, assessment.rank[chosen], assessment.cost[chosen], assessment.consumption[chosen],
                          version)


def _to_assess_again(rows: np.ndarray, rank: np.ndarray, assets: int) -> Candidates:
    """Candidates of slots that matched when the list was made, with the ranks they had then,
    marked to be assessed again when they reach the head (version -1) rather than now: a slot a
    match changed since would be anyway, one unchanged gives the same answers then as now, and
    most of a part is never reached (each part is twice as long as the one before)."""
    return Candidates(rows, rank, np.full(len(rows), np.nan), np.full((len(rows), assets), np.nan),
                      np.full(len(rows), -1, dtype=np.int64))


def _lowest(rank: np.ndarray) -> tuple[float, ...] | None:
    """The lexicographically lowest row of ``rank`` (None if it has none), in one pass a column."""
    tied = rank
    for column in range(rank.shape[1]):
        if not len(tied):
            return None
        tied = tied[tied[:, column] == tied[:, column].min()]
    return tuple(tied[0].tolist()) if len(tied) else None


def _joined(parts: list[Candidates], assets: int) -> Candidates:
    if not parts:
        return Candidates(np.empty(0, dtype=np.int64), np.empty((0, 3)), np.empty(0), np.empty((0, assets)),
                          np.empty(0, dtype=np.int64))
    if len(parts) == 1:
        return parts[0]
    return Candidates(np.concatenate([p.rows for p in parts]), np.concatenate([p.rank for p in parts]),
                      np.concatenate([p.cost for p in parts]), np.concatenate([p.consumption for p in parts]),
                      np.concatenate([p.version for p in parts]))


def _literal_rank(autocluster: Autocluster) -> bool:
    """Whether the job's Rank is the same against every slot: unset (0) or a literal."""
    ad = autocluster.ad
    if "Rank" not in ad:
        return True
    expression = ad.lookup("Rank")
    try:
        return parse(str(expression))[0] in ("lit", "inexact")
    except ParseError:
        return False
