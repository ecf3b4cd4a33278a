"""``--policies``: the hand-made trace of conftest.py replayed once per p-slot loading policy."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from negotiatord.replay.compare import COLUMNS

from .conftest import NODE, replay_command

POLICIES = ("depth_first", "breadth_first", "one_per_cycle")


@pytest.fixture(scope="module")
def out(replay_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    config, trace = replay_files
    folder = tmp_path_factory.mktemp("policies_out")
    assert replay_command("--config", str(config), "--trace", str(trace), "--nodes", "2", "--node", NODE,
                          "--out", str(folder), "--policies", ",".join(POLICIES)) == 0
    return folder


def starts(out: Path, policy: str) -> dict[str, str]:
    return {row["job"]: row["start"] for row in csv.DictReader((out / policy / "jobs.csv").open())}


def test_each_policy_gets_its_own_outputs_and_the_table_repeats_their_figures(out: Path) -> None:
    table = json.loads((out / "summary.json").read_text())
    assert list(table["policies"]) == list(POLICIES)
    for policy in POLICIES:
        own = json.loads((out / policy / "summary.json").read_text())
        row = table["policies"][policy]
        assert row["outputs"] == f"{policy}/"
        assert row["utilization"] == own["utilization"] and row["Jain mean"] == own["jain"]["mean"]
        assert row["cycles to fill mean"] == own["bursts"]["cycles_to_fill"]["mean"]
        assert len(row) == len(COLUMNS) + 1


def test_one_match_per_pslot_per_cycle_delays_the_second_job_on_a_node(out: Path) -> None:
    """At t=120 node1 has 2 free cpus and jobs 3 and 7 (1 cpu each) are idle (node2 runs job 2).
    Depth-first puts both on node1 in that cycle (test_hand_trace.py); one per cycle lets node1
    take job 3 only (group_g1 negotiates first, its usage 0 below group_g2's 2). At t=180 job 3
    has ended (170): node1 is free again and group_g1's job 4 takes both its cpus, so job 7 waits
    for the cycle at t=240, after job 2 (ends at 200) has freed node2."""
    assert starts(out, "depth_first") == {"1": "0", "2": "0", "3": "120", "4": "180", "7": "120"}
    assert starts(out, "one_per_cycle") == {"1": "0", "2": "0", "3": "120", "4": "180", "7": "240"}


def test_the_comparison_page_has_the_table_and_overlaid_plots(out: Path) -> None:
    page = (out / "report.html").read_text()
    assert re.findall(r"<td>(depth_first|breadth_first|one_per_cycle)</td>", page) == list(POLICIES)
    assert re.findall(r'<img alt="([^"]+)"', page) == ["Utilization", "Queue length",
                                                       "Jain&#x27;s fairness index on usage / quota",
                                                       "Wait distribution"]
