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
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from collections.abc import Iterator

import classad2

from negotiatord.accountant import AccountantState
from negotiatord.cycle.negotiate import negotiate
from negotiatord.cycle.result import CycleResult
from negotiatord.evaluation import PairEvaluator
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
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


def run_cycle(snapshot: Snapshot, accountant: AccountantState, settings: Settings, now: int,
              evaluator: PairEvaluator | None = None, descriptions: AdDescriptions | None = None) -> CycleResult:
    """Negotiate over ``snapshot`` at time ``now``, with garbage collection paused.

    ``evaluator`` answers the cycle's job-slot questions; by default the fast path, built here for
    the snapshot, inside the pause (building it reads the slots' attributes into columns), with
    ``descriptions`` as what it knows of the ads already (a daemon keeps one across cycles)."""
    with garbage_collection_paused():
        if evaluator is None:
            evaluator = FastEvaluator(snapshot.table, settings, now, descriptions)
        return negotiate(snapshot, accountant, settings, evaluator, now)


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
            _was_enabled, _was_frozen = gc.isenabled(), gc.get_freeze_count() > 0
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
    """A long-running process's heap, frozen once a second and collected in full now and then."""

    full_every: int = FULL_COLLECTION_EVERY
    cycles: int = 0

    def tick(self) -> None:
        """Leave what exists now out of later collections (called about once a second)."""
        gc.freeze()

    def after_cycle(self) -> float | None:
        """Every ``full_every`` cycles, collect everything once; returns the seconds it took,
        None after the other cycles."""
        self.cycles += 1
        if self.cycles % self.full_every:
            return None
        started = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return time.perf_counter() - started

    def release(self) -> None:
        """Hand the frozen heap back to the collector: a daemon that stops inside a process that
        goes on (tests, an embedding program) leaves it as it found it. Left frozen, every later
        cycle would freeze its own objects too (:func:`garbage_collection_paused` keeps a frozen
        heap frozen), and their reference cycles would never be collected."""
        gc.unfreeze()
