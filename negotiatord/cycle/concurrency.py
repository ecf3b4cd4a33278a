"""Concurrency limits: pool-wide counters jobs draw on through their ConcurrencyLimits.

Follows HTCondor's accountant: a limit ``name`` is ``<NAME>_LIMIT`` if configured, else
``CONCURRENCY_LIMIT_DEFAULT_<SCOPE>`` for a ``scope.name`` limit (scope: the text before the last
dot), else ``CONCURRENCY_LIMIT_DEFAULT``;
names are case-insensitive; running jobs (claimed slots' ConcurrencyLimits) count against them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from negotiatord.cycle.state import EPSILON
from negotiatord.pool.jobs import parse_concurrency_limits
from negotiatord.settings import Settings


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

    def blocking(self, limits: tuple[tuple[str, float], ...]) -> str | None:
        """The first limit a job with ``limits`` would exceed, or None if it fits."""
        for name, increment in limits:
            if self.in_use[name] + increment > self.limit(name) + EPSILON:
                return name
        return None

    def take(self, limits: tuple[tuple[str, float], ...]) -> None:
        for name, increment in limits:
            self.in_use[name] += increment
