"""The daemon's negotiation cycles: when the next one may start, and how one runs, start to finish.

**When**, by HTCondor's rules (``Matchmaker::negotiationTime``), in :class:`CycleTiming`:

* ``NEGOTIATOR_INTERVAL``: a cycle starts this long after the previous one started (the manual:
  "how often the condor_negotiator starts a negotiation cycle").
* A reschedule request (``condor_reschedule``; here ``POST /v1/reschedule``) makes the next cycle
  due at once (``RESCHEDULE_commandHandler`` resets the timer to 0).
* Either way, no cycle starts within ``NEGOTIATOR_CYCLE_DELAY`` of the previous cycle's end
  (time for startds to report their new state) nor within ``NEGOTIATOR_MIN_INTERVAL`` of the
  previous cycle's start.
* The first cycle is due at start-up (both "last" times start at 0 in HTCondor).

Times are monotonic seconds, so a stepped wall clock cannot stall or rush cycles.

**How**, in :class:`CycleRunner`, on a worker thread, in two halves. :meth:`CycleRunner.negotiate`
loads the accountant's state; builds the snapshot and negotiates (the pure cycle, run by
:func:`negotiatord.runtime.run_cycle` on this thread, or with ``NEGOTIATORD_CYCLE_WORKER = fork``
in a child process forked for it: see :func:`negotiatord.runtime.run_cycle_in_child`); makes the
stand-ins that hold the matched jobs and slots until they are re-advertised
(:mod:`negotiatord.publish.holds`); and stages the matches. Between the halves the daemon hands
the matches to the schedds (:mod:`negotiatord.schedds`). :meth:`CycleRunner.commit` takes back the
matches no schedd received (:func:`~negotiatord.cycle.accepted.only_accepted`); advances the state
to the cycle's time with this cycle's usage (running work plus the accepted matches); commits the
state and the charges in one accountant transaction keyed by the cycle id; and publishes the
matches (see :mod:`negotiatord.publish.matchlog` for why this cannot double-charge, lose a match a
schedd received, or publish an uncommitted match). With no schedd in the loop,
:meth:`CycleRunner.run` does both halves at once.

Once the accountant has committed, the cycle is done: its charges stand. Publishing is a second
write, to the match log, and may fail on its own (a lock held past the busy timeout, a full disk,
an I/O error); the outcome then says so, and the daemon retries the publication
(:meth:`CycleRunner.publish`) before it starts another cycle. The staged matches are never
negotiated again meanwhile: the holds apply from the commit on, and recovery at start-up publishes
what is still staged.

With a child process, the snapshot is still built here, where the builder keeps what it read of
unchanged ads from one cycle to the next; a child would lose that with itself. Only the
negotiation runs in the child.

The runner works off the event loop. The only state shared with it is :attr:`CycleRunner.phase`
(read for status) and :meth:`CycleRunner.abandon` (called at shutdown), which also kills a child
process still negotiating.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace

from negotiatord.accountant import AccountantState, AccountantStore
from negotiatord.accountant.after_cycle import after_cycle
from negotiatord.accountant.quota_timers import QuotaTimer
from negotiatord.cycle.accepted import only_accepted
from negotiatord.cycle.result import CycleResult
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.store import PoolView
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.publish.holds import Hold, holds_for
from negotiatord.publish.matchlog import MatchLog, Retention
from negotiatord.pool.snapshot import Snapshot
from negotiatord.runtime import CycleProcessFailed, garbage_collection_paused, run_cycle, run_cycle_in_child
from negotiatord.settings import CycleWorker, Settings


@dataclass(frozen=True)
class CycleTiming:
    interval: float        # NEGOTIATOR_INTERVAL
    min_interval: float    # NEGOTIATOR_MIN_INTERVAL
    cycle_delay: float     # NEGOTIATOR_CYCLE_DELAY

    @classmethod
    def from_settings(cls, settings: Settings) -> CycleTiming:
        return cls(settings.negotiator_interval, settings.negotiator_min_interval,
                   settings.negotiator_cycle_delay)

    def next_start(self, last_start: float | None, last_end: float | None, rescheduled: bool) -> float:
        """The earliest time the next cycle may start (``-inf``: now)."""
        due = -math.inf if last_start is None or rescheduled else last_start + self.interval
        gates = [-math.inf]
        if last_end is not None:
            gates.append(last_end + self.cycle_delay)
        if last_start is not None:
            gates.append(last_start + self.min_interval)
        return max(due, *gates)


class CycleAbandoned(Exception):
    """The daemon is stopping: the cycle was not committed and its matches were not published."""


@dataclass(frozen=True)
class CycleOutcome:
    cycle_id: int
    time: int                    # the cycle's time(), on the daemon clock
    result: CycleResult
    duration_s: float            # pull (if any) to publication
    phases_s: dict[str, float]   # pull, snapshot, the cycle's own phases, accountant, holds, commit, publish
    last_seq: int | None         # the match log's last published sequence number; None: not published
    publish_error: str | None    # why publishing failed after the commit (the daemon retries it)
    idle_jobs: int
    submitters: int              # submitters with idle jobs
    schedds: int                 # the schedds their idle jobs are queued at
    candidate_slots: int         # unclaimed slots offered to idle jobs
    holds: list[Hold]            # stand-ins for what was matched, for the ad store
    quota_timers: Mapping[str, QuotaTimer]   # as committed with the cycle
    child_private_bytes: int | None = None   # memory the cycle's child process made its own; None: none

    def after(self, phase: str, seconds: float) -> CycleOutcome:
        """This outcome with ``phase``, which the daemon ran before handing the cycle to the runner
        (the collector pull), as its first phase and part of its duration."""
        return replace(self, duration_s=self.duration_s + seconds, phases_s={phase: seconds, **self.phases_s})


@dataclass(frozen=True)
class Negotiated:
    """A cycle decided and staged, not yet committed: between the two, its matches go to the schedds."""

    cycle_id: int
    time: int
    view: PoolView               # what the cycle negotiated over
    state: AccountantState       # the accountant's state the cycle began from
    edit_mark: int               # the administrator's last edit before that state was loaded
    result: CycleResult
    holds: list[Hold]
    phases_s: dict[str, float]
    started: float               # time.perf_counter() when the cycle began
    idle_jobs: int
    submitters: int
    schedds: int
    candidate_slots: int
    child_private_bytes: int | None
    handed_jobs: frozenset[str] = frozenset()   # the jobs whose matches go to schedds


class CycleRunner:
    def __init__(self, accountant: AccountantStore, matches: MatchLog) -> None:
        self.accountant = accountant
        self.matches = matches
        self.snapshots = SnapshotBuilder()   # reuses per-ad work for ads unchanged since the last cycle
        self.descriptions = AdDescriptions()  # what the fast path read of the ads those records stand for
        # what the fast path compiled, kept by cycles run in this process (a child process's would
        # die with it, so a cycle in a child compiles afresh)
        self.compilations = Compilations()
        self.phase = "idle"
        self._commit = threading.Lock()
        self._abandoned = False
        self._child: int | None = None       # the pid of the child process negotiating now

    def run(self, view: PoolView, settings: Settings, now: int, retention: Retention) -> CycleOutcome:
        """Negotiate over ``view`` at time ``now`` and commit every match (no schedd to hand them
        to); published matches ``retention`` lets go of are pruned."""
        return self.commit(self.negotiate(view, settings, now), settings, retention)

    def negotiate(self, view: PoolView, settings: Settings, now: int,
                  to_hand: Collection[str] = frozenset()) -> Negotiated:
        """The cycle's decisions over ``view``, staged unpublished; the matches of the jobs in
        ``to_hand`` are staged to be handed to their schedds before :meth:`commit`."""
        started = time.perf_counter()
        phases: dict[str, float] = {}
        try:
            with self._phase("snapshot", phases):
                edit_mark = self.accountant.edit_mark()
                state = self.accountant.load()
                cycle_id = self.accountant.last_cycle_id() + 1
                # collection paused as for the cycle: the build makes a job object per queued job,
                # and a collection of the daemon's heap in the middle costs as much as the build
                with garbage_collection_paused():
                    snapshot = self.snapshots.build(view.slots.values(), view.jobs.records(), settings)

            self.phase = "negotiate"      # timed by the cycle itself, phase by phase
            result, child_private_bytes = self._negotiate(snapshot, state, settings, now, phases)
            # the stand-ins for held matches are negotiated over, but they are no slots of the pool
            result = replace(result, stats=replace(result.stats, slots=result.stats.slots - view.stand_in_slots))
            phases.update(result.stats.phase_s)
            with self._phase("holds", phases):
                # a schedd's requests are its own account of its idle jobs (it stops offering a
                # matched one): only their slots, stale in the collector until their startds
                # report, are held
                holds = [hold for hold in holds_for(view, result.matches, result.preemptions)
                         if not (hold.kind is AdKind.JOB and hold.key in to_hand)]
            with self._phase("stage", phases):
                self._stage(cycle_id, now, result, holds, to_hand)
        finally:
            self.phase = "idle"
        return Negotiated(cycle_id=cycle_id, time=now, view=view, state=state, edit_mark=edit_mark, result=result,
                          holds=holds,
                          phases_s=phases, started=started, idle_jobs=len(snapshot.jobs),
                          submitters=len({job.submitter for job in snapshot.jobs}),
                          schedds=len({job.schedd for job in snapshot.jobs}),
                          candidate_slots=int(snapshot.table.candidate.sum()),
                          child_private_bytes=child_private_bytes, handed_jobs=frozenset(to_hand))

    def commit(self, negotiated: Negotiated, settings: Settings, retention: Retention,
               refused: Collection[int] = frozenset()) -> CycleOutcome:
        """Commit a negotiated cycle without the matches at ``refused`` (their schedds never
        received them), then publish it."""
        phases = dict(negotiated.phases_s)
        cycle_id, now = negotiated.cycle_id, negotiated.time
        try:
            result = only_accepted(negotiated.result, refused, settings.group_tree)
            holds = negotiated.holds if not refused else [
                hold for hold in holds_for(negotiated.view, result.matches, result.preemptions)
                if hold.kind is AdKind.SLOT or hold.key not in negotiated.handed_jobs]
            with self._phase("accountant", phases):
                new_state = after_cycle(negotiated.state, now, result.usage, result.held, settings,
                                        result.enforced_quotas)
            with self._phase("commit", phases):
                self._commit_cycle(cycle_id, now, new_state, result, negotiated.edit_mark)
            with self._phase("publish", phases):
                last_seq, publish_error = None, None
                try:
                    last_seq = self.publish(cycle_id, retention)
                except Exception as error:  # the cycle is committed; the daemon retries the publication
                    publish_error = f"{type(error).__name__}: {error}"
        finally:
            self.phase = "idle"
        return CycleOutcome(
            cycle_id=cycle_id, time=now, result=result, duration_s=time.perf_counter() - negotiated.started,
            phases_s=phases, last_seq=last_seq, publish_error=publish_error, idle_jobs=negotiated.idle_jobs,
            submitters=negotiated.submitters, schedds=negotiated.schedds, candidate_slots=negotiated.candidate_slots,
            holds=holds,
            quota_timers=new_state.quota_timers, child_private_bytes=negotiated.child_private_bytes,
        )

    def recover_hand_outs(self, settings: Settings) -> dict[int, int]:
        """Commit the cycles whose matches were handed to schedds but never committed: each with
        its handed matches' charges and the accountant's state left as it was. By cycle id, how many
        matches each committed."""
        recovered = {}
        with self._commit:
            handed = self.matches.handed_uncommitted(self.accountant.last_cycle_id())
            for cycle_id, (at, matches) in sorted(handed.items()):
                self.matches.drop_unhanded(cycle_id)
                costs: dict[str, float] = {}
                for match in matches:
                    costs[match.submitter] = costs.get(match.submitter, 0.0) + match.cost
                charges = settings.group_tree.roll_up(costs)
                if self.accountant.commit_cycle(cycle_id, at, self.accountant.load(), charges,
                                                self.matches.sequence()):
                    recovered[cycle_id] = len(matches)
        return recovered

    def _negotiate(self, snapshot: Snapshot, state: AccountantState, settings: Settings, now: int,
                   phases: dict[str, float]) -> tuple[CycleResult, int | None]:
        """The pure cycle over ``snapshot``, here or in a child process (NEGOTIATORD_CYCLE_WORKER),
        with the child's private memory. What the child costs beyond the cycle itself (forking it,
        taking its result back) is filed as the phase ``child_process``."""
        if settings.service.cycle_worker is CycleWorker.THREAD:
            return run_cycle(snapshot, state, settings, now, descriptions=self.descriptions,
                             compilations=self.compilations), None
        try:
            child = run_cycle_in_child(snapshot, state, settings, now, self.descriptions, self._child_started)
        except CycleProcessFailed as error:
            if self._abandoned:
                raise CycleAbandoned(f"cycle abandoned while {error}") from error
            raise
        finally:
            with self._commit:
                self._child = None
        phases["child_process"] = child.overhead_s
        return child.result, child.private_bytes

    @property
    def child_pid(self) -> int | None:
        """The pid of the child process negotiating the cycle now, if one is."""
        return self._child

    def _child_started(self, pid: int) -> None:
        with self._commit:
            self._child = pid
            if self._abandoned:
                os.kill(pid, signal.SIGKILL)

    @contextmanager
    def _phase(self, name: str, phases: dict[str, float]) -> Iterator[None]:
        """A step of the daemon's cycle: named in ``phase`` while it runs, its duration filed in
        ``phases`` once it has run."""
        self.phase = name
        mark = time.perf_counter()
        yield
        phases[name] = time.perf_counter() - mark

    def _stage(self, cycle_id: int, now: int, result: CycleResult, holds: list[Hold], to_hand: Collection[str]) -> None:
        with self._commit:
            if self._abandoned:
                raise CycleAbandoned(f"cycle {cycle_id} abandoned before its matches were staged")
            self.matches.stage(cycle_id, now, result.matches, holds, result.preemptions, to_hand)

    def _commit_cycle(self, cycle_id: int, now: int, new_state: AccountantState, result: CycleResult,
                      edit_mark: int) -> None:
        with self._commit:
            if self._abandoned:
                raise CycleAbandoned(f"cycle {cycle_id} abandoned before its commit")
            self.matches.drop_unhanded(cycle_id)
            match_seq = self.matches.sequence()
            try:
                committed = self.accountant.commit_cycle(cycle_id, now, new_state, result.charges, match_seq,
                                                         edit_mark=edit_mark)
            except BaseException:
                self.matches.discard(cycle_id)
                raise
            if not committed:
                # Only another writer of the same database could have taken this id.
                self.matches.discard(cycle_id)
                raise RuntimeError(f"{self.accountant.path}: cycle {cycle_id} was already committed "
                                   "by another process; is a second negotiatord using this database?")

    def publish(self, cycle_id: int, retention: Retention) -> int:
        """Publish committed cycle ``cycle_id``'s staged matches and forget those ``retention``
        lets go of; returns the last published sequence number. Safe to repeat until it
        succeeds: publishing a published cycle changes nothing."""
        last_seq = self.matches.publish(cycle_id)
        self.matches.prune(retention, cycle_id)
        return last_seq

    def abandon(self) -> None:
        """Let no cycle commit from now on; waits for a commit in progress to finish, and kills
        the child process negotiating a cycle, if one is."""
        with self._commit:
            self._abandoned = True
            if self._child is not None:
                os.kill(self._child, signal.SIGKILL)

