"""The plots of a replay's report, as matplotlib figures, and their PNG form.

A plot with nothing to show is not made (None): a share of quota or Jain's index when no group
has a quota, waits when no job started; the page says why instead. Groups are in natural order
(``group_g9`` before ``group_g10``), each with a colour of its own however many there are, and a
legend of many entries is set beside the plot in as many columns as it needs, the figure grown to
hold it (constrained layout). Cycle durations and matches per cycle are two panels over one time
axis, so neither's dots cover the other's.

Matplotlib speaks through Python warnings and its ``matplotlib`` logger; neither reaches the
terminal of a command that plots (:func:`rendered` sends the warnings to the debug log, and the
logger passes only errors on).
"""

from __future__ import annotations

import base64
import io
import logging
import math
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

import matplotlib
import structlog

matplotlib.use("Agg")   # files only, never a display
logging.getLogger("matplotlib").setLevel(logging.ERROR)

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib import colormaps  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from negotiatord.replay.simulate import ReplayResult  # noqa: E402

HOUR = 3600.0
TIME_AXIS = "hours since the first submission"
LEGEND_ROWS = 20           # legend entries per column
WIDTH_IN = 9.0
NO_GROUP = "<none>"

log = structlog.get_logger("negotiatord.replay")

Line = Callable[[Axes, ReplayResult, str], None]


def rendered(build: Callable[[], Figure | None]) -> str | None:
    """The figure ``build`` makes as a base64 PNG without metadata (the same bytes for the same
    figure), or None when it has nothing to show; matplotlib's warnings, while it is built and
    drawn, go to the debug log."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure = build()
        if figure is None:
            image = None
        else:
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
            plt.close(figure)
            image = base64.b64encode(buffer.getvalue()).decode("ascii")
    for warning in caught:
        log.debug("matplotlib warning", warning=str(warning.message))
    return image


def natural_order(names: Iterable[str]) -> list[str]:
    """``names`` sorted with their runs of digits compared as numbers: g2, g9, g10."""
    return sorted(names, key=lambda name: [int(part) if part.isdigit() else part.lower()
                                           for part in re.split(r"(\d+)", name)])


def colours(count: int) -> list[tuple[float, float, float, float]]:
    """``count`` distinct colours: matplotlib's qualitative tables up to 60 (tab10, tab20, then
    tab20, tab20b and tab20c), evenly spaced hues of ``hsv`` beyond."""
    if count <= 10:
        return [colormaps["tab10"](index) for index in range(count)]
    if count <= 20:
        return [colormaps["tab20"](index) for index in range(count)]
    if count <= 60:
        table = [colormaps[name](index) for name in ("tab20", "tab20b", "tab20c") for index in range(20)]
        return table[:count]
    return [colormaps["hsv"](index / count) for index in range(count)]


def load_figure(result: ReplayResult) -> Figure:
    """Utilization and the queue of idle jobs after each cycle."""
    figure, busy = plt.subplots(figsize=(WIDTH_IN, 3.5), layout="constrained")
    utilization_line(busy, result, "utilization")
    busy.set(xlabel=TIME_AXIS, ylabel="utilization", ylim=(0, 1.05))
    queue = busy.twinx()
    queue.step(_hours(result), [cycle.queued for cycle in result.cycles], where="post", color="tab:orange")
    queue.set_ylabel("idle jobs", color="tab:orange")
    return figure


def share_figure(result: ReplayResult) -> Figure | None:
    """Each group's usage over its quota after each cycle; None when no group has a quota."""
    groups = natural_order({name for cycle in result.cycles for name in cycle.group_load})
    if not groups:
        return None
    figure, axes = plt.subplots(figsize=_size(3.5, len(groups)), layout="constrained")
    for name, colour in zip(groups, colours(len(groups))):
        axes.step(_hours(result), [cycle.group_load.get(name, 0.0) for cycle in result.cycles], where="post",
                  label=name, color=colour)
    axes.axhline(1.0, color="grey", linestyle=":")
    axes.set(xlabel=TIME_AXIS, ylabel="usage / quota")
    _legend(figure, len(groups))
    return figure


def waits_figure(result: ReplayResult) -> Figure | None:
    """The waits of each group's started jobs; None when no job started."""
    waits = waits_by_group(result)
    if not waits:
        return None
    names = natural_order(waits)
    figure, axes = plt.subplots(figsize=(WIDTH_IN, max(2.5, 0.3 * len(names) + 1)), layout="constrained")
    axes.boxplot([waits[name] for name in names], orientation="horizontal", tick_labels=names)
    axes.invert_yaxis()    # the first group on top, as in the legends
    axes.set(xlabel="wait (hours)")
    return figure


def overlaid_figure(results: Mapping[str, ReplayResult], line: Line, ylabel: str,
                    ylim: tuple[float, float] | None) -> Figure:
    """One line per replay (labelled by its key) over time."""
    figure, axes = plt.subplots(figsize=(WIDTH_IN, 3), layout="constrained")
    for (label, result), colour in zip(results.items(), colours(len(results))):
        line(axes, result, label)
        axes.get_lines()[-1].set_color(colour)
    axes.set(xlabel=TIME_AXIS, ylabel=ylabel)
    if ylim is not None:
        axes.set_ylim(*ylim)
    if len(results) > 1:
        _legend(figure, len(results))
    return figure


def jain_figure(results: Mapping[str, ReplayResult]) -> Figure | None:
    """Jain's index over time, a line per replay; None when no replay has a value (no group with a
    quota used anything)."""
    if not any(cycle.jain is not None for result in results.values() for cycle in result.cycles):
        return None
    return overlaid_figure(results, jain_line, "Jain's index", (0, 1.05))


def wait_distribution_figure(results: Mapping[str, ReplayResult]) -> Figure:
    """Each replay's share of started jobs that waited at most x hours."""
    figure, axes = plt.subplots(figsize=(WIDTH_IN, 3), layout="constrained")
    for (label, result), colour in zip(results.items(), colours(len(results))):
        waits = sorted(wait for group in waits_by_group(result).values() for wait in group)
        axes.step(waits, [(index + 1) / len(waits) for index in range(len(waits))], where="post", label=label,
                  color=colour)
    axes.set(xlabel="wait (hours)", ylabel="share of started jobs", ylim=(0, 1.05))
    _legend(figure, len(results))
    return figure


def cycles_figure(result: ReplayResult) -> Figure:
    """Each cycle's duration (wall clock) above, its matches below, over one time axis."""
    figure, (duration, matches) = plt.subplots(2, 1, figsize=(WIDTH_IN, 4.5), sharex=True, layout="constrained")
    duration.plot(_hours(result), [cycle.duration_s * 1000 for cycle in result.cycles], ".", markersize=2,
                  color="tab:blue")
    duration.set(ylabel="cycle duration (ms)")
    matches.plot(_hours(result), [cycle.matches for cycle in result.cycles], ".", markersize=2, color="tab:green")
    matches.set(xlabel=TIME_AXIS, ylabel="matches")
    return figure


def utilization_line(axes: Axes, result: ReplayResult, label: str) -> None:
    axes.step(_hours(result), [cycle.busy_cpus / result.pool_cpus for cycle in result.cycles], where="post",
              label=label)


def queue_line(axes: Axes, result: ReplayResult, label: str) -> None:
    axes.step(_hours(result), [cycle.queued for cycle in result.cycles], where="post", label=label)


def jain_line(axes: Axes, result: ReplayResult, label: str) -> None:
    values = [float("nan") if cycle.jain is None else cycle.jain for cycle in result.cycles]
    axes.step(_hours(result), values, where="post", label=label)


def waits_by_group(result: ReplayResult) -> dict[str, list[float]]:
    """The waits, in hours, of each group's started jobs."""
    waits: dict[str, list[float]] = defaultdict(list)
    for run in result.runs:
        if run.start is not None:
            waits[run.job.group or NO_GROUP].append((run.start - run.job.submit) / HOUR)
    return waits


def _hours(result: ReplayResult) -> list[float]:
    return [(cycle.time - result.origin) / HOUR for cycle in result.cycles]


def _size(height: float, entries: int) -> tuple[float, float]:
    """A figure tall and wide enough for a legend of ``entries`` beside the plot, in columns of at
    most ``LEGEND_ROWS``."""
    columns = math.ceil(entries / LEGEND_ROWS)
    return WIDTH_IN + 1.8 * max(0, columns - 1), max(height, 0.2 * min(entries, LEGEND_ROWS) + 0.8)


def _legend(figure: Figure, entries: int) -> None:
    figure.legend(loc="outside right upper", ncols=math.ceil(entries / LEGEND_ROWS), fontsize="small",
                  frameon=False)
