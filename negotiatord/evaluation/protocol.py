"""What the negotiation cycle asks about a request (an autocluster) and a set of slots."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from negotiatord.evaluation.loading import Candidates, Loading, LoadingLimits, PoolColumns
from negotiatord.pool.autoclusters import Autocluster

RANK_COLUMNS = ("pre_job_rank", "job_rank", "post_job_rank")
UNRANKED = -1.7976931348623157e308  # -DBL_MAX: HTCondor's pre/post job rank that does not evaluate
IGNORED_RANK = 1.0                  # every job's Rank with NEGOTIATOR_IGNORE_JOB_RANKS (matchmaker.cpp calculateRanks)


@dataclass(frozen=True)
class Assessment:
    """Answers for rows ``rows`` of the slot table, one entry per row.

    matched:     both Requirements hold (with Request<Res> replaced by the consumption on slots with a
                 consumption policy, as HTCondor's cp_override_requested does) and, on such slots, the
                 consumption is feasible (numeric, non-negative, not all zero, within what is left).
    consumption: amount of each table asset the match takes (NaN for assets the slot lacks); a slot
                 without a consumption policy is taken whole.
    cost:        match cost in slot-weight units: SlotWeight before minus after deducting the
                 consumption (consumption policy), or the whole SlotWeight (legacy). NaN when unmatched.
    rank:        NEGOTIATOR_PRE_JOB_RANK, job Rank, NEGOTIATOR_POST_JOB_RANK; higher is better.
    """

    rows: np.ndarray          # int64[n]
    matched: np.ndarray       # bool[n]
    consumption: np.ndarray   # float64[n, assets]
    cost: np.ndarray          # float64[n]
    rank: np.ndarray          # float64[n, 3]


@dataclass(frozen=True)
class PreemptionInserts:
    """The attributes inserted before asking: into the job ad (``submitter``) and into each
    claimed slot's ad (``remote``, parallel to the rows asked about); ``other_customer`` says,
    per row, whether the slot's customer is not the job's submitter (priority preemption is
    possible only then).

    ``remote_of`` gives what would be inserted into any claimed slot's ad (by table row), and
    ``varying`` names (lower case) the figures whose values may change within the cycle (usage
    moves with every match): the others hold for the whole cycle, so an evaluator may read them
    for all claimed slots at once."""

    submitter: Mapping[str, object]
    remote: Sequence[Mapping[str, object]]
    other_customer: Sequence[bool]
    remote_of: Callable[[int], Mapping[str, object]] | None = None
    varying: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PreemptionAssessment:
    """Answers for claimed rows ``rows``, one entry per row. What the decision does not need is
    not evaluated: ``requirements`` is False where priority preemption was already impossible
    (the slot prefers the job, its customer is the submitter, or it ranks the job lower), and
    ``preemption_rank`` is -DBL_MAX where the slot cannot be preempted."""

    rows: np.ndarray              # int64[n]
    rank_above: np.ndarray        # bool[n]: MY.Rank > MY.CurrentRank is true
    rank_at_least: np.ndarray     # bool[n]: MY.Rank >= MY.CurrentRank is true
    requirements: np.ndarray      # bool[n]: PREEMPTION_REQUIREMENTS is true (true where it is not set)
    preemption_rank: np.ndarray   # float64[n]: PREEMPTION_RANK, -DBL_MAX where it is no number


@dataclass
class EvaluatorStats:
    """What an evaluator did in a cycle, for the cycle's figures and /metrics."""

    pairs: int = 0                                                   # (autocluster, slot) pairs assessed
    fallback_evaluations: Counter = field(default_factory=Counter)   # root -> evaluations left to classad2

    @property
    def fallbacks(self) -> int:
        return sum(self.fallback_evaluations.values())


class PairEvaluator(Protocol):
    """Evaluates requests against slots of one :class:`~negotiatord.pool.snapshot.SlotTable`.

    ``amounts`` carries each row's current asset amounts: partitionable slots lose what earlier
    matches of the same cycle consumed, and every expression must see those values.
    """

    @property
    def stats(self) -> EvaluatorStats:
        """What the evaluator did so far (an evaluator may keep a subclass with its own figures)."""
        ...

    def slot_weights(self, rows: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        """SlotWeight per row (NaN where it does not evaluate to a number)."""
        ...

    def assess(self, autocluster: Autocluster, rows: np.ndarray, amounts: np.ndarray) -> Assessment:
        ...

    def load(self, autocluster: Autocluster, candidates: Candidates, pool: PoolColumns,
             limits: LoadingLimits) -> Loading:
        """Place as many of one request's jobs as ``limits`` allow on ``candidates``, best first,
        as :func:`~negotiatord.evaluation.loading.load_plainly` does job by job: each match
        deducted from ``pool`` and charged to ``limits`` in place, a changed slot re-assessed
        before it is offered again."""

    def assess_preemption(self, autocluster: Autocluster, rows: np.ndarray,
                          inserts: PreemptionInserts) -> PreemptionAssessment:
        """For claimed rows the request matches (``assess``): may it preempt them, and in which
        order (:mod:`negotiatord.evaluation.preemption`)."""
        ...
