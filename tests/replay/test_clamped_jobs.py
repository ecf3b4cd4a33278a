"""A pool too narrow for the trace: when most jobs are clamped to fit its nodes, their waits
measure no contention, and the replay says so loudly (stderr, summary.json, atop report.html),
naming a pool that fits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from negotiatord.replay import read_trace
from negotiatord.replay.pool import NodeShape, pool_that_fits

from .conftest import CPU_CENTRIC, ROOT

# A parallel machine of 8 processors on 8 one-processor nodes (the header); 3 of the 4 jobs are
# 4 or 8 processors wide, so one-cpu nodes would clamp them to 1.
PARALLEL = """\
; MaxNodes: 8
; MaxProcs: 8
1    0 -1  100  4 -1   -1  4 -1 -1 1 1 1 -1 -1 -1 -1 -1
2   10 -1  100  8 -1   -1  8 -1 -1 1 2 1 -1 -1 -1 -1 -1
3   20 -1  100  1 -1   -1  1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4   30 -1  100  4 -1   -1  4 -1 -1 1 2 1 -1 -1 -1 -1 -1
"""


def replayed(tmp_path: Path, *pool: str) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "replay.conf").write_text(CPU_CENTRIC)
    (tmp_path / "parallel.swf").write_text(PARALLEL)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "negotiatord", "replay", "--config", str(tmp_path / "replay.conf"),
                           "--trace", str(tmp_path / "parallel.swf"), "--out", str(out), *pool],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done, out


def test_the_pool_that_fits_a_parallel_trace_is_its_machine_as_one_node(tmp_path: Path) -> None:
    (tmp_path / "parallel.swf").write_text(PARALLEL)
    trace = read_trace(tmp_path / "parallel.swf")
    assert pool_that_fits(trace.jobs, trace.max_procs, 8) == (1, NodeShape.with_cpus(8))


def test_most_jobs_clamped_is_said_loudly_with_a_pool_that_fits(tmp_path: Path) -> None:
    done, out = replayed(tmp_path)
    warning = ('3 of 4 jobs were clamped to fit the pool\'s nodes (1 cpu, 1024 MB): their waits measure no '
               'contention. Give a pool that fits, e.g. --nodes 1 --node "Cpus=8, Memory=8192"')
    [line] = [event for event in map(json.loads, done.stderr.splitlines()) if event["level"] == "warning"]
    assert line["event"] == warning
    summary = json.loads((out / "summary.json").read_text())
    assert summary["warnings"] == [warning]
    page = (out / "report.html").read_text()
    assert page.index(warning.replace('"', "&quot;").replace("'", "&#x27;")) < page.index("<table")


def test_a_pool_that_fits_gets_no_warning(tmp_path: Path) -> None:
    done, out = replayed(tmp_path, "--nodes", "1", "--node", "Cpus=8, Memory=8192")
    assert all(json.loads(line)["level"] == "info" for line in done.stderr.splitlines())
    assert json.loads((out / "summary.json").read_text())["warnings"] == []
