"""What a replay's figures are measured over: the period up to the last job's finish, bursts that
arrive at a full pool, and series of long replays sampled evenly in time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from negotiatord.replay.report import SERIES_POINTS, burst_summary, jain_summary, share_summary, stranded_summary
from negotiatord.replay.simulate import CycleRecord, ReplayResult
from negotiatord.accountant import AccountantState

from .conftest import CPU_CENTRIC, NODE, replay_command

# Fields: job submit wait runtime alloc_procs avg_cpu used_mem req_procs req_time req_mem status user
# group executable queue partition preceding_job think_time.
ONE_JOB = """\
; MaxNodes: 2
; MaxProcs: 4
1    0 -1  100  2 -1   -1  2 -1 -1 1 1 1 -1 -1 -1 -1 -1
"""
# Jobs 1 and 2 fill both nodes until t=300; jobs 3 and 4 arrive at t=10 (a burst whose first cycle
# is the one at t=60) and place nothing until the cycle at t=300, which starts both.
FULL_POOL_BURST = """\
; MaxNodes: 2
; MaxProcs: 4
1    0 -1  300  2 -1   -1  2 -1 -1 1 1 1 -1 -1 -1 -1 -1
2    0 -1  300  2 -1   -1  2 -1 -1 1 1 1 -1 -1 -1 -1 -1
3   10 -1  100  2 -1   -1  2 -1 -1 1 1 1 -1 -1 -1 -1 -1
4   10 -1  100  2 -1   -1  2 -1 -1 1 1 1 -1 -1 -1 -1 -1
"""


def replayed(tmp_path: Path, trace: str) -> dict:
    (tmp_path / "replay.conf").write_text(CPU_CENTRIC)
    (tmp_path / "trace.swf").write_text(trace)
    assert replay_command("--config", str(tmp_path / "replay.conf"), "--trace", str(tmp_path / "trace.swf"),
                          "--nodes", "2", "--node", NODE, "--out", str(tmp_path / "out")) == 0
    return json.loads((tmp_path / "out" / "summary.json").read_text())


def test_the_period_ends_at_the_last_finish_not_at_the_last_cycle(tmp_path: Path) -> None:
    """The job ends at t=100; the next cycle is at the grid point 120. Measured to 100, the job's
    2 cpus held for 100 s of a 4-cpu pool's 100 s are half of it."""
    summary = replayed(tmp_path, ONE_JOB)
    assert [cycle["LastNegotiationCycleTime"] for cycle in summary["cycles"]["per_cycle"]] == [0, 120]
    assert summary["period"] == {"start": 0, "end": 100, "seconds": 100, "start_epoch": 0}
    assert summary["utilization"] == pytest.approx(0.5)


def test_a_burst_that_arrives_at_a_full_pool_is_scored_from_its_first_start(tmp_path: Path) -> None:
    """Jobs 3 and 4 first meet the cycle at t=60 (grid index 1) and both start at t=300 (index 5),
    in one cycle: 1 cycle to fill, after 4 cycles that could place none of it. The burst of jobs 1
    and 2 starts whole in its first cycle."""
    bursts = replayed(tmp_path, FULL_POOL_BURST)["bursts"]
    assert bursts["series"] == [
        {"time": 0, "jobs": 2, "placed": 2, "cycles_to_first_start": 0, "cycles_to_fill": 1},
        {"time": 60, "jobs": 2, "placed": 2, "cycles_to_first_start": 4, "cycles_to_fill": 1},
    ]
    assert bursts["cycles_to_fill"]["mean"] == 1.0 and bursts["never_placed"] == 0


def cycle(time: float, load: float, stranded: float) -> CycleRecord:
    return CycleRecord(index=int(time), time=time, matches=0, total_slots=1, candidate_slots=1, idle_jobs=0,
                       submitters=0, pie_spins=0, busy_cpus=0.0, queued=0,
                       group_load={"group_a": load, "group_b": 1.0}, stranded_cpus=stranded, duration_s=0.0)


def test_long_series_are_sampled_evenly_in_time() -> None:
    """3,000 cycles: one a second for the first 2,900 s, then 100 a thousand seconds apart. Every
    k-th cycle would keep 2,000 points of which 97% cover the first 3% of the time; sampled evenly
    in time, each point is the value in force at its time (a step function: a cycle's value holds
    until the next cycle)."""
    dense = [cycle(float(second), 0.5 if second < 1000 else 2.0, second % 7) for second in range(2900)]
    sparse = [cycle(2900.0 + 1000 * step, 1.0, 3.0) for step in range(1, 101)]
    cycles = dense + sparse
    end = 103_000.0
    step = end / SERIES_POINTS

    def value_at(at: float, of: str) -> float:
        last = [c for c in cycles if c.time <= at][-1]
        return {"load": last.group_load["group_a"], "stranded": last.stranded_cpus}[of]

    share = share_summary(cycles, end)
    series = share["groups"]["group_a"]["series"]
    assert share["sampled_every_s"] == pytest.approx(step)
    assert [at for at, _ in series] == pytest.approx([i * step for i in range(SERIES_POINTS + 1)])
    assert [value for _, value in series] == [value_at(at, "load") for at, _ in series]
    stranded = stranded_summary(cycles, end)["series"]
    assert [value for _, value in stranded] == [value_at(at, "stranded") for at, _ in stranded]
    jain = jain_summary(cycles, end)["series"]
    assert len(jain) == SERIES_POINTS + 1
    # the time-weighted means still cover every cycle: 0.5 for 1,000 s; 2.0 from 1,000 s to the first
    # sparse cycle at 3,900 s; 1.0 for the last 99,100 s
    assert share["groups"]["group_a"]["mean"] == pytest.approx((1000 * 0.5 + 2900 * 2.0 + 99_100 * 1.0) / end)


def test_short_series_keep_every_cycle() -> None:
    cycles = [cycle(60.0 * index, 1.0, 0.0) for index in range(10)]
    share = share_summary(cycles, 600.0)
    assert share["sampled_every_s"] is None
    assert [at for at, _ in share["groups"]["group_a"]["series"]] == [60.0 * index for index in range(10)]


def test_bursts_of_a_long_replay_are_listed_evenly_in_time_and_all_counted() -> None:
    from negotiatord.replay.simulate import JobRun
    from negotiatord.replay.trace import TraceJob

    runs = []
    for index in range(3000):       # a burst of two at every grid point, the last thousand far apart
        submit = float(index) if index < 2000 else 2000.0 + 1000 * (index - 2000)
        for _ in range(2):
            job = TraceJob(id=str(len(runs)), submit=submit, runtime=1.0, cpus=1, memory_mb=1, disk_kb=1, user="u",
                           group=None)
            runs.append(JobRun(job, len(runs) + 1, "u@trace", start=submit, start_cycle=int(submit)))
    result = ReplayResult(runs=runs, cycles=[], skipped_cycles=0, origin=0.0, interval=1.0, end=runs[-1].start + 1,
                          submitted=len(runs), accountant=AccountantState(), pool_cpus=2, wall_time_s=0.0,
                          start_epoch=0)
    bursts = burst_summary(result)
    assert bursts["count"] == 3000
    times = [burst["time"] for burst in bursts["series"]]
    assert len(times) <= SERIES_POINTS + 1
    # the far-apart thousand hold 99.8% of the period: each is listed; the dense two thousand, a few
    assert sum(time >= 2000 for time in times) == 1000 and sum(time < 2000 for time in times) <= 5
