"""The plots of report.html as a reader sees them: 30 groups each with its own colour in natural
order and a legend that fits, plots with nothing to show replaced by a line saying why, cycle
durations and matches apart, and no matplotlib warning on the terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from negotiatord.replay import SimulatedPool, alike_nodes, read_trace, replay
from negotiatord.replay.plots import cycles_figure, natural_order, share_figure, waits_figure
from negotiatord.replay.pool import NodeShape
from negotiatord.replay.simulate import ReplayResult
from negotiatord.settings import load_settings

from .conftest import CPU_CENTRIC, ROOT

GROUPS = [f"group_g{index}" for index in range(1, 31)]
NODE = "Cpus=16, Memory=16384"


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """30 groups of a 1/30 dynamic quota each, four one-cpu jobs per group on two 16-cpu nodes."""
    config = folder / "groups.conf"
    config.write_text(CPU_CENTRIC + f"GROUP_NAMES = {', '.join(GROUPS)}\nGROUP_ACCEPT_SURPLUS = True\n"
                      + "".join(f"GROUP_QUOTA_DYNAMIC_{group} = 0.0333\n" for group in GROUPS))
    trace = folder / "groups.csv"
    rows = [f"j{round_ * 30 + index},{round_ * 100 + index},{300 + 7 * index},1,512,u{index},{group}"
            for round_ in range(4) for index, group in enumerate(GROUPS)]
    trace.write_text("job,submit,runtime,cpus,memory,user,group\n" + "\n".join(rows) + "\n")
    return config, trace


@pytest.fixture(scope="module")
def thirty_groups(tmp_path_factory: pytest.TempPathFactory) -> ReplayResult:
    config, trace = write_inputs(tmp_path_factory.mktemp("groups"))
    return replay(read_trace(trace), load_settings(config), SimulatedPool(alike_nodes(2, NodeShape.parse(NODE))))


def test_groups_go_in_natural_order() -> None:
    assert natural_order(["group_g10", "group_g9", "group_g1", "group_b", "group_a2"]) == [
        "group_a2", "group_b", "group_g1", "group_g9", "group_g10"]


def test_thirty_groups_have_distinct_colours_and_a_legend_that_fits(thirty_groups: ReplayResult) -> None:
    figure = share_figure(thirty_groups)
    assert figure is not None
    [legend] = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == GROUPS        # g9 before g10
    colours = {tuple(line.get_color()) for line in figure.axes[0].get_lines() if line.get_label() in GROUPS}
    assert len(colours) == 30
    figure.canvas.draw()
    inside, box = figure.bbox, legend.get_window_extent()
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
    plot = figure.axes[0].get_window_extent()
    assert not plot.overlaps(box)                                           # beside the plot, not on it
    plt.close(figure)


def test_the_waits_plot_lists_groups_in_natural_order_top_down(thirty_groups: ReplayResult) -> None:
    figure = waits_figure(thirty_groups)
    assert figure is not None
    figure.canvas.draw()
    axes = figure.axes[0]
    height = {label.get_text(): axes.transData.transform((0, position))[1]
              for label, position in zip(axes.get_yticklabels(), axes.get_yticks())}
    assert sorted(height, key=height.__getitem__, reverse=True) == GROUPS
    plt.close(figure)


def test_cycle_durations_and_matches_are_apart(thirty_groups: ReplayResult) -> None:
    figure = cycles_figure(thirty_groups)
    figure.canvas.draw()
    duration, matches = figure.axes
    assert duration.get_ylabel() == "cycle duration (ms)" and matches.get_ylabel() == "matches"
    assert not duration.get_window_extent().overlaps(matches.get_window_extent())
    plt.close(figure)


def test_a_replay_without_groups_says_there_is_no_quota_to_plot(tmp_path: Path) -> None:
    config, trace = write_inputs(tmp_path)
    config.write_text(CPU_CENTRIC)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "negotiatord", "replay", "--config", str(config), "--trace",
                           str(trace), "--nodes", "2", "--node", NODE, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text()
    assert page.count("No accounting group has a quota") == 2           # share of quota, Jain's index
    assert 'alt="Share of quota per accounting group"' not in page


def test_no_matplotlib_warning_reaches_the_terminal(tmp_path: Path) -> None:
    """30 groups made matplotlib warn ("Tight layout not applied") on stderr; and a fresh
    matplotlib config directory makes it build its font cache, which it may announce."""
    config, trace = write_inputs(tmp_path)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "negotiatord", "replay", "--config", str(config), "--trace",
                           str(trace), "--nodes", "2", "--node", NODE, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, MPLCONFIGDIR=str(tmp_path / "matplotlib")))
    assert done.returncode == 0, done.stderr
    stray = [line for line in done.stderr.splitlines() if not line.startswith("{")]    # log lines are JSON
    assert stray == [] and "Warning" not in done.stderr
    assert (out / "report.html").read_text().count("<img") == 5
