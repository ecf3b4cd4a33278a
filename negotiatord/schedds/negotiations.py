"""Negotiating with every schedd of the pool: requests before the cycle, matches after it.

As HTCondor's matchmaker does, each schedd gets one connection, reused from session to session
(the schedd keeps it after ``END_NEGOTIATE``; ``Matchmaker::startNegotiateProtocol`` keeps a socket
cache), and its submitters are taken one after another on it, while different schedds are talked
to at once. A schedd that refuses, times out or closes the connection costs only its own
submitters: the failure is recorded with its cause, its connection dropped, and the other schedds
go on.

**Before the cycle** (``prefetchResourceRequestLists``): each submitter's requests are fetched in
lists of ``NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE`` until the schedd has no more, each read waiting
at most ``NEGOTIATOR_PREFETCH_REQUESTS_TIMEOUT`` and the whole round at most
``NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME``. A session that received requests ends with
``END_NEGOTIATE``, as protocol 1 requires.

**After the cycle**: each submitter with matches or refused requests gets a session of its own:
its matches in the cycle's order, each with an unspent claim id of its slot and the slot's ad as
the cycle left it before that match (HTCondor deducts a consumption-policy slot's assets match by
match, ``cp_deduct_assets``), then a rejection for each request the cycle refused. A match is
handed to the schedd when its ``PERMISSION_AND_AD`` is written; the caller hears of each just
before (``handing``), so that a crash cannot lose one the schedd may act on.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import classad2

from negotiatord.cedar.client import CommandStream, open_command
from negotiatord.cedar.commands import NEGOTIATE
from negotiatord.cedar.errors import CedarError, ProtocolError
from negotiatord.cedar.handshake import SessionCache
from negotiatord.cedar.policy import ClientSecurity
from negotiatord.classad.conversion import evaluate_string
from negotiatord.cycle.result import Match, Rejection
from negotiatord.schedds.claims import ClaimIds
from negotiatord.schedds.protocol import fetch_requests, start_session, write_end, write_offer, write_rejection
from negotiatord.schedds.requests import Request, RequestJobs
from negotiatord.schedds.submitters import Submitter
from negotiatord.settings.groups import ROOT_GROUP

@dataclass(frozen=True)
class ScheddOptions:
    negotiator_name: str
    timeout_s: float = 30.0              # NEGOTIATOR_TIMEOUT
    prefetch_timeout_s: float = 30.0     # NEGOTIATOR_PREFETCH_REQUESTS_TIMEOUT
    prefetch_max_time_s: float | None = 60.0   # NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME; None: no limit
    request_list_size: int = 200         # NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE
    max_jobs_per_request: int = 100_000  # copies one request may stand for in one cycle


@dataclass(frozen=True)
class ScheddFailure:
    """A schedd that failed this cycle, and the submitters that cost."""

    schedd: str
    address: str
    phase: str                 # "prefetch" or "hand-out"
    reason: str                # the short cause (CedarError.reason)
    detail: str
    submitters: tuple[str, ...]

    def document(self) -> dict[str, object]:
        return {"schedd": self.schedd, "address": self.address, "phase": self.phase, "reason": self.reason,
                "detail": self.detail, "submitters": list(self.submitters)}


@dataclass
class Prefetched:
    jobs: RequestJobs = field(default_factory=RequestJobs)
    failures: list[ScheddFailure] = field(default_factory=list)
    submitters: int = 0
    requests: int = 0
    duration_s: float = 0.0


@dataclass
class HandOut:
    """What became of each match of the cycle (by its index in the cycle's matches)."""

    handed: list[int] = field(default_factory=list)
    refused: dict[int, str] = field(default_factory=dict)
    rejections_sent: int = 0
    failures: list[ScheddFailure] = field(default_factory=list)
    duration_s: float = 0.0


@dataclass
class _Connection:
    stream: CommandStream
    fresh: bool               # the handshake sent NEGOTIATE: the next session must not send it again


class Schedds:
    """This negotiator's connections and sessions with the pool's schedds."""

    def __init__(self, security: ClientSecurity, options: ScheddOptions) -> None:
        self.security = security
        self.options = options
        self.sessions = SessionCache()
        self.claims = ClaimIds()
        self._connections: dict[str, _Connection] = {}

    async def _session(self, submitter: Submitter, attributes: str, timeout: float) -> CommandStream:
        """A connection to ``submitter``'s schedd with a session for it opened."""
        connection = self._connections.get(submitter.schedd_address)
        if connection is not None and connection.stream.stream.reader.at_eof():
            self.forget(submitter.schedd_address)
            connection = None
        if connection is None:
            stream = await open_command(submitter.schedd_address, NEGOTIATE, self.security, self.sessions,
                                        timeout, name=f"schedd {submitter.schedd_name}")
            connection = self._connections[submitter.schedd_address] = _Connection(stream, fresh=True)
        connection.stream.timeout = timeout
        start_session(connection.stream, submitter, attributes, self.options.negotiator_name,
                      command_sent=connection.fresh)
        connection.fresh = False
        return connection.stream

    def connections(self) -> list[dict[str, object]]:
        """The kept connections: each schedd's address and how its session is secured."""
        return [{"address": address, "method": c.stream.session.method, "user": c.stream.session.user,
                 "encrypted": c.stream.stream.crypto} for address, c in sorted(self._connections.items())]

    def forget(self, address: str) -> None:
        connection = self._connections.pop(address, None)
        if connection is not None:
            connection.stream.close()

    def close(self) -> None:
        for address in list(self._connections):
            self.forget(address)

    # -- before the cycle -----------------------------------------------------------------------

    async def prefetch(self, submitters: Sequence[Submitter], attributes: str) -> Prefetched:
        """Every submitter's requests, as the cycle's jobs; the schedds that failed, and why."""
        started = time.perf_counter()
        prefetched = Prefetched(submitters=len(submitters))
        by_schedd: dict[str, list[Submitter]] = defaultdict(list)
        for submitter in submitters:
            by_schedd[submitter.schedd_address].append(submitter)
        pending = {address: list(group) for address, group in by_schedd.items()}
        tasks = {asyncio.ensure_future(self._prefetch_schedd(group, attributes, prefetched, pending[address])): address
                 for address, group in by_schedd.items()}
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=self.options.prefetch_max_time_s)
            for task in late:
                task.cancel()
                address = tasks[task]
                self.forget(address)
                prefetched.failures.append(_failure(pending[address], "prefetch", "no answer in time",
                                                    "fetching requests took longer than NEGOTIATOR_PREFETCH_"
                                                    f"REQUESTS_MAX_TIME ({self.options.prefetch_max_time_s:g} s)"))
            await asyncio.gather(*late, return_exceptions=True)
        prefetched.duration_s = time.perf_counter() - started
        return prefetched

    async def _prefetch_schedd(self, submitters: list[Submitter], attributes: str, prefetched: Prefetched,
                               pending: list[Submitter]) -> None:
        for submitter in submitters:
            try:
                requests = await self._requests_of(submitter, attributes)
            except Exception as error:  # whatever a schedd does costs only its own submitters
                self.forget(submitter.schedd_address)
                prefetched.failures.append(_failure(pending, "prefetch", *_cause(error)))
                pending.clear()
                return
            pending.remove(submitter)
            prefetched.requests += len(requests)
            for request in requests:
                prefetched.jobs.add(submitter, request, self.options.max_jobs_per_request)

    async def _requests_of(self, submitter: Submitter, attributes: str) -> list[classad2.ClassAd]:
        if not submitter.request_lists:
            # such a schedd sends one job at a time and moves on only once it is matched or
            # rejected: its jobs cannot all be known before a cycle
            raise ProtocolError(f"schedd {submitter.schedd_name} ({submitter.schedd_address})",
                                "the schedd predates resource request lists (HTCondor 8.3.0); negotiatord "
                                "needs them", reason="schedd too old")
        stream = await self._session(submitter, attributes, self.options.prefetch_timeout_s)
        requests: list[classad2.ClassAd] = []
        seen: set[tuple[object, object]] = set()
        done = False
        while not done:
            batch, done = await fetch_requests(stream, self.options.request_list_size)
            fresh = [ad for ad in batch if (ad.get("ClusterId"), ad.get("ProcId")) not in seen]
            if batch and not fresh:
                break        # a schedd sending the same requests again has no more to send
            seen.update((ad.get("ClusterId"), ad.get("ProcId")) for ad in fresh)
            requests += fresh
        if requests:
            write_end(stream)
            await stream.drain()
        return requests

    # -- after the cycle ------------------------------------------------------------------------

    async def hand_out(self, matches: Sequence[Match], rejections: Sequence[Rejection], jobs: RequestJobs,
                       slots: Mapping[str, classad2.ClassAd], attributes: str,
                       handing: Callable[[int], None], outcome: HandOut) -> None:
        """Hand each submitter its matches and refusals, recording in ``outcome`` (the caller's, so
        that it tells what was handed whatever happens); ``handing(i)`` is called just before match
        ``i`` is written to its schedd. Matches of jobs that came from no schedd are not handed."""
        started = time.perf_counter()
        plans = _plans(matches, rejections, jobs)
        by_schedd: dict[str, list[_Plan]] = defaultdict(list)
        for plan in plans.values():
            by_schedd[plan.submitter.schedd_address].append(plan)
        await asyncio.gather(*(self._hand_out_schedd(group, matches, jobs, slots, attributes, handing, outcome)
                               for group in by_schedd.values()))
        outcome.duration_s = time.perf_counter() - started

    async def _hand_out_schedd(self, plans: list[_Plan], matches: Sequence[Match], jobs: RequestJobs,
                               slots: Mapping[str, classad2.ClassAd], attributes: str,
                               handing: Callable[[int], None], outcome: HandOut) -> None:
        offers = _Offers(slots, jobs)
        for position, plan in enumerate(plans):
            try:
                await self._hand_out_submitter(plan, matches, offers, attributes, handing, outcome)
            except Exception as error:  # whatever a schedd does costs only its own submitters
                self.forget(plan.submitter.schedd_address)
                reason, detail = _cause(error)
                failed = plans[position:]
                for later in failed:
                    for index in later.unsent(outcome):
                        outcome.refused[index] = f"schedd {later.submitter.schedd_name}: {reason}"
                outcome.failures.append(_failure([p.submitter for p in failed], "hand-out", reason, detail))
                return

    async def _hand_out_submitter(self, plan: _Plan, matches: Sequence[Match], offers: _Offers, attributes: str,
                                  handing: Callable[[int], None], outcome: HandOut) -> None:
        stream = await self._session(plan.submitter, attributes, self.options.timeout_s)
        # each offer leaves for the kernel before the next is marked handed: at any moment at most
        # one marked offer is not yet on its way to the schedd
        stream.stream.writer.transport.set_write_buffer_limits(high=0)
        for request, indices, rejection in plan.steps:
            for index in indices:
                match = matches[index]
                claim = self.claims.take(match.slot, offers.address(match.slot))
                if claim is None:
                    outcome.refused[index] = (f"no claim id left for slot {match.slot} "
                                              "(its private ad lists none unspent)")
                    continue
                offer = offers.next(match, request)
                try:
                    await stream.drain()
                except CedarError:
                    self.claims.give_back(claim)
                    raise
                handing(index)
                write_offer(stream, claim, offer)
                outcome.handed.append(index)
            if rejection is not None:
                reason = rejection if request.diagnostics < 2 else (
                    f"{rejection} |{request.autocluster}|{request.cluster}.{request.proc}|")
                write_rejection(stream, reason, request.diagnostics)
                outcome.rejections_sent += 1
        write_end(stream)
        await stream.drain()


@dataclass
class _Plan:
    """One submitter's session: per request in the order fetched, its matches and its refusal."""

    submitter: Submitter
    steps: list[tuple[Request, list[int], str | None]]

    def unsent(self, outcome: HandOut) -> list[int]:
        handed = set(outcome.handed)
        return [index for _, indices, _ in self.steps for index in indices
                if index not in handed and index not in outcome.refused]


def _plans(matches: Sequence[Match], rejections: Sequence[Rejection], jobs: RequestJobs) -> dict[str, _Plan]:
    by_request: dict[Request, list[int]] = defaultdict(list)
    refused: dict[Request, str] = {}
    for index, match in enumerate(matches):
        request = jobs.request_of.get(match.job)
        if request is not None:
            by_request[request].append(index)
    for rejection in rejections:
        request = jobs.request_of.get(rejection.job)
        if request is not None:
            refused.setdefault(request, rejection.reason)
    plans: dict[str, _Plan] = {}
    for request in dict.fromkeys([*by_request, *refused]):
        plan = plans.setdefault(request.submitter.key, _Plan(request.submitter, []))
        plan.steps.append((request, by_request.get(request, []), refused.get(request)))
    return plans


class _Offers:
    """Slot ads as offered, match by match: each offer is the slot less what earlier matches took."""

    def __init__(self, slots: Mapping[str, classad2.ClassAd], jobs: RequestJobs) -> None:
        self._slots = slots
        self._jobs = jobs
        self._taken: dict[str, dict[str, float]] = defaultdict(dict)

    def address(self, slot: str) -> str:
        ad = self._slots.get(slot)
        return (evaluate_string(ad, "MyAddress") or "") if ad is not None else ""

    def next(self, match: Match, request: Request) -> classad2.ClassAd:
        slot = self._slots[match.slot]
        offer = classad2.ClassAd({name: slot.lookup(name) for name in slot.keys()})
        taken = self._taken[match.slot]
        for asset, amount in taken.items():
            value = offer.get(asset)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                offer[asset] = type(value)(value - amount)
        for asset, amount in match.consumed.items():
            taken[asset] = taken.get(asset, 0) + amount
        offer["_condor_RESOURCE_CLUSTER"] = request.cluster
        offer["_condor_RESOURCE_PROC"] = request.proc
        record = self._jobs.records.get(match.job)
        job = record if isinstance(record, classad2.ClassAd) else record.cluster.ad if record is not None else None
        limits = evaluate_string(job, "ConcurrencyLimits") if job is not None else None
        if limits:
            offer["MatchedConcurrencyLimits"] = limits.lower()
        if match.group and match.group != ROOT_GROUP:
            offer["RemoteGroup"] = match.group
        offer["RemoteNegotiatingGroup"] = match.group or ROOT_GROUP
        offer["RemoteAutoregroup"] = False
        return offer


def _cause(error: Exception) -> tuple[str, str]:
    """The short cause and the detail of a failed session."""
    if isinstance(error, CedarError):
        return error.reason, error.detail
    return "protocol error", f"{type(error).__name__}: {error}"


def _failure(submitters: Sequence[Submitter], phase: str, reason: str, detail: str) -> ScheddFailure:
    assert submitters, "a failure costs some submitter"
    first = submitters[0]
    return ScheddFailure(first.schedd_name, first.schedd_address, phase, reason, detail,
                         tuple(s.name for s in submitters))
