"""Cycle statistics as HTCondor's Negotiator ad carries them (``LastNegotiationCycle*<n>``).

HTCondor keeps the last ``NEGOTIATION_CYCLE_STATS_LENGTH`` cycles, newest as suffix 0, in its
Negotiator ad (``Matchmaker::publishNegotiationCycleStats``). The attributes that mean the same
here keep HTCondor's names (``condor_status -negotiator`` shows ``End``, ``Duration``,
``CandidateSlots``, ``ActiveSubmitterCount``, ``NumSchedulers``, ``NumIdleJobs``, ``Matches`` and
``Rejections`` of cycle 0); ours are ``LastNegotiationCycleId``, ``...Autoclusters``,
``...PoolSize`` and one ``LastNegotiationCyclePhase<Name>Duration`` per phase of our cycle
(pull, with ``COLLECTOR_HOST``; snapshot, slot_weights, running_usage, match_lists, matchmaking,
accountant, holds, commit, publish), which do not line up with HTCondor's four numbered phases.
``Period`` is from the previous cycle's start (HTCondor's, from its end).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from negotiatord.publish.report import cycle_document
from negotiatord.service.cycles import CycleOutcome


@dataclass(frozen=True)
class CycleRecord:
    """What is kept of one finished cycle."""

    outcome: CycleOutcome
    started: float      # daemon clock, epoch seconds
    ended: float
    period: float       # since the previous cycle started; 0 for the first


@dataclass
class ServiceCounters:
    """Running counts since start-up (the /metrics counters not about ads)."""

    cycles: int = 0
    cycle_failures: int = 0
    matches_published: int = 0
    publication_failures: int = 0     # attempts at publishing a committed cycle's matches that failed
    reloads: int = 0
    reload_failures: int = 0
    pull_failures: int = 0
    matches_handed: int = 0           # PERMISSION_AND_ADs written to schedds
    matches_not_handed: int = 0       # matches taken back: their schedd failed, or no claim id was left


@dataclass
class CycleHistory:
    length: int
    records: deque[CycleRecord] = field(default_factory=deque)

    def add(self, outcome: CycleOutcome, started: float, ended: float) -> CycleRecord:
        previous = self.last
        record = CycleRecord(outcome, started, ended, started - previous.started if previous else 0.0)
        self.records.appendleft(record)
        while len(self.records) > max(self.length, 1):
            self.records.pop()
        return record

    @property
    def last(self) -> CycleRecord | None:
        return self.records[0] if self.records else None

    def resize(self, length: int) -> None:
        self.length = length
        while len(self.records) > max(length, 1):
            self.records.pop()

    def cycle_attributes(self) -> dict[str, Any]:
        """The Negotiator ad's cycle attributes, newest cycle as suffix 0."""
        ad: dict[str, Any] = {}
        for index, record in enumerate(list(self.records)[: self.length]):
            for name, value in summary(record).items():
                ad[f"LastNegotiationCycle{name}{index}"] = value
        return ad

    def last_cycle_document(self) -> dict[str, Any] | None:
        """The last cycle in full: the dry run's JSON document plus its id and times."""
        record = self.last
        if record is None:
            return None
        document = cycle_document(record.outcome.result)
        document["cycle"].update(
            id=record.outcome.cycle_id, time=record.outcome.time, started=record.started,
            ended=record.ended, duration_s=round(record.outcome.duration_s, 6),
            phases_s={name: round(s, 6) for name, s in record.outcome.phases_s.items()},
            idle_jobs=record.outcome.idle_jobs, submitters_active=record.outcome.submitters,
            candidate_slots=record.outcome.candidate_slots)
        return document


def summary(record: CycleRecord) -> dict[str, Any]:
    """One cycle's figures under HTCondor's attribute names (without the prefix and suffix)."""
    outcome, stats = record.outcome, record.outcome.result.stats
    figures = {
        "Id": outcome.cycle_id,
        "Time": int(record.started),
        "End": int(record.ended),
        "Duration": round(outcome.duration_s, 6),
        "Period": round(record.period, 3),
        "Matches": stats.matches,
        "Rejections": stats.rejections,
        "MatchRate": round(stats.matches / outcome.duration_s, 3) if outcome.duration_s > 0 else 0.0,
        "MatchRateSustained": round(stats.matches / record.period, 3) if record.period > 0 else 0.0,
        "TotalSlots": stats.slots,
        "CandidateSlots": outcome.candidate_slots,
        "NumIdleJobs": outcome.idle_jobs,
        "ActiveSubmitterCount": outcome.submitters,
        "NumSchedulers": outcome.schedds,
        "PieSpins": stats.pie_spins,
        "Autoclusters": stats.autoclusters,
        "PoolSize": stats.pool_size,
        "PairEvaluations": stats.pairs,
        "ClassAdFallbacks": stats.classad_fallbacks,
        "ClaimedSlots": stats.claimed_slots,
        "Preemptions": stats.preemptions,
        "QuotaShortfalls": stats.quota_shortfalls,
    }
    for rule, count in outcome.result.preemptions_by_rule().items():
        figures[f"Preemptions{rule.title().replace('_', '')}"] = count
    for phase, seconds in outcome.phases_s.items():
        figures[f"Phase{phase.title().replace('_', '')}Duration"] = round(seconds, 6)
    return figures
