"""The daemon: wires feed, cycles, match log, accountant, HTTP and systemd, and runs them.

One asyncio event loop serves HTTP and HTCondor's commands (:mod:`~.condor_commands` on the
command port, :mod:`~.command_port`), files ads, expires them and schedules cycles; each cycle runs
on its own worker thread (:mod:`~.cycles`) so ingestion and queries stay responsive while it
negotiates (``NEGOTIATORD_CYCLE_WORKER = fork``: the thread hands the negotiation to a child
process forked for it, so that parsing and negotiating do not share the GIL). Started by
``condor_master``, it also sends the master its keep-alives (:mod:`~.master`).

Signals, as DaemonCore takes them: SIGHUP re-reads the config (a broken one is reported and the old
one stays in force); SIGTERM (a graceful stop), SIGQUIT (a fast one) and SIGINT stop the daemon,
abandoning a cycle that has not begun to commit. HTCondor's negotiator stops the same way on
either (``main_shutdown_graceful`` and ``main_shutdown_fast`` in its ``main.cpp`` both exit at
once); its cycle, which runs on its one thread, ends first, as negotiatord's commit does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable, Mapping

import structlog
from aiohttp import web

from negotiatord import __version__
from negotiatord.accountant import AccountantStore
from negotiatord.accountant.quota_timers import QuotaTimer, timer_document
from negotiatord.ads import AdBatch
from negotiatord.cedar.inherit import Inheritance
from negotiatord.cedar.parent import ParentDaemon
from negotiatord.cedar.server import CommandServer
from negotiatord.classad.user_maps import UserMapError, install_user_maps
from negotiatord.cycle.quota_enforcement import PROBLEM_PREFIX
from negotiatord.feed.api import FeedApi, FeedTotals
from negotiatord.feed.intake import take_in
from negotiatord.feed.parsing import FairParser
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.pull import CollectorQueries, PullError
from negotiatord.feed.store import AdStore, Source
from negotiatord.publish.holds import RestoredHolds, file_holds
from negotiatord.publish.matchlog import MatchLog, Retention
from negotiatord.publish.preempting import BeingPreempted
from negotiatord.publish.report import cycle_figures
from negotiatord.runtime import CycleProcessFailed, HeapKeeper, load_fast_path
from negotiatord.schedds.negotiations import Prefetched
from negotiatord.service.accounting import accountant_document
from negotiatord.service.advertising import Advertiser
from negotiatord.service.collector_ads import DaemonIdentity, accounting_ads, negotiator_ad
from negotiatord.service.command_port import CommandPort
from negotiatord.service.condor_commands import NegotiatorCommands
from negotiatord.service.connections import AcceptFailures, ConnectionLimit, raise_file_limit
from negotiatord.service.cycles import CycleAbandoned, CycleRunner, CycleTiming, Negotiated
from negotiatord.service.high_availability import ReplicaKeeper
from negotiatord.service.http import build_app
from negotiatord.service.master import UnderMaster
from negotiatord.service.metrics import ServiceMetrics
from negotiatord.service.paths import StatePaths
from negotiatord.service.pool_negotiation import PoolNegotiation, with_request_jobs
from negotiatord.service.readers import ReadGate
from negotiatord.service.state_check import check_state
from negotiatord.service.state_dir import StateDirLock, keep_private, open_to_others
from negotiatord.service.stats import CycleHistory, ServiceCounters, summary
from negotiatord.service.systemd import SystemdNotifier
from negotiatord.service.token import TokenError, load_token
from negotiatord.service.waiting import woken
from negotiatord.settings import ConfigError, Settings, load_settings
from negotiatord.settings.model import ServiceSettings

T = TypeVar("T")

# How often expired ads are swept (each sweep only looks at expired ads) and the heap is frozen.
EXPIRY_SWEEP_S = 1.0
# Knobs a reload cannot change: the socket, TLS and the databases are set up once. By
# ServiceSettings field, the config knob a reload names to the administrator.
RESTART_ONLY = {"http_address": "NEGOTIATORD_HTTP_ADDRESS", "http_port": "NEGOTIATORD_HTTP_PORT",
                "tls_certificate": "NEGOTIATORD_TLS_CERTIFICATE", "tls_key": "NEGOTIATORD_TLS_KEY",
                "state_dir": "NEGOTIATORD_STATE_DIR", "accountant_db": "NEGOTIATORD_ACCOUNTANT_DB",
                "token_file": "NEGOTIATORD_TOKEN_FILE", "max_body_bytes": "NEGOTIATORD_MAX_BODY_BYTES",
                "header_timeout": "NEGOTIATORD_HEADER_TIMEOUT"}
_SHOWN_PROBLEMS = 5
CYCLE_THREAD = "negotiation-cycle"
# A publication that failed after its cycle's commit is retried this long after the failure, each
# next attempt twice as late as the one before, and never more than PUBLISH_RETRY_MAX_S apart.
PUBLISH_RETRY_FIRST_S = 1.0
PUBLISH_RETRY_MAX_S = 60.0
# How long a stopping daemon waits for the collector to take its invalidations.
INVALIDATION_TIMEOUT_S = 5.0


class DaemonClock:
    """The daemon's wall clock: real time, or real time shifted to start at a given epoch.

    ``negotiatord run --now EPOCH`` starts the clock at EPOCH and lets it run at the real rate. It
    is for replaying captured ads and for tests: glidein START expressions compare ``time()`` with
    the glidein's own end of life, so ads captured in the past only match at a time near their
    capture. Every cycle's ``time()``, the accountant's decay and the reported times follow this
    clock; ad lifetimes and cycle spacing use the monotonic clock and are unaffected.
    """

    def __init__(self, start_at: float | None = None) -> None:
        self.offset = 0.0 if start_at is None else start_at - time.time()

    def now(self) -> float:
        return time.time() + self.offset

    def step(self, last_offset: float) -> tuple[float, float]:
        """How far the wall clock moved against the monotonic clock since the offset between them
        was ``last_offset``, and that offset now (for the next call): a step of the system clock
        (an administrator, an NTP step), which every time the daemon stamps follows."""
        offset = time.time() - time.monotonic()
        return offset - last_offset, offset


@dataclass
class PendingPublication:
    """A committed cycle whose matches are staged but not yet published.

    No new cycle starts while one is pending: its matches are charged and held, and cycles that
    could not be published either would only pile up charges for matches nobody sees.
    """

    cycle_id: int
    matches: int
    retention: Retention
    error: str | None = None  # why the last attempt failed
    attempts: int = 0         # failed attempts so far
    retry_at: float = 0.0     # monotonic

    def failed(self, error: str | None) -> None:
        self.error = error
        self.attempts += 1
        self.retry_at = time.monotonic() + self.backoff

    @property
    def backoff(self) -> float:
        return min(PUBLISH_RETRY_FIRST_S * 2 ** (self.attempts - 1), PUBLISH_RETRY_MAX_S)

    def document(self) -> dict[str, Any]:
        return {"cycle": self.cycle_id, "matches": self.matches, "attempts": self.attempts,
                "error": self.error, "next_retry_in_s": round(max(0.0, self.retry_at - time.monotonic()), 3)}


class Daemon:
    def __init__(self, config: Path, settings: Settings, clock: DaemonClock,
                 preload: dict[AdKind, AdBatch] | None = None, accept_state_mismatch: bool = False, *,
                 inherited: Inheritance | None = None, command_port: int | None = None,
                 local_name: str | None = None) -> None:
        """Opens the state (StateMismatch, AccountantStoreError, MatchLogError, TokenError if it
        cannot be used); ``accept_state_mismatch``: see :mod:`~.state_check`. ``inherited``: what
        condor_master handed down, if it started the daemon; ``command_port``: ``-p``."""
        self.config = config
        self.settings = settings
        self.clock = clock
        self.preload = preload or {}
        self.inherited = inherited
        self.command_port_override = command_port
        self.local_name = local_name
        self.log = structlog.get_logger("negotiatord.daemon")
        self.paths = StatePaths.resolve(settings.service)
        # the TLS files are read now, so that a missing one stops the start before any work
        self.tls = tls_context(settings.service) if settings.service.tls_certificate is not None else None
        install_user_maps(settings.service.pool.user_maps)
        self.paths.make_state_dir()
        self.state_lock = StateDirLock.take(self.paths.state_dir)
        with contextlib.ExitStack() as opened:     # what is open so far, closed if the rest fails
            opened.callback(self.state_lock.release)
            self._keep_private()
            self.token = load_token(self.paths.token_file, create=True)
            self.accountant = AccountantStore(self.paths.accountant_db)
            opened.callback(self.accountant.close)
            self.matchlog = MatchLog(self.paths.match_log)
            opened.callback(self.matchlog.close)
            # under HAD, the previous leader's replica first: then its state is checked like any other
            self.replica = ReplicaKeeper(settings.service.replica_file)
            self.replica.adopt(self.accountant, self.matchlog, clock.now())
            accepted = check_state(self.accountant, self.matchlog, accept_state_mismatch, clock.now())
            self.quota_timers: Mapping[str, QuotaTimer] = self.accountant.quota_timers()   # as of the last commit
            opened.pop_all()
        for mismatch in accepted:
            self.log.warning("state mismatch accepted; cycle ids and sequence numbers go on after the highest "
                             "either database holds", mismatch=mismatch)
        self._last_cycle_time = -math.inf
        self.runner = CycleRunner(self.accountant, self.matchlog)
        self.pool = PoolNegotiation()
        self.collector = CollectorQueries(config)
        self.advertiser = Advertiser()
        self._advertise_now = asyncio.Event()      # the ads are due now (a cycle ended, a reload)
        self._accounting_due = False               # ... the Accounting ads too (a cycle ended)
        self._ad_sequence = 0
        self.store = AdStore()
        self.totals = FeedTotals()
        self.counters = ServiceCounters()
        self.heap = HeapKeeper()
        self.history = CycleHistory(settings.service.cycle_stats_length)
        self.metrics = ServiceMetrics(self.history, self.counters, self.store, self.totals,
                                      lambda: self.cycle_running, lambda: self.publication is not None)
        self.freeing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ad-freeing")
        self.parsing = FairParser()
        self.reads = ReadGate()
        service = settings.service
        self.connections = ConnectionLimit(
            lambda: (self.settings.service.max_connections, self.settings.service.max_connections_per_client),
            raise_file_limit(service.max_connections))
        self.feed_api = FeedApi(self.store, self.totals, time.monotonic,
                                lambda: self.settings.service.classad_lifetime, self.parsing, self.freeing)
        self.notifier = SystemdNotifier()
        self.started = clock.now()
        self.cycle_running = False
        self.last_start: float | None = None     # monotonic
        self.last_end: float | None = None
        self.rescheduled = False
        self.last_seq = 0
        self.publication: PendingPublication | None = None
        self.restored = RestoredHolds()   # holds of the previous run, for ads not filed yet
        self.preempting = BeingPreempted()   # quota victims named by committed cycles, on their way out
        self.reload_state: dict[str, Any] = {"ok": True, "time": None, "error": None}
        self.pull_state: dict[str, Any] = {"time": None, "error": None, "reason": None, "problems": 0}
        self.stopping = asyncio.Event()
        self.new_matches = asyncio.Event()
        self._poke = asyncio.Event()
        self._reloading = asyncio.Lock()
        self._url = ""
        self.commands = CommandServer(settings.service.command_port.security)
        NegotiatorCommands(self).register(self.commands)
        self.command_port = CommandPort(self.commands)
        self.master: UnderMaster | None = None

    # -- life cycle -----------------------------------------------------------------------------

    async def serve(self) -> None:
        """Run until SIGTERM/SIGINT; raises OSError if the address cannot be bound."""
        self._recover_hand_outs()
        published, dropped = self.matchlog.recover(self.accountant.last_cycle_id())
        if published or dropped:
            self.log.warning("finished publishing after a crash", published=published, dropped=dropped,
                             last_committed_cycle=self.accountant.last_cycle_id())
        self.last_seq = self.matchlog.bounds()[1]
        self.restored = RestoredHolds.from_log(self.matchlog.held_matches())
        self.preempting = BeingPreempted.from_log(self.matchlog.quota_preemptions())
        self._preload()
        await self._restore_holds()
        started = time.perf_counter()
        await asyncio.to_thread(load_fast_path, self.settings)
        self.log.info("fast path loaded", seconds=round(time.perf_counter() - started, 3))
        service = self.settings.service
        # aiohttp closes a connection whose handler has waited this long for a request's headers
        # (its keep-alive timeout: from the connection's start, and from each answer on)
        runner = web.AppRunner(build_app(self), access_log=None, handle_signals=False,
                               keepalive_timeout=service.header_timeout)
        await runner.setup()
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(AcceptFailures().handle)
        assert runner.server is not None
        server = await loop.create_server(
            self.connections.factory(runner.server), service.http_address, service.http_port, ssl=self.tls,
            reuse_address=True, backlog=128, ssl_handshake_timeout=service.header_timeout if self.tls else None)
        self._url = _url(server.sockets[0].getsockname(), service)
        await self.command_port.open(service.command_port, self.inherited, self.command_port_override)
        try:
            self.command_port.write_address_file(service.command_port.address_file)
        except OSError as error:
            self.log.warning("cannot write the address file", file=str(service.command_port.address_file),
                             error=error.strerror or str(error))
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.reload()))
        for stop in (signal.SIGTERM, signal.SIGQUIT, signal.SIGINT):
            loop.add_signal_handler(stop, self.stop)
        if self.inherited is not None:
            self.master = UnderMaster(ParentDaemon(self.inherited, service.pool.security),
                                      lambda: self.settings.service.command_port, self.stop)
            self.master.start()
        tasks = [asyncio.ensure_future(self._cycles()), asyncio.ensure_future(self._sweep_expired()),
                 asyncio.ensure_future(self._advertise())]
        if self.notifier.watchdog_interval:
            tasks.append(asyncio.ensure_future(self._watchdog(self.notifier.watchdog_interval)))
        self.log.info("negotiatord ready", pid=os.getpid(), url=self._url, command_address=self.command_port.address,
                      config=str(self.config), state_dir=str(self.paths.state_dir),
                      token_file=str(self.paths.token_file), clock_offset_s=round(self.clock.offset, 3),
                      collector=service.collector_host,
                      **({"parent": self.inherited.parent_address, "local_name": self.local_name}
                         if self.inherited is not None else {}))
        self.notifier.ready(f"serving {self._url}")
        try:
            await self.stopping.wait()
        finally:
            self.notifier.stopping()
            self.log.info("stopping", cycle_in_flight=self.cycle_running)
            if self.publication is not None:
                self.log.warning("stopping with committed matches unpublished; the next start publishes them",
                                 cycle=self.publication.cycle_id, matches=self.publication.matches)
            await asyncio.to_thread(self.runner.abandon)
            self.new_matches.set()  # wakes match streams, which see `stopping` and end
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.master is not None:
                await self.master.close()
            await self.command_port.close()
            server.close()
            await runner.cleanup()
            self.parsing.close()
            self.freeing.shutdown(wait=False, cancel_futures=True)
            self.reads.shutdown()
            self.pool.close()
            await self._take_ads_back()
            self.advertiser.close()
            await self.collector.close()
            self.close()
            self.notifier.close()
            self.heap.release()
            self.log.info("stopped")

    def stop(self) -> None:
        self.stopping.set()
        self._poke.set()

    def close(self) -> None:
        """Close the databases and let go of the state directory (serve does it as it stops)."""
        self.accountant.close()
        self.matchlog.close()
        self.state_lock.release()

    def _keep_private(self) -> None:
        """The databases 0600, whatever the umask (:func:`~.state_dir.keep_private`)."""
        if open_to_others(self.paths.state_dir):
            self.log.warning("the state directory is open to other users; its databases and token are kept "
                             "private, but consider chmod 700", state_dir=str(self.paths.state_dir))
        for path in keep_private((self.paths.accountant_db, self.paths.match_log)):
            self.log.warning("made private: the file was readable by other users", file=str(path))

    def _preload(self) -> None:
        for kind, batch in self.preload.items():
            intake = take_in(kind, batch, f"preloaded {kind.value}")
            filed = self.store.update(kind, intake.accepted, time.monotonic(),
                                      self.settings.service.classad_lifetime, Source.PRELOAD)
            self.totals.filed[kind.value] += filed
            self.totals.refused[kind.value] += len(intake.problems)
            for problem in intake.problems:
                self.log.error("preloaded ad refused", problem=str(problem))
            self.log.info("ads preloaded", kind=kind.value, filed=filed, refused=len(intake.problems))
        self.preload = {}

    # -- cycles -----------------------------------------------------------------------------------

    def reschedule(self) -> dict[str, Any]:
        """condor_reschedule: the next cycle is due now (still subject to the cycle gates)."""
        self.rescheduled = True
        self._poke.set()
        timing = CycleTiming.from_settings(self.settings)
        start = timing.next_start(self.last_start, self.last_end, True)
        return {"rescheduled": True, "cycle_running": self.cycle_running,
                "next_cycle_in_s": round(max(0.0, start - time.monotonic()), 3)}

    async def _cycles(self) -> None:
        while not self.stopping.is_set():
            if self.publication is not None:
                due = self.publication.retry_at
            else:
                timing = CycleTiming.from_settings(self.settings)
                due = timing.next_start(self.last_start, self.last_end, self.rescheduled)
            wait = due - time.monotonic()
            if wait > 0:
                self._poke.clear()
                await woken(self._poke, wait)
                continue
            if self.publication is not None:
                await self._retry_publication(self.publication)
            else:
                await self._one_cycle()

    async def _retry_publication(self, pending: PendingPublication) -> None:
        try:
            last_seq = await asyncio.to_thread(self.runner.publish, pending.cycle_id, pending.retention)
        except Exception as error:  # the storage is still failing; try again later
            pending.failed(f"{type(error).__name__}: {error}")
            self._publication_failed(pending)
            return
        self.publication = None
        self.log.info("matches published", cycle=pending.cycle_id, matches=pending.matches,
                      attempts=pending.attempts + 1)
        self._published(pending.cycle_id, pending.matches, last_seq)

    def _publication_failed(self, pending: PendingPublication) -> None:
        self.counters.publication_failures += 1
        self.log.warning("publishing the matches failed; the cycle is committed and its publication is retried",
                         cycle=pending.cycle_id, matches=pending.matches, attempt=pending.attempts,
                         error=pending.error, retry_in_s=round(pending.retry_at - time.monotonic(), 3))

    async def _one_cycle(self) -> None:
        self.rescheduled = False  # as HTCondor resets GotRescheduleCmd when a cycle starts
        self.last_start = time.monotonic()
        started = self.clock.now()
        self.cycle_running = True
        view = None
        pulled_s = None
        try:
            settings = self.settings
            await asyncio.to_thread(self._recover_hand_outs)
            prefetched = None
            if settings.service.collector_host:
                mark = time.perf_counter()
                try:
                    self.runner.phase = "pull"
                    if await self._pull(settings):
                        self.runner.phase = "prefetch"
                        prefetched = await self.pool.prefetch(self.store, settings)
                finally:
                    self.runner.phase = "idle"
                pulled_s = time.perf_counter() - mark
            self._expire()
            await self._restore_holds()
            now = int(self.clock.now())
            view = self.preempting.apply(self.store.view(), settings, now)
            if prefetched is not None:
                view = with_request_jobs(view, prefetched)
            retention = self._retention(settings, now)
            to_hand = frozenset(prefetched.jobs.request_of) if prefetched is not None else frozenset()
            negotiated = await _in_daemon_thread(self.runner.negotiate, view, settings, now, to_hand)
            refused: dict[int, str] = {}
            if prefetched is not None:
                refused = await self._hand_out(negotiated, prefetched, settings)
            outcome = await _in_daemon_thread(self.runner.commit, negotiated, settings, retention, refused)
        except CycleAbandoned:
            return
        except CycleProcessFailed as error:   # a crash there, in a native library, ends only that cycle
            self.counters.cycle_failures += 1
            self.log.error("cycle process failed; nothing was committed", pid=error.pid, reason=error.reason)
            return
        except Exception as error:  # a failed cycle is reported; the next one may succeed
            self.counters.cycle_failures += 1
            self.log.error("cycle failed; nothing was committed", error=f"{type(error).__name__}: {error}")
            return
        finally:
            self.cycle_running = False
            self.last_end = time.monotonic()
            if view is not None:  # it may hold the last reference to ads replaced meanwhile
                self.feed_api.bury(view.slots, view.jobs)
                view = None
        if pulled_s is not None:
            outcome = outcome.after("pull", pulled_s)
        await file_holds(self.store, outcome.holds)
        outcome.holds.clear()
        self.preempting.add(outcome.time, outcome.result.preemptions)
        self._note_quota_timers(outcome.quota_timers, now)
        self.history.add(outcome, started, self.clock.now())
        self._accounting_due = True
        self._advertise_now.set()
        self.counters.cycles += 1
        self.metrics.cycle_duration.observe(outcome.duration_s)
        matches = len(outcome.result.matches)
        if outcome.last_seq is None:
            self.publication = PendingPublication(outcome.cycle_id, matches, retention)
            self.publication.failed(outcome.publish_error)
            self._publication_failed(self.publication)
        else:
            self._published(outcome.cycle_id, matches, outcome.last_seq)
            await asyncio.to_thread(self.replica.write, self.settings.service.replica_file, self.accountant,
                                    self.matchlog, self.clock.now())
        stats = outcome.result.stats
        # the whole cycle's duration and phases (pull, snapshot, holds, commit, publication too),
        # not only negotiation's
        figures = {**cycle_figures(stats, digits=4), "duration_s": round(outcome.duration_s, 4),
                   "phases_s": {k: round(v, 4) for k, v in outcome.phases_s.items()}}
        self.log.info("cycle", cycle=outcome.cycle_id, candidate_slots=outcome.candidate_slots,
                      idle_jobs=outcome.idle_jobs, submitters=outcome.submitters,
                      published=outcome.last_seq is not None, **figures,
                      **({} if outcome.child_private_bytes is None
                         else {"child_private_mib": round(outcome.child_private_bytes / 2**20, 1)}))
        problems = outcome.result.problems
        if problems:
            self.log.warning("left out of the cycle", count=len(problems), first=list(problems[:_SHOWN_PROBLEMS]))
        if stats.quota_shortfalls:
            self.log.warning("quota preemption cannot fully help", groups=stats.quota_shortfalls,
                             reasons=[p for p in problems if p.startswith(PROBLEM_PREFIX)][:_SHOWN_PROBLEMS])
        paused = self.heap.after_cycle()
        if paused is not None:
            self.log.info("full garbage collection", seconds=round(paused, 3))

    def _note_quota_timers(self, timers: Mapping[str, QuotaTimer], now: float) -> None:
        """Keep the committed cycle's quota preemption timers for status, and log each one that
        started (or started again) and each one that fell due."""
        previous, self.quota_timers = self.quota_timers, timers
        for group, timer in timers.items():
            before = previous.get(group)
            if before != timer:
                self.log.warning("quota preemption timer started", group=group, maximum=dict(timer.maximum),
                                 delay_s=timer.delay, due=timer.due)
            if self._last_cycle_time < timer.due <= now:
                self.log.warning("quota preemption is due; the cycle preempts what the group holds above its "
                                 "maximum", group=group, maximum=dict(timer.maximum), due=timer.due)
        self._last_cycle_time = now

    def _published(self, cycle_id: int, matches: int, last_seq: int) -> None:
        """A cycle's matches are out: wake the match streams."""
        self.last_seq = last_seq
        self.counters.matches_published += matches
        announced, self.new_matches = self.new_matches, asyncio.Event()
        announced.set()
        self.notifier.status(f"cycle {cycle_id}: {matches} matches; serving {self._url}")

    async def _pull(self, settings: Settings) -> bool:
        """Query the collector; whether it answered."""
        host = settings.service.collector_host
        assert host is not None
        try:
            pulled = await self.collector.pull(host, slots=settings.slot_constraint,
                                               submitters=settings.submitter_constraint)
        except PullError as error:
            self.counters.pull_failures += 1
            self.pull_state = {"time": self.clock.now(), "error": str(error), "reason": error.reason, "problems": 0}
            self.log.error("collector query failed; negotiating over the ads already filed", host=host,
                           reason=error.reason, error=str(error))
            return False
        self.pool.take_claim_ids(settings, pulled.claims, (ad for _, ad in pulled.ads[AdKind.SLOT]))
        for kind, ads in pulled.ads.items():
            self.store.replace_pulled(kind, ads, time.monotonic(), settings.service.classad_lifetime)
            self.totals.filed[kind.value] += len(ads)
        self.feed_api.bury()
        self.pull_state = {"time": self.clock.now(), "error": None, "reason": None, "problems": len(pulled.problems)}
        for problem in pulled.problems[:_SHOWN_PROBLEMS]:
            self.log.warning("collector query problem", problem=problem)
        return True

    async def _hand_out(self, negotiated: Negotiated, prefetched: Prefetched, settings: Settings) -> dict[int, str]:
        """Hand the cycle's matches to the schedds; the matches none received, with why."""
        matches = negotiated.result.matches

        def handing(index: int) -> None:
            self.matchlog.mark_handed(negotiated.cycle_id, matches[index].job)

        self.runner.phase = "hand-out"
        try:
            outcome = await self.pool.hand_out(negotiated.result, prefetched, negotiated.view.slots, settings, handing)
        finally:
            self.runner.phase = "idle"
        self.counters.matches_handed += len(outcome.handed)
        self.counters.matches_not_handed += len(outcome.refused)
        if outcome.refused:
            self.log.warning("matches not handed to their schedds; taken back", count=len(outcome.refused),
                             first=sorted(set(outcome.refused.values()))[:_SHOWN_PROBLEMS])
        return outcome.refused

    def _recover_hand_outs(self) -> None:
        """Charge and publish the matches a cycle handed to schedds and never committed (the daemon
        died, or the commit failed, in between)."""
        recovered = self.runner.recover_hand_outs(self.settings)
        if recovered:
            self.log.warning("matches handed to schedds by a cycle that never committed are charged and published",
                             cycles=sorted(recovered), matches=sum(recovered.values()))

    # -- the collector's ads ------------------------------------------------------------------------

    def negotiator_ad(self) -> dict[str, Any]:
        """The Negotiator ad as the collector gets it (:mod:`~.collector_ads`)."""
        identity = DaemonIdentity(self.settings.service.pool.negotiator_name, os.uname().nodename, self._url,
                                  self.command_port.address or "", __version__, self.started)
        return negotiator_ad(identity, self.history.cycle_attributes(), self.clock.now(), self._ad_sequence)

    async def _advertise(self) -> None:
        """Advertise the daemon's ads (:mod:`~.advertising`): at start, after each cycle (the
        Accounting ads then too) and each reload, and NEGOTIATOR_UPDATE_INTERVAL after the last
        time when nothing else comes first."""
        self._advertise_now.set()
        while not self.stopping.is_set():
            await woken(self._advertise_now, self.settings.service.update_interval)
            self._advertise_now.clear()
            settings = self.settings
            host = settings.service.collector_host
            if host is None:
                continue
            accounting: list[dict[str, Any]] = []
            if self._accounting_due and settings.service.advertise_accounting:
                try:
                    document = await self.accountant_report()
                except Exception as error:  # the accountant's storage fails: the next cycle tries again
                    self.log.error("the Accounting ads could not be made; the Negotiator ad goes alone",
                                   error=f"{type(error).__name__}: {error}")
                else:
                    accounting = accounting_ads(document, settings.service.pool.negotiator_name, settings.group_tree)
            self._accounting_due = False
            self._ad_sequence += 1
            await self.advertiser.advertise(host, settings.service.pool.security, self.negotiator_ad(), accounting)

    async def _take_ads_back(self) -> None:
        """At stop: invalidate the Negotiator ad and the Accounting ads, within a few seconds."""
        settings = self.settings
        if settings.service.collector_host is None:
            return
        pool = settings.service.pool
        try:
            await asyncio.wait_for(self.advertiser.take_back(settings.service.collector_host, pool.security,
                                                             pool.negotiator_name), INVALIDATION_TIMEOUT_S)
        except TimeoutError:
            self.log.warning("the collector did not take the invalidations in time; its ads expire in "
                             "CLASSAD_LIFETIME", timeout_s=INVALIDATION_TIMEOUT_S)

    # -- the feed -------------------------------------------------------------------------------

    async def _restore_holds(self) -> None:
        """Hold again what the previous run matched, as its ads are filed (before any cycle sees them)."""
        if not self.restored:
            return
        holds = self.restored.take(self.store)
        await file_holds(self.store, holds)
        if holds:
            self.log.info("matched jobs and slots held again after a restart", held=len(holds),
                          not_yet_filed=len(self.restored))

    def _expire(self) -> None:
        for kind, count in self.store.expire(time.monotonic()).items():
            if count:
                self.totals.expired[kind.value] += count
                self.log.info("ads expired", kind=kind.value, count=count)
        self.feed_api.bury()

    async def _sweep_expired(self) -> None:
        offset = self.clock.step(0.0)[1]
        while True:
            await asyncio.sleep(EXPIRY_SWEEP_S)
            self._expire()
            self.heap.tick()
            step, offset = self.clock.step(offset)
            if abs(step) > self.settings.negotiator_interval:
                self.log.warning("the wall clock stepped; cycle times, priority decay and match retention follow it",
                                 step_s=round(step, 3), negotiator_interval=self.settings.negotiator_interval)

    def _retention(self, settings: Settings, now: float) -> Retention:
        """What the match log may forget after this cycle: matches older than
        NEGOTIATORD_MATCH_RETENTION by the clock and by as many cycles as it spans at
        NEGOTIATOR_INTERVAL, and no match of a job or slot still held, or to be held again."""
        retention = settings.service.match_retention
        jobs, slots = self.store.table(AdKind.JOB), self.store.table(AdKind.SLOT)
        return Retention(now - retention, math.ceil(retention / max(settings.negotiator_interval, 1.0)),
                         frozenset(jobs.held_keys()) | self.restored.jobs.keys(),
                         frozenset(slots.held_keys()) | self.restored.slots.keys())

    async def _watchdog(self, interval: float) -> None:
        """Keep-alives from the event loop itself: a stuck loop stops them and systemd restarts us."""
        while True:
            self.notifier.watchdog()
            await asyncio.sleep(interval)

    # -- reload ---------------------------------------------------------------------------------

    async def reload(self) -> None:
        """SIGHUP: read the config again; on any error keep the old one and say why."""
        async with self._reloading:
            self.notifier.reloading()
            try:
                new = await asyncio.to_thread(load_settings, self.config)
                token = load_token(self.paths.token_file)
                self._install_user_maps(new)
            except (ConfigError, TokenError, UserMapError) as error:
                self.counters.reload_failures += 1
                self.reload_state = {"ok": False, "time": self.clock.now(), "error": str(error)}
                self.log.error("config reload refused; the previous config stays in force", error=str(error))
            else:
                # The restart-only knobs keep the values the daemon runs with; a knob set back to
                # its running value needs no restart any more.
                running = self.settings.service
                kept = [knob for name, knob in RESTART_ONLY.items()
                        if getattr(new.service, name) != getattr(running, name)]
                if kept:
                    self.log.warning("these settings take effect only after a restart", params=kept)
                running_values = {name: getattr(running, name) for name in RESTART_ONLY}
                port, bound = running.command_port, new.service.command_port
                if (port.port, port.bind_address) != (bound.port, bound.bind_address):
                    self.log.warning("these settings take effect only after a restart",
                                     params=["NEGOTIATORD_COMMAND_PORT", "BIND_ALL_INTERFACES", "NETWORK_INTERFACE"])
                running_values["command_port"] = replace(bound, port=port.port, bind_address=port.bind_address,
                                                         advertised_host=port.advertised_host)
                new = replace(new, service=replace(new.service, **running_values))
                self.commands.security = new.service.command_port.security
                self.settings, self.token = new, token
                await self.collector.close()   # the next query's worker reads the new config
                self.history.resize(new.service.cycle_stats_length)
                self.counters.reloads += 1
                self.reload_state = {"ok": True, "time": self.clock.now(), "error": None,
                                     "needs_restart": kept}
                self.log.info("config reloaded", config=str(self.config))
            finally:
                self.notifier.ready(f"serving {self._url}")
                self._poke.set()  # the timing knobs may have changed
                self._advertise_now.set()   # as HTCondor's negotiator advertises on a reconfig

    def _install_user_maps(self, new: Settings) -> None:
        """The new config's user maps, as a negotiator's reconfig reloads them; if one cannot be
        loaded, the running config's stay."""
        try:
            install_user_maps(new.service.pool.user_maps)
        except UserMapError:
            install_user_maps(self.settings.service.pool.user_maps)
            raise

    # -- status ---------------------------------------------------------------------------------

    def read_accountant(self) -> dict[str, Any]:
        """The accountant as ``condor_userprio`` shows it (:func:`accountant_document`), read from
        its database, with the last cycle's group figures and slots in use: call it off the event
        loop."""
        last = self.history.last
        groups = last.outcome.result.groups if last else ()
        slots = last.outcome.result.slots_in_use(self.settings.group_tree) if last else {}
        document = accountant_document(self.accountant.load(), self.settings, groups, self.clock.now(), slots)
        if last is not None:   # HTCondor's LastUpdate is its last priority update, every cycle's
            document["last_update"] = max(document["last_update"] or 0, last.outcome.time)
        return document

    async def accountant_report(self) -> dict[str, Any]:
        """:meth:`read_accountant` on a thread."""
        return await asyncio.to_thread(self.read_accountant)

    def status(self) -> dict[str, Any]:
        timing = CycleTiming.from_settings(self.settings)
        next_start = timing.next_start(self.last_start, self.last_end, self.rescheduled)
        last = self.history.last
        return {
            "daemon": {"version": __version__, "pid": os.getpid(), "started": self.started,
                       "uptime_s": round(self.clock.now() - self.started, 3), "config": str(self.config),
                       "state_dir": str(self.paths.state_dir), "clock_offset_s": round(self.clock.offset, 3),
                       "url": self._url},
            "now": self.clock.now(),
            "ads": self.store.counts(),
            "held": self.store.held(),
            "cycle": {"running": self.cycle_running, "phase": self.runner.phase, "child_pid": self.runner.child_pid,
                      "rescheduled": self.rescheduled,
                      "next_in_s": None if self.cycle_running else round(max(0.0, next_start - time.monotonic()), 3)},
            "last_cycle": summary(last) if last else None,
            "matches": {"last_seq": self.last_seq},
            "publication": None if self.publication is None else self.publication.document(),
            "counters": asdict(self.counters),
            "reload": self.reload_state,
            "collector": {"host": self.settings.service.collector_host, **self.pull_state},
            "command_port": {"address": self.command_port.address, "sessions": len(self.commands.sessions),
                             "refused_connections": self.commands.refused_connections},
            "master": self.master.status() if self.master is not None else None,
            "schedds": self.pool.status(),
            "http": {"connections": self.connections.document(),
                     "reads": {"in_flight": self.reads.active, "refused": dict(self.reads.refused)}},
            "advertising": self.advertiser.status(),
            "quota_timers": [timer_document(timer, self.clock.now()) for timer in self.quota_timers.values()],
            "quota_victims_being_preempted": len(self.preempting),
            "replica": self.replica.status(),
        }


class TlsError(Exception):
    """The TLS files cannot be used; the message names the knobs and the files."""


def tls_context(service: ServiceSettings) -> ssl.SSLContext:
    """The server's TLS context from ``NEGOTIATORD_TLS_CERTIFICATE`` and ``NEGOTIATORD_TLS_KEY``;
    a ``TlsError`` naming the knob and file that cannot be read, or both when OpenSSL refuses them."""
    assert service.tls_certificate is not None and service.tls_key is not None
    for knob, path in (("NEGOTIATORD_TLS_CERTIFICATE", service.tls_certificate),
                       ("NEGOTIATORD_TLS_KEY", service.tls_key)):
        try:
            path.open("rb").close()
        except OSError as error:
            raise TlsError(f"{knob} = {path}: cannot read it: {error.strerror or error}") from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(service.tls_certificate, service.tls_key)
    except ssl.SSLError as error:
        raise TlsError(f"NEGOTIATORD_TLS_CERTIFICATE = {service.tls_certificate}, NEGOTIATORD_TLS_KEY = "
                       f"{service.tls_key}: not a PEM certificate and its private key ({error.reason or error})") \
            from None
    return context


def _url(address: Any, service: ServiceSettings) -> str:
    """The bound address as a URL (with NEGOTIATORD_HTTP_PORT = 0 the port is only known now)."""
    host, port = address[:2]
    scheme = "https" if service.tls_certificate else "http"
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _in_daemon_thread(function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """Run ``function(*args)`` on a new daemon thread; the future resolves on the event loop.

    Not the default executor: its threads are joined at exit, so a stop would wait for the whole
    cycle; a daemon thread lets the process exit with an abandoned cycle still computing.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    def target() -> None:
        result, failure = None, None
        try:
            result = function(*args)
        except BaseException as error:  # handed to the awaiting coroutine
            failure = error
        try:
            loop.call_soon_threadsafe(settle, result, failure)
        except RuntimeError:
            pass  # the loop is closed: the daemon has stopped

    threading.Thread(target=target, name=CYCLE_THREAD, daemon=True).start()
    return future


def cycle_thread_alive() -> bool:
    """Whether a cycle is still computing on its thread (after a stop: an abandoned one)."""
    return any(thread.name == CYCLE_THREAD and thread.is_alive() for thread in threading.enumerate())
