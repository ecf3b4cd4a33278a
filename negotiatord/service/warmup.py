"""Loading the fast path's machine code before the daemon says it is ready.

numba loads a kernel from its on-disk cache (or compiles it, on an install's very first start) the
first time it is called, holding the GIL for a few hundred milliseconds: done inside the first
cycle, that stalls the event loop and every request waiting on it. So the daemon runs one cycle
over a two-slot pool of its own (a partitionable slot with a consumption policy, a static slot,
one job) before it serves; the real cycles then find every kernel loaded.
"""

from __future__ import annotations

import time

import classad2

from negotiatord.accountant import AccountantState
from negotiatord.cycle.result import CycleResult
from negotiatord.pool.snapshot import Snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings

_SLOTS = (
    """[Name = "warmup-pslot"; MyType = "Machine"; State = "Unclaimed"; PartitionableSlot = true;
        Cpus = 4; Memory = 8192; Disk = 100000; MachineResources = "Cpus Memory Disk";
        ConsumptionCpus = quantize(TARGET.RequestCpus, {1}); ConsumptionMemory = TARGET.RequestMemory;
        ConsumptionDisk = TARGET.RequestDisk; SlotWeight = Cpus; Rank = 0;
        Requirements = START; START = TARGET.RequestMemory <= MY.Memory && time() > 0]""",
    """[Name = "warmup-static"; MyType = "Machine"; State = "Unclaimed"; Cpus = 1; Memory = 2048;
        Disk = 10000; MachineResources = "Cpus Memory Disk"; SlotWeight = Cpus; Rank = 0;
        Requirements = START; START = TARGET.RequestMemory <= MY.Memory]""",
)
_JOB = """[MyType = "Job"; ClusterId = 1; ProcId = 0; JobStatus = 1; Owner = "warmup";
           User = "warmup@localhost"; RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000;
           Requirements = TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus; Rank = TARGET.Memory]"""


def load_fast_path(settings: Settings) -> CycleResult:
    """Run one cycle over the built-in two-slot pool, assessing the job against both slots."""
    slots = [classad2.ClassAd(text) for text in _SLOTS]
    snapshot = Snapshot.build(slots, [classad2.ClassAd(_JOB)], settings)
    return run_cycle(snapshot, AccountantState(), settings, int(time.time()))
