"""accasim_bench's inputs to AccaSim (benchmarks/accasim_bench.py), without timing anything: the SWF
file it writes is the job list negotiatord replays, a missing accasim is reported, not raised, and
negotiatord's replay at its interval of 1 s makes the schedule the benchmark compares AccaSim's to."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks import accasim_bench
from negotiatord.replay import NodeShape, SimulatedPool, TraceJob, read_trace, replay
from negotiatord.settings import load_settings


def jobs() -> list[TraceJob]:
    # one node of 4 cpus: job 2 waits for job 1, job 3 fits beside job 1 and passes job 2 (FIFO with skip)
    return [TraceJob("1", 100, 50, 3, 3072, 1024, accasim_bench.SUBMITTER, None),
            TraceJob("2", 101, 10, 4, 4096, 1024, accasim_bench.SUBMITTER, None),
            TraceJob("3", 102, 20, 1, 1024, 1024, accasim_bench.SUBMITTER, None),
            TraceJob("4", 160, 5, 2, 2048, 1024, accasim_bench.SUBMITTER, None)]


def test_the_workload_written_for_accasim_reads_back_as_the_same_jobs(tmp_path: Path) -> None:
    path = tmp_path / "jobs.swf"
    accasim_bench.write_workload(path, jobs(), 843480031)
    trace = read_trace(path)
    assert [(job.id, job.submit, job.runtime, job.cpus, job.memory_mb) for job in trace.jobs] == [
        (job.id, job.submit, job.runtime, job.cpus, job.memory_mb) for job in jobs()]
    assert trace.start_epoch == 843480031


def test_a_job_off_whole_seconds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="whole seconds"):
        accasim_bench.write_workload(tmp_path / "jobs.swf", [replace(jobs()[0], submit=100.5)], 0)


def test_a_missing_accasim_is_reported_by_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise ImportError("No module named 'accasim'")

    monkeypatch.setattr(accasim_bench, "_import_accasim", missing)
    assert accasim_bench.accasim_child(tmp_path) == accasim_bench.MISSING
    assert json.loads((tmp_path / accasim_bench.RUN_FILE).read_text()) == {"missing": "No module named 'accasim'"}


def test_negotiatord_at_a_one_second_interval_starts_first_in_first_out_with_skipping(tmp_path: Path) -> None:
    """The schedule AccaSim's FirstInFirstOut dispatcher with skip_jobs_on_allocation makes of these
    jobs, worked out by hand: job 2 (4 cpus) waits for job 1 to end at 150, job 3 passes it at 102,
    job 4 starts at 160 as job 2 ends. accasim_bench.py holds AccaSim to it on the real trace."""
    shape, epoch = NodeShape.with_cpus(4), 843480031
    accasim_bench.write_workload(tmp_path / accasim_bench.WORKLOAD, jobs(), epoch)
    trace = replace(read_trace(tmp_path / accasim_bench.WORKLOAD), jobs=jobs())
    settings = replace(load_settings(accasim_bench.CONFIG), negotiator_interval=1.0)
    result = replay(trace, settings, SimulatedPool.alike(1, shape))
    assert {run.job.id: run.start for run in result.runs} == {"1": 100, "2": 150, "3": 102, "4": 160}
