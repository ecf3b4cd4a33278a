"""Fragmentation (free cpus a p-slot strands because the jobs took its memory first), and the
per-cycle series of long replays thinned without changing their means."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.replay import NodeShape, SimulatedPool, read_trace, replay
from negotiatord.replay.report import stranded_summary
from negotiatord.replay.simulate import CycleRecord
from negotiatord.settings import Settings


def test_cpus_left_without_memory_are_stranded_until_the_memory_comes_back(settings: Settings,
                                                                            tmp_path: Path) -> None:
    """One node of 4 cpus and 4096 MB. At t=0 job a (1 cpu, 3072 MB, 100 s) and job b (1 cpu,
    1024 MB, 200 s) both start on it: 2 cpus are left beside 0 MB, less than the smallest request
    (1024 MB), so 2 cpus are stranded. At the cycle at t=120 job a has ended: 3 cpus and 3072 MB,
    nothing stranded; at t=240 job b has ended too. The period ends with job b at t=200. Mean: 2
    cpus for 120 s of 200 = 1.2."""
    trace_file = tmp_path / "memory.csv"
    trace_file.write_text("job,submit,runtime,cpus,memory,user,group\n"
                          "a,0,100,1,3072,u1,g1\nb,0,200,1,1024,u1,g1\n")
    result = replay(read_trace(trace_file), settings, SimulatedPool.alike(1, NodeShape.parse("Cpus=4, Memory=4096")))
    assert [(cycle.time, cycle.stranded_cpus) for cycle in result.cycles] == [(0, 2), (120, 0), (240, 0)]
    assert stranded_summary(result.cycles, result.end) == {
        "mean": pytest.approx(1.2), "max": 2, "sampled_every_s": None, "series": [[0, 2], [120, 0], [240, 0]]}


def test_long_replays_sample_the_series_but_average_over_all() -> None:
    """4,001 cycles, 60 s apart, stranding 1 cpu on even cycles and 0 on odd ones, up to t=240,060:
    the series holds 2,001 points 120.03 s apart (test_measured_period.py checks their values); the
    mean is over every cycle: 2,001 even cycles of 60 s out of 4,001 = 2001 / 4001."""
    cycles = [CycleRecord(index=i, time=60.0 * i, matches=0, total_slots=1, candidate_slots=1, idle_jobs=0,
                          submitters=0, pie_spins=0, busy_cpus=0.0, queued=0, group_load={},
                          stranded_cpus=float(i % 2 == 0), duration_s=0.0) for i in range(4001)]
    document = stranded_summary(cycles, 60.0 * 4001)
    assert document["sampled_every_s"] == pytest.approx(120.03) and len(document["series"]) == 2001
    assert document["mean"] == pytest.approx(2001 / 4001)
