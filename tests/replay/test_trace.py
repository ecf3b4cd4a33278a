"""Reading traces: the SWF mapping, one counted rule per dropped or adjusted job, clear errors."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from negotiatord.replay import NodeShape, PoolSpecError, TraceError, default_pool, fit_to_nodes, read_trace

from .conftest import HISTORY, replay_command

SWF_HEADER = "; UnixStartTime: 1000\n; MaxNodes: 10\n; MaxProcs: 40\n"


def swf(tmp_path: Path, lines: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(SWF_HEADER + lines)
    return path


def test_swf_fields_map_to_requests_submitter_and_group(tmp_path: Path) -> None:
    # requested 3 procs, 2048 KB per proc requested: ceil(2048 x 3 / 1024) = 6 MB; user 7, group 4
    trace = read_trace(swf(tmp_path, "9 50 -1 600 2 -1 100 3 700 2048 1 7 4 -1 -1 -1 -1 -1\n"))
    (job,) = trace.jobs
    assert (job.id, job.submit, job.runtime, job.cpus, job.memory_mb, job.user, job.group) == (
        "9", 50, 600, 3, 6, "u7", "group_g4")
    assert (trace.start_epoch, trace.max_nodes, trace.max_procs) == (1000, 10, 40)
    assert default_pool(trace) == (10, NodeShape(4, 4096, NodeShape.with_cpus(4).disk_kb))


def test_every_cleaning_rule_is_counted(tmp_path: Path) -> None:
    trace = read_trace(swf(tmp_path, "\n".join([
        "1 -1 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1",     # missing submit time
        "2  0 -1 -1 1 -1 -1 1 -1 -1 5 1 1 -1 -1 -1 -1 -1",     # cancelled, never ran
        "3  0 -1  0 1 -1 -1 1 -1 -1 5 1 1 -1 -1 -1 -1 -1",     # cancelled, run time 0
        "4  0 -1 -1 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1",     # run time unknown
        "5  0 -1  0 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1",     # run time 0
        "6  0 -1 10 -1 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",  # no procs, memory, user or group
        "7  0 -1 10 2 -1 512 -1 -1 -1 0 1 -1 -1 -1 -1 -1 -1",   # procs allocated, memory used
    ]) + "\n"), limit=None)
    assert trace.cleaning.document() == {
        "records": 7, "kept": 2,
        "dropped": {"cancelled_never_ran": 2, "missing_run_time": 1, "missing_submit_time": 1, "zero_run_time": 1},
        "adjusted": {"cpus_defaulted_to_1": 1, "cpus_from_allocated_processors": 1, "memory_defaulted": 1,
                     "memory_from_used_memory": 1, "user_unknown": 1},
        "memory_default_mb_per_cpu": 1024,
    }
    six, seven = trace.jobs
    assert (six.cpus, six.memory_mb, six.user, six.group) == (1, 1024, "unknown", None)
    assert (seven.cpus, seven.memory_mb) == (2, 1)        # ceil(512 KB x 2 / 1024) = 1 MB


def test_requests_larger_than_a_node_are_clamped_and_counted(tmp_path: Path) -> None:
    trace = read_trace(swf(tmp_path, "1 0 -1 10 8 -1 -1 8 -1 4194304 1 1 1 -1 -1 -1 -1 -1\n"))
    cleaning = trace.cleaning
    (job,) = fit_to_nodes(trace.jobs, [NodeShape(4, 8192, 100)], cleaning)
    assert (job.cpus, job.memory_mb, job.disk_kb) == (4, 8192, 100)   # 8 cpus; 4194304 KB x 8 / 1024 = 32768 MB
    assert cleaning.adjusted == {"cpus_clamped_to_node": 1, "memory_clamped_to_node": 1, "disk_clamped_to_node": 1}


def test_jobs_limit_counts_records_and_gzip_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.swf.gz"
    lines = "".join(f"{i} {i} -1 5 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n" for i in range(1, 6))
    path.write_bytes(gzip.compress((SWF_HEADER + lines).encode()))
    trace = read_trace(path, limit=3)
    assert [job.id for job in trace.jobs] == ["1", "2", "3"] and trace.cleaning.records == 3


@pytest.mark.parametrize(("line", "message"), [
    ("1 0 -1 10 1\n", "t.swf:4: expected 18 fields, found 5"),
    ("1 0 -1 ten 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n", "t.swf:4: a field is not a number"),
    ("1 0 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 \u00e9\n", r"t.swf:4: a byte that is not ASCII \(expected SWF"),
])
def test_a_bad_line_is_named_by_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        read_trace(swf(tmp_path, line))


def test_the_command_reports_a_bad_trace_without_a_traceback(tmp_path: Path, replay_files: tuple[Path, Path]) -> None:
    path = swf(tmp_path, "1 0 -1 10 1\n")
    done = subprocess.run([sys.executable, "-m", "negotiatord", "replay", "--config", str(replay_files[0]),
                           "--trace", str(path), "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"negotiatord: {path}:4: expected 18 fields, found 5\n"


def test_a_pool_that_cannot_be_built_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                 replay_files: tuple[Path, Path]) -> None:
    config, trace = replay_files
    assert replay_command("--config", str(config), "--trace", str(trace), "--nodes", "2",
                          "--out", str(tmp_path)) == 2
    assert capsys.readouterr().err == ("negotiatord: give --nodes and --node together "
                                       "(or neither, for the SWF header's pool)\n")


def test_a_pool_needs_nodes_and_node_together() -> None:
    with pytest.raises(PoolSpecError, match="Cpus=N"):
        NodeShape.parse("Cpus=2, Gpus=1")
    assert NodeShape.parse("Cpus=2") == NodeShape(2, 2048, NodeShape.with_cpus(2).disk_kb)


def test_csv_columns_by_name_with_the_shared_rules(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("submit,job,runtime,cpus,memory,user,group,queue\n"
                    "10,a,100,2,3000,alice,group_physics,short\n"
                    "0,b,50,,-1,,,\n"                          # cpus, memory, user unknown
                    "5,c,0,1,100,bob,,\n"                       # zero run time
                    "\n"
                    "7,d,-1,1,100,bob,,\n")                     # run time unknown
    trace = read_trace(path)
    assert [(j.id, j.submit, j.runtime, j.cpus, j.memory_mb, j.user, j.group) for j in trace.jobs] == [
        ("b", 0, 50, 1, 1024, "unknown", None), ("a", 10, 100, 2, 3000, "alice", "group_physics")]
    assert trace.cleaning.document()["dropped"] == {"missing_run_time": 1, "zero_run_time": 1}
    assert trace.cleaning.document()["adjusted"] == {"cpus_defaulted_to_1": 1, "memory_defaulted": 1,
                                                     "user_unknown": 1}


@pytest.mark.parametrize(("text", "message"), [
    ("job,submit,cpus\n1,0,1\n", "t.csv:1: the header has no column runtime"),
    ("job,submit,runtime\n1,0,1\n2,soon,1\n", "t.csv:3: submit is not a number: 'soon'"),
])
def test_a_bad_csv_is_named_by_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(TraceError, match=message):
        read_trace(tmp_path / "t.csv")


def test_condor_history_ads_give_submit_and_run_times() -> None:
    trace = read_trace(HISTORY)
    assert trace.cleaning.records == 5 and trace.cleaning.kept == len(trace.jobs)
    first = trace.jobs[0]
    # QDate 1750710873 is submit time 0; RemoteWallClockTime 2.0; RequestCpus 1, RequestMemory 1024
    assert (first.id, first.submit, first.runtime, first.cpus, first.memory_mb, first.user) == (
        "ap2002.chtc.wisc.edu#4373427.0#1750710873", 0, 2.0, 1, 1024, "snayar2")
    assert trace.start_epoch == 1750710873


def test_a_history_trace_without_a_pool_size_asks_for_one() -> None:
    with pytest.raises(PoolSpecError, match="--nodes"):
        default_pool(read_trace(HISTORY))
