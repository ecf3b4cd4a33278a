"""A workload trace run through the real negotiation cycle on a simulated clock.

Cycles run on a grid, every ``NEGOTIATOR_INTERVAL`` of simulated time from the first submission
(a simulated cycle takes no simulated time, so the daemon's ``NEGOTIATOR_CYCLE_DELAY`` and
``NEGOTIATOR_MIN_INTERVAL`` gates never bind). Before each cycle, the jobs submitted by then join
the queue and the jobs finished by then leave their slots; the cycle negotiates with the daemon's
code (:func:`negotiatord.runtime.run_cycle`) over a snapshot kept incrementally; each match starts
its job at once, holding what the match consumed for the job's run time; the accountant's state is
updated after the cycle by the daemon's own step (:func:`negotiatord.accountant.after_cycle.after_cycle`):
priorities decayed and charged, admission fair sharing sampled, quota preemption timers kept.

**Preemption.** A job the cycle preempts goes back to the queue with its whole run time to do
again: HTCondor vacates a job without checkpoint and restarts it from the beginning (its time
on the slot is badput). The preempting job takes the victim's dynamic slot as it is, the claim
passing to it with the slot's resources. A quota enforcement's victim (no preemptor) gives its
resources back to its p-slot.

**Quiet cycles are skipped.** A cycle after one that matched nothing, with no submission and no
completion in between, would negotiate over the same slots and the same idle jobs. It matches
nothing either: the group allocations depend on the pool and the demand, both unchanged, and a
group with room for a job gets it whatever its submitters' priorities (remainder rounds), so the
only input that changed, the decayed priorities, can only reorder matches that are not there.
Nor can a cycle match anything when the one before left no job idle and nothing was submitted
since. In both cases the replay jumps to the first grid point at or after the next submission
or completion, or the next quota preemption timer's due time (quota enforcement needs no idle
job). The decayed priorities can make a priority or fair sharing preemption possible, so while
one may happen (:func:`may_preempt`) a cycle with jobs left idle is never skipped.

A cycle negotiates with the priorities the previous cycle left (the daemon advances the state
after each cycle), so before the next cycle runs, the accountant is advanced to the last skipped
grid point with the usage it holds, which the skipped cycles would have recorded unchanged: the
state they would have left, in one exponential step rather than several (the same to the last
bits of a priority), and likewise the admission fair sharing average, sampled with what each
submitter holds; the quota timers see the same holdings and stay as they are. The matches,
and so every job's start, are those of a replay that runs every cycle (tested).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import classad2

from negotiatord.accountant import AccountantState
from negotiatord.accountant.after_cycle import after_cycle
from negotiatord.classad.interrupts import caused_by_interrupt
from negotiatord.cycle.result import PREEMPTION_RULES, CycleResult, Match, Preemption
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.pool.jobs import submitter_of
from negotiatord.replay.pool import STAND_INS_KEPT, Offer, SimulatedPool, job_ad, job_key, may_preempt
from negotiatord.replay.trace import Trace, TraceJob
from negotiatord.runtime import HeapKeeper, garbage_collection_paused, run_cycle
from negotiatord.settings import Settings
from negotiatord.settings.groups import ROOT_GROUP


@dataclass
class JobRun:
    """What became of one job of the trace."""

    job: TraceJob
    cluster: int                       # its ClusterId: the position in submission order, from 1
    submitter: str
    start: float | None = None         # simulated seconds, as the trace's submit times
    start_cycle: int | None = None     # the grid index of the cycle that matched it
    slot: str | None = None
    cost: float | None = None
    cpus: float = 0.0                  # the Cpus its match consumed
    preempted: int = 0                 # times it was preempted and went back to the queue
    badput_cpu_s: float = 0.0          # Cpus times seconds held by the runs that were preempted

    @property
    def finish(self) -> float | None:
        return None if self.start is None else self.start + self.job.runtime


@dataclass(frozen=True)
class CycleRecord:
    """One cycle that ran, in the figures of HTCondor's LastNegotiationCycle* attributes."""

    index: int                          # on the grid: time = origin + index * interval
    time: float
    matches: int
    total_slots: int
    candidate_slots: int
    idle_jobs: int
    submitters: int                     # submitters with idle jobs
    pie_spins: int
    busy_cpus: float                    # after the cycle's matches
    queued: int                         # idle jobs left after the cycle
    group_load: dict[str, float]        # usage / quota after the cycle, for groups with quota > 0
    stranded_cpus: float                # free Cpus in p-slots with too little Memory for any job
    duration_s: float                   # wall clock: snapshot and negotiation
    snapshot_s: float = 0.0             # wall clock: the snapshot alone
    preemptions: dict[str, int] = field(default_factory=dict)   # by rule, the rules with at least one

    @property
    def jain(self) -> float | None:
        """Jain's fairness index over ``group_load``: (sum x)^2 / (n * sum x^2); None when no
        group with a quota uses anything."""
        squares = sum(load * load for load in self.group_load.values())
        return sum(self.group_load.values()) ** 2 / (len(self.group_load) * squares) if squares > 0 else None


@dataclass
class ReplayResult:
    runs: list[JobRun]                  # in submission order
    cycles: list[CycleRecord]
    skipped_cycles: int                 # grid points up to the last cycle where no cycle was needed
    origin: float                       # simulated time of the first grid point
    interval: float
    end: float                          # end of the replayed period: the last finish, --until, or the
                                        # last cycle of an interrupted replay
    submitted: int                      # jobs submitted before the end
    accountant: AccountantState
    pool_cpus: int
    wall_time_s: float
    start_epoch: int
    interrupted: bool = False           # stopped by Ctrl-C: the figures cover the cycles run until then

    def preemptions_by_rule(self) -> dict[str, int]:
        """Preemptions over the whole replay, per rule (every rule named, at 0 if none)."""
        counts = dict.fromkeys(PREEMPTION_RULES, 0)
        for cycle in self.cycles:
            for rule, count in cycle.preemptions.items():
                counts[rule] += count
        return counts


FULL_COLLECTION_EVERY = 1000    # cycles: what reference cycles a cycle still makes is small (fair sharing's usage tree)
LONGEST_WITHOUT_COLLECTION = 16_000   # cycles, while full collections find no garbage (HeapKeeper)

ProgressCallback = Callable[[float, int], None]    # simulated time, jobs finished or started


def replay(trace: Trace, settings: Settings, pool: SimulatedPool, *, until: float | None = None,
           skip_quiet_cycles: bool = True, stand_in_empty_nodes: bool = True,
           progress: ProgressCallback | None = None) -> ReplayResult:
    """Run ``trace`` (jobs fitted to ``pool``'s nodes) through negotiation cycles on ``pool``,
    up to simulated time ``until`` (seconds from the trace's start; None: until every job ran or
    no job left can ever start). ``stand_in_empty_nodes=False`` offers each cycle every node
    (see :meth:`SimulatedPool.offered_ads`), to check that standing in and leaving out change nothing.

    Ctrl-C (KeyboardInterrupt) stops the replay and returns what it did, ``interrupted`` and ending
    at the last cycle that ran."""
    return _Replay(trace, settings, pool, until, skip_quiet_cycles, stand_in_empty_nodes, progress).run()


@dataclass
class _Replay:
    trace: Trace
    settings: Settings
    pool: SimulatedPool
    until: float | None
    skip_quiet_cycles: bool
    stand_in_empty_nodes: bool
    progress: ProgressCallback | None
    runs: list[JobRun] = field(default_factory=list)
    cycles: list[CycleRecord] = field(default_factory=list)
    idle: dict[str, tuple[JobRun, classad2.ClassAd]] = field(default_factory=dict)
    running: list[tuple[float, int, Match]] = field(default_factory=list)    # heap by finish
    # job key -> its run, the match it runs under and its ad; a heap entry whose match is not
    # the job's here was preempted
    by_key: dict[str, tuple[JobRun, Match, classad2.ClassAd]] = field(default_factory=dict)
    held: dict[str, dict[str, float]] = field(default_factory=dict)   # the last cycle's CycleResult.held
    busy_cpus: float = 0.0
    started: int = 0
    stranded: dict[str, float] = field(default_factory=dict)    # p-slot -> its stranded Cpus
    stranded_cpus: float = 0.0
    least_memory_mb: int = 0                    # the trace's smallest RequestMemory

    def run(self) -> ReplayResult:
        wall = time.perf_counter()
        jobs, interval = self.trace.jobs, self.settings.negotiator_interval
        if interval <= 0:
            raise ValueError(f"NEGOTIATOR_INTERVAL must be > 0 for a replay, got {interval}")
        origin = jobs[0].submit if jobs else 0.0
        self.least_memory_mb = min((job.memory_mb for job in jobs), default=0)
        # a node's own ad is offered again once its jobs end, and so is a stand-in for as many nodes
        # or for claims that hold as much
        builder = SnapshotBuilder(offered_again=self.pool.count + 2 * STAND_INS_KEPT)
        descriptions, state = AdDescriptions(), AccountantState()
        compilations = Compilations()
        index, submitted, matched = 0, 0, True
        preempting = may_preempt(self.settings)
        # a cycle's objects are freed with its result (tests/cycle/test_reference_cycles.py); reference
        # cycles made within a cycle would reach the oldest generation uncollected
        # (runtime.garbage_collection_paused), so the heap is collected in full every so many cycles, as
        # the daemon does (HeapKeeper), but not left frozen (HeapKeeper.release says why)
        heap = HeapKeeper(full_every=FULL_COLLECTION_EVERY, longest=LONGEST_WITHOUT_COLLECTION)
        interrupted = False
        try:
            while True:
                now = origin + index * interval
                if self.until is not None and now > self.until:
                    break
                while submitted < len(jobs) and jobs[submitted].submit <= now:
                    self._submit(jobs[submitted], submitted + 1)
                    submitted += 1
                while self._next_finish() <= now:
                    self._finish(heapq.heappop(self.running)[2])
                state, matched = self._cycle(index, now, builder, descriptions, compilations, state)
                if heap.after_cycle() is not None:
                    heap.release()
                if self.progress is not None:
                    self.progress(now, self.started)
                waiting = submitted < len(jobs) or self.by_key
                if not waiting and (not self.idle or not matched):
                    break
                if (self.idle and (matched or preempting)) or not self.skip_quiet_cycles:
                    index += 1
                else:
                    # quota timers run on the accountant's clock: the trace's start epoch plus its seconds
                    upcoming = min(jobs[submitted].submit if submitted < len(jobs) else math.inf, self._next_finish(),
                                   *(timer.due - self.trace.start_epoch for timer in state.quota_timers.values()))
                    following = max(index + 1, math.ceil((upcoming - origin) / interval))
                    if following > index + 1:
                        state = self._held_for(state, int(self.trace.start_epoch + origin + (following - 1) * interval))
                    index = following
        except (KeyboardInterrupt, SystemError) as error:
            if not caused_by_interrupt(error):
                raise
            interrupted = True
        finally:
            heap.release()
        finishes = [run.finish for run in self.runs if run.finish is not None]
        ran = self.cycles[-1].index + 1 if self.cycles else 0
        if interrupted:
            end = self.cycles[-1].time if self.cycles else origin
        elif self.until is not None:
            end = self.until
        else:   # the last finish: the cycle that notices it comes up to an interval later
            end = max(finishes) if finishes else origin + max(0, ran - 1) * interval
        for job in jobs[submitted:]:
            self.runs.append(JobRun(job, len(self.runs) + 1, _submitter(job)))
        return ReplayResult(
            runs=self.runs, cycles=self.cycles, skipped_cycles=ran - len(self.cycles), origin=origin,
            interval=interval, end=end, submitted=submitted, accountant=state, pool_cpus=self.pool.cpus,
            wall_time_s=time.perf_counter() - wall, start_epoch=self.trace.start_epoch, interrupted=interrupted,
        )

    def _submit(self, job: TraceJob, cluster: int) -> None:
        ad = job_ad(job, cluster, self.trace.start_epoch)
        run = JobRun(job, cluster, submitter_of(ad) or job.user)
        self.runs.append(run)
        self.idle[job_key(job)] = (run, ad)

    def _next_finish(self) -> float:
        """When the next running job finishes (inf: none runs); heap entries left by preempted
        runs are dropped on the way."""
        while self.running and self._preempted_entry(self.running[0][2]):
            heapq.heappop(self.running)
        return self.running[0][0] if self.running else math.inf

    def _preempted_entry(self, match: Match) -> bool:
        running = self.by_key.get(match.job)
        return running is None or running[1] is not match

    def _finish(self, match: Match) -> None:
        run, _, _ = self.by_key.pop(match.job)
        self.pool.release(match)
        self.busy_cpus -= run.cpus
        self._strand(match.slot)

    def _strand(self, slot: str) -> None:
        """Count again the Cpus p-slot ``slot`` strands: whole Cpus left beside less Memory than
        the trace's smallest RequestMemory, which no job of the trace can use."""
        cpus, memory = self.pool.free(slot)
        stranded = float(math.floor(cpus)) if memory < self.least_memory_mb else 0.0
        self.stranded_cpus += stranded - self.stranded.pop(slot, 0.0)
        if stranded:
            self.stranded[slot] = stranded

    def _cycle(self, index: int, now: float, builder: SnapshotBuilder, descriptions: AdDescriptions,
               compilations: Compilations, state: AccountantState) -> tuple[AccountantState, bool]:
        """Negotiate at grid point ``index``, preempt the victims and start the matched jobs; the
        accountant state after the cycle, and whether the cycle changed what runs."""
        wall = time.perf_counter()
        epoch = int(self.trace.start_epoch + now)
        offer = (self.pool.offered_ads(len(self.idle), self.settings) if self.stand_in_empty_nodes
                 else Offer(self.pool.slot_ads()))
        with garbage_collection_paused():       # as the daemon builds its snapshots
            snapshot = builder.build(offer.ads, [ad for _, ad in self.idle.values()], self.settings)
        built = time.perf_counter() - wall
        result = run_cycle(snapshot, state, self.settings, epoch, descriptions=descriptions, compilations=compilations)
        duration = time.perf_counter() - wall
        victims = {preemption.victim_job: self._evict(preemption, now) for preemption in result.preemptions
                   if preemption.victim_job in self.by_key}
        for match in result.matches:
            victim = victims.get(match.preempts) if match.preempts is not None else None
            self._start(match if victim is None else _in_place_of(match, victim), index, now, epoch)
        self.cycles.append(CycleRecord(
            index=index, time=now, matches=len(result.matches),
            # the slots left out of the offer count as the slots they are
            total_slots=result.stats.slots + offer.slots_left_out,
            candidate_slots=int(snapshot.table.candidate.sum()) + offer.candidates_left_out,
            idle_jobs=len(snapshot.jobs),
            submitters=len({job.submitter for job in snapshot.jobs}), pie_spins=result.stats.pie_spins,
            busy_cpus=self.busy_cpus, queued=len(self.idle), group_load=_group_load(result),
            stranded_cpus=self.stranded_cpus, duration_s=duration, snapshot_s=built,
            preemptions={rule: count for rule, count in result.preemptions_by_rule().items() if count},
        ))
        self.held = result.held
        state = after_cycle(state, epoch, result.usage, result.held, self.settings, result.enforced_quotas)
        return state, bool(result.matches or result.preemptions)

    def _evict(self, preemption: Preemption, now: float) -> Match:
        """The preempted job leaves its slot and goes back to the queue, to run its whole run time
        again; the match it ran under."""
        assert preemption.victim_job is not None
        run, match, ad = self.by_key.pop(preemption.victim_job)
        assert run.start is not None
        run.badput_cpu_s += run.cpus * (now - run.start)
        run.preempted += 1
        self.busy_cpus -= run.cpus
        run.start = run.start_cycle = run.slot = run.cost = None
        run.cpus = 0.0
        self.pool.release(match)
        self._strand(match.slot)
        self.idle[preemption.victim_job] = (run, ad)
        return match

    def _start(self, match: Match, index: int, now: float, epoch: int) -> None:
        run, ad = self.idle.pop(match.job)
        run.start, run.start_cycle, run.slot, run.cost = now, index, match.slot, match.cost
        run.cpus = float(match.consumed.get("Cpus", run.job.cpus))
        self.pool.start(match, ad, epoch)
        heapq.heappush(self.running, (now + run.job.runtime, run.cluster, match))
        self.by_key[match.job] = (run, match, ad)
        self.busy_cpus += run.cpus
        self.started += 1
        self._strand(match.slot)

    def _held_for(self, state: AccountantState, now: int) -> AccountantState:
        """``state`` after cycles up to ``now`` that each matched and preempted nothing: each
        recorded the usage it holds and sampled what each submitter holds."""
        return after_cycle(state, now, None, self.held, self.settings)


def _in_place_of(match: Match, victim: Match) -> Match:
    """A preempting match as the replay runs it: the victim's dynamic slot passes to the new job
    whole, so the job holds what the victim's match consumed, on the victim's p-slot."""
    return Match(match.job, victim.slot, match.submitter, match.group, match.cost, dict(victim.consumed),
                 match.preemption)


def _group_load(result: CycleResult) -> dict[str, float]:
    """Each group with a quota: its usage (its subtree's, as the accountant rolls it up) over it."""
    return {group.name: result.usage.get(group.name, 0.0) / group.quota
            for group in sorted(result.groups, key=lambda group: group.name)
            if group.name != ROOT_GROUP and group.quota > 0}


def _submitter(job: TraceJob) -> str:
    """The submitter a job not submitted within the replay would have had."""
    return submitter_of(job_ad(job, 0, 0)) or job.user
