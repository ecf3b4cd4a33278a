"""Running negotiation cycles in a process: the evaluator a cycle is handed, and CPython's garbage
collection kept out of its way.

The cycle (:func:`negotiatord.cycle.negotiate.negotiate`) is a pure function of snapshot,
accountant state, settings, time and evaluator. What concerns the process it runs in is done here,
around that call, the same way for every caller: the daemon, the dry run, the benchmarks.

**The evaluator.** :func:`run_cycle` hands the cycle the compiled fast path built for the snapshot
(or the evaluator its caller brings: the classad2 reference, to check a cycle). numba loads a
kernel the first time it is called, holding the GIL for a few hundred milliseconds (or compiles
it, on an install's very first start); :func:`load_fast_path` has that happen over a built-in
two-slot pool, before a daemon serves, rather than inside its first real cycle.

**A child process per cycle.** :func:`run_cycle_in_child` runs :func:`run_cycle` in a child
forked for the one cycle. The child sees the parent's memory copy-on-write, so the snapshot and the
ads behind it reach it without being copied or serialised; it sends back the
:class:`~negotiatord.cycle.result.CycleResult` (pickled, through a pipe) and ends with
``os._exit``. The parent waits on the pipe without holding the GIL, so its other threads (the
daemon's event loop, parsing ads) keep a core of their own while the cycle computes. Forking a
process that runs threads is safe here because of what the child does and does not do:

* it only computes: it logs nothing, opens no database, runs no event loop, and closes every
  file descriptor it inherited but its end of the pipe (a listening socket or a database file
  held open by a child would outlive a daemon that stops);
* classad2 never releases the GIL, and the fork happens with the GIL held, so no other thread is
  inside the ClassAd library at that moment (its state is whole in the child);
* numba's kernels are compiled, or loaded from the on-disk cache, by the parent before it serves
  (:func:`load_fast_path`), and they run single-threaded (no parallel threading layer);
* the child ends with ``os._exit``: no ``atexit`` handler, no flush of buffers it shares with
  the parent, no destructor of objects it shares.

The child's death by a signal (a crash in a native library, the kernel's OOM killer) or an
exception it raised fails that cycle only, with :class:`CycleProcessFailed` saying which.

What the fast path reads of an ad (its
:class:`~negotiatord.fastpath.compiler.descriptions.AdDescriptions`) is kept from one cycle to the
next by the daemon, for the ads that did not change. The child reads the ads that are new to it and
would take that with it; it sends back what it read, by the record's place in the snapshot, and the
parent files it under its own records (the same objects: the snapshot was built before the fork).
Without that, every cycle would read every slot ad again (at 45k slots it took 1.9x as long).
Kernels of a type signature the warm-up did not call are loaded from numba's on-disk cache by each
child again (milliseconds).

**Garbage collection.** A full collection walks every container object the process holds: with an
OSPool-sized pool in memory (45k slot ads, 255k jobs, their records and autoclusters; ~900k
tracked objects in a daemon holding 45k slots and 50k jobs) one takes 0.3-0.7 s while holding the
GIL, in whichever thread triggered it. Nearly all of that heap lives for seconds or longer and is
freed by reference counting when replaced, not by the cyclic garbage collector. Two measures, tied
together by the process-wide ``gc`` switch and so kept in this one module:

* While a cycle runs, automatic collection is paused (:func:`garbage_collection_paused`). The
  allocations a cycle makes would trigger a full collection in most cycles, at a random point,
  and the young collections in between cost another ~0.4 s at that scale; a cycle makes next to
  no reference cycles. When it ends, what the cycle made is handed to the oldest generation
  without being walked (``gc.freeze`` then ``gc.unfreeze``: moving the generations' lists, no
  walk). Re-enabling collection alone would leave all of it to the next young collection, a
  GIL-holding stall of ~0.2 s in whichever thread allocates next.
* A long-running process (the daemon) freezes its surviving heap about once a second
  (:class:`HeapKeeper`): frozen objects are left out of later collections, which then only see
  what was made since. Cyclic garbage among frozen objects would wait, so every ``full_every``
  cycles the heap is unfrozen and collected once.

A cycle that ends in a process whose heap is frozen keeps it frozen, the cycle's objects with it.
Pauses are counted: cycles running at the same time (tests, a replay beside the daemon) re-enable
collection only when the last one ends, and only if it was enabled when the first began.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from collections.abc import Callable, Iterator
from typing import NoReturn

import classad2

from negotiatord.accountant import AccountantState
from negotiatord.cycle.negotiate import negotiate
from negotiatord.cycle.result import CycleResult
from negotiatord.evaluation import PairEvaluator
from negotiatord.fastpath.compiler.descriptions import AdDescriptions, Description
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.snapshot import Snapshot
from negotiatord.settings import Settings

# A full collection about once an hour at HTCondor's default NEGOTIATOR_INTERVAL of 60 s.
FULL_COLLECTION_EVERY = 60

# The pool load_fast_path negotiates over: a partitionable slot with a consumption policy (and a
# START reading time()), a static slot, and one job both slots can take.
_WARMUP_SLOTS = (
    """[Name = "warmup-pslot"; MyType = "Machine"; State = "Unclaimed"; PartitionableSlot = true;
        Cpus = 4; Memory = 8192; Disk = 100000; MachineResources = "Cpus Memory Disk";
        ConsumptionCpus = quantize(TARGET.RequestCpus, {1}); ConsumptionMemory = TARGET.RequestMemory;
        ConsumptionDisk = TARGET.RequestDisk; SlotWeight = Cpus; Rank = 0;
        Requirements = START; START = TARGET.RequestMemory <= MY.Memory && time() > 0]""",
    """[Name = "warmup-static"; MyType = "Machine"; State = "Unclaimed"; Cpus = 1; Memory = 2048;
        Disk = 10000; MachineResources = "Cpus Memory Disk"; SlotWeight = Cpus; Rank = 0;
        Requirements = START; START = TARGET.RequestMemory <= MY.Memory]""",
)
_WARMUP_JOB = """[MyType = "Job"; ClusterId = 1; ProcId = 0; JobStatus = 1; Owner = "warmup";
           User = "warmup@localhost"; RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000;
           Requirements = TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus; Rank = TARGET.Memory]"""

_lock = threading.Lock()
_paused = 0                 # cycles running with garbage collection paused
_was_enabled = False        # whether automatic collection was enabled when the first of them began
_was_frozen = False         # whether the process had frozen its heap when the first began
# Whether a HeapKeeper keeps this process's heap frozen: known here, because asking the collector
# (gc.get_freeze_count) walks every frozen object, tens of milliseconds on a daemon's heap.
_heap_frozen = False


def run_cycle(snapshot: Snapshot, accountant: AccountantState, settings: Settings, now: int,
              evaluator: PairEvaluator | None = None, descriptions: AdDescriptions | None = None,
              compilations: Compilations | None = None) -> CycleResult:
    """Negotiate over ``snapshot`` at time ``now``, with garbage collection paused.

    ``evaluator`` answers the cycle's job-slot questions; by default the fast path, built here for
    the snapshot, inside the pause (building it reads the slots' attributes into columns), with
    ``descriptions`` as what it knows of the ads already and ``compilations`` as what it compiled
    in earlier cycles (a daemon or a replay keeps both across cycles). With
    ``NEGOTIATORD_INCREMENTAL_CYCLE = False`` both are left out: the cycle reads, compiles and
    weighs everything afresh, the reference the kept state is tested against."""
    if not settings.incremental_cycle:
        descriptions = compilations = None
    with garbage_collection_paused():
        try:
            if evaluator is None:
                evaluator = FastEvaluator(snapshot.table, settings, now, descriptions, compilations)
            return negotiate(snapshot, accountant, settings, evaluator, now)
        except BaseException:
            if compilations is not None:      # what a cycle stopped half-way kept may be half made
                compilations.start_over()
            raise


class CycleProcessFailed(Exception):
    """The child process negotiating a cycle ended without a result: killed by a signal, or it
    raised an exception. Nothing of that cycle exists anywhere but in this error."""

    def __init__(self, pid: int, reason: str) -> None:
        super().__init__(f"the cycle's child process {pid} {reason}")
        self.pid = pid
        self.reason = reason


@dataclass(frozen=True)
class ChildCycle:
    """A cycle run in a child process: its result, and the memory the child made its own."""

    result: CycleResult
    pid: int
    private_bytes: int | None     # the child's pages not shared with the parent at its end (its USS)
    overhead_s: float             # forking the child and taking its result back, beyond run_cycle's own time


def run_cycle_in_child(snapshot: Snapshot, accountant: AccountantState, settings: Settings, now: int,
                       descriptions: AdDescriptions | None = None,
                       started: Callable[[int], None] | None = None) -> ChildCycle:
    """:func:`run_cycle` in a child process forked for it; ``started`` is told the child's pid
    (a caller that stops may kill it). Raises :class:`CycleProcessFailed` if the child ends
    without a result."""
    # the ads whose descriptions the child may learn, listed once: the child inherits the list
    records = _described_records(snapshot) if descriptions is not None else []
    reader, writer = os.pipe()
    forked = time.perf_counter()
    pid = os.fork()
    if pid == 0:    # the child: never returns
        os.close(reader)
        _negotiate_in_child(writer, snapshot, accountant, settings, now, descriptions, records)
    os.close(writer)
    if started is not None:
        started(pid)
    with open(reader, "rb") as pipe:
        payload = pipe.read()       # until the child closes its end: done, or dead
    try:
        answer = pickle.loads(payload)
    except Exception:  # nothing, or cut short: the child died
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            raise CycleProcessFailed(pid, f"was killed by signal {number} ({signal.Signals(number).name})") from None
        raise CycleProcessFailed(pid, f"exited with status {os.WEXITSTATUS(status)} without a result") from None
    # A child that has sent its answer only exits: unmapping its copy of the daemon's memory takes a
    # while (~0.2 s at 45k slots), which the cycle need not wait for.
    threading.Thread(target=os.waitpid, args=(pid, 0), name=f"reaper-{pid}", daemon=True).start()
    if isinstance(answer, str):
        raise CycleProcessFailed(pid, f"failed: {answer}")
    result, private_bytes, seconds, learnt = answer
    if descriptions is not None:
        for index, read in learnt:
            descriptions.of(records[index]).update(read)
    return ChildCycle(result, pid, private_bytes, max(0.0, time.perf_counter() - forked - seconds))


def _negotiate_in_child(writer: int, snapshot: Snapshot, accountant: AccountantState, settings: Settings,
                        now: int, descriptions: AdDescriptions | None, records: list) -> NoReturn:
    """The child's whole life: negotiate, send the answer (or the error) down ``writer``, exit;
    what it learns of ``records``' ads goes with the answer, by their place in the list."""
    status = 1
    try:
        signal.set_wakeup_fd(-1)    # the parent's event loop reads that one: a signal here is not its own
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        os.closerange(3, writer)
        os.closerange(writer + 1, os.sysconf("SC_OPEN_MAX"))
        try:
            started = time.perf_counter()
            known = _read_so_far(records, descriptions)
            result = run_cycle(snapshot, accountant, settings, now, descriptions=descriptions)
            learnt = _read_since(records, known, descriptions)
            answer: object = (result, _private_bytes(), time.perf_counter() - started, learnt)
        except Exception as error:
            answer = f"{type(error).__name__}: {error}"
        payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        with open(writer, "wb") as pipe:
            pipe.write(payload)
        status = 0
    finally:
        os._exit(status)


def _described_records(snapshot: Snapshot) -> list[object]:
    """The records the fast path files its descriptions under: each slot, and each autocluster's
    representative job."""
    return [*snapshot.table.slots, *(autocluster.representative for autocluster in snapshot.autoclusters)]


def _read_so_far(records: list[object], descriptions: AdDescriptions | None) -> list[int]:
    """How many attributes of each record's ad are described already."""
    return [] if descriptions is None else [len(descriptions.of(record)) for record in records]


def _read_since(records: list[object], known: list[int],
                descriptions: AdDescriptions | None) -> list[tuple[int, list[tuple[str, Description]]]]:
    """The descriptions read since :func:`_read_so_far` counted ``known``, by record index
    (a description, once read, is never replaced: what was read after ``known`` is at its end)."""
    if descriptions is None:
        return []
    learnt = []
    for index, (record, count) in enumerate(zip(records, known)):
        read = descriptions.of(record)
        if len(read) > count:
            learnt.append((index, list(read.items())[count:]))
    return learnt


def _private_bytes() -> int | None:
    """This process's private memory (``Private_Clean`` + ``Private_Dirty``), Linux only."""
    try:
        with open("/proc/self/smaps_rollup") as rollup:
            fields = dict(line.split(":", 1) for line in rollup if line.startswith("Private_"))
    except OSError:
        return None
    return sum(int(value.split()[0]) for value in fields.values()) * 1024


def load_fast_path(settings: Settings) -> CycleResult:
    """Run one cycle over the built-in two-slot pool, assessing the job against both slots, so
    that the fast path's kernels are loaded before the first real cycle."""
    slots = [classad2.ClassAd(text) for text in _WARMUP_SLOTS]
    snapshot = build_snapshot(slots, [classad2.ClassAd(_WARMUP_JOB)], settings)
    return run_cycle(snapshot, AccountantState(), settings, int(time.time()))


@contextmanager
def garbage_collection_paused() -> Iterator[None]:
    """Run the block with automatic garbage collection off (as it was, once no cycle needs it off)."""
    global _paused, _was_enabled, _was_frozen
    with _lock:
        if _paused == 0:
            _was_enabled, _was_frozen = gc.isenabled(), _heap_frozen
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0:
                gc.freeze()
                if not _was_frozen:
                    gc.unfreeze()
                if _was_enabled:
                    gc.enable()


@dataclass
class HeapKeeper:
    """A long-running process's heap, frozen once a second and collected in full now and then.

    ``longest``: the most cycles between two full collections. Past ``full_every`` cycles a
    collection that found no garbage puts off the next one twice as long, up to ``longest``, and
    one that found some brings it back to ``full_every``: a replay's cycles make no reference
    cycles most of the time (a full collection of its heap cost 6% of a KTH replay and freed
    nothing), but may where fair sharing keeps its usage tree."""

    full_every: int = FULL_COLLECTION_EVERY
    longest: int = 0                # 0: full_every
    cycles: int = 0
    _last: int = 0                  # the cycle count at the last full collection
    _interval: int = 0              # cycles from it to the next (0: full_every)

    def tick(self) -> None:
        """Leave what exists now out of later collections (called about once a second)."""
        global _heap_frozen
        gc.freeze()
        _heap_frozen = True

    def after_cycle(self) -> float | None:
        """Every ``full_every`` cycles (further apart up to ``longest`` while collections find no
        garbage), collect everything once; returns the seconds it took, None after the other
        cycles."""
        self.cycles += 1
        interval = self._interval or self.full_every
        if self.cycles < self._last + interval:
            return None
        global _heap_frozen
        started = time.perf_counter()
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        _heap_frozen = True
        self._last = self.cycles
        self._interval = self.full_every if found else min(2 * interval, max(self.longest, self.full_every))
        return time.perf_counter() - started

    def release(self) -> None:
        """Hand the frozen heap back to the collector: a daemon that stops inside a process that
        goes on (tests, an embedding program) leaves it as it found it. Left frozen, every later
        cycle would freeze its own objects too (:func:`garbage_collection_paused` keeps a frozen
        heap frozen), and their reference cycles would never be collected."""
        global _heap_frozen
        gc.unfreeze()
        _heap_frozen = False
