"""``report.html``: one self-contained page of plots over a replay (PNGs embedded as base64).

Utilization and queue length over time (after each cycle that ran; a skipped cycle changes
neither), each group's share of its quota over time, the wait distribution per accounting group,
Jain's fairness index over time, and each cycle's duration and matches (last: the one plot of
wall-clock figures). A replay of several p-slot loading policies gets one page comparing them: a
table of their figures and the same plots overlaid, one line per policy. The pages name no file
and no clock, and the PNGs carry no metadata, so the same replay gives the same bytes with the
same matplotlib, up to the plot of cycle durations.
"""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")   # files only, never a display

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.axes import Axes  # noqa: E402

from negotiatord.replay.figures import cell_text  # noqa: E402
from negotiatord.replay.simulate import ReplayResult  # noqa: E402

HOUR = 3600.0
UTILIZATION = "Utilization and queue length"
SHARE = "Share of quota per accounting group"
WAITS = "Wait per accounting group"
JAIN = "Jain's fairness index on usage / quota"
CYCLES = "Cycle duration and matches per cycle"
USERS = "Waits per user"
USER_ROWS = 25
USER_COLUMNS = (("jobs", "jobs"), ("started", "started"), ("wait_mean_s", "wait mean s"),
                ("wait_p50_s", "wait median s"), ("wait_p95_s", "wait p95 s"), ("wait_max_s", "wait max s"),
                ("bounded_slowdown_mean", "bounded slowdown mean"))


def report_page(result: ReplayResult, title: str, headline: Sequence[tuple[str, str, str]],
                users: Mapping[str, Mapping[str, Any]]) -> str:
    """The page of one replay: the ``headline`` figures (label, value, what it is) and the
    ``users``' waits in tables, then the plots."""
    figures = [(UTILIZATION, _load(result)), (SHARE, _share(result)), (WAITS, _waits(result)),
               (JAIN, _overlaid({"": result}, _jain_line, "Jain's index", (0, 1.05))), (CYCLES, _cycles(result))]
    tables = (_table(["figure", "value", "what it is"], headline) + "\n" + _users_table(users))
    return _page(title, _partial(result) + _preemptions(result) + tables, figures)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return ("<table border=\"1\" cellspacing=\"0\" cellpadding=\"4\">\n<tr>"
            + "".join(f"<th>{html.escape(cell)}</th>" for cell in header) + "</tr>\n"
            + "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>\n" for row in rows)
            + "</table>")


def _users_table(users: Mapping[str, Mapping[str, Any]]) -> str:
    """The users with the most jobs, up to ``USER_ROWS`` of them, and their waits."""
    busiest = sorted(users.items(), key=lambda item: (-item[1]["jobs"], item[0]))[:USER_ROWS]
    rows = [[name, *(cell_text(figures[key]) for key, _ in USER_COLUMNS)] for name, figures in busiest]
    more = (f"<p>{len(users) - len(busiest):,} more users in summary.json (<code>users</code>).</p>\n"
            if len(users) > len(busiest) else "")
    return (f"<h2>{html.escape(USERS)}</h2>\n" + _table(["user", *(label for _, label in USER_COLUMNS)], rows)
            + "\n" + more)


def _partial(result: ReplayResult) -> str:
    """A line saying the replay was interrupted, and up to when its figures go; none for a whole one."""
    if not result.interrupted:
        return ""
    return (f"<p><strong>A partial replay:</strong> it was interrupted after {len(result.cycles):,} cycles, "
            f"{(result.end - result.origin) / HOUR:.2f} simulated hours after the first submission; "
            f"its figures cover those cycles only.</p>\n")


def _preemptions(result: ReplayResult) -> str:
    """A line counting the replay's preemptions, by rule, and the work they lost; none without."""
    by_rule = {rule: count for rule, count in result.preemptions_by_rule().items() if count}
    if not by_rule:
        return ""
    rules = ", ".join(f"{rule} {count}" for rule, count in by_rule.items())
    jobs = sum(run.preempted > 0 for run in result.runs)
    badput = sum(run.badput_cpu_s for run in result.runs) / HOUR
    return (f"<p>Preemptions: {sum(by_rule.values())} ({html.escape(rules)}), of {jobs} jobs, which ran "
            f"again from the start; badput {badput:.2f} cpu-hours.</p>")


def deterministic_part(page: str) -> str:
    """The page up to its last section, the one plot of wall-clock figures (cycle durations):
    the same bytes for the same inputs."""
    return page.partition(f"<h2>{html.escape(CYCLES)}</h2>")[0]


def comparison_page(results: Mapping[str, ReplayResult], header: Sequence[str], rows: Sequence[Sequence[str]],
                    title: str) -> str:
    """The page comparing replays of one trace (by policy): the table, then overlaid plots."""
    table = _table(header, rows)
    figures = [("Utilization", _overlaid(results, _utilization_line, "utilization", (0, 1.05))),
               ("Queue length", _overlaid(results, _queue_line, "idle jobs", None)),
               (JAIN, _overlaid(results, _jain_line, "Jain's index", (0, 1.05))),
               ("Wait distribution", _wait_distributions(results))]
    return _page(title, table, figures)


def _page(title: str, preface: str, figures: Sequence[tuple[str, str]]) -> str:
    sections = "\n".join(f"<h2>{html.escape(name)}</h2>\n<img alt=\"{html.escape(name)}\" "
                         f"src=\"data:image/png;base64,{image}\">" for name, image in figures)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>\n"
            f"<body>\n<h1>{html.escape(title)}</h1>\n{preface}\n{sections}\n</body></html>\n")


def _hours(result: ReplayResult) -> list[float]:
    return [(cycle.time - result.origin) / HOUR for cycle in result.cycles]


def _load(result: ReplayResult) -> str:
    figure, busy = plt.subplots(figsize=(9, 3.5))
    _utilization_line(busy, result, "utilization")
    busy.set(xlabel="hours since the first submission", ylabel="utilization", ylim=(0, 1.05))
    queue = busy.twinx()
    queue.step(_hours(result), [cycle.queued for cycle in result.cycles], where="post", color="tab:orange")
    queue.set_ylabel("idle jobs", color="tab:orange")
    return _png(figure)


def _utilization_line(axes: Axes, result: ReplayResult, label: str) -> None:
    axes.step(_hours(result), [cycle.busy_cpus / result.pool_cpus for cycle in result.cycles], where="post",
              label=label)


def _queue_line(axes: Axes, result: ReplayResult, label: str) -> None:
    axes.step(_hours(result), [cycle.queued for cycle in result.cycles], where="post", label=label)


def _jain_line(axes: Axes, result: ReplayResult, label: str) -> None:
    values = [float("nan") if cycle.jain is None else cycle.jain for cycle in result.cycles]
    axes.step(_hours(result), values, where="post", label=label)


def _overlaid(results: Mapping[str, ReplayResult], line: Callable[[Axes, ReplayResult, str], None], ylabel: str,
              ylim: tuple[float, float] | None) -> str:
    """One line per replay (labelled by its key) on one plot over time."""
    figure, axes = plt.subplots(figsize=(9, 3))
    for label, result in results.items():
        line(axes, result, label)
    axes.set(xlabel="hours since the first submission", ylabel=ylabel)
    if ylim is not None:
        axes.set_ylim(*ylim)
    if len(results) > 1:
        axes.legend()
    return _png(figure)


def _share(result: ReplayResult) -> str:
    figure, axes = plt.subplots(figsize=(9, 3.5))
    groups = sorted({name for cycle in result.cycles for name in cycle.group_load})
    for name in groups:
        axes.step(_hours(result), [cycle.group_load.get(name, 0.0) for cycle in result.cycles], where="post",
                  label=name)
    axes.axhline(1.0, color="grey", linestyle=":")
    axes.set(xlabel="hours since the first submission", ylabel="usage / quota")
    if groups:
        axes.legend()
    return _png(figure)


def _waits(result: ReplayResult) -> str:
    waits = _waits_by_group(result)
    names = sorted(waits)
    figure, axes = plt.subplots(figsize=(9, max(2.5, 0.3 * len(names))))
    if names:
        axes.boxplot([waits[name] for name in names], orientation="horizontal", tick_labels=names)
    axes.set(xlabel="wait (hours)")
    return _png(figure)


def _waits_by_group(result: ReplayResult) -> dict[str, list[float]]:
    waits: dict[str, list[float]] = defaultdict(list)
    for run in result.runs:
        if run.start is not None:
            waits[run.job.group or "<none>"].append((run.start - run.job.submit) / HOUR)
    return waits


def _wait_distributions(results: Mapping[str, ReplayResult]) -> str:
    """Each replay's share of started jobs that waited at most x hours."""
    figure, axes = plt.subplots(figsize=(9, 3))
    for label, result in results.items():
        waits = sorted(wait for group in _waits_by_group(result).values() for wait in group)
        axes.step(waits, [(index + 1) / len(waits) for index in range(len(waits))], where="post", label=label)
    axes.set(xlabel="wait (hours)", ylabel="share of started jobs", ylim=(0, 1.05))
    axes.legend()
    return _png(figure)


def _cycles(result: ReplayResult) -> str:
    figure, duration = plt.subplots(figsize=(9, 3))
    duration.plot(_hours(result), [cycle.duration_s * 1000 for cycle in result.cycles], ".", markersize=2,
                  color="tab:blue")
    duration.set(xlabel="hours since the first submission", ylabel="cycle duration (ms)")
    matches = duration.twinx()
    matches.plot(_hours(result), [cycle.matches for cycle in result.cycles], ".", markersize=2, color="tab:green")
    matches.set_ylabel("matches", color="tab:green")
    return _png(figure)


def _png(figure: plt.Figure) -> str:
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
