"""Rendering a cycle's result for people and programs: the dry-run's JSON and table output."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from negotiatord.cycle.result import CycleResult, CycleStats, Match, Preemption


def cycle_figures(stats: CycleStats, digits: int = 6) -> dict[str, Any]:
    """A cycle's figures, as the dry run prints them and the daemon logs them."""
    return {
        "duration_s": round(stats.duration_s, digits),
        "matches": stats.matches,
        "rejections": stats.rejections,
        "slots": stats.slots,
        "jobs": stats.jobs,
        "autoclusters": stats.autoclusters,
        "pie_spins": stats.pie_spins,
        "pool_size": stats.pool_size,
        "pairs": stats.pairs,
        "classad_fallbacks": stats.classad_fallbacks,
        "claimed_slots": stats.claimed_slots,
        "preemptions": stats.preemptions,
        "phases_s": {name: round(seconds, digits) for name, seconds in stats.phase_s.items()},
    }


def match_document(match: Match) -> dict[str, Any]:
    """One match, as the dry run prints it and the daemon publishes it (with its sequence number);
    a match that preempts names the victim job (``preempts``), whose it was and the rule."""
    document = {"job": match.job, "slot": match.slot, "submitter": match.submitter, "group": match.group,
                "cost": match.cost, "consumed": match.consumed}
    if match.preemption is not None:
        document["preempts"] = match.preemption.victim_job
        document.update(preemption_fields(match.preemption))
    return document


def preemption_entry(preemption: Preemption) -> dict[str, Any]:
    """A preemption no job takes the slot for (rule ``quota``), as the daemon publishes it beside
    the matches: a match's document with no job, submitter or group, costing and consuming
    nothing, so one reader handles both."""
    return {"job": None, "slot": preemption.slot, "submitter": None, "group": None, "cost": 0.0, "consumed": {},
            "preempts": preemption.victim_job, **preemption_fields(preemption)}


def preemption_fields(preemption: Preemption) -> dict[str, Any]:
    """What a match adds about the job it preempts (the match names the job, slot and submitter)."""
    return {"victim_submitter": preemption.victim_submitter, "victim_group": preemption.victim_group,
            "rule": preemption.rule, "strategy": preemption.strategy}


def preemption_document(preemption: Preemption) -> dict[str, Any]:
    """A preemption as the dry run's JSON shows it: its fields, in their order."""
    return asdict(preemption)


def _match_exprs(result: CycleResult) -> dict[str, Any]:
    """NEGOTIATOR_MATCH_EXPRS, with each match as HTCondor's negotiator puts them in the matched
    slot ad (``insertNegotiatorMatchExprs``); nothing when none is configured."""
    return {"match_exprs": dict(result.match_exprs)} if result.match_exprs else {}


def cycle_document(result: CycleResult) -> dict[str, Any]:
    """The JSON document ``negotiatord negotiate`` prints; matches in the order they were made.
    A group's quota, allocated and usage are its subtree's; own_allocated and own_usage its own
    submitters'."""
    return {
        "cycle": cycle_figures(result.stats),
        "matches": [match_document(m) | _match_exprs(result) for m in result.matches],
        "preemptions": [preemption_document(p) for p in result.preemptions],
        "rejections": [{"job": r.job, "submitter": r.submitter, "reason": r.reason} for r in result.rejections],
        "groups": [
            {"name": g.name, "quota": g.quota, "allocated": g.allocated, "usage": g.usage,
             "own_allocated": g.own_allocated, "own_usage": g.own_usage, "accept_surplus": g.accept_surplus}
            for g in result.groups
        ],
        "submitters": [
            {"name": s.name, "group": s.group, "effective_priority": s.effective_priority,
             "limit": s.limit, "usage": s.usage}
            for s in result.submitters
        ],
        "problems": list(result.problems),
    }


def cycle_table(result: CycleResult) -> str:
    """A readable summary: the cycle line, then groups (subtree figures, then the group's own),
    submitters, matches and rejections."""
    s = result.stats
    lines = [
        f"cycle: {s.matches} matches, {s.rejections} rejections, {s.slots} slots, {s.jobs} idle jobs, "
        f"{s.autoclusters} autoclusters, {s.pie_spins} pie spins, pool size {_number(s.pool_size)}, "
        f"{s.claimed_slots} claimed slots considered, {s.preemptions} preemptions, {s.duration_s:.3f} s",
        "",
        _table(["group", "quota", "allocated", "usage", "own allocated", "own usage", "surplus"],
               [[g.name, _number(g.quota), _number(g.allocated), _number(g.usage), _number(g.own_allocated),
                 _number(g.own_usage), "yes" if g.accept_surplus else "no"]
                for g in result.groups]),
        "",
        _table(["submitter", "group", "eff. priority", "limit", "usage"],
               [[u.name, u.group, _number(u.effective_priority), _number(u.limit), _number(u.usage)]
                for u in result.submitters]),
        "",
        _table(["job", "slot", "submitter", "cost", "consumed"],
               [[m.job, m.slot, m.submitter, _number(m.cost),
                 " ".join(f"{k}={_number(v)}" for k, v in m.consumed.items())] for m in result.matches]),
    ]
    if result.preemptions:
        lines += ["", _table(["preempting job", "slot", "submitter", "preempted job", "victim submitter",
                              "victim group", "rule", "strategy"],
                             [[p.job or "-", p.slot, p.submitter or "-", p.victim_job or "-", p.victim_submitter,
                               p.victim_group, p.rule, p.strategy or "-"] for p in result.preemptions])]
    if result.rejections:
        lines += ["", _table(["rejected job", "submitter", "reason"],
                             [[r.job, r.submitter, r.reason] for r in result.rejections])]
    if result.problems:
        lines += ["", "problems:", *(f"  {p}" for p in result.problems)]
    return "\n".join(lines)


def _number(value: float) -> str:
    """Whole numbers in full (disk sizes are large), others to four decimals."""
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])
