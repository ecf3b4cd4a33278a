"""``--pool``: a replay on the slots of a ``condor_status -l`` file, one node per partitionable or
static slot of its real size; a hand-made file and trace whose every placement is worked out by
hand, a slice of KTH on the OSPool sample's slots, and the errors a user sees.

The hand-made file (``SLOTS``), in its order: p-slot a1 (TotalSlot 4 cpus, 4096 MB), a dynamic
slot a1 lists in its ``ChildName`` (folded: its resources are a1's Total*), p-slot b (2 cpus,
16384 MB, 1 GPU), a Submitter ad (not a slot), static slot s (1 cpu, 2048 MB), p-slot a2 (a1's
size, though its ad says other Cpus and Memory left and another State: the size is TotalSlot*),
and a dynamic slot whose p-slot is not in the file. The nodes: a1, b, s, a2; shapes A (a1, a2),
B, S. Every ad's START asks for ``TARGET.ProjectName``, as the OSPool's does; the replay's START
replaces it (the trace's jobs have no ProjectName, and would otherwise match nothing).

The trace (one user, no group; CPU-centric consumption, SLOT_WEIGHT = Cpus, a cycle every 60 s):

  job 1  submit   0, run  330, 4 cpus, 4096 MB
  job 2  submit  30, run  200, 2 cpus, 10000 MB
  job 3  submit  90, run 1000, 3 cpus, 3072 MB
  job 4  submit 150, run 1000, 1 cpu,  2048 MB
  job 5  submit 200, run  100, 8 cpus, no memory: 8192 MB (1024 a cpu). It fits no node; clamped
         to the node that clamps fewest of its requests: A clamps cpus and memory, B cpus only, S
         both: B's 2 cpus (8192 MB fits B)
  job 6  submit 250, run  100, 1 cpu, 40000 MB: fits no node; every shape clamps memory only, so
         the largest, A (most cpus): 4096 MB
  job 7  submit 260, run    0: dropped (zero run time)

The cycles (each job fits exactly one node when it is matched, but for job 1's tie):

  t=0    job 1 fits a1 and a2 alone (b has 2 cpus, s 1): the first of equals, a1 (ends 330)
  t=60   job 2 fits b alone (a2's 4096 MB is too little): b (ends 260)
  t=120  job 3 (3 cpus): a1 is busy, s has 1 cpu: a2 (ends 1120), leaving it 1 cpu, 1024 MB
  t=180  job 4 (1 cpu, 2048 MB): a2 has 1024 MB left, b is busy: s, the static slot (ends 1180)
  t=240  job 5 (2 cpus, 8192 MB): only b could take it, and b is busy until 260: no match
  t=300  job 5 -> b (ends 400)
  t=360  job 6 (1 cpu, 4096 MB): a1, free since 330 (ends 460)
  t=1200 jobs 3 and 4 ended (1120, 1180): nothing is left, the replay ends
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from negotiatord.replay import Node, NodeShape, PoolSpecError, read_pool

from .conftest import CPU_CENTRIC, KTH, OSPOOL, replay_command

REAL_START = 'START = (!isUndefined(TARGET.ProjectName)) && (time() < GLIDEIN_ToRetire)\nGLIDEIN_ToRetire = 0\n'
A_SLOT = """\
MyType = "Machine"
Name = "slot1@{host}.example.org"
Machine = "{host}.example.org"
SlotType = "Partitionable"
PartitionableSlot = true
Arch = "X86_64"
OpSys = "LINUX"
Cpus = {cpus}
Memory = {memory}
Disk = 1000
TotalSlotCpus = 4
TotalSlotMemory = 4096
TotalSlotDisk = 60000000.0
State = "{state}"
SlotWeight = 100
"""
SLOTS = "\n".join([
    A_SLOT.format(host="a1", cpus=2, memory=2048, state="Unclaimed") + 'ChildName = { "slot1_1@a1.example.org" }\n'
    + REAL_START,
    """\
MyType = "Machine"
Name = "slot1_1@a1.example.org"
SlotType = "Dynamic"
DynamicSlot = true
Cpus = 2
Memory = 2048
Disk = 1000
State = "Claimed"
""",
    """\
MyType = "Machine"
Name = "slot1@b.example.org"
Machine = "b.example.org"
SlotType = "Partitionable"
PartitionableSlot = true
Arch = "X86_64"
OpSys = "LINUX"
Cpus = 2
Memory = 16384
Disk = 60000000
GPUs = 1
TotalSlotCpus = 2
TotalSlotMemory = 16384
TotalSlotDisk = 60000000.0
TotalSlotGPUs = 1
""" + REAL_START,
    """\
MyType = "Submitter"
Name = "alice@example.org"
IdleJobs = 3
""",
    """\
MyType = "Machine"
Name = "slot1@s.example.org"
Machine = "s.example.org"
SlotType = "Static"
Arch = "X86_64"
OpSys = "LINUX"
Cpus = 1
Memory = 2048
Disk = 20000000
TotalSlotCpus = 1
TotalSlotMemory = 2048
State = "Claimed"
""" + REAL_START,
    A_SLOT.format(host="a2", cpus=4, memory=4096, state="Owner") + REAL_START,
    """\
MyType = "Machine"
Name = "slot1_3@gone.example.org"
SlotType = "Dynamic"
DynamicSlot = true
Cpus = 1
Memory = 1024
Disk = 1000
""",
])
# Fields: job submit wait runtime alloc_procs avg_cpu used_mem req_procs req_time req_mem (KB a
# processor) status user group executable queue partition preceding_job think_time.
TRACE = """\
1   0 -1  330 4 -1 -1 4 -1  1048576 1 1 -1 -1 -1 -1 -1 -1
2  30 -1  200 2 -1 -1 2 -1  5120000 1 1 -1 -1 -1 -1 -1 -1
3  90 -1 1000 3 -1 -1 3 -1  1048576 1 1 -1 -1 -1 -1 -1 -1
4 150 -1 1000 1 -1 -1 1 -1  2097152 1 1 -1 -1 -1 -1 -1 -1
5 200 -1  100 8 -1 -1 8 -1       -1 1 1 -1 -1 -1 -1 -1 -1
6 250 -1  100 1 -1 -1 1 -1 40960000 1 1 -1 -1 -1 -1 -1 -1
7 260 -1    0 1 -1 -1 1 -1  1048576 1 1 -1 -1 -1 -1 -1 -1
"""
KEPT = (("Arch", "X86_64"), ("OpSys", "LINUX"))
SHAPE_A = NodeShape(4, 4096, 60000000, kept=KEPT)
SHAPE_B = NodeShape(2, 16384, 60000000, gpus=1, kept=KEPT)
SHAPE_S = NodeShape(1, 2048, 20000000, static=True, kept=KEPT)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    folder = tmp_path_factory.mktemp("pool_file")
    (folder / "cpu_centric.conf").write_text(CPU_CENTRIC)
    (folder / "slots.ads").write_text(SLOTS)
    (folder / "hand.swf").write_text(TRACE)
    return folder / "cpu_centric.conf", folder / "slots.ads", folder / "hand.swf"


@pytest.fixture(scope="module")
def out(files: tuple[Path, Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    config, slots, trace = files
    folder = tmp_path_factory.mktemp("pool_out")
    assert replay_command("--config", str(config), "--trace", str(trace), "--pool", str(slots),
                          "--out", str(folder)) == 0
    return folder


def test_each_partitionable_or_static_slot_is_a_node_of_its_size(files: tuple[Path, Path, Path]) -> None:
    pool = read_pool(files[1])
    assert pool.nodes == [Node("slot1@a1.example.org", SHAPE_A, "a1.example.org"),
                          Node("slot1@b.example.org", SHAPE_B, "b.example.org"),
                          Node("slot1@s.example.org", SHAPE_S, "s.example.org"),
                          Node("slot1@a2.example.org", SHAPE_A, "a2.example.org")]


def test_every_job_lands_on_the_node_worked_out_by_hand(out: Path) -> None:
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    assert [(row["job"], row["start"], row["finish"], row["slot"], row["cost"]) for row in rows] == [
        ("1", "0", "330", "slot1@a1.example.org", "4"),
        ("2", "60", "260", "slot1@b.example.org", "2"),
        ("3", "120", "1120", "slot1@a2.example.org", "3"),
        ("4", "180", "1180", "slot1@s.example.org", "1"),        # a static slot weighs its 1 cpu
        ("5", "300", "400", "slot1@b.example.org", "2"),
        ("6", "360", "460", "slot1@a1.example.org", "1"),
    ]


def test_clamps_to_the_node_that_clamps_least_are_counted_by_rule(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cleaning"] == {
        "records": 7, "kept": 6,
        "dropped": {"zero_run_time": 1},                           # job 7
        # job 5: 8 cpus to b's 2; job 6: 40000 MB to a's 4096; job 5 had no memory
        "adjusted": {"cpus_clamped_to_node": 1, "memory_clamped_to_node": 1, "memory_defaulted": 1},
        "memory_default_mb_per_cpu": 1024,
    }
    # the last job ends at 1180 (the cycle at 1200 that finds nothing left is past the period): the
    # period is 1180 s. cpu-seconds 4 x 330 + 2 x 200 + 3 x 1000 + 1 x 1000 + 2 x 100 + 1 x 100 = 6020,
    # over 11 cpus x 1180 s
    assert summary["period"]["seconds"] == 1180
    assert summary["utilization"] == pytest.approx(6020 / (11 * 1180))


def test_the_summary_says_what_the_pool_file_held(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    platform = {"Arch": "X86_64", "OpSys": "LINUX"}
    assert summary["pool"] == {
        "nodes": 4, "cpus": 11,
        "shapes": [{"Cpus": 4, "Memory": 4096, "Disk": 60000000, **platform, "nodes": 2},
                   {"Cpus": 2, "Memory": 16384, "Disk": 60000000, "GPUs": 1, **platform, "nodes": 1},
                   {"Cpus": 1, "Memory": 2048, "Disk": 20000000, "static": True, **platform, "nodes": 1}],
        "slots_file": {"file": "slots.ads", "ads": 7, "slots": {"partitionable": 3, "static": 1},
                       "dynamic_slots_folded": 1,
                       "skipped": {"dynamic slot whose partitionable slot is not in the file": 1,
                                   "not a slot: MyType Submitter": 1}},
    }


def test_a_kth_slice_on_the_ospool_sample_runs_every_job(tmp_path: Path) -> None:
    """The OSPool sample's 205 ads: 16 partitionable and 11 static slots become 27 nodes; its 116
    dynamic slots belong to p-slots the sample does not hold, and its other ads are not slots."""
    config = tmp_path / "cpu_centric.conf"
    config.write_text(CPU_CENTRIC)
    assert replay_command("--config", str(config), "--trace", str(KTH), "--jobs", "300", "--pool", str(OSPOOL),
                          "--out", str(tmp_path / "out")) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    pool = summary["pool"]
    assert (pool["nodes"], pool["slots_file"]["ads"], pool["slots_file"]["slots"]) == (
        27, 205, {"partitionable": 16, "static": 11})
    skipped = pool["slots_file"]["skipped"]
    assert skipped["dynamic slot whose partitionable slot is not in the file"] == 116
    assert sum(skipped.values()) == 205 - 27 and pool["slots_file"]["dynamic_slots_folded"] == 0
    assert sum(shape["nodes"] for shape in pool["shapes"]) == 27
    # every kept job started: KTH's jobs wider than the widest node (64 cpus) were clamped
    assert summary["jobs"]["started"] == summary["jobs"]["kept"] == summary["cleaning"]["kept"]
    slots = {row["slot"] for row in csv.DictReader((tmp_path / "out" / "jobs.csv").open())}
    assert "slot1@glidein_44759_233318670@CRUSH-OSG-C7-10-5-202-153" in slots


def test_pool_and_nodes_cannot_go_together(files: tuple[Path, Path, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    config, slots, trace = files
    common = ("--config", str(config), "--trace", str(trace), "--out", str(tmp_path))
    with pytest.raises(SystemExit) as exit_status:
        replay_command(*common, "--pool", str(slots), "--nodes", "2")
    assert exit_status.value.code == 2
    assert "argument --nodes: not allowed with --pool" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_status:
        replay_command(*common, "--node", "Cpus=2", "--pool", str(slots))
    assert exit_status.value.code == 2
    assert "argument --pool: not allowed with --node" in capsys.readouterr().err


BAD_SLOT = 'MyType = "Machine"\nName = "slot1@x"\nSlotType = "Partitionable"\nPartitionableSlot = true\n'


@pytest.mark.parametrize(("text", "message"), [
    # the second ad, from line 3: a line that is not an attribute
    ('MyType = "Submitter"\n\nMyType = "Machine"\nCpus = = 2\n', r"slots.ads:3 \(ad 2\): "),
    (BAD_SLOT + "TotalSlotCpus = 4\nTotalSlotDisk = 100\n",
     r"slots.ads:1 \(ad 1\), slot1@x: TotalSlotMemory is not a number >= 0: missing"),
    (BAD_SLOT + 'TotalSlotCpus = 4\nTotalSlotMemory = "lots"\nTotalSlotDisk = 100\n',
     r"slots.ads:1 \(ad 1\), slot1@x: TotalSlotMemory is not a number >= 0: \"lots\""),
    (BAD_SLOT + "TotalSlotCpus = 0\nTotalSlotMemory = 1\nTotalSlotDisk = 100\n",
     r"slots.ads:1 \(ad 1\), slot1@x: TotalSlotCpus is below 1"),
    ('MyType = "Machine"\nCpus = 1\n', r"slots.ads:1 \(ad 1\): a slot without a Name"),
    # the same ad twice, the second from line 9
    ("\n".join([BAD_SLOT + "TotalSlotCpus = 1\nTotalSlotMemory = 1\nTotalSlotDisk = 100\n"] * 2),
     r"slots.ads:9 \(ad 2\), slot1@x: the same Name as the slot at line 1"),
    ('MyType = "Submitter"\nName = "a"\n', r"slots.ads: no partitionable or static slot among its 1 ads"),
])
def test_a_bad_pool_file_is_named_by_file_line_and_ad(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "slots.ads"
    path.write_text(text)
    with pytest.raises(PoolSpecError, match=f"^--pool {tmp_path}/{message}"):
        read_pool(path)


def test_the_command_reports_a_bad_pool_file_without_a_traceback(files: tuple[Path, Path, Path],
                                                                 tmp_path: Path) -> None:
    config, _, trace = files
    missing = tmp_path / "missing.ads"
    done = subprocess.run([sys.executable, "-m", "negotiatord", "replay", "--config", str(config), "--trace",
                           str(trace), "--pool", str(missing), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"negotiatord: --pool {missing}: cannot read: No such file or directory\n"
