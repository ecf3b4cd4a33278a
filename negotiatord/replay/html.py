"""``report.html``: one self-contained page of plots over a replay (PNGs embedded as base64).

Utilization and queue length over time (after each cycle that ran; a skipped cycle changes
neither), the wait distribution per accounting group, and Jain's fairness index over time. The
page names no file and no clock, and the PNGs carry no metadata, so the same replay gives the same
bytes with the same matplotlib.
"""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")   # files only, never a display

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from negotiatord.replay.simulate import ReplayResult  # noqa: E402

HOUR = 3600.0


def report_page(result: ReplayResult, title: str) -> str:
    """The page's HTML."""
    figures = [("Utilization and queue length", _load(result)),
               ("Wait per accounting group", _waits(result)),
               ("Jain's fairness index on usage / quota", _jain(result))]
    sections = "\n".join(f"<h2>{html.escape(name)}</h2>\n<img alt=\"{html.escape(name)}\" "
                         f"src=\"data:image/png;base64,{image}\">" for name, image in figures)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>\n"
            f"<body>\n<h1>{html.escape(title)}</h1>\n{sections}\n</body></html>\n")


def _hours(result: ReplayResult) -> list[float]:
    return [(cycle.time - result.origin) / HOUR for cycle in result.cycles]


def _load(result: ReplayResult) -> str:
    figure, busy = plt.subplots(figsize=(9, 3.5))
    busy.step(_hours(result), [cycle.busy_cpus / result.pool_cpus for cycle in result.cycles], where="post",
              color="tab:blue")
    busy.set(xlabel="hours since the first submission", ylabel="utilization", ylim=(0, 1.05))
    queue = busy.twinx()
    queue.step(_hours(result), [cycle.queued for cycle in result.cycles], where="post", color="tab:orange")
    queue.set_ylabel("idle jobs", color="tab:orange")
    return _png(figure)


def _waits(result: ReplayResult) -> str:
    waits: dict[str, list[float]] = defaultdict(list)
    for run in result.runs:
        if run.start is not None:
            waits[run.job.group or "<none>"].append((run.start - run.job.submit) / HOUR)
    names = sorted(waits)
    figure, axes = plt.subplots(figsize=(9, max(2.5, 0.3 * len(names))))
    if names:
        axes.boxplot([waits[name] for name in names], orientation="horizontal", tick_labels=names)
    axes.set(xlabel="wait (hours)")
    return _png(figure)


def _jain(result: ReplayResult) -> str:
    figure, axes = plt.subplots(figsize=(9, 3))
    values = [float("nan") if cycle.jain is None else cycle.jain for cycle in result.cycles]
    axes.step(_hours(result), values, where="post")
    axes.set(xlabel="hours since the first submission", ylabel="Jain's index", ylim=(0, 1.05))
    return _png(figure)


def _png(figure: plt.Figure) -> str:
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
