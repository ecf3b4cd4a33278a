"""Resource bounds: the offered rows a request's consumption cannot fit, found before the kernel.

On a consumption-policy slot HTCondor's ``cp_sufficient_assets`` rejects the match when the
consumption of some asset is negative, not a number, or more than the slot has left. Where every
compiled ``Consumption<asset>`` leaf of a stack is a value known before the assessment (a job-only
value such as ``quantize(RequestMemory, {128})``, or a slot literal), that test is a comparison
of columns: it is made here, in numpy, so the kernel is handed only the rows that may fit. At
OSPool scale most offered p-slots are fragments (cores free, memory not) that most requests do
not fit. The rows pruned are exactly those the kernel's own first stage would reject (the same
conversion, :func:`kernels._sink` with SINK_CONSUME, and the same comparison), so no answer changes.
"""

from __future__ import annotations

import numpy as np

from negotiatord.fastpath import kernels as K
from negotiatord.fastpath.engine import Triple
from negotiatord.fastpath.tables import LeafTables
from negotiatord.fastpath.values import INT, REAL

# per asset: each leaf of its Consumption root -> (operand kind K_SC or K_ST, index); None when
# some leaf computes its value row by row
KnownConsumption = list[dict[int, tuple[int, int]] | None]


def known_consumption(leaf_of: np.ndarray, tables: LeafTables, assets: int) -> KnownConsumption:
    """Which Consumption roots (the first ``assets`` rows of ``leaf_of``) have only leaves whose
    value is an operand read as is: no instructions, a scalar or a static value."""
    known: KnownConsumption = []
    for root in range(assets):
        reached = np.unique(leaf_of[root][leaf_of[root] >= 0]).tolist()
        operands: dict[int, tuple[int, int]] | None = {}
        for leaf in reached:
            kind, first, last = (int(v) for v in tables.leaves[leaf, [K.L_KIND, K.L_SEG0, K.L_SEG1]])
            start, end, operand, index, _ = (int(v) for v in tables.segments[first])
            if kind != K.LEAF_PLAIN or last - first != 1 or start != end or operand not in (K.K_SC, K.K_ST):
                operands = None
                break
            operands[leaf] = (operand, index)
        known.append(operands)
    return known


def misfits(known: KnownConsumption, leaf_of: np.ndarray, urows: np.ndarray, consumption_policy: np.ndarray,
            base: np.ndarray, amounts: np.ndarray, sc_base: np.ndarray, scalars: Triple,
            static: Triple) -> np.ndarray | None:
    """bool per row: a known consumption does not fit (the kernel's ``misfit``); None when some
    scalar is not there to read (the kernel will say the call needs Python)."""
    n = len(urows)
    out = np.zeros(n, dtype=bool)
    for asset, operands in enumerate(known):
        if not operands:
            continue
        leaves = leaf_of[asset, urows]
        tag = np.zeros(n, dtype=np.int8)
        ival = np.zeros(n, dtype=np.int64)
        fval = np.zeros(n, dtype=np.float64)
        for leaf, (operand, index) in operands.items():
            at = leaves == leaf
            if not at.any():
                continue
            if operand == K.K_SC:
                if sc_base[leaf] < 0:
                    return None
                row = sc_base[leaf] + index
                tag[at], ival[at], fval[at] = scalars[0][row, 0], scalars[1][row, 0], scalars[2][row, 0]
            else:
                tag[at], ival[at], fval[at] = static[0][index, urows[at]], static[1][index, urows[at]], \
                    static[2][index, urows[at]]
        used = _consumed(tag, ival, fval)
        computed = consumption_policy & (leaves >= 0) & ~np.isnan(base[:, asset])
        with np.errstate(invalid="ignore"):
            out |= computed & ((used < 0) | (used > amounts[:, asset]))
    return out


def _consumed(tag: np.ndarray, ival: np.ndarray, fval: np.ndarray) -> np.ndarray:
    """The kernel's SINK_CONSUME conversion: a number, else (or when negative) FAILED_CONSUMPTION."""
    used = np.where(tag == INT, ival.astype(np.float64),
                    np.where((tag == REAL) & ~np.isnan(fval), fval, K.FAILED_CONSUMPTION))
    return np.where(used < 0, K.FAILED_CONSUMPTION, used)
