"""Replays of one trace under several p-slot loading policies, side by side.

Each policy's own outputs go to ``<out>/<policy>/``; ``<out>/summary.json`` holds the table of
their figures (the same figures as each policy's summary), and ``<out>/report.html`` the table and
the plots overlaid. The table leaves out wall-clock figures, so it is the same for the same inputs;
the terminal's copy adds them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from negotiatord.replay.figures import cell_text, value_at
from negotiatord.replay.html import comparison_page
from negotiatord.replay.report import REPORT_FILE, SUMMARY_FILE
from negotiatord.replay.simulate import ReplayResult

# (column, where it is in a policy's summary.json)
COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("utilization", ("utilization",)),
    ("wait mean s", ("all", "wait_mean_s")),
    ("wait p50 s", ("all", "wait_p50_s")),
    ("wait p95 s", ("all", "wait_p95_s")),
    ("wait max s", ("all", "wait_max_s")),
    ("bounded slowdown", ("all", "bounded_slowdown_mean")),
    ("makespan s", ("makespan_s",)),
    ("throughput jobs/h", ("throughput_jobs_per_hour",)),
    ("user fairness", ("user_fairness", "jain")),
    ("Jain mean", ("jain", "mean")),
    ("bursts", ("bursts", "count")),
    ("cycles to fill mean", ("bursts", "cycles_to_fill", "mean")),
    ("cycles to fill max", ("bursts", "cycles_to_fill", "max")),
    ("stranded cpus mean", ("stranded_cpus", "mean")),
    ("cycles run", ("cycles", "run")),
    ("matches", ("cycles", "matches")),
    ("never started", ("jobs", "never_started")),
)
WALL_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("wall s", ("wall_time_s", "replay")),
    ("sim-days / wall-hour", ("wall_time_s", "simulated_days_per_wall_hour")),
)


def comparison(summaries: Mapping[str, Mapping[str, Any]], *, wall: bool = False) -> tuple[list[str], list[list[str]]]:
    """The table's header and one row per policy (with the wall-clock columns if ``wall``)."""
    columns = COLUMNS + (WALL_COLUMNS if wall else ())
    header = ["policy", *(name for name, _ in columns)]
    rows = [[policy, *(cell_text(value_at(summary, path)) for _, path in columns)]
            for policy, summary in summaries.items()]
    return header, rows


def write_comparison(out: Path, results: Mapping[str, ReplayResult], summaries: Mapping[str, Mapping[str, Any]],
                     trace_name: str) -> dict[str, Any]:
    """Write ``summary.json`` (the table, and where each policy's outputs are) and ``report.html``."""
    header, rows = comparison(summaries)
    document = {
        "trace": trace_name,
        "policies": {policy: {"outputs": f"{policy}/",
                              **{name: value_at(summaries[policy], path) for name, path in COLUMNS}}
                     for policy in summaries},
    }
    (out / SUMMARY_FILE).write_text(json.dumps(document, indent=1) + "\n")
    (out / REPORT_FILE).write_text(comparison_page(results, header, rows,
                                                   f"negotiatord replay of {trace_name}: p-slot loading policies"))
    return document


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """The table in aligned columns, for a terminal."""
    widths = [max(len(line[column]) for line in [header, *rows]) for column in range(len(header))]
    return "\n".join("  ".join(cell.rjust(width) if column else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(line, widths)))
                     for line in [header, *rows])
