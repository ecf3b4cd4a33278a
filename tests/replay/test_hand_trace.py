"""``negotiatord replay`` over the hand-made trace of conftest.py: every figure worked out by hand.

The pool: 2 nodes of 2 cpus, 2048 MB. Cycles every 60 s from the first submission (t = 0).
Kept jobs (ClusterId = submission order):

  job 1  submit   0, run 100, 2 cpus, group_g1 (u1)
  job 2  submit   0, run 200, 2 cpus, group_g2 (u2)
  job 3  submit  30, run  50, 1 cpu,  group_g1
  job 4  submit  70, run 300, 4 cpus clamped to the node's 2, group_g1
  job 7  submit 100, run  40, 1 cpu (allocated processors; requested is -1), group_g2

The cycles:

  t=0    jobs 1 and 2 idle; each group's quota (2) covers its job: job 1 -> node1, job 2 -> node2.
  t=60   job 3 arrived; no cpu free: no match.
         Nothing arrives or ends before t=70 (job 4): the next cycle is the grid point 120.
  t=120  job 1 ended (100): node1 has 2 cpus; jobs 3, 4, 7 idle. group_g1 (usage 0 / quota 2)
         goes first: job 3 takes 1 cpu of node1; job 4 (2 cpus) then fits no slot, so group_g1
         has no demand left that can run and lends the rest of its quota to group_g2, whose
         job 7 takes node1's last cpu (group_g2 at 3 cpus, over its quota of 2).
  t=180  jobs 7 (160) and 3 (170) ended: node1 has 2 cpus again; job 4 -> node1 (ends at 480).
  t=240  job 2 ended (200); no idle job: no match.
         Nothing arrives; the next completion is job 4 at 480: grid points 300, 360, 420 skipped.
  t=480  job 4 ended; nothing idle, running or to come: the replay ends. Cycles run: 6, skipped: 3.
"""

from __future__ import annotations

import base64
import csv
import json
import re
from pathlib import Path

import pytest


from .conftest import NODE, replay_command


@pytest.fixture(scope="module")
def out(replay_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    config, trace = replay_files
    folder = tmp_path_factory.mktemp("hand_out")
    assert replay_command("--config", str(config), "--trace", str(trace), "--nodes", "2", "--node", NODE,
                          "--out", str(folder)) == 0
    return folder


@pytest.fixture(scope="module")
def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_jobs_csv_has_every_kept_job_with_its_times(out: Path) -> None:
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    assert list(rows[0]) == ["job", "submit", "start", "finish", "wait", "turnaround", "stretch", "submitter",
                             "group", "slot", "cost", "cycles_waited"]
    got = [(r["job"], r["submit"], r["start"], r["finish"], r["wait"], r["turnaround"], r["stretch"], r["slot"],
            r["cost"], r["cycles_waited"]) for r in rows]
    assert got == [
        # stretch = turnaround / run time; cycles_waited = grid index of the matching cycle minus
        # that of the first cycle at or after submission.
        ("1", "0", "0", "100", "0", "100", "1", "slot1@node1.trace", "2", "0"),
        ("2", "0", "0", "200", "0", "200", "1", "slot1@node2.trace", "2", "0"),
        # 140 / 50 = 2.8; first cycle after 30 is #1 (t=60), matched in #2
        ("3", "30", "120", "170", "90", "140", "2.8", "slot1@node1.trace", "1", "1"),
        # 410 / 300 = 1.366667; first cycle after 70 is #2 (t=120), matched in #3
        ("4", "70", "180", "480", "110", "410", "1.366667", "slot1@node1.trace", "2", "1"),
        # 60 / 40 = 1.5; first cycle after 100 is #2, matched in #2
        ("7", "100", "120", "160", "20", "60", "1.5", "slot1@node1.trace", "1", "0"),
    ]
    assert [(r["submitter"], r["group"]) for r in rows] == [
        ("group_g1.u1@trace", "group_g1"), ("group_g2.u2@trace", "group_g2"), ("group_g1.u1@trace", "group_g1"),
        ("group_g1.u1@trace", "group_g1"), ("group_g2.u2@trace", "group_g2"),
    ]


def test_cleaning_report_counts_each_rule(summary: dict) -> None:
    assert summary["cleaning"] == {
        "records": 8,
        "kept": 5,
        # job 5: status 5, run time -1; job 6: run time 0; job 8: run time -1
        "dropped": {"cancelled_never_ran": 1, "missing_run_time": 1, "zero_run_time": 1},
        "adjusted": {
            "cpus_clamped_to_node": 1,               # job 4: 4 cpus > 2
            "cpus_from_allocated_processors": 1,     # job 7
            "memory_clamped_to_node": 1,             # job 4: 4 x 1024 MB > 2048
            "memory_defaulted": 4,                   # jobs 1-4: no memory in the trace
            "memory_from_used_memory": 1,            # job 7: ceil(2048 KB x 1 / 1024) = 2 MB
        },
        "memory_default_mb_per_cpu": 1024,
    }
    assert summary["jobs"] == {"kept": 5, "submitted": 5, "started": 5, "finished_by_end": 5, "never_started": 0,
                               "not_submitted": 0}


def test_wait_percentiles_and_bounded_slowdown_per_group(summary: dict) -> None:
    # Percentiles interpolate linearly between order statistics at (n - 1) * p.
    # Bounded slowdown = max(1, (wait + run) / max(run, 10)).
    # group_g1: waits 0, 90, 110. p50 = 90; p95 at 1.9: 90 + 0.9 * 20 = 108.
    #   slowdowns: job 1 100/100 = 1; job 3 140/50 = 2.8; job 4 410/300 = 1.366667; mean 5.166667 / 3.
    group_g1 = {
        "jobs": 3, "started": 3, "wait_mean_s": 200 / 3, "wait_p50_s": 90.0, "wait_p95_s": 108.0,
        "wait_max_s": 110.0, "bounded_slowdown_mean": (1 + 2.8 + 410 / 300) / 3,
    }
    assert summary["groups"]["group_g1"] == pytest.approx(group_g1)
    # group_g2: waits 0, 20. p50 at 0.5: 10; p95 at 0.95: 19. slowdowns 1 and 60/40 = 1.5: mean 1.25.
    group_g2 = {
        "jobs": 2, "started": 2, "wait_mean_s": 10.0, "wait_p50_s": 10.0, "wait_p95_s": 19.0, "wait_max_s": 20.0,
        "bounded_slowdown_mean": 1.25,
    }
    assert summary["groups"]["group_g2"] == pytest.approx(group_g2)
    # all: waits 0, 0, 20, 90, 110. p50 = 20; p95 at 3.8: 90 + 0.8 * 20 = 106; slowdowns sum 7.666667.
    assert summary["all"] == pytest.approx({
        "jobs": 5, "started": 5, "wait_mean_s": 44.0, "wait_p50_s": 20.0, "wait_p95_s": 106.0, "wait_max_s": 110.0,
        "bounded_slowdown_mean": (1 + 1 + 2.8 + 410 / 300 + 1.5) / 5,
    })
    # each group has one submitter here: a user's figures are its group's
    assert summary["users"] == {"group_g1.u1@trace": pytest.approx(group_g1),
                                "group_g2.u2@trace": pytest.approx(group_g2)}


def test_makespan_throughput_and_fairness_between_users(summary: dict) -> None:
    # Batsim's makespan: first submission (0) to last finish (job 4, 480); 5 jobs in 480 s = 37.5 an hour.
    assert summary["makespan_s"] == 480 and summary["throughput_jobs_per_hour"] == pytest.approx(37.5)
    # Jain's index over the users' mean bounded slowdowns x1 = 5.166667 / 3, x2 = 1.25:
    # (x1 + x2)^2 / (2 (x1^2 + x2^2)) = 0.975379
    x1, x2 = (1 + 2.8 + 410 / 300) / 3, 1.25
    assert summary["user_fairness"] == {"jain": pytest.approx((x1 + x2) ** 2 / (2 * (x1 * x1 + x2 * x2))),
                                        "users": 2, "of": "bounded_slowdown_mean"}
    assert summary["user_fairness"]["jain"] == pytest.approx(0.975379, abs=1e-6)


def test_the_report_opens_with_a_table_of_the_figures(out: Path) -> None:
    page = (out / "report.html").read_text()
    table = page[page.index("<table"):page.index("</table>")]
    assert page.index("<table") < page.index("<img")          # before any plot
    rows = dict(re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td>", table))
    assert rows["wait mean s"] == "44.000" and rows["wait median s"] == "20.000" and rows["wait p95 s"] == "106"
    assert rows["bounded slowdown mean"] == "1.533" and rows["makespan s"] == "480"
    assert rows["throughput jobs/h"] == "37.500" and rows["user fairness"] == "0.975"
    assert "Waits per user" in page and "<td>group_g1.u1@trace</td><td>3</td><td>3</td><td>66.667</td>" in page


def test_utilization_is_cpu_seconds_used_over_the_pools(summary: dict) -> None:
    # cpu-seconds: 2x100 + 2x200 + 1x50 + 2x300 + 1x40 = 1290; the pool: 4 cpus x 480 s = 1920.
    assert summary["period"]["seconds"] == 480
    assert summary["utilization"] == pytest.approx(1290 / 1920)


def test_jain_index_over_time_on_usage_over_quota(summary: dict) -> None:
    # x = usage / quota after each cycle; J = (sum x)^2 / (2 sum x^2).
    #   t=0:   1, 1     -> 1     t=60:  1, 1 -> 1
    #   t=120: 0.5, 1.5 -> 4 / (2 x 2.5) = 0.8     t=180: 1, 1 -> 1
    #   t=240: 1, 0     -> 1 / 2 = 0.5              t=480: 0, 0 -> undefined
    jain = summary["jain"]
    assert jain["groups"] == ["group_g1", "group_g2"]
    assert jain["series"] == [[0, 1.0], [60, 1.0], [120, pytest.approx(0.8)], [180, 1.0], [240, 0.5], [480, None]]
    # Each value holds until the next cycle (t=240's until the end at 480):
    # (60 + 60 + 0.8 x 60 + 60 + 0.5 x 240) / 480 = 348 / 480.
    assert jain["mean"] == pytest.approx(348 / 480)


def test_cycles_are_reported_as_htcondor_names_them(summary: dict) -> None:
    cycles = summary["cycles"]
    assert (cycles["run"], cycles["skipped"], cycles["matches"]) == (6, 3, 5)
    per_cycle = cycles["per_cycle"]
    assert [c["LastNegotiationCycleTime"] for c in per_cycle] == [0, 60, 120, 180, 240, 480]
    assert [c["LastNegotiationCycleMatches"] for c in per_cycle] == [2, 0, 2, 1, 0, 0]
    # both p-slots are offered every cycle, full or not
    assert [c["LastNegotiationCycleCandidateSlots"] for c in per_cycle] == [2] * 6
    # the p-slots plus one dynamic slot per running job
    assert [c["LastNegotiationCycleTotalSlots"] for c in per_cycle] == [2, 4, 3, 3, 3, 2]
    assert [c["LastNegotiationCycleNumIdleJobs"] for c in per_cycle] == [2, 1, 3, 1, 0, 0]
    assert [c["BusyCpus"] for c in per_cycle] == [4, 4, 4, 4, 2, 0]
    assert [c["QueuedJobs"] for c in per_cycle] == [0, 1, 1, 0, 0, 0]
    wall = summary["wall_time_s"]
    assert len(wall["LastNegotiationCycleDuration"]) == 6 and wall["replay"] > 0


def test_report_page_is_self_contained_with_its_plots(out: Path) -> None:
    page = (out / "report.html").read_text()
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', page)
    assert [alt for alt, _ in images] == ["Utilization and queue length", "Share of quota per accounting group",
                                          "Wait per accounting group", "Jain&#x27;s fairness index on usage / quota",
                                          "Cycle duration and matches per cycle"]
    assert all(base64.b64decode(data).startswith(b"\x89PNG") for _, data in images)
    assert "http" not in page and "src=\"data:" in page


def test_share_of_quota_per_group_over_time(summary: dict) -> None:
    # usage / quota after each cycle (quota 2 each), each value holding until the next cycle:
    #   group_g1: 1, 1, 0.5, 1, 1 (job 4), 0 -> (60 + 60 + 30 + 60 + 240) / 480 = 450 / 480
    #   group_g2: 1, 1, 1.5, 1, 0, 0         -> (60 + 60 + 90 + 60) / 480 = 270 / 480
    groups = summary["share_of_quota"]["groups"]
    assert groups["group_g1"]["series"] == [[0, 1], [60, 1], [120, 0.5], [180, 1], [240, 1], [480, 0]]
    assert groups["group_g2"]["series"] == [[0, 1], [60, 1], [120, 1.5], [180, 1], [240, 0], [480, 0]]
    assert groups["group_g1"]["mean"] == pytest.approx(450 / 480)
    assert groups["group_g2"]["mean"] == pytest.approx(270 / 480)


def test_cycles_to_fill_after_each_burst(summary: dict) -> None:
    # Jobs by their first cycle: #0 jobs 1, 2 (a burst); #1 job 3 (one job: no burst); #2 jobs 4
    # (submitted 70) and 7 (100), a burst. Burst #0: both start in cycle #0, none in #1: 1 cycle.
    # Burst #2: job 7 starts in #2, job 4 in #3, none in #4: 2 cycles. Each starts a job in its
    # first cycle.
    bursts = summary["bursts"]
    assert bursts["series"] == [
        {"time": 0, "jobs": 2, "placed": 2, "cycles_to_first_start": 0, "cycles_to_fill": 1},
        {"time": 120, "jobs": 2, "placed": 2, "cycles_to_first_start": 0, "cycles_to_fill": 2}]
    assert bursts["count"] == 2 and bursts["cycles_to_fill"] == {"mean": 1.5, "p50": 1.5, "p95": 1.95, "max": 2}


def test_no_cpu_is_stranded_when_every_job_asks_for_memory_by_its_cpus(summary: dict) -> None:
    # The smallest RequestMemory is job 7's 2 MB; a node with a free cpu always has >= 1024 MB.
    assert summary["stranded_cpus"]["mean"] == 0 and summary["stranded_cpus"]["max"] == 0
    assert [c["StrandedCpus"] for c in summary["cycles"]["per_cycle"]] == [0] * 6
