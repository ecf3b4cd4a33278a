"""The daemon's dealings with a real pool's schedds, cycle after cycle.

With ``COLLECTOR_HOST`` set, a cycle fetches each submitter's requests from its schedd after the
collector pull, negotiates over them, and hands each submitter its matches (:mod:`negotiatord.schedds`).
This module keeps the connections and sessions from cycle to cycle, takes the claim ids of each
pull, logs each schedd that failed and which submitters it cost, and keeps the last round's
figures for ``/v1/status``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import classad2
import structlog

from negotiatord.classad.conversion import evaluate_string, satisfies
from negotiatord.cycle.result import CycleResult
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.pull import SlotClaims
from negotiatord.feed.store import AdStore, JobAds, PoolView
from negotiatord.schedds.attributes import significant_attributes
from negotiatord.schedds.negotiations import HandOut, Prefetched, ScheddFailure, ScheddOptions, Schedds
from negotiatord.schedds.submitters import NotNegotiable, submitter_from_ad, with_group_prefix
from negotiatord.settings import Settings


def _options(settings: Settings) -> ScheddOptions:
    pool = settings.service.pool
    return ScheddOptions(negotiator_name=pool.negotiator_name, job_constraint=settings.job_constraint,
                         timeout_s=pool.timeout_s, prefetch_timeout_s=pool.prefetch_timeout_s,
                         prefetch_max_time_s=pool.prefetch_max_time_s or None,
                         request_list_size=pool.request_list_size)


class PoolNegotiation:
    def __init__(self) -> None:
        self.log = structlog.get_logger("negotiatord.schedds")
        self._schedds: Schedds | None = None
        self._options: ScheddOptions | None = None
        self.attributes = ""
        self.prefetch_state: dict[str, Any] = {}
        self.hand_out_state: dict[str, Any] = {}
        self.failures: list[ScheddFailure] = []

    def schedds(self, settings: Settings) -> Schedds:
        """The schedd client for ``settings``; new sessions when the credentials or knobs changed."""
        options, security = _options(settings), settings.service.pool.security
        if self._schedds is None or options != self._options or security != self._schedds.security:
            if self._schedds is not None:
                self._schedds.close()
            self._schedds, self._options = Schedds(security, options), options
        return self._schedds

    def take_claim_ids(self, settings: Settings, claims: list[SlotClaims],
                       slot_ads: Iterable[classad2.ClassAd]) -> None:
        """The claim ids of a pull's private ads. Those of a claimed partitionable slot are its
        schedd's claim, which the startd keeps listing while the schedd carves dynamic slots from
        it: each cycle may hand it out again, as HTCondor's negotiator reads the ids afresh every
        cycle."""
        again = {(evaluate_string(ad, "Name") or "", evaluate_string(ad, "MyAddress") or "") for ad in slot_ads
                 if ad.get("PartitionableSlot") is True and evaluate_string(ad, "State") == "Claimed"}
        self.schedds(settings).claims.refresh(((slot.name, slot.address, slot.ids) for slot in claims), again)

    async def prefetch(self, store: AdStore, settings: Settings) -> Prefetched:
        """Every pulled submitter's requests."""
        submitters, problems = [], []
        constraint = settings.submitter_constraint
        prefixed = settings.service.pool.has_user_map("GROUP_PREFIX")
        for key in sorted(store.table(AdKind.SUBMITTER).view()):
            ad = store.table(AdKind.SUBMITTER).get(key)
            if ad is None or (constraint is not None and not satisfies(ad, constraint)):
                continue
            try:
                submitters.append(submitter_from_ad(with_group_prefix(ad) if prefixed else ad))
            except NotNegotiable as error:
                problems.append(str(error))
        self.attributes = significant_attributes(store.view().slots.values(), settings)
        prefetched = await self.schedds(settings).prefetch(submitters, self.attributes)
        prefetched.jobs.problems[:0] = problems
        self.failures = list(prefetched.failures)
        for failure in prefetched.failures:
            self._log_failure(failure)
        self.prefetch_state = {"submitters": prefetched.submitters, "requests": prefetched.requests,
                               "jobs": len(prefetched.jobs.records), "duration_s": round(prefetched.duration_s, 4),
                               "problems": prefetched.jobs.problems[:5]}
        return prefetched

    async def hand_out(self, result: CycleResult, prefetched: Prefetched, slots: Mapping[str, classad2.ClassAd],
                       settings: Settings, handing: Callable[[int], None]) -> HandOut:
        """Hand the cycle's matches and refusals to the schedds. Whatever goes wrong, the outcome
        says which matches were handed: those not handed are refused."""
        outcome = HandOut()
        try:
            await self.schedds(settings).hand_out(result.matches, result.rejections, prefetched.jobs, slots,
                                                  self.attributes, handing, outcome)
        finally:
            handed = set(outcome.handed)
            for index, match in enumerate(result.matches):
                if match.job in prefetched.jobs.request_of and index not in handed:
                    outcome.refused.setdefault(index, "not handed to its schedd")
        self.failures += outcome.failures
        for failure in outcome.failures:
            self._log_failure(failure)
        self.hand_out_state = {"handed": len(outcome.handed), "refused": len(outcome.refused),
                               "rejections": outcome.rejections_sent, "duration_s": round(outcome.duration_s, 4)}
        return outcome

    def _log_failure(self, failure: ScheddFailure) -> None:
        self.log.error("schedd failed; its submitters sit this cycle out", schedd=failure.schedd,
                       address=failure.address, phase=failure.phase, reason=failure.reason, detail=failure.detail,
                       submitters=list(failure.submitters))

    def status(self) -> dict[str, Any]:
        return {"prefetch": self.prefetch_state, "hand_out": self.hand_out_state,
                "failed_schedds": [failure.document() for failure in self.failures],
                "connections": self._schedds.connections() if self._schedds is not None else [],
                "significant_attributes": self.attributes}

    def close(self) -> None:
        if self._schedds is not None:
            self._schedds.close()


def with_request_jobs(view: PoolView, prefetched: Prefetched) -> PoolView:
    """``view`` with the prefetched requests' jobs beside the jobs filed in the store."""
    return replace(view, jobs=JobAds({**view.jobs.by_key, **prefetched.jobs.records}))
