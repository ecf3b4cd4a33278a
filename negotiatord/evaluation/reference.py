"""The classad2 evaluator: every question answered pair by pair by HTCondor's own ClassAd library.

It is the semantic reference for the fast path and the fallback for what the fast path does not
cover. Partitionable slots whose assets changed during the cycle are evaluated on a private copy of
their ad carrying the current amounts; jobs are never modified (a private copy of each request ad
takes the temporary Request<Res> overrides, as HTCondor's cp_override_requested does in place).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import classad2
import numpy as np

from negotiatord.classad.conversion import as_number, evaluated, requirements_hold
from negotiatord.classad.cycle_time import frozen_ad, frozen_expr
from negotiatord.evaluation.loading import Candidates, Loading, LoadingLimits, PoolColumns, load_plainly
from negotiatord.evaluation.preemption import PreemptionQuestions
from negotiatord.evaluation.protocol import (
    IGNORED_RANK, UNRANKED, Assessment, EvaluatorStats, PreemptionAssessment, PreemptionInserts,
)
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.slots import Slot
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

FAILED_CONSUMPTION = -999.0   # HTCondor's cp_compute_consumption marks a failed evaluation so


class ClassAdEvaluator:
    """:class:`~negotiatord.evaluation.protocol.PairEvaluator` backed by classad2."""

    def __init__(self, table: SlotTable, settings: Settings, now: int) -> None:
        self._table = table
        self._now = now
        self._column = {a.lower(): i for i, a in enumerate(table.assets)}
        self._slot_ads = [frozen_ad(s.ad, now) for s in table.slots]
        self._weights = [frozen_expr(s.slot_weight, now) for s in table.slots]
        self._consumption = [
            {a: frozen_expr(e, now) for a, e in s.consumption.items()} if s.consumption else None
            for s in table.slots
        ]
        self._ranks = [
            frozen_expr(classad2.ExprTree(text), now) if text else None
            for text in (settings.pre_job_rank, settings.post_job_rank)
        ]
        self._ignore_job_ranks = settings.ignore_job_ranks
        self._requests: dict[int, classad2.ClassAd] = {}
        self._preemption = PreemptionQuestions(table, settings, now)
        self.stats = EvaluatorStats()

    # -- PairEvaluator -------------------------------------------------------------------------

    def slot_weights(self, rows: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        return np.array(
            [self._weight(self._current_ad(row, amounts[i]), row) for i, row in enumerate(rows)],
            dtype=float,
        )

    def assess(self, autocluster: Autocluster, rows: np.ndarray, amounts: np.ndarray) -> Assessment:
        job = self._request(autocluster)
        n = len(rows)
        self.stats.pairs += n
        matched = np.zeros(n, dtype=bool)
        consumption = np.full((n, len(self._table.assets)), np.nan)
        cost = np.full(n, np.nan)
        rank = np.full((n, 3), UNRANKED)
        for i, row in enumerate(rows):
            slot_ad = self._current_ad(row, amounts[i])
            policy = self._consumption[row]
            if policy is None:
                ok = _requirements_hold(job, slot_ad)
                taken = amounts[i]
                price = self._weight(slot_ad, row) if ok else np.nan
            else:
                ok, taken, price = self._assess_consumption(job, slot_ad, row, policy, amounts[i])
            matched[i] = ok and not np.isnan(price)
            if matched[i]:
                consumption[i] = taken
                cost[i] = price
                rank[i] = self._rank(job, slot_ad)
        return Assessment(rows=np.asarray(rows), matched=matched, consumption=consumption, cost=cost, rank=rank)

    def load(self, autocluster: Autocluster, candidates: Candidates, pool: PoolColumns,
             limits: LoadingLimits) -> Loading:
        return load_plainly(self, autocluster, candidates, pool, limits)

    def assess_preemption(self, autocluster: Autocluster, rows: np.ndarray,
                          inserts: PreemptionInserts) -> PreemptionAssessment:
        return self._preemption.assess(autocluster, rows, inserts)

    # -- pieces --------------------------------------------------------------------------------

    def _request(self, autocluster: Autocluster) -> classad2.ClassAd:
        """A private copy of the autocluster's representative ad (time() frozen)."""
        if autocluster.id not in self._requests:
            ad = frozen_ad(autocluster.ad, self._now)
            self._requests[autocluster.id] = copy.deepcopy(ad) if ad is autocluster.ad else ad
        return self._requests[autocluster.id]

    def _current_ad(self, row: int, amounts: np.ndarray) -> classad2.ClassAd:
        """The slot's ad, or a copy carrying its current asset amounts if a match changed them."""
        slot: Slot = self._table.slots[row]
        base = self._table.amounts[row]
        if np.array_equal(amounts, base, equal_nan=True):
            return self._slot_ads[row]
        ad = copy.deepcopy(self._slot_ads[row])
        _assign_amounts(ad, slot.assets, [amounts[self._column[a.lower()]] for a in slot.assets])
        return ad

    def _weight(self, slot_ad: classad2.ClassAd, row: int) -> float:
        value = as_number(evaluated(self._weights[row], slot_ad))
        return np.nan if value is None else value

    def _assess_consumption(
        self, job: classad2.ClassAd, slot_ad: classad2.ClassAd, row: int, policy: dict[str, classad2.ExprTree],
        amounts: np.ndarray,
    ) -> tuple[bool, np.ndarray, float]:
        """HTCondor's cp_compute_consumption, cp_sufficient_assets and cp_deduct_assets, in one pass."""
        slot: Slot = self._table.slots[row]
        used = {asset: self._consume(job, slot_ad, asset, policy[asset]) for asset in slot.assets}
        available = {a: amounts[self._column[a.lower()]] for a in slot.assets}
        taken = np.full(len(self._table.assets), np.nan)
        for asset, value in used.items():
            taken[self._column[asset.lower()]] = value
        if not _sufficient(used, available):
            return False, taken, np.nan
        if not _with_requests(job, used, lambda: _requirements_hold(job, slot_ad)):
            return False, taken, np.nan
        before = self._weight(slot_ad, row)
        after_ad = copy.deepcopy(slot_ad)
        _assign_amounts(after_ad, slot.assets, [available[a] - used[a] for a in slot.assets])
        after = self._weight(after_ad, row)
        return True, taken, before - after

    @staticmethod
    def _consume(job: classad2.ClassAd, slot_ad: classad2.ClassAd, asset: str, expr: classad2.ExprTree) -> float:
        """Consumption<asset> with MY = slot, TARGET = job; a missing Request<asset> reads as 0."""
        request = f"Request{asset}"
        missing = request not in job
        if missing:
            job[request] = 0
        try:
            value = as_number(evaluated(expr, slot_ad, job))
        finally:
            if missing:
                del job[request]
        return FAILED_CONSUMPTION if value is None or value < 0 else value

    def _rank(self, job: classad2.ClassAd, slot_ad: classad2.ClassAd) -> tuple[float, float, float]:
        pre, post = (
            _rank_value(evaluated(expr, slot_ad, job), UNRANKED) if expr is not None else UNRANKED
            for expr in self._ranks
        )
        if self._ignore_job_ranks:
            return pre, IGNORED_RANK, post
        job_rank = _rank_value(evaluated(job.lookup("Rank"), job, slot_ad), 0.0) if "Rank" in job else 0.0
        return pre, job_rank, post


def _requirements_hold(job: classad2.ClassAd, slot_ad: classad2.ClassAd) -> bool:
    """Both ads' Requirements, as classad2's symmetric match evaluates them."""
    return requirements_hold(job, slot_ad) and requirements_hold(slot_ad, job)


def _sufficient(used: dict[str, float], available: dict[str, float]) -> bool:
    """HTCondor's cp_sufficient_assets: every consumption fits and is >= 0, and one is > 0."""
    if any(value < 0 or value > available[asset] for asset, value in used.items()):
        return False
    return any(value > 0 for value in used.values())


def _with_requests(job: classad2.ClassAd, used: dict[str, float], check: Callable[[], bool]) -> bool:
    """Run ``check`` with the job's existing Request<Res> replaced by the consumption values.

    HTCondor's cp_override_requested: Request attributes the job lacks are not created.
    """
    saved = {}
    for asset, value in used.items():
        name = f"Request{asset}"
        if name in job:
            saved[name] = job.lookup(name)
            job[name] = _preserve_integer(value)
    try:
        return check()
    finally:
        for name, expr in saved.items():
            job[name] = expr


def _assign_amounts(ad: classad2.ClassAd, assets: tuple[str, ...], values: list[float]) -> None:
    for asset, value in zip(assets, values):
        ad[asset] = _preserve_integer(value)


def _preserve_integer(value: float) -> int | float:
    """HTCondor's assign_preserve_integers: whole numbers stay ClassAd integers."""
    return int(value) if float(value).is_integer() else float(value)


def _rank_value(value: object, undefined: float) -> float:
    if isinstance(value, bool):
        return float(value)
    number = as_number(value)
    return undefined if number is None else number
