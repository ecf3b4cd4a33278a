"""Resource bounds: the offered rows a request's consumption cannot fit, found before the kernel.

On a consumption-policy slot HTCondor's ``cp_sufficient_assets`` rejects the match when the
consumption of some asset is negative, not a number, or more than the slot has left. Where every
compiled ``Consumption<asset>`` leaf of a stack is a value known before the assessment (a job-only
value such as ``quantize(RequestMemory, {128})``, or a slot literal), that test is a comparison
of columns, made in one small kernel before the assessment, so the assessment kernel is handed
only the rows that may fit. At OSPool scale most offered p-slots are fragments (cores free,
memory not) that most requests do not fit. The rows pruned are exactly those the assessment
kernel's own first stage would reject (the same conversion, :func:`kernels._sink` with
SINK_CONSUME, and the same comparison, in :func:`kernels.consumption_misfits`), so no answer
changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from negotiatord.fastpath.instructions import (
    LEAF_KIND, LEAF_PLAIN, LEAF_SEGMENTS_END, LEAF_SEGMENTS_START, SOURCE_NONE, SOURCE_SCALAR, SOURCE_STATIC,
)
from negotiatord.fastpath.interpreter import kernels
from negotiatord.fastpath.interpreter.execution import Triple
from negotiatord.fastpath.interpreter.tables import LeafTables


@dataclass(frozen=True)
class KnownConsumption:
    """Per asset, whether every leaf of its Consumption root is an operand read as is (no
    instructions: a scalar or a static value), and for each leaf which operand (SOURCE_SCALAR or SOURCE_STATIC)
    at which index: what :func:`kernels.consumption_misfits` reads."""

    prunable: np.ndarray           # bool[asset]
    kind: np.ndarray               # int64[asset, leaf]
    index: np.ndarray              # int64[asset, leaf]

    @property
    def any(self) -> bool:
        return bool(self.prunable.any())


def known_consumption(leaf_of: np.ndarray, tables: LeafTables, assets: int) -> KnownConsumption:
    """What is known of the Consumption roots (the first ``assets`` rows of ``leaf_of``)."""
    leaves = len(tables.leaves)
    known = KnownConsumption(np.zeros(assets, dtype=bool), np.full((assets, leaves), SOURCE_NONE, dtype=np.int64),
                             np.zeros((assets, leaves), dtype=np.int64))
    for root in range(assets):
        reached = np.unique(leaf_of[root][leaf_of[root] >= 0]).tolist()
        known.prunable[root] = bool(reached)
        for leaf in reached:
            kind, first, last = (int(v) for v in tables.leaves[leaf, [LEAF_KIND, LEAF_SEGMENTS_START,
                                                                      LEAF_SEGMENTS_END]])
            start, end, operand, index, _ = (int(v) for v in tables.segments[first])
            if kind != LEAF_PLAIN or last - first != 1 or start != end or operand not in (SOURCE_SCALAR, SOURCE_STATIC):
                known.prunable[root] = False
                break
            known.kind[root, leaf], known.index[root, leaf] = operand, index
    return known


def misfits(known: KnownConsumption, leaf_of: np.ndarray, universe_rows: np.ndarray, consumption_policy: np.ndarray,
            base: np.ndarray, amounts: np.ndarray, scalar_base: np.ndarray, scalars: Triple,
            static: Triple) -> np.ndarray | None:
    """bool per row: a known consumption does not fit (the kernel's ``misfit``); None when some
    scalar is not there to read (the kernel will say the call needs Python)."""
    misfit = np.zeros(len(universe_rows), dtype=np.bool_)
    found = kernels.consumption_misfits(known.prunable, known.kind, known.index, leaf_of, universe_rows,
                                        consumption_policy, base, amounts, scalar_base, *scalars, *static, misfit)
    return None if found < 0 else misfit
