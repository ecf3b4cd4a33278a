"""Concurrency limits: pool-wide counters jobs draw on through their ConcurrencyLimits.

Follows HTCondor's accountant: a limit ``name`` is ``<NAME>_LIMIT`` if configured, else
``CONCURRENCY_LIMIT_DEFAULT_<SCOPE>`` for a ``scope.name`` limit (scope: the text before the last
dot), else ``CONCURRENCY_LIMIT_DEFAULT``;
names are case-insensitive; running jobs (the ConcurrencyLimits and PreemptingConcurrencyLimits
slot ads show) count against them.

A job's ConcurrencyLimits that is no string on its own (``strcat("net_", TARGET.Network)``) is
evaluated against each candidate slot, as matchmaker.cpp's ``matchmakingAlgorithm`` does when the
job ad's ``LookupString`` fails (:class:`LimitsPerSlot`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from negotiatord.classad.conversion import evaluate_string, evaluated
from negotiatord.cycle.state import EPSILON
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import parse_concurrency_limits
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

Limits = tuple[tuple[str, float], ...]


class ConcurrencyLedger:
    def __init__(self, settings: Settings, running: Iterable[str]) -> None:
        self._settings = settings
        self.in_use: dict[str, float] = defaultdict(float)
        for text in running:
            self.take(parse_concurrency_limits(text))

    def limit(self, name: str) -> float:
        configured = self._settings.concurrency_limits.get(name)
        if configured is not None:
            return configured
        scope, dot, _ = name.rpartition(".")
        if dot and scope in self._settings.concurrency_scope_defaults:
            return self._settings.concurrency_scope_defaults[scope]
        return self._settings.concurrency_limit_default

    def blocking(self, limits: Limits) -> str | None:
        """The first limit a job with ``limits`` would exceed, or None if it fits."""
        for name, increment in limits:
            if self.in_use[name] + increment > self.limit(name) + EPSILON:
                return name
        return None

    def room_for(self, limits: Limits, jobs: int, drawn: Mapping[str, float]) -> int:
        """How many of ``jobs`` jobs that each draw ``limits`` could start one after another, with
        ``drawn`` of each limit already counted on by other requests.

        Job k starts if every entry of its limits fits (as :meth:`blocking` checks) on top of
        the k jobs before it, which hold the sum of their entries of each name."""
        per_job: dict[str, float] = defaultdict(float)
        largest: dict[str, float] = defaultdict(float)
        for name, increment in limits:
            per_job[name] += increment
            largest[name] = max(largest[name], increment)
        fitting = jobs
        for name, increment in per_job.items():
            left = self.limit(name) + EPSILON - self.in_use[name] - drawn.get(name, 0.0) - largest[name]
            if left < 0:
                return 0
            jobs_left = left / increment     # infinite for an unlimited limit or a tiny increment
            if math.isfinite(jobs_left):
                fitting = min(fitting, 1 + math.floor(jobs_left))
        return fitting

    def take(self, limits: Limits) -> None:
        for name, increment in limits:
            self.in_use[name] += increment


class Headroom:
    """What the concurrency limits leave for one estimate of demand. Each request counted draws on
    it, so requests that share a limit never count the same headroom twice."""

    def __init__(self, ledger: ConcurrencyLedger) -> None:
        self._ledger = ledger
        self._drawn: dict[str, float] = defaultdict(float)

    def draw(self, limits: Limits, jobs: int) -> int:
        """How many of ``jobs`` jobs with ``limits`` the headroom left lets start; those are drawn."""
        fitting = self._ledger.room_for(limits, jobs, self._drawn)
        for name, increment in limits:
            self._drawn[name] += fitting * increment
        return fitting


class LimitsPerSlot:
    """The ConcurrencyLimits of jobs whose limits depend on the slot, evaluated per candidate.

    An autocluster's jobs share their ConcurrencyLimits (it is one of the attributes that form
    autoclusters), so the question is asked per autocluster: its limits depend on the slot when
    the job ad has ConcurrencyLimits and it is no string on its own (HTCondor's
    ``evaluate_limits_with_match``). On a slot, they are what the expression gives with the job as
    MY and the slot as TARGET; none if that is no string either (``EvalString`` fails, so
    HTCondor checks nothing and records no MatchedConcurrencyLimits)."""

    def __init__(self, table: SlotTable) -> None:
        self._table = table
        self._per_slot: dict[int, bool] = {}
        self._on: dict[tuple[int, int], Limits] = {}
        self.passed_over: dict[int, str] = {}     # autocluster -> the last limit a candidate was passed over for

    def per_slot(self, autocluster: Autocluster) -> bool:
        answer = self._per_slot.get(autocluster.id)
        if answer is None:
            ad = autocluster.ad
            answer = self._per_slot[autocluster.id] = (
                "ConcurrencyLimits" in ad and evaluate_string(ad, "ConcurrencyLimits") is None)
        return answer

    def on(self, autocluster: Autocluster, row: int) -> Limits:
        """The autocluster's limits on the slot at ``row``."""
        key = (autocluster.id, row)
        found = self._on.get(key)
        if found is None:
            ad = autocluster.ad
            value = evaluated(ad.lookup("ConcurrencyLimits"), ad, self._table.slots[row].ad)
            found = self._on[key] = parse_concurrency_limits(value) if isinstance(value, str) else ()
        return found
