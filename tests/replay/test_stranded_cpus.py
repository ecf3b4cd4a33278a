"""Fragmentation: free cpus a p-slot strands because the jobs took its memory first."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.replay import NodeShape, SimulatedPool, read_trace, replay
from negotiatord.replay.report import stranded_summary
from negotiatord.settings import Settings


def test_cpus_left_without_memory_are_stranded_until_the_memory_comes_back(settings: Settings,
                                                                            tmp_path: Path) -> None:
    """One node of 4 cpus and 4096 MB. At t=0 job a (1 cpu, 3072 MB, 100 s) and job b (1 cpu,
    1024 MB, 200 s) both start on it: 2 cpus are left beside 0 MB, less than the smallest request
    (1024 MB), so 2 cpus are stranded. At the cycle at t=120 job a has ended: 3 cpus and 3072 MB,
    nothing stranded; at t=240 job b has ended too. Mean: 2 cpus for 120 s of 240 = 1."""
    trace_file = tmp_path / "memory.csv"
    trace_file.write_text("job,submit,runtime,cpus,memory,user,group\n"
                          "a,0,100,1,3072,u1,g1\nb,0,200,1,1024,u1,g1\n")
    result = replay(read_trace(trace_file), settings, SimulatedPool(1, NodeShape.parse("Cpus=4, Memory=4096")))
    assert [(cycle.time, cycle.stranded_cpus) for cycle in result.cycles] == [(0, 2), (120, 0), (240, 0)]
    assert stranded_summary(result.cycles, result.end) == {
        "mean": pytest.approx(1.0), "max": 2, "every": 1, "series": [[0, 2], [120, 0], [240, 0]]}
