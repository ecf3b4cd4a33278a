"""Expressions over plain ads through the whole fast path, for differential tests and for
explaining a disagreement with classad2.

``evaluate(text, my, target, now)`` is the fast path's answer to ``ExprTree(text).eval(my, target)``
with ``time()`` frozen at ``now``; :func:`evaluate_over` asks one expression of many "slot" ads at
once against one "job" ad, the way the negotiator does. ``None`` means the fast path would hand
that expression to classad2 (:class:`Unevaluated` for the single form).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Sequence

import classad2
import numpy as np

from negotiatord.classad.parser import parse
from negotiatord.classad.semantics import old_semantics
from negotiatord.classad.values import Value
from negotiatord.fastpath.compiler.cells import JobCells, SlotColumns
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.compiler.resolution import JOB, SLOT, Mode
from negotiatord.fastpath.instructions import SINK_RAW
from negotiatord.fastpath.interpreter.compilations import Compiled
from negotiatord.fastpath.interpreter.execution import Frame, NeedsFallback, decode, run_plan, triple
from negotiatord.fastpath.interpreter.job_scalars import JobScalars
from negotiatord.fastpath.interpreter.space import Context, RootSpec, SlotRows, Space


@dataclass(frozen=True)
class AdAsSlot:
    """A bare ad in the place of a slot (cells.SlotAd): no assets, no expressions kept beside the ad."""

    ad: classad2.ClassAd
    assets: tuple[str, ...] = ()
    integer_amounts: tuple[bool, ...] = ()
    consumption: None = None
    slot_weight: None = None


class Unevaluated(Exception):
    """The fast path would hand this expression to classad2 (the reason is the message)."""


def evaluate(text: str, my: classad2.ClassAd, target: classad2.ClassAd | None, now: int) -> Value:
    value = evaluate_over(text, None, [my], target, now)[0]
    if value is None:
        raise Unevaluated(text)
    return value


def evaluate_over(text: str | None, attribute: str | None, slots: Sequence[classad2.ClassAd],
                  job: classad2.ClassAd | None, now: int, my: str = SLOT) -> list[Value | None]:
    """``text`` (or the ads' own ``attribute``) with MY = each slot ad and TARGET = ``job``; or,
    with ``my="job"``, the job's ``attribute`` with MY = job and TARGET = each slot ad."""
    fresh = Compiled(old_semantics(), ())
    strings, cells = fresh.strings, fresh.cells
    columns = SlotColumns(tuple(AdAsSlot(ad) for ad in slots), {}, cells, now, AdDescriptions())
    context = Context(fresh, columns, now)
    space = Space(context, np.arange(len(slots)), SlotRows.plain(len(slots)))
    job_cells = JobCells(job, cells, now) if job is not None else None
    ast = parse(str(classad2.ExprTree(text))) if text is not None else None
    spec = RootSpec("probe", my, attribute.lower() if attribute else None, ast, Mode(no_target=job is None),
                    SINK_RAW)
    scalars = JobScalars(context, job_cells)
    scalars.set_clock(int(time.time()))
    compiled = space.compiled(spec, job_cells, lambda _, rows: np.ones(len(rows), dtype=bool),
                              scalars.value if job_cells is not None else None)
    results: list[Value | None] = [None] * len(slots)
    for leaf_id in np.unique(compiled.leaf_of):
        leaf = space.leaves[leaf_id]
        rows = np.flatnonzero(compiled.leaf_of == leaf_id)
        if leaf.plan is None:
            continue
        # classad2 steps over job values and slot literals are kernel inputs, computed before the
        # kernel runs, as the evaluator does (_python_inputs)
        frame = Frame(len(slots), np.arange(len(slots)), scalars.triple(leaf.scalar_nodes), static=space.static,
                      out=triple((1, len(slots))), dynamic=space.dynamic_inputs(len(slots)))
        try:
            space.fill_python_inputs(leaf.python_inputs, rows, frame.universe_rows, frame.scalars, frame.dynamic)
            run_plan(leaf.plan, rows, frame, strings, [(SINK_RAW, 0)])
        except NeedsFallback:
            continue
        for row in rows:
            results[row] = decode(frame.out[0][0, row], frame.out[1][0, row], frame.out[2][0, row], strings)
    return results


__all__ = ["JOB", "SLOT", "Unevaluated", "evaluate", "evaluate_over"]
