"""The dry run's documents: the JSON a program reads and the table a person reads.

The JSON's field names are docs/dry-run.md's; the figures' names follow HTCondor's
``LastNegotiationCycle*`` attributes where one exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from negotiatord.accountant import AccountantState
from negotiatord.ads.reader import read_ads
from negotiatord.cycle.result import (
    CycleResult, CycleStats, GroupReport, Match, Rejection, SubmitterReport,
)
from negotiatord.pool.builder import build_snapshot
from negotiatord.publish.report import cycle_document, cycle_figures, cycle_table, match_document
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]

MATCHES = (
    Match("sub#1.0#1", "slot1@node1", "alice@site", "group_physics", 2.0,
          {"Cpus": 2, "Memory": 2048, "Disk": 1048576}),
    Match("sub#1.1#1", "slot1@node1", "alice@site", "group_physics", 0.5, {"Cpus": 1, "Memory": 512}),
)
RESULT = CycleResult(
    stats=CycleStats(duration_s=0.12345678, matches=2, rejections=1, slots=3, jobs=4, autoclusters=2,
                     pie_spins=1, pool_size=8.0, phase_s={"matchmaking": 0.0999999}, pairs=6,
                     classad_fallbacks=0),
    matches=MATCHES,
    rejections=(Rejection("sub#2.0#1", "bob@site", "no match found"),),
    groups=(GroupReport("<none>", 8.0, 6.5, 2.5, True, own_allocated=1.0, own_usage=0.0),
            GroupReport("group_physics", 6.0, 5.5, 2.5, False, own_allocated=5.5, own_usage=2.5)),
    submitters=(SubmitterReport("alice@site", "group_physics", 0.5, 5.5, 2.5),),
    usage={"alice@site": 2.5},
    charges={"alice@site": 2.5},
    problems=("slot broken@node9 left out: SlotWeight does not evaluate to a number",),
)


def test_the_document_keeps_the_order_matches_were_made_in_and_survives_json() -> None:
    document = json.loads(json.dumps(cycle_document(RESULT)))
    assert [m["job"] for m in document["matches"]] == ["sub#1.0#1", "sub#1.1#1"]
    assert document["matches"][0] == match_document(MATCHES[0])
    assert document["matches"][1]["consumed"] == {"Cpus": 1, "Memory": 512}
    assert document["rejections"] == [{"job": "sub#2.0#1", "submitter": "bob@site", "reason": "no match found"}]
    assert document["groups"][0] == {"name": "<none>", "quota": 8.0, "allocated": 6.5, "usage": 2.5,
                                     "own_allocated": 1.0, "own_usage": 0.0, "accept_surplus": True}
    assert document["submitters"] == [{"name": "alice@site", "group": "group_physics",
                                       "effective_priority": 0.5, "limit": 5.5, "usage": 2.5}]
    assert document["problems"] == list(RESULT.problems)


def test_the_figures_are_rounded_for_print_and_name_every_phase() -> None:
    figures = cycle_figures(RESULT.stats, digits=3)
    assert figures["duration_s"] == 0.123
    assert figures["phases_s"] == {"matchmaking": 0.1}
    assert (figures["matches"], figures["rejections"], figures["pairs"]) == (2, 1, 6)


def test_the_table_shows_each_section_with_whole_numbers_in_full() -> None:
    table = cycle_table(RESULT)
    lines = table.splitlines()
    assert lines[0].startswith("cycle: 2 matches, 1 rejections, 3 slots, 4 idle jobs")
    assert any(line.split() == ["group_physics", "6", "5.5", "2.5", "5.5", "2.5", "no"] for line in lines)
    assert any(line.split() == ["<none>", "8", "6.5", "2.5", "1", "0", "yes"] for line in lines)
    # disk sizes are large: a whole number is printed in full, never in exponent form
    assert "Disk=1048576" in table
    assert any(line.split()[:4] == ["sub#1.1#1", "slot1@node1", "alice@site", "0.5"] for line in lines)
    assert any(line.split() == ["sub#2.0#1", "bob@site", "no", "match", "found"] for line in lines)
    assert lines[-2:] == ["problems:", f"  {RESULT.problems[0]}"]


def test_the_table_leaves_out_empty_sections() -> None:
    quiet = CycleResult(RESULT.stats, MATCHES, (), RESULT.groups, RESULT.submitters, {}, {}, ())
    table = cycle_table(quiet)
    assert "rejected job" not in table
    assert "problems:" not in table


def test_columns_line_up_under_their_headings() -> None:
    lines = cycle_table(RESULT).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("job "))
    start = lines[header].index("submitter")
    for row in lines[header + 2: header + 4]:
        assert row[start:].startswith("alice@site")


def sample_cycle(config_name: str) -> CycleResult:
    config = load_settings(ROOT / "config" / config_name)
    snapshot = build_snapshot(read_ads(ROOT / "samples" / "slots.ads").ads,
                              read_ads(ROOT / "samples" / "jobs.ads").ads, config)
    return run_cycle(snapshot, AccountantState(), config, 1_750_000_000)


def test_the_sample_lists_each_refused_job_once_per_reason_and_no_matched_job() -> None:
    """The bundled sample under hierarchical_groups.conf refuses jobs for their submitter's limit
    in one spin and matches them in a later one, and refuses others in several spins."""
    result = sample_cycle("hierarchical_groups.conf")
    document = cycle_document(result)
    rows = [(r["job"], r["reason"]) for r in document["rejections"]]
    assert len(rows) == len(set(rows)) == document["cycle"]["rejections"]
    assert not {m["job"] for m in document["matches"]} & {job for job, _ in rows}
    table = cycle_table(result).split("rejected job")[1].splitlines()[2:]
    assert sorted(tuple(line.split(maxsplit=2)[::2]) for line in table if line.strip()) == sorted(rows)


def test_a_parent_group_shows_its_subtree_and_its_own_figures_apart() -> None:
    """default.conf: group_physics has no submitters of its own; its children cms and atlas use
    what the sample gives them. Like condor_userprio's group rows, the parent's allocated and
    usage are its subtree's; own_allocated and own_usage are its own submitters' (none)."""
    document = cycle_document(sample_cycle("default.conf"))
    groups = {g["name"]: g for g in document["groups"]}
    physics, children = groups["group_physics"], [groups["group_physics.cms"], groups["group_physics.atlas"]]
    assert physics["usage"] == sum(c["usage"] for c in children) > 0
    assert physics["allocated"] == sum(c["allocated"] for c in children) > 0
    assert (physics["own_usage"], physics["own_allocated"]) == (0, 0)
    for child in children:     # leaves: their subtree is themselves
        assert (child["usage"], child["allocated"]) == (child["own_usage"], child["own_allocated"])
    root = groups["<none>"]
    assert root["usage"] == sum(g["own_usage"] for g in document["groups"])
    assert root["allocated"] == sum(g["own_allocated"] for g in document["groups"]) <= document["cycle"]["pool_size"]
