"""Prometheus metrics at ``/metrics`` (prometheus_client's text exposition).

Gauges and counters are read at scrape time from the objects that own the figures (the cycle
history, the counters, the ad store), so there is one source of truth and nothing to keep in step;
only the cycle-duration histogram is observed as cycles finish.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from negotiatord.feed.api import FeedTotals
from negotiatord.feed.store import AdStore
from negotiatord.service.stats import CycleHistory, ServiceCounters

# Cycle durations from milliseconds (a small pool) to HTCondor-scale minutes.
_DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_PREFIX = "negotiatord_"


class _Figures(Collector):
    def __init__(self, history: CycleHistory, counters: ServiceCounters, store: AdStore,
                 totals: FeedTotals, cycle_running: Callable[[], bool],
                 publication_pending: Callable[[], bool]) -> None:
        self.history = history
        self.counters = counters
        self.store = store
        self.totals = totals
        self.cycle_running = cycle_running
        self.publication_pending = publication_pending

    def collect(self) -> Iterator[Metric]:
        c = self.counters
        for name, value, text in (
            ("cycles", c.cycles, "Negotiation cycles committed"),
            ("cycle_failures", c.cycle_failures, "Negotiation cycles that failed (nothing committed)"),
            ("matches_published", c.matches_published, "Matches published"),
            ("publication_failures", c.publication_failures,
             "Attempts at publishing a committed cycle's matches that failed (each is retried)"),
            ("config_reloads", c.reloads, "Successful config reloads (SIGHUP)"),
            ("config_reload_failures", c.reload_failures, "Config reloads refused; the old config stayed"),
            ("collector_pull_failures", c.pull_failures, "Collector queries that failed (COLLECTOR_HOST)"),
            ("matches_handed", c.matches_handed, "Matches handed to schedds (PERMISSION_AND_AD written)"),
            ("matches_not_handed", c.matches_not_handed,
             "Matches taken back because their schedd failed or their slot had no claim id left"),
        ):
            yield CounterMetricFamily(_PREFIX + name, text, value=value)
        yield GaugeMetricFamily(_PREFIX + "cycle_in_progress", "1 while a negotiation cycle runs",
                                value=1 if self.cycle_running() else 0)
        yield GaugeMetricFamily(_PREFIX + "publication_pending", "1 while a committed cycle's matches "
                                "wait for a publication retry (no new cycle starts meanwhile)",
                                value=1 if self.publication_pending() else 0)
        yield from self._ads()
        yield from self._last_cycle()

    def _ads(self) -> Iterator[Metric]:
        filed = GaugeMetricFamily(_PREFIX + "ads", "Ads filed, by kind", labels=["kind"])
        held = GaugeMetricFamily(_PREFIX + "ads_held", "Matched jobs and slots held until re-advertised",
                                 labels=["kind"])
        for kind, count in self.store.counts().items():
            filed.add_metric([kind], count)
        for kind, count in self.store.held().items():
            held.add_metric([kind], count)
        yield filed
        yield held
        for name, counter, text in (
            ("ads_filed", self.totals.filed, "Ad updates filed, by kind"),
            ("ads_refused", self.totals.refused, "Ads refused (malformed or unkeyed), by kind"),
            ("ads_invalidated", self.totals.invalidated, "Ads removed by invalidation, by kind"),
            ("ads_expired", self.totals.expired, "Ads expired (ClassAdLifetime / CLASSAD_LIFETIME), by kind"),
        ):
            family = CounterMetricFamily(_PREFIX + name, text, labels=["kind"])
            for kind in self.store.counts():
                family.add_metric([kind], counter[kind])
            yield family

    def _last_cycle(self) -> Iterator[Metric]:
        record = self.history.last
        if record is None:
            return
        stats, outcome = record.outcome.result.stats, record.outcome
        for name, value, text in (
            ("id", outcome.cycle_id, "Id of the last committed cycle"),
            ("timestamp_seconds", record.started, "When the last cycle started (daemon clock)"),
            ("duration_seconds", outcome.duration_s, "Duration of the last cycle"),
            ("matches", stats.matches, "Matches made by the last cycle"),
            ("rejections", stats.rejections, "Rejections in the last cycle"),
            ("slots", stats.slots, "Slots in the last cycle: each slot ad a startd advertised (partitionable, "
             "dynamic or static) once; the claimed dynamic slots standing in for held matches are not slots"),
            ("candidate_slots", outcome.candidate_slots, "Unclaimed slots offered in the last cycle"),
            ("idle_jobs", outcome.idle_jobs, "Idle jobs in the last cycle"),
            ("active_submitters", outcome.submitters, "Submitters with idle jobs in the last cycle"),
            ("autoclusters", stats.autoclusters, "Autoclusters in the last cycle"),
            ("pie_spins", stats.pie_spins, "Pie spins in the last cycle"),
            ("pool_size", stats.pool_size, "Pool size (sum of SlotWeight) in the last cycle"),
            ("pairs", stats.pairs, "Job-slot pairs assessed by the last cycle"),
            ("classad_fallbacks", stats.classad_fallbacks,
             "Expression evaluations the fast path left to classad2 in the last cycle"),
            ("claimed_slots", stats.claimed_slots, "Claimed slots considered for preemption in the last cycle"),
            ("quota_shortfalls", stats.quota_shortfalls,
             "Due quota enforcements the last cycle's preemptions could not (fully) carry out"),
        ):
            yield GaugeMetricFamily(f"{_PREFIX}last_cycle_{name}", text, value=value)
        preemptions = GaugeMetricFamily(_PREFIX + "last_cycle_preemptions", "Preemptions the last cycle "
                                        "decided, by the rule that allowed them", labels=["rule"])
        for rule, count in record.outcome.result.preemptions_by_rule().items():
            preemptions.add_metric([rule], count)
        yield preemptions
        phases = GaugeMetricFamily(_PREFIX + "last_cycle_phase_seconds", "Duration of each phase of the "
                                   "last cycle", labels=["phase"])
        for phase, seconds in outcome.phases_s.items():
            phases.add_metric([phase], seconds)
        yield phases


class ServiceMetrics:
    """The daemon's registry (not prometheus_client's global one: tests run several daemons)."""

    def __init__(self, history: CycleHistory, counters: ServiceCounters, store: AdStore,
                 totals: FeedTotals, cycle_running: Callable[[], bool],
                 publication_pending: Callable[[], bool]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_Figures(history, counters, store, totals, cycle_running, publication_pending))
        self.cycle_duration = Histogram(_PREFIX + "cycle_duration_seconds", "Negotiation cycle durations",
                                        buckets=_DURATION_BUCKETS, registry=self.registry)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
