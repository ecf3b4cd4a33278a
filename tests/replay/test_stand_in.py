"""Empty nodes beyond the idle jobs stood in for by one slot per shape carrying their weight, and
spent p-slots of weight 0 left out: the same jobs.csv and summary.json as a replay offering every
cycle every slot, on slices of KTH and LCG, on pools of one shape and of several (static slots
among them, and the OSPool sample's slots), and on the hand-made trace whose two groups' quotas
are shares of the pool's weight."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import classad2
import pytest

from negotiatord.cycle.result import Match
from negotiatord.replay import (
    Node,
    NodeShape,
    SimulatedPool,
    alike_nodes,
    fit_to_nodes,
    read_pool,
    read_trace,
    replay,
    write_outputs,
)
from negotiatord.pool import builder as builder_module
from negotiatord.replay import pool as replay_pool
from negotiatord.replay import simulate
from negotiatord.replay.pool import Offer
from negotiatord.replay.simulate import ReplayResult
from negotiatord.replay.trace import Trace
from negotiatord.settings import PslotLoading, Settings, load_settings

from .conftest import DATA, KTH, NODE, OSPOOL, ROOT

LCG = DATA / "traces" / "LCG.swf.gz"
CPU_CENTRIC = ROOT / "config" / "cpu_centric.conf"


def mixed_nodes(count: int) -> list[Node]:
    """``count`` nodes of four shapes taken in turn: partitionable nodes of 8, 4 and 2 cpus (the
    2-cpu ones with 4096 MB, more memory per cpu), and static one-cpu slots."""
    shapes = [NodeShape.with_cpus(8), NodeShape.with_cpus(4), NodeShape(2, 4096, 10_000_000),
              NodeShape(1, 2048, 10_000_000, static=True)]
    return [Node(f"slot1@mixed{index}.trace", shapes[index % len(shapes)]) for index in range(count)]


class WatchedPool(SimulatedPool):
    """A simulated pool that notes how many empty nodes each cycle's stand-in stood in for, and
    how many spent p-slots each cycle left out."""

    def __init__(self, nodes: list[Node]) -> None:
        super().__init__(nodes)
        self.left_out: list[int] = []
        self.spent: list[int] = []

    def offered_ads(self, idle_jobs: int, settings: Settings) -> Offer:
        offer = super().offered_ads(idle_jobs, settings)
        self.left_out.append(offer.empty_nodes)
        self.spent.append(offer.spent_pslots)
        return offer


def replayed(trace_path: Path, jobs: int | None, nodes: list[Node], settings: Settings,
             stand_in: bool) -> tuple[ReplayResult, Trace, WatchedPool]:
    trace = read_trace(trace_path, jobs)
    pool = WatchedPool(nodes)
    trace.jobs = fit_to_nodes(trace.jobs, pool.shapes, trace.cleaning)
    return replay(trace, settings, pool, stand_in_empty_nodes=stand_in), trace, pool


def outputs(folder: Path, trace_path: Path, jobs: int | None, nodes: list[Node], settings: Settings,
            stand_in: bool) -> tuple[bytes, str, WatchedPool]:
    result, trace, pool = replayed(trace_path, jobs, nodes, settings, stand_in)
    summary = write_outputs(folder, result, trace.cleaning, pool, trace_path.name)
    summary = {key: value for key, value in summary.items() if key != "wall_time_s"}
    return (folder / "jobs.csv").read_bytes(), json.dumps(summary), pool


CASES = [
    # trace, jobs, nodes, node: KTH's 100 one-cpu nodes queue at times and idle at others; on 12
    # four-cpu nodes jobs share nodes, so the loading policies place them differently
    pytest.param(KTH, 250, 100, "Cpus=1", id="kth-100x1"),
    pytest.param(KTH, 250, 12, "Cpus=4", id="kth-12x4"),
    # LCG's one-cpu jobs on 200 of its one-cpu nodes: bursts of arrivals and long idle stretches
    pytest.param(LCG, 400, 200, "Cpus=1", id="lcg-200x1"),
]


@pytest.mark.parametrize("policy", [policy.value for policy in PslotLoading])
@pytest.mark.parametrize(("trace_path", "jobs", "nodes", "node"), CASES)
def test_standing_in_for_empty_nodes_changes_no_output(trace_path: Path, jobs: int, nodes: int, node: str,
                                                       policy: str, tmp_path: Path) -> None:
    """Each empty node left out would have been reached only after a job was placed on every
    empty node offered (slot-table order breaks the ties between alike slots, as HTCondor's
    matchmaker takes the first of equally ranked offers), so every job starts at the same time on
    the same slot, costs the same, and every per-cycle figure (slots, candidates, group loads) is
    the same. A spent p-slot (no Cpu left, weight 0 under SLOT_WEIGHT = Cpus) could take no job."""
    settings = dataclasses.replace(load_settings(CPU_CENTRIC), pslot_loading=PslotLoading(policy))
    pool = alike_nodes(nodes, NodeShape.parse(node))
    every = outputs(tmp_path / "every", trace_path, jobs, pool, settings, stand_in=False)
    stood_in = outputs(tmp_path / "stood_in", trace_path, jobs, pool, settings, stand_in=True)
    assert stood_in[0] == every[0]
    assert stood_in[1] == every[1]
    # nodes were left out, in most cycles, and in none of the replay offering every node
    assert sum(map(bool, stood_in[2].left_out)) > len(stood_in[2].left_out) / 2
    assert every[2].left_out == []
    # the nodes are full at times (one cpu each: busy is spent)
    assert any(stood_in[2].spent)


MIXED_CASES = [
    # KTH's parallel jobs on 40 nodes of four shapes in turn: wide jobs fit the 8-cpu nodes only,
    # the rest share shapes, and static slots take one job each
    pytest.param(KTH, 300, mixed_nodes(40), True, id="kth-mixed"),
    # LCG's serial jobs on 60 nodes of the four shapes
    pytest.param(LCG, 400, mixed_nodes(60), True, id="lcg-mixed"),
    # the OSPool sample's 27 slots (16 partitionable, 11 static), each a shape of its own (their
    # disks differ): no empty node is stood in for, but spent p-slots and claims still are
    pytest.param(KTH, 300, read_pool(OSPOOL).nodes, False, id="kth-ospool"),
]


@pytest.mark.parametrize("policy", [policy.value for policy in PslotLoading])
@pytest.mark.parametrize(("trace_path", "jobs", "nodes", "alike"), MIXED_CASES)
def test_standing_in_per_shape_changes_no_output(trace_path: Path, jobs: int, nodes: list[Node], alike: bool,
                                                 policy: str, tmp_path: Path) -> None:
    """Empty nodes of one shape are alike but for their names, whatever the other shapes: one
    stand-in per shape leaves every start, slot, cost and per-cycle figure as offering every node."""
    settings = dataclasses.replace(load_settings(CPU_CENTRIC), pslot_loading=PslotLoading(policy))
    every = outputs(tmp_path / "every", trace_path, jobs, nodes, settings, stand_in=False)
    stood_in = outputs(tmp_path / "stood_in", trace_path, jobs, nodes, settings, stand_in=True)
    assert stood_in[0] == every[0]
    assert stood_in[1] == every[1]
    assert any(stood_in[2].left_out) is alike and every[2].left_out == []
    # the static slots took jobs
    rows = stood_in[0].decode().splitlines()
    static = {node.name for node in nodes if node.shape.static}
    assert any(row.split(",")[9] in static for row in rows[1:])


def test_quota_shares_of_the_pool_are_unchanged(replay_files: tuple[Path, Path], settings: Settings,
                                                tmp_path: Path) -> None:
    """The hand-made trace's two groups have a static quota of 2 cpus each; the stand-in carries
    the weight of the empty node it stands for, so each group's load (usage over quota) and each
    start are those of the whole pool."""
    nodes = alike_nodes(2, NodeShape.parse(NODE))
    every = outputs(tmp_path / "every", replay_files[1], None, nodes, settings, stand_in=False)
    stood_in = outputs(tmp_path / "stood_in", replay_files[1], None, nodes, settings, stand_in=True)
    assert stood_in[:2] == every[:2]
    assert any(stood_in[2].left_out)


def test_the_stand_in_carries_the_weight_of_the_nodes_left_out(settings: Settings) -> None:
    """Two idle jobs on five empty two-cpu nodes under SLOT_WEIGHT = Cpus: the first two nodes are
    offered, and one slot in the Owner state (offered to no job) weighs the other three's 6 cpus."""
    pool = SimulatedPool.alike(5, NodeShape.parse(NODE))
    offer = pool.offered_ads(2, settings)
    assert (offer.empty_nodes, offer.spent_pslots) == (3, 0)
    ads = offer.ads
    assert [ad["Name"] for ad in ads[:2]] == ["slot1@node1.trace", "slot1@node2.trace"]
    assert (ads[2]["Name"], ads[2]["State"], ads[2]["SlotWeight"]) == ("empty-nodes-1@trace", "Owner", 6)
    assert pool.offered_ads(2, settings).ads[2] is ads[2]          # the same ad while nothing changes
    assert pool.offered_ads(5, settings) == Offer(pool.slot_ads())
    weighted_by_memory = dataclasses.replace(settings, slot_weight="Memory / 3.0")
    assert pool.offered_ads(2, weighted_by_memory) == Offer(pool.slot_ads())    # 682.67: not whole


def test_a_spent_pslot_of_weight_0_is_left_out_and_claims_are_stood_in_per_submitter(settings: Settings) -> None:
    """A two-cpu job fills node 1's two cpus: its p-slot, with 0 Cpus and 1024 MB left, weighs 0
    under SLOT_WEIGHT = Cpus and is left out; weighed by Memory it weighs 1024 and stays. Without
    preemption, the submitter's claimed dynamic slot is offered as one claimed slot holding what
    its jobs hold; with PREEMPTION_REQUIREMENTS, each claimed slot is offered, a victim to choose."""
    pool = SimulatedPool.alike(3, NodeShape.parse(NODE))
    match = Match("job1", "slot1@node1.trace", "u@trace", "<none>", 2.0, {"Cpus": 2, "Memory": 1024})
    pool.start(match, classad2.ClassAd(), 0)
    offer = pool.offered_ads(0, settings)
    assert (offer.empty_nodes, offer.spent_pslots, offer.claims, offer.claim_stand_ins) == (2, 1, 1, 1)
    assert (offer.slots_left_out, offer.candidates_left_out) == (2, 3)
    assert [ad["Name"] for ad in offer.ads] == ["empty-nodes-1@trace", "claims-of-u@trace"]
    claims = offer.ads[1]
    assert (claims["State"], claims["AccountingGroup"], claims["Cpus"], claims["Memory"], claims["SlotWeight"]) == (
        "Claimed", "u@trace", 2, 1024, 2.0)
    by_memory = dataclasses.replace(settings, slot_weight="Memory")
    assert [ad["Name"] for ad in pool.offered_ads(0, by_memory).ads] == [
        "slot1@node1.trace", "empty-nodes-1@trace", "claims-of-u@trace"]
    preempting = dataclasses.replace(settings, preemption_requirements="True")
    assert [ad["Name"] for ad in pool.offered_ads(0, preempting).ads] == [
        "slot1@node1.trace#job1", "empty-nodes-1@trace"]
    pool.release(match)
    assert pool.offered_ads(2, settings) == Offer(pool.slot_ads())


def test_stand_ins_made_alike_again_are_the_same_ads(settings: Settings) -> None:
    """A stand-in for as many empty nodes as before, and a submitter's claims holding as much as
    before, are the very ad objects of before (the snapshot builder then knows their records);
    claims holding another amount are another ad."""
    pool = SimulatedPool.alike(5, NodeShape.parse(NODE))

    def stand_ins() -> tuple[classad2.ClassAd, classad2.ClassAd]:
        empty, claims = pool.offered_ads(0, settings).ads
        return empty, claims

    first = Match("job1", "slot1@node1.trace", "u@trace", "<none>", 2.0, {"Cpus": 2, "Memory": 1024})
    pool.start(first, classad2.ClassAd(), 0)
    empty, claims = stand_ins()
    pool.release(first)
    alike = Match("job2", "slot1@node2.trace", "u@trace", "<none>", 2.0, {"Cpus": 2, "Memory": 1024})
    pool.start(alike, classad2.ClassAd(), 0)
    assert stand_ins() == (empty, claims)
    assert all(now is then for now, then in zip(stand_ins(), (empty, claims)))
    pool.release(alike)
    smaller = Match("job3", "slot1@node3.trace", "u@trace", "<none>", 2.0, {"Cpus": 2, "Memory": 512})
    pool.start(smaller, classad2.ClassAd(), 0)
    now_empty, now_claims = stand_ins()
    assert now_empty is empty
    assert now_claims is not claims and now_claims["Memory"] == 512


def test_each_shape_has_its_stand_in_and_a_busy_static_slot_is_a_claim(settings: Settings) -> None:
    """Twelve nodes of the four shapes in turn (8, 4 and 2 cpus partitionable, 1 cpu static): with
    one idle job, each shape's first empty node is offered, and one stand-in per shape weighs the
    other two of its shape under SLOT_WEIGHT = Cpus. A job on the first static slot claims it
    whole: the static shape's other two nodes are then offered (a stand-in for one node would only
    swap one ad for another), and the claimed slot stands in its submitter's claims, or, where a
    claimed slot may be preempted, is offered itself."""
    pool = SimulatedPool(mixed_nodes(12))
    offer = pool.offered_ads(1, settings)
    names = [f"slot1@mixed{index}.trace" for index in range(12)]
    stand_ins = [f"empty-nodes-{shape}@trace" for shape in (1, 2, 3, 4)]
    assert [ad["Name"] for ad in offer.ads] == names[:4] + stand_ins
    assert [ad["SlotWeight"] for ad in offer.ads[4:]] == [16, 8, 4, 2]
    assert [ad["SlotType"] for ad in offer.ads] == ["Partitionable"] * 3 + ["Static"] + ["Partitionable"] * 3 + [
        "Static"]
    assert (offer.empty_nodes, offer.empty_stand_ins, offer.slots_left_out, offer.candidates_left_out) == (8, 4, 4, 8)
    match = Match("job1", names[3], "u@trace", "<none>", 1.0, {"Cpus": 1, "Memory": 2048, "Disk": 10_000_000})
    pool.start(match, classad2.ClassAd(), 7)
    offer = pool.offered_ads(1, settings)
    assert [ad["Name"] for ad in offer.ads] == [*names[:3], names[7], names[11], *stand_ins[:3], "claims-of-u@trace"]
    assert (offer.empty_nodes, offer.spent_pslots, offer.claims, offer.claim_stand_ins) == (6, 0, 1, 1)
    assert offer.ads[-1]["SlotWeight"] == 1.0
    preempting = dataclasses.replace(settings, preemption_requirements="True")
    offer = pool.offered_ads(1, preempting)
    assert [ad["Name"] for ad in offer.ads] == [*names[:4], names[7], names[11], *stand_ins[:3]]
    claimed = offer.ads[3]
    assert (claimed["State"], claimed["RemoteUser"], claimed["JobStart"], claimed["Cpus"]) == (
        "Claimed", "u@trace", 7, 1)
    pool.release(match)
    assert [ad["Name"] for ad in pool.offered_ads(1, settings).ads] == names[:4] + stand_ins


@pytest.mark.parametrize(("trace_path", "jobs", "nodes", "node"), [
    pytest.param(KTH, 400, 100, "Cpus=1", id="kth-100x1"),
    pytest.param(LCG, 400, 200, "Cpus=1", id="lcg-200x1"),
])
def test_ads_offered_again_keep_their_records_and_change_no_output(trace_path: Path, jobs: int, nodes: int,
                                                                   node: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay offers a node's own ad object again once its jobs end, and a stand-in for as many
    empty nodes as before again: the snapshot builder keeps their Slot records, and with them what
    a cycle keeps by record, so far fewer slot ads are read. Outputs are those of a replay that
    reads afresh every ad it did not offer the cycle before and makes a new stand-in each time."""
    settings = load_settings(CPU_CENTRIC)
    pool = alike_nodes(nodes, NodeShape.parse(node))
    reads: Counter[str] = Counter()
    read_slot = builder_module._read_slot

    def counted(ad: classad2.ClassAd, settings: Settings) -> object:
        reads[run] += 1
        return read_slot(ad, settings)

    monkeypatch.setattr(builder_module, "_read_slot", counted)
    run = "kept"
    kept = outputs(tmp_path / run, trace_path, jobs, pool, settings, stand_in=True)
    original = simulate.SnapshotBuilder
    monkeypatch.setattr(simulate, "SnapshotBuilder", lambda **_: original())
    monkeypatch.setattr(replay_pool, "STAND_INS_KEPT", 0)
    run = "forgot"
    forgot = outputs(tmp_path / run, trace_path, jobs, pool, settings, stand_in=True)
    assert kept[0] == forgot[0]
    assert kept[1] == forgot[1]
    assert reads["kept"] < 0.75 * reads["forgot"]
