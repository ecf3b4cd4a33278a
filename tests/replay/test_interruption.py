"""A replay stopped early: by Ctrl-C (what it has is written, marked partial, exit 130), or by an
``--out`` it could never write or a config it cannot replay (said before any work is done)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from negotiatord.commands import replay as replay_command_module
from negotiatord.replay import SimulatedPool, alike_nodes, read_trace, replay
from negotiatord.replay.pool import NodeShape
from negotiatord.settings import Settings

from .conftest import KTH, NODE, ROOT, replay_command

EXIT_INTERRUPTED = 130   # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


def never_replay(*args: object, **kwargs: object) -> None:
    raise AssertionError("the replay ran before its outputs were checked")


@pytest.mark.parametrize("out", ["/proc/nope", "/proc/self/status/out", "/dev/null/out"])
def test_an_out_that_cannot_be_written_is_refused_before_the_replay(
        out: str, replay_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(replay_command_module, "replay", never_replay)
    config, trace = replay_files
    assert replay_command("--config", str(config), "--trace", str(trace), "--out", out) == 2
    error = capsys.readouterr().err
    assert "--out" in error and out in error and "Traceback" not in error


def test_an_output_file_taken_by_a_folder_is_refused_before_the_replay(
        replay_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(replay_command_module, "replay", never_replay)
    (tmp_path / "depth_first" / "report.html").mkdir(parents=True)
    config, trace = replay_files
    assert replay_command("--config", str(config), "--trace", str(trace), "--out", str(tmp_path),
                          "--policies", "depth_first,breadth_first") == 2
    error = capsys.readouterr().err
    assert str(tmp_path / "depth_first" / "report.html") in error


def test_an_interrupted_replay_keeps_what_it_did(settings: Settings, replay_files: tuple[Path, Path]) -> None:
    trace = read_trace(replay_files[1])
    calls = 0

    def progress(simulated_s: float, started: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt

    result = replay(trace, settings, SimulatedPool(alike_nodes(2, NodeShape.parse(NODE))), progress=progress)
    assert result.interrupted
    # the hand trace's first three cycles (t = 0, 60, 120: test_hand_trace.py), and the period ends at
    # the last of them
    assert [cycle.time for cycle in result.cycles] == [0, 60, 120]
    assert result.end == 120
    assert sum(run.start is not None for run in result.runs) == 4


def test_ctrl_c_on_a_replay_writes_its_partial_outputs_and_exits_130(tmp_path: Path) -> None:
    """A real SIGINT to ``negotiatord replay`` of the whole KTH trace, once it has started."""
    (tmp_path / "kth.conf").write_text("SLOT_WEIGHT = Cpus\nNEGOTIATOR_INTERVAL = 60\n")
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-m", "negotiatord", "replay", "--config", str(tmp_path / "kth.conf"), "--trace", str(KTH),
         "--nodes", "10", "--node", "Cpus=10, Memory=10240", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert child.stderr is not None
    lines = []
    for line in child.stderr:       # cycles have run once it logs its progress (every 10 s)
        lines.append(line)
        if '"event": "replay progress"' in line:
            break
    child.send_signal(signal.SIGINT)
    stdout, rest = child.communicate(timeout=120)
    stderr = "".join(lines) + rest
    assert child.returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "interrupted" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is True
    assert 0 < summary["cycles"]["run"]
    assert summary["jobs"]["submitted"] < summary["jobs"]["kept"]
    assert "partial" in (out / "report.html").read_text()


def test_a_config_without_a_cycle_interval_is_refused_in_a_line(replay_files: tuple[Path, Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "no_interval.conf"
    config.write_text("SLOT_WEIGHT = Cpus\nNEGOTIATOR_INTERVAL = 0\n")
    assert replay_command("--config", str(config), "--trace", str(replay_files[1]), "--out", str(tmp_path / "out")) == 2
    assert capsys.readouterr().err == (f"negotiatord: {config}: NEGOTIATOR_INTERVAL = 0: a replay runs a cycle every "
                                       f"NEGOTIATOR_INTERVAL seconds of simulated time; give it a value > 0\n")
