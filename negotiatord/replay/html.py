"""``report.html``: one self-contained page over a replay (PNGs embedded as base64).

A table of the headline figures (:mod:`negotiatord.replay.figures`) and of the waits per user,
then plots (:mod:`negotiatord.replay.plots`): utilization and queue length over time (after each
cycle that ran; a skipped cycle changes neither), each group's share of its quota over time, the
wait distribution per accounting group, Jain's fairness index over time, and each cycle's duration
and matches (last: the one plot of wall-clock figures). A plot with nothing to show is replaced by
a line saying why. A replay of several p-slot loading policies gets one page comparing them: a
table of their figures and the same plots overlaid, one line per policy. The pages name no file
and no clock, and the PNGs carry no metadata, so the same replay gives the same bytes with the
same matplotlib, up to the plot of cycle durations.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from negotiatord.replay import plots
from negotiatord.replay.figures import cell_text
from negotiatord.replay.simulate import ReplayResult

HOUR = 3600.0
UTILIZATION = "Utilization and queue length"
SHARE = "Share of quota per accounting group"
WAITS = "Wait per accounting group"
JAIN = "Jain's fairness index on usage / quota"
CYCLES = "Cycle duration and matches per cycle"
USERS = "Waits per user"
NO_QUOTA = "No accounting group has a quota (GROUP_NAMES, GROUP_QUOTA_<g>): nothing to plot."
USER_ROWS = 25
Plot = Callable[[], Figure | None]
USER_COLUMNS = (("jobs", "jobs"), ("started", "started"), ("wait_mean_s", "wait mean s"),
                ("wait_p50_s", "wait median s"), ("wait_p95_s", "wait p95 s"), ("wait_max_s", "wait max s"),
                ("bounded_slowdown_mean", "bounded slowdown mean"))


def report_page(result: ReplayResult, title: str, headline: Sequence[tuple[str, str, str]],
                users: Mapping[str, Mapping[str, Any]], warnings: Sequence[str] = ()) -> str:
    """The page of one replay: ``warnings`` about it in bold, the ``headline`` figures (label,
    value, what it is) and the ``users``' waits in tables, then the plots."""
    sections: list[tuple[str, Plot, str]] = [
        (UTILIZATION, lambda: plots.load_figure(result), ""),
        (SHARE, lambda: plots.share_figure(result), NO_QUOTA),
        (WAITS, lambda: plots.waits_figure(result), "No job started."),
        (JAIN, lambda: plots.jain_figure({"": result}), NO_QUOTA),
        (CYCLES, lambda: plots.cycles_figure(result), "")]
    tables = _table(["figure", "value", "what it is"], headline) + "\n" + _users_table(users)
    warned = "".join(f"<p><strong>Warning: {html.escape(warning)}</strong></p>\n" for warning in warnings)
    return _page(title, warned + _partial(result) + _preemptions(result) + tables, sections)


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
    sections: list[tuple[str, Plot, str]] = [
        ("Utilization", lambda: plots.overlaid_figure(results, plots.utilization_line, "utilization", (0, 1.05)), ""),
        ("Queue length", lambda: plots.overlaid_figure(results, plots.queue_line, "idle jobs", None), ""),
        (JAIN, lambda: plots.jain_figure(results), NO_QUOTA),
        ("Wait distribution", lambda: plots.wait_distribution_figure(results), "")]
    return _page(title, _table(header, rows), sections)


def _page(title: str, preface: str, sections: Sequence[tuple[str, Plot, str]]) -> str:
    """The page: ``preface``, then a section per plot, or the reason it has nothing to show."""
    parts = []
    for name, build, reason in sections:
        image = plots.rendered(build)
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(f"<p>{html.escape(reason)}</p>" if image is None else
                     f"<img alt=\"{html.escape(name)}\" src=\"data:image/png;base64,{image}\">")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>\n"
            f"<body>\n<h1>{html.escape(title)}</h1>\n{preface}\n{body}\n</body></html>\n")
