"""Whole replays: deterministic outputs, skipped quiet cycles changing nothing, real traces with
every job accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from negotiatord.replay import NodeShape, SimulatedPool, default_pool, fit_to_nodes, read_trace, replay
from negotiatord.replay.html import deterministic_part
from negotiatord.replay.report import job_rows, jain_summary, utilization
from negotiatord.settings import Settings, load_settings

from .conftest import HISTORY, KTH, NODE, replay_command


def run_cli(config: Path, trace: Path, out: Path, *extra: str) -> dict:
    assert replay_command("--config", str(config), "--trace", str(trace), "--out", str(out), *extra) == 0
    return json.loads((out / "summary.json").read_text())


def without_wall_time(summary: dict) -> dict:
    return {key: value for key, value in summary.items() if key != "wall_time_s"}


def test_the_same_inputs_give_the_same_files(replay_files: tuple[Path, Path], tmp_path: Path) -> None:
    config, trace = replay_files
    first = run_cli(config, trace, tmp_path / "a", "--nodes", "2", "--node", NODE)
    second = run_cli(config, trace, tmp_path / "b", "--nodes", "2", "--node", NODE)
    assert (tmp_path / "a" / "jobs.csv").read_bytes() == (tmp_path / "b" / "jobs.csv").read_bytes()
    pages = [deterministic_part((tmp_path / run / "report.html").read_text()) for run in ("a", "b")]
    assert pages[0] == pages[1] and pages[0].count("<img") == 4
    assert json.dumps(without_wall_time(first)) == json.dumps(without_wall_time(second))


def kth_replay(settings: Settings, jobs: int, nodes: int, node: NodeShape, skip: bool):
    trace = read_trace(KTH, jobs)
    trace.jobs = fit_to_nodes(trace.jobs, [node], trace.cleaning)
    return replay(trace, settings, SimulatedPool.alike(nodes, node), skip_quiet_cycles=skip)


@pytest.mark.parametrize("source", ["hand", "kth"])
def test_skipping_quiet_cycles_changes_no_match(source: str, replay_files: tuple[Path, Path],
                                                settings: Settings) -> None:
    """A cycle after one that matched nothing, with no submission or completion in between, is
    skipped; every job starts at the same time on the same slot as when every cycle runs. The KTH
    slice on 3 two-cpu nodes keeps a queue most of the time, so many quiet cycles are skipped."""
    results = []
    for skip in (False, True):
        if source == "hand":
            trace = read_trace(replay_files[1])
            shape = NodeShape.parse(NODE)
            trace.jobs = fit_to_nodes(trace.jobs, [shape], trace.cleaning)
            results.append(replay(trace, settings, SimulatedPool.alike(2, shape), skip_quiet_cycles=skip))
        else:
            results.append(kth_replay(settings, 60, 3, NodeShape.with_cpus(2), skip))
    every, skipping = results
    assert every.skipped_cycles == 0 and skipping.skipped_cycles > 0
    assert len(skipping.cycles) + skipping.skipped_cycles == len(every.cycles)
    assert list(job_rows(skipping)) == list(job_rows(every))
    assert utilization(skipping) == utilization(every)
    assert jain_summary(skipping.cycles, skipping.end)["mean"] == pytest.approx(
        jain_summary(every.cycles, every.end)["mean"])
    assert [r.name for r in skipping.accountant.customers()] == [r.name for r in every.accountant.customers()]
    for kept, ran in zip(skipping.accountant.customers(), every.accountant.customers()):
        assert (kept.real_priority, kept.accumulated_usage) == pytest.approx((ran.real_priority, ran.accumulated_usage))


def test_a_kth_slice_runs_and_accounts_for_every_job(replay_files: tuple[Path, Path], tmp_path: Path) -> None:
    summary = run_cli(replay_files[0], KTH, tmp_path, "--jobs", "300")
    cleaning, jobs = summary["cleaning"], summary["jobs"]
    assert cleaning["records"] == 300
    assert cleaning["kept"] + sum(cleaning["dropped"].values()) == 300
    assert jobs["started"] == jobs["kept"] == cleaning["kept"]
    node = {"Cpus": 1, "Memory": 1024, "Disk": 104857600}
    assert summary["pool"] == {"nodes": 100, "cpus": 100, "node": node, "shapes": [{**node, "nodes": 100}]}
    rows = (tmp_path / "jobs.csv").read_text().splitlines()
    assert len(rows) == 1 + cleaning["kept"] and all(row.split(",")[2] for row in rows[1:])
    assert summary["cycles"]["matches"] == cleaning["kept"]


def test_a_condor_history_dump_runs(replay_files: tuple[Path, Path], tmp_path: Path) -> None:
    summary = run_cli(replay_files[0], HISTORY, tmp_path, "--nodes", "1", "--node", "Cpus=2, Memory=4096")
    assert summary["cleaning"]["records"] == 5
    assert summary["jobs"]["started"] == summary["cleaning"]["kept"] == 5
    assert summary["jobs"]["never_started"] == 0


def test_until_stops_negotiating_and_counts_what_was_left(replay_files: tuple[Path, Path], tmp_path: Path) -> None:
    # Cycles at 0 and 60 only: jobs 1-3 submitted (job 3 waits, no cpu free); jobs 4 and 7 never are.
    summary = run_cli(*replay_files, tmp_path, "--nodes", "2", "--node", NODE, "--until", "90")
    assert summary["jobs"] == {"kept": 5, "submitted": 3, "started": 2, "finished_by_end": 0,
                               "never_started": 1, "not_submitted": 2}
    assert summary["period"]["end"] == 90
    assert [c["LastNegotiationCycleTime"] for c in summary["cycles"]["per_cycle"]] == [0, 60]


def test_default_pool_of_kth_is_its_header() -> None:
    assert default_pool(read_trace(KTH, 1)) == (100, NodeShape.with_cpus(1))


def test_a_pslot_without_consumption_policy_is_held_whole_by_its_job(tmp_path: Path) -> None:
    """Without a consumption policy a match takes the whole slot and costs its whole SlotWeight
    (matchmaker.cpp: "traditional match cost is just slot weight"), so the replay's job holds all
    4 cpus of its node for its run time: the second 1-cpu job waits for the first to end."""
    config = tmp_path / "no_policy.conf"
    config.write_text("NEGOTIATOR_INTERVAL = 60\nSLOT_WEIGHT = Cpus\n")
    trace_file = tmp_path / "two.csv"
    trace_file.write_text("job,submit,runtime,cpus,memory,user\na,0,100,1,100,u1\nb,0,100,1,100,u1\n")
    result = replay(read_trace(trace_file), load_settings(config), SimulatedPool.alike(1, NodeShape.parse("Cpus=4")))
    assert [(run.job.id, run.start, run.cpus, run.cost) for run in result.runs] == [("a", 0, 4, 4), ("b", 120, 4, 4)]
    assert result.cycles[0].busy_cpus == 4
