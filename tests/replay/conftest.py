"""A two-node pool's config and a hand-made SWF trace whose every figure the tests work out."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from negotiatord.commands import replay
from negotiatord.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
KTH = DATA / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
HISTORY = DATA / "htcondor" / "history" / "sandyHistory.hist"
OSPOOL = DATA / "ospool" / "pool_sample.ads.gz"

# The CPU-centric consumption policy and a cycle every 60 s.
CPU_CENTRIC = """\
CONSUMPTION_POLICY = True
CONSUMPTION_CPUS = target.RequestCpus
CONSUMPTION_MEMORY = target.RequestMemory
CONSUMPTION_DISK = target.RequestDisk
SLOT_WEIGHT = Cpus
NEGOTIATOR_INTERVAL = 60
"""
# With two groups of a static quota of 2 cpus each (the pool has 4) that lend their unused quota
# to each other.
CONFIG = CPU_CENTRIC + """\
GROUP_NAMES = group_g1, group_g2
GROUP_QUOTA_group_g1 = 2
GROUP_QUOTA_group_g2 = 2
GROUP_ACCEPT_SURPLUS = True
"""

NODE = "Cpus=2, Memory=2048, Disk=10000000"

# Fields: job submit wait runtime alloc_procs avg_cpu used_mem req_procs req_time req_mem status user
# group executable queue partition preceding_job think_time.
TRACE = """\
; MaxNodes: 2
; MaxProcs: 4
1    0 -1  100  2 -1   -1  2 -1 -1 1 1 1 -1 -1 -1 -1 -1
2    0 -1  200  2 -1   -1  2 -1 -1 1 2 2 -1 -1 -1 -1 -1
3   30 -1   50  1 -1   -1  1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4   70 -1  300  4 -1   -1  4 -1 -1 1 1 1 -1 -1 -1 -1 -1
5   80 -1   -1  1 -1   -1  1 -1 -1 5 1 1 -1 -1 -1 -1 -1
6   90 -1    0  1 -1   -1  1 -1 -1 1 2 2 -1 -1 -1 -1 -1
7  100 -1   40  1 -1 2048 -1 -1 -1 1 2 2 -1 -1 -1 -1 -1
8  110 -1   -1  1 -1   -1  1 -1 -1 1 2 2 -1 -1 -1 -1 -1
"""


@pytest.fixture(scope="session")
def replay_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The config and the trace above, as files."""
    folder = tmp_path_factory.mktemp("replay")
    (folder / "two_groups.conf").write_text(CONFIG)
    (folder / "hand.swf").write_text(TRACE)
    return folder / "two_groups.conf", folder / "hand.swf"


@pytest.fixture(scope="session")
def settings(replay_files: tuple[Path, Path]) -> Settings:
    return load_settings(replay_files[0])


def replay_command(*argv: str) -> int:
    """``negotiatord replay`` with these arguments, in this process, with the logging the test
    run has (the command line's own set-up would bind its log output to this test's stderr)."""
    parser = argparse.ArgumentParser()
    replay.add_arguments(parser)
    return replay.run(parser.parse_args(argv))
