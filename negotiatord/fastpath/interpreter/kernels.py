"""All numba kernels of the fast path: one generic interpreter plus the assessment glue.

A ClassAd value is a triple (tag int8, ival int64, fval float64); strings are interned ids in ival.
The interpreter runs *blocks*: a range of instructions applied column-wise to a range of positions
(rows of the current call). It is compiled once (``cache=True``) and never specialised per
expression, so a pool's thousands of distinct expressions cost no JIT time during a cycle.
``nogil=True`` everywhere: the daemon's event loop keeps running while a cycle evaluates.

The operator semantics are classad2's, including its quirks, pinned down by the differential tests
(tests/test_fastpath_differential.py): booleans take part in arithmetic and comparisons as 0/1 but not
in unary minus; a real result of +inf is ERROR while -inf is kept; ``==`` on strings ignores ASCII
case; ``&&``/``||`` treat numbers as booleans; ``floor(undefined)`` is ERROR but ``int(undefined)``
is UNDEFINED; reals out of int64 range convert to INT64_MIN.
"""

from __future__ import annotations

from typing import Literal, TypedDict

import numpy as np
from numba import njit

from negotiatord.classad.values import BOOL, ERROR, INT, REAL, STR, UNDEF
from negotiatord.evaluation.loading import EPSILON, Stop
from negotiatord.evaluation.protocol import UNRANKED
from negotiatord.evaluation.reference import FAILED_CONSUMPTION
from negotiatord.fastpath.instructions import (
    BLOCK_ASSET_BASE, BLOCK_CHAINED, BLOCK_CODE_END, BLOCK_CODE_START, BLOCK_OUT_ROW, BLOCK_POSITIONS_END,
    BLOCK_POSITIONS_START, BLOCK_RESULT_INDEX, BLOCK_RESULT_SOURCE, BLOCK_SCALAR_BASE, BLOCK_SINK, LEAF_CHAIN,
    LEAF_KIND, LEAF_NEVER, LEAF_PYTHON, LEAF_SEGMENTS_END, LEAF_SEGMENTS_START, OP_ADD, OP_AND, OP_CEILING, OP_COND,
    OP_DIV, OP_ELVIS, OP_EQ, OP_FLOOR, OP_GT, OP_INT, OP_IS, OP_ISNT, OP_IS_BOOL, OP_IS_ERROR, OP_IS_INT,
    OP_IS_REAL, OP_IS_STRING, OP_IS_UNDEF, OP_LE, OP_LT, OP_MOD, OP_MOVE, OP_MUL, OP_NE, OP_NEG, OP_NOT, OP_PLUS,
    OP_REAL, OP_ROUND, OP_SUB, SINK_CONSUME, SINK_FILTER, SINK_FILTER_LAST, SINK_MATCH, SINK_NONE, SINK_NUMBER,
    SINK_OWN, SINK_RANK_UNRANKED, SINK_RANK_ZERO, SINK_RAW, SOURCE_ASSET, SOURCE_DYNAMIC, SOURCE_NONE,
    SOURCE_REGISTER, SOURCE_SCALAR, SOURCE_STATIC,
)

_INT64_MIN = np.int64(-9223372036854775808)
_INT64_MAX = np.int64(9223372036854775807)
_TWO63 = 9.223372036854775808e18


class _JitOptions(TypedDict):
    nogil: bool
    cache: bool
    error_model: Literal["python", "numpy"]


_JIT: _JitOptions = {"nogil": True, "cache": True, "error_model": "numpy"}


@njit(inline="always", **_JIT)
def _truth(t, i, f):
    """0 false-ish, 1 true-ish, 2 undefined, 3 error, 4 not a boolean (string)."""
    if t == BOOL or t == INT:
        return 1 if i != 0 else 0
    if t == REAL:
        return 0 if f == 0.0 else 1
    if t == UNDEF:
        return 2
    if t == ERROR:
        return 3
    return 4


@njit(inline="always", **_JIT)
def _bool(b):
    return np.int8(BOOL), np.int64(1 if b else 0), 0.0


@njit(inline="always", **_JIT)
def _err():
    return np.int8(ERROR), np.int64(0), 0.0


@njit(inline="always", **_JIT)
def _undef():
    return np.int8(UNDEF), np.int64(0), 0.0


@njit(inline="always", **_JIT)
def _is_num(t):
    return t == BOOL or t == INT or t == REAL


@njit(inline="always", **_JIT)
def _as_float(t, i, f):
    return f if t == REAL else float(i)


@njit(inline="always", **_JIT)
def _to_int64(x):
    """C++'s (long long) cast as classad2 does it on x86: NaN and out-of-range reals give INT64_MIN."""
    if x != x or x < -_TWO63 or x >= _TWO63:
        return _INT64_MIN
    return np.int64(x)


@njit(inline="always", **_JIT)
def _trunc_div(x, y):
    q = x // y
    if (x % y != 0) and ((x < 0) != (y < 0)):
        q += 1
    return q


@njit(inline="always", **_JIT)
def _arith(op, at, ai, af, bt, bi, bf):
    if at == ERROR or bt == ERROR:
        return _err()
    if at == UNDEF or bt == UNDEF:
        return _undef()
    if not _is_num(at) or not _is_num(bt):
        return _err()
    if at == REAL or bt == REAL:
        if op == OP_MOD:
            return _err()
        x = _as_float(at, ai, af)
        y = _as_float(bt, bi, bf)
        if op == OP_ADD:
            r = x + y
        elif op == OP_SUB:
            r = x - y
        elif op == OP_MUL:
            r = x * y
        else:
            r = x / y
        if r == np.inf:
            return _err()
        return np.int8(REAL), np.int64(0), r
    if op == OP_ADD:
        return np.int8(INT), ai + bi, 0.0
    if op == OP_SUB:
        return np.int8(INT), ai - bi, 0.0
    if op == OP_MUL:
        return np.int8(INT), ai * bi, 0.0
    if bi == 0:
        return _err()
    if ai == _INT64_MIN and bi == -1:
        return (np.int8(INT), _INT64_MAX, 0.0) if op == OP_DIV else (np.int8(INT), np.int64(0), 0.0)
    q = _trunc_div(ai, bi)
    if op == OP_DIV:
        return np.int8(INT), q, 0.0
    return np.int8(INT), ai - q * bi, 0.0


@njit(inline="always", **_JIT)
def _holds(op, x, y):
    """``x op y`` for one of the six comparison operators; x and y share a type (numba compiles
    one version per type: interned string ids and ranks, int64, float64)."""
    if op == OP_EQ:
        return x == y
    if op == OP_NE:
        return x != y
    if op == OP_LT:
        return x < y
    if op == OP_LE:
        return x <= y
    if op == OP_GT:
        return x > y
    return x >= y


@njit(inline="always", **_JIT)
def _compare(op, at, ai, af, bt, bi, bf, la, lb, ra, rb):
    """la/lb: ids of the lower-cased strings, ra/rb: their ranks (read by the caller: helpers take
    no arrays, which would cost reference counting per element)."""
    if at == ERROR or bt == ERROR:
        return _err()
    if at == UNDEF or bt == UNDEF:
        return _undef()
    if at == STR and bt == STR:
        if op == OP_EQ or op == OP_NE:
            return _bool(_holds(op, la, lb))
        return _bool(_holds(op, ra, rb))
    if not _is_num(at) or not _is_num(bt):
        return _err()
    if at != REAL and bt != REAL:
        return _bool(_holds(op, ai, bi))
    return _bool(_holds(op, _as_float(at, ai, af), _as_float(bt, bi, bf)))


@njit(inline="always", **_JIT)
def _identical(at, ai, af, bt, bi, bf):
    if at != bt:
        return False
    if at == UNDEF or at == ERROR:
        return True
    if at == REAL:
        return af == bf
    return ai == bi


@njit(inline="always", **_JIT)
def _logic(op, at, ai, af, bt, bi, bf):
    ca = _truth(at, ai, af)
    cb = _truth(bt, bi, bf)
    if ca >= 3:
        return _err()
    if op == OP_AND:
        if ca == 0:
            return _bool(False)
        if cb >= 3:
            return _err()
        if cb == 0:
            return _bool(False)
        if ca == 2 or cb == 2:
            return _undef()
        return _bool(True)
    if ca == 1:
        return _bool(True)
    if cb >= 3:
        return _err()
    if cb == 1:
        return _bool(True)
    if ca == 2 or cb == 2:
        return _undef()
    return _bool(False)


@njit(inline="always", **_JIT)
def _convert(op, t, i, f, converted_t, converted_i, converted_f):
    """floor, ceiling, round, int, real: a string's result (converted_t, converted_i,
    converted_f) comes from the tables classad2 filled."""
    if t == STR:
        return converted_t, converted_i, converted_f
    if t == ERROR:
        return _err()
    if t == UNDEF:
        if op == OP_INT or op == OP_REAL:
            return _undef()
        return _err()
    if op == OP_REAL:
        return np.int8(REAL), np.int64(0), _as_float(t, i, f)
    if t != REAL:
        return np.int8(INT), i, 0.0
    if op == OP_FLOOR:
        return np.int8(INT), _to_int64(np.floor(f)), 0.0
    if op == OP_CEILING:
        return np.int8(INT), _to_int64(np.ceil(f)), 0.0
    if op == OP_ROUND:
        return np.int8(INT), _to_int64(np.rint(f)), 0.0
    return np.int8(INT), _to_int64(f), 0.0


@njit(inline="always", **_JIT)
def _unary(op, t, i, f, converted_t, converted_i, converted_f):
    if op == OP_MOVE:
        return t, i, f
    if op == OP_NOT:
        c = _truth(t, i, f)
        if c >= 3:
            return _err()
        if c == 2:
            return _undef()
        return _bool(c == 0)
    if op == OP_NEG or op == OP_PLUS:
        if t == UNDEF or t == ERROR:
            return t, i, f
        if t == INT:
            return (np.int8(INT), -i, 0.0) if op == OP_NEG else (t, i, f)
        if t == REAL:
            return (np.int8(REAL), np.int64(0), -f) if op == OP_NEG else (t, i, f)
        return _err()
    if op == OP_IS_UNDEF:
        return _bool(t == UNDEF)
    if op == OP_IS_ERROR:
        return _bool(t == ERROR)
    if op == OP_IS_STRING:
        return _bool(t == STR)
    if op == OP_IS_INT:
        return _bool(t == INT)
    if op == OP_IS_REAL:
        return _bool(t == REAL)
    if op == OP_IS_BOOL:
        return _bool(t == BOOL)
    return _convert(op, t, i, f, converted_t, converted_i, converted_f)


@njit(inline="always", **_JIT)
def _binary(op, at, ai, af, bt, bi, bf, la, lb, ra, rb):
    if op <= OP_MOD:
        return _arith(op, at, ai, af, bt, bi, bf)
    if op <= OP_NE:
        return _compare(op, at, ai, af, bt, bi, bf, la, lb, ra, rb)
    if op == OP_IS:
        return _bool(_identical(at, ai, af, bt, bi, bf))
    if op == OP_ISNT:
        return _bool(not _identical(at, ai, af, bt, bi, bf))
    if op == OP_ELVIS:
        if at == UNDEF:
            return bt, bi, bf
        return at, ai, af
    return _logic(op, at, ai, af, bt, bi, bf)


@njit(inline="always", **_JIT)
def _source(kind, idx, scalar_base, asset_base, register_t, register_i, register_f, scalar_t, scalar_i, scalar_f,
            static_t, static_i, static_f, dynamic_t, dynamic_i, dynamic_f):
    """An operand as (tag, ival, fval) 2-D arrays, its row, and how its column follows the
    position k or the universe row u: column = k * by_position + u * by_universe."""
    if kind == SOURCE_REGISTER:
        return register_t, register_i, register_f, idx, 1, 0
    if kind == SOURCE_SCALAR:
        return scalar_t, scalar_i, scalar_f, scalar_base + idx, 0, 0
    if kind == SOURCE_STATIC:
        return static_t, static_i, static_f, idx, 0, 1
    if kind == SOURCE_ASSET:
        return dynamic_t, dynamic_i, dynamic_f, asset_base + idx, 1, 0
    if kind == SOURCE_DYNAMIC:
        return dynamic_t, dynamic_i, dynamic_f, idx, 1, 0
    return scalar_t, scalar_i, scalar_f, 0, 0, 0


@njit(**_JIT)
def _sink(sink, t, i, f):
    """A result converted the way reference.py converts classad2 results (as_number, matches, ...)."""
    if sink == SINK_MATCH:   # ClassAd.matches: bool, or a number converted to bool
        if t == BOOL or t == INT:
            return 1.0 if i != 0 else 0.0
        if t == REAL:
            return 1.0 if f != 0.0 else 0.0
        return 0.0
    if t == INT:
        number = float(i)
    elif t == REAL and f == f:
        number = f
    elif t == BOOL and (sink == SINK_RANK_UNRANKED or sink == SINK_RANK_ZERO):
        return float(i)
    elif sink == SINK_RANK_UNRANKED:
        return UNRANKED
    elif sink == SINK_RANK_ZERO:
        return 0.0
    elif sink == SINK_CONSUME:
        return FAILED_CONSUMPTION
    else:
        return np.nan
    if sink == SINK_CONSUME and number < 0:
        return FAILED_CONSUMPTION
    return number


@njit(**_JIT)
def _run_segments(code, segments, s0, s1, own_sink, row, perm, p0, p1, universe_rows, scalar_base, asset_base,
                  register_t, register_i, register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
                  dynamic_t, dynamic_i, dynamic_f, out_t, out_i, out_f, string_lower, string_rank, conversion_t,
                  conversion_i, conversion_f):
    """Run segments ``s0..s1`` (rows of [code start, code end, result kind, result index, sink])
    over positions ``perm[p0:p1]``: each segment's instructions, one tight loop per instruction,
    then its sink (SINK_OWN: ``own_sink``). A FILTER sink keeps only the positions whose result
    matches (a conjunct of Requirements), so the next segment runs on fewer; FILTER_LAST also
    writes 1.0 for them. Returns where the kept positions end.

    Everything runs in this one function: helpers taking arrays would cost reference counting
    on every call.
    """
    for s in range(s0, s1):
        for j in range(segments[s, 0], segments[s, 1]):
            op = code[j, 0]
            dst = code[j, 1]
            a_t, a_i, a_f, ar, ak, au = _source(code[j, 2], code[j, 3], scalar_base, asset_base, register_t, register_i,
                                                register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
                                                dynamic_t, dynamic_i, dynamic_f)
            if code[j, 4] == SOURCE_NONE:
                row_conv = op - OP_FLOOR
                for p in range(p0, p1):
                    k = perm[p]
                    c = k * ak + universe_rows[k] * au
                    t = a_t[ar, c]
                    i = a_i[ar, c]
                    if t == STR and row_conv >= 0:
                        rt, ri, rf = _unary(op, t, i, a_f[ar, c], conversion_t[row_conv, i], conversion_i[row_conv, i],
                                            conversion_f[row_conv, i])
                    else:
                        rt, ri, rf = _unary(op, t, i, a_f[ar, c], np.int8(0), np.int64(0), 0.0)
                    register_t[dst, k] = rt
                    register_i[dst, k] = ri
                    register_f[dst, k] = rf
                continue
            b_t, b_i, b_f, br, bk, bu = _source(code[j, 4], code[j, 5], scalar_base, asset_base, register_t, register_i,
                                                register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
                                                dynamic_t, dynamic_i, dynamic_f)
            if op != OP_COND:
                for p in range(p0, p1):
                    k = perm[p]
                    u = universe_rows[k]
                    ca = k * ak + u * au
                    cb = k * bk + u * bu
                    at = a_t[ar, ca]
                    ai = a_i[ar, ca]
                    bt = b_t[br, cb]
                    bi = b_i[br, cb]
                    la = lb = ra = rb = 0
                    if at == STR and bt == STR:
                        la = string_lower[ai]
                        lb = string_lower[bi]
                        ra = string_rank[ai]
                        rb = string_rank[bi]
                    rt, ri, rf = _binary(op, at, ai, a_f[ar, ca], bt, bi, b_f[br, cb], la, lb, ra, rb)
                    register_t[dst, k] = rt
                    register_i[dst, k] = ri
                    register_f[dst, k] = rf
                continue
            c_t, c_i, c_f, cr, ck, cu = _source(code[j, 6], code[j, 7], scalar_base, asset_base, register_t, register_i,
                                                register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
                                                dynamic_t, dynamic_i, dynamic_f)
            for p in range(p0, p1):
                k = perm[p]
                u = universe_rows[k]
                ca = k * ak + u * au
                truth = _truth(a_t[ar, ca], a_i[ar, ca], a_f[ar, ca])
                if truth == 1:
                    cb = k * bk + u * bu
                    register_t[dst, k] = b_t[br, cb]
                    register_i[dst, k] = b_i[br, cb]
                    register_f[dst, k] = b_f[br, cb]
                elif truth == 0:
                    cc = k * ck + u * cu
                    register_t[dst, k] = c_t[cr, cc]
                    register_i[dst, k] = c_i[cr, cc]
                    register_f[dst, k] = c_f[cr, cc]
                else:
                    register_t[dst, k] = UNDEF if truth == 2 else ERROR
                    register_i[dst, k] = 0
                    register_f[dst, k] = 0.0
        sink = segments[s, 4]
        if sink == SINK_OWN:
            sink = own_sink
        if sink == SINK_NONE:
            continue
        r_t, r_i, r_f, rr, rk, ru = _source(segments[s, 2], segments[s, 3], scalar_base, asset_base, register_t,
                                            register_i, register_f, scalar_t, scalar_i, scalar_f, static_t, static_i,
                                            static_f, dynamic_t, dynamic_i, dynamic_f)
        if sink == SINK_FILTER or sink == SINK_FILTER_LAST:
            kept = p0
            for p in range(p0, p1):
                k = perm[p]
                c = k * rk + universe_rows[k] * ru
                if _sink(SINK_MATCH, r_t[rr, c], r_i[rr, c], r_f[rr, c]) == 1.0:
                    perm[kept] = k
                    kept += 1
            p1 = kept
            if sink == SINK_FILTER_LAST:
                for p in range(p0, kept):
                    out_f[row, perm[p]] = 1.0
            continue
        for p in range(p0, p1):
            k = perm[p]
            c = k * rk + universe_rows[k] * ru
            if sink == SINK_RAW:
                out_t[row, k] = r_t[rr, c]
                out_i[row, k] = r_i[rr, c]
                out_f[row, k] = r_f[rr, c]
            else:
                out_f[row, k] = _sink(sink, r_t[rr, c], r_i[rr, c], r_f[rr, c])
    return p1


@njit(**_JIT)
def run_blocks(code: np.ndarray, blocks: np.ndarray, perm: np.ndarray, universe_rows: np.ndarray, scalar_t: np.ndarray,
               scalar_i: np.ndarray, scalar_f: np.ndarray, static_t: np.ndarray, static_i: np.ndarray,
               static_f: np.ndarray, dynamic_t: np.ndarray, dynamic_i: np.ndarray, dynamic_f: np.ndarray,
               register_t: np.ndarray, register_i: np.ndarray, register_f: np.ndarray, out_t: np.ndarray,
               out_i: np.ndarray, out_f: np.ndarray, string_lower: np.ndarray, string_rank: np.ndarray,
               conversion_t: np.ndarray, conversion_i: np.ndarray, conversion_f: np.ndarray) -> None:
    """Run every block: its instructions over its positions ``perm[pos0:pos1]``, then its sink;
    a block with BLOCK_CHAINED = 1 runs on what the previous block's FILTER kept.

    Positions index the call's rows (registers, dynamic inputs, outputs); ``universe_rows[k]`` is the
    universe row of position ``k`` (static columns); scalars are a [count, 1] column.
    """
    segment = np.empty((1, 5), dtype=np.int64)
    chain_end = 0
    for b in range(blocks.shape[0]):
        p0 = blocks[b, BLOCK_POSITIONS_START]
        p1 = chain_end if blocks[b, BLOCK_CHAINED] == 1 else blocks[b, BLOCK_POSITIONS_END]
        segment[0, 0] = blocks[b, BLOCK_CODE_START]
        segment[0, 1] = blocks[b, BLOCK_CODE_END]
        segment[0, 2] = blocks[b, BLOCK_RESULT_SOURCE]
        segment[0, 3] = blocks[b, BLOCK_RESULT_INDEX]
        segment[0, 4] = blocks[b, BLOCK_SINK]
        chain_end = _run_segments(code, segment, 0, 1, SINK_NONE, blocks[b, BLOCK_OUT_ROW], perm, p0, p1, universe_rows,
                                  blocks[b, BLOCK_SCALAR_BASE], blocks[b, BLOCK_ASSET_BASE], register_t, register_i,
                                  register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f, dynamic_t,
                                  dynamic_i, dynamic_f, out_t, out_i, out_f, string_lower, string_rank, conversion_t,
                                  conversion_i, conversion_f)


@njit(inline="always", **_JIT)
def _preserve_integer(v):
    """HTCondor's assign_preserve_integers: a whole number is a ClassAd integer."""
    if v == v and np.floor(v) == v and -_TWO63 <= v < _TWO63:
        return np.int8(INT), np.int64(v), 0.0
    return np.int8(REAL), np.int64(0), v


@njit(**_JIT)
def asset_inputs(amounts: np.ndarray, base: np.ndarray, base_is_int: np.ndarray, used: np.ndarray,
                 dynamic_t: np.ndarray, dynamic_i: np.ndarray, dynamic_f: np.ndarray) -> None:
    """Dynamic inputs per position: rows [0, A) current assets, [A, 2A) the consumption that
    overrides Request<asset> (cp_override_requested), [2A, 3A) assets after deducting it.

    A slot whose amounts are unchanged keeps its ad's own literals (int or real); a changed one
    gets assign_preserve_integers values, exactly as the reference's ad copies do.
    """
    n = amounts.shape[0]
    _asset_inputs_at(np.arange(n), n, amounts, base, base_is_int, used, dynamic_t, dynamic_i, dynamic_f)


@njit(**_JIT)
def _asset_inputs_at(positions, count, amounts, base, base_is_int, used, dynamic_t, dynamic_i, dynamic_f):
    """:func:`asset_inputs` for ``positions[:count]`` only."""
    assets = amounts.shape[1]
    for p in range(count):
        k = positions[p]
        changed = False
        for c in range(assets):
            a = amounts[k, c]
            z = base[k, c]
            if not (a == z or (a != a and z != z)):
                changed = True
        for c in range(assets):
            a = amounts[k, c]
            if a != a:
                dynamic_t[c, k] = UNDEF
            elif changed:
                dynamic_t[c, k], dynamic_i[c, k], dynamic_f[c, k] = _preserve_integer(a)
            elif base_is_int[k, c]:
                dynamic_t[c, k] = INT
                dynamic_i[c, k] = np.int64(a)
            else:
                dynamic_t[c, k] = REAL
                dynamic_f[c, k] = a
            u = used[k, c]
            if u != u:
                dynamic_t[assets + c, k] = UNDEF
                dynamic_t[2 * assets + c, k] = UNDEF
            else:
                dynamic_t[assets + c, k], dynamic_i[assets + c, k], dynamic_f[assets + c, k] = _preserve_integer(u)
                w = 2 * assets + c
                dynamic_t[w, k], dynamic_i[w, k], dynamic_f[w, k] = _preserve_integer(a - u)


@njit(inline="always", **_JIT)
def _misfits(used, left):
    """A consumption that rules the slot out in cp_sufficient_assets: negative (a failed
    consumption is FAILED_CONSUMPTION) or more than the slot has ``left``."""
    return used < 0 or used > left


@njit(**_JIT)
def sufficient_assets(used: np.ndarray, amounts: np.ndarray) -> np.ndarray:
    """HTCondor's cp_sufficient_assets per row: each consumption fits and is >= 0, one is > 0.
    Assets a slot lacks are NaN in both arrays and take no part."""
    n, assets = used.shape
    ok = np.zeros(n, dtype=np.bool_)
    for k in range(n):
        fits = True
        some = False
        for c in range(assets):
            u = used[k, c]
            if u != u:
                continue
            if _misfits(u, amounts[k, c]):
                fits = False
            if u > 0:
                some = True
        ok[k] = fits and some
    return ok


@njit(**_JIT)
def consumption_misfits(prunable: np.ndarray, known_kind: np.ndarray, known_index: np.ndarray, root_leaf: np.ndarray,
                        universe_rows: np.ndarray, consumption_policy: np.ndarray, base: np.ndarray,
                        amounts: np.ndarray, job_scalar_base: np.ndarray, scalar_t: np.ndarray, scalar_i: np.ndarray,
                        scalar_f: np.ndarray, static_t: np.ndarray, static_i: np.ndarray, static_f: np.ndarray,
                        misfit: np.ndarray) -> int:
    """bounds.py: mark the rows where a Consumption leaf whose value is an operand read as is
    (``known_kind`` SOURCE_SCALAR or SOURCE_STATIC at ``known_index``) gives a consumption that does not fit, as
    assess_rows' stage 1 would. Returns the rows marked, or -1 when a scalar is missing."""
    n, assets = amounts.shape
    marked = 0
    for k in range(n):
        if not consumption_policy[k]:
            continue
        for c in range(assets):
            if not prunable[c] or base[k, c] != base[k, c]:
                continue
            leaf = root_leaf[c, universe_rows[k]]
            if leaf < 0:
                continue
            if known_kind[c, leaf] == SOURCE_SCALAR:
                if job_scalar_base[leaf] < 0:
                    return -1
                r = job_scalar_base[leaf] + known_index[c, leaf]
                used = _sink(SINK_CONSUME, scalar_t[r, 0], scalar_i[r, 0], scalar_f[r, 0])
            else:
                r = known_index[c, leaf]
                u = universe_rows[k]
                used = _sink(SINK_CONSUME, static_t[r, u], static_i[r, u], static_f[r, u])
            if _misfits(used, amounts[k, c]):
                misfit[k] = True
                marked += 1
                break
    return marked


# -- a whole assessment in one call ------------------------------------------------------------------
#
# Roots, in this order: Consumption<asset> for each table asset, then the ones below. Leaves are a
# space's compiled (expression, slot shape) pairs; a leaf row of the leaf table says how to run it.

(ROOT_SLOT_REQ, ROOT_SLOT_REQ_CP, ROOT_JOB_REQ, ROOT_JOB_REQ_CP, ROOT_WEIGHT, ROOT_PRE, ROOT_JOB_RANK,
 ROOT_POST) = range(8)
(O_SLOT_REQ, O_JOB_REQ, O_WEIGHT, O_WEIGHT_AFTER, O_PRE, O_JOB_RANK, O_POST) = range(7)
OUT_ROWS = 7        # then one row per asset: its consumption


@njit(**_JIT)
def _needs_python(positions, count, universe_rows, root_leaf, leaf_table, job_scalar_base):
    """Whether any leaf the rows reach is left to Python (classad2 steps, fallbacks, no scalars)."""
    for r in range(root_leaf.shape[0]):
        for p in range(count):
            leaf = root_leaf[r, universe_rows[positions[p]]]
            if leaf >= 0 and (leaf_table[leaf, LEAF_KIND] == LEAF_PYTHON or job_scalar_base[leaf] < 0):
                return True
    return False


@njit(**_JIT)
def _run_root(root, positions, count, sink, row, asset_base, universe_rows, root_leaf, leaf_table, segments, static_ok,
              job_ok, job_scalar_base, job_scalar_ok, code, register_t, register_i, register_f, scalar_t, scalar_i,
              scalar_f, static_t, static_i, static_f, dynamic_t, dynamic_i, dynamic_f, out_t, out_i, out_f,
              string_lower, string_rank, conversion_t, conversion_i, conversion_f):
    """One root over ``positions[:count]``, leaf by leaf. Requirements-like leaves (CHAIN) write
    0.0, then 1.0 where every conjunct matches: slot-only and job-and-slot conjuncts are looked
    up (``static_ok`` [leaf, universe row], ``job_ok`` [root, universe row]), the rest run as a
    FILTER chain."""
    leaves = leaf_table.shape[0]
    rest = (code, register_t, register_i, register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
            dynamic_t, dynamic_i, dynamic_f, out_t, out_i, out_f, string_lower, string_rank, conversion_t, conversion_i,
            conversion_f)
    if count == 1:      # one position (a loading kernel re-assesses one row at a time): its leaf
        leaf = root_leaf[root, universe_rows[positions[0]]]
        if leaf >= 0:
            _run_leaf(leaf, positions, 0, 1, root, sink, row, asset_base, universe_rows, leaf_table, segments,
                      static_ok, job_ok, job_scalar_base, job_scalar_ok, *rest)
        return
    if count * 4 < leaves:
        # few positions: a stable insertion sort by leaf, not a pass over every leaf of the table
        perm = np.empty(count, dtype=np.int64)
        key = np.empty(count, dtype=np.int64)
        kept = 0
        for p in range(count):
            leaf = root_leaf[root, universe_rows[positions[p]]]
            if leaf < 0:
                continue
            j = kept
            while j > 0 and key[j - 1] > leaf:
                key[j] = key[j - 1]
                perm[j] = perm[j - 1]
                j -= 1
            key[j] = leaf
            perm[j] = positions[p]
            kept += 1
        g0 = 0
        while g0 < kept:
            g1 = g0 + 1
            while g1 < kept and key[g1] == key[g0]:
                g1 += 1
            _run_leaf(key[g0], perm, g0, g1, root, sink, row, asset_base, universe_rows, leaf_table, segments,
                      static_ok, job_ok, job_scalar_base, job_scalar_ok, *rest)
            g0 = g1
        return
    # counting sort of the positions by leaf (stable; rows outside the root's domain are dropped)
    starts = np.zeros(leaves + 1, dtype=np.int64)
    for p in range(count):
        leaf = root_leaf[root, universe_rows[positions[p]]]
        if leaf >= 0:
            starts[leaf + 1] += 1
    for leaf in range(leaves):
        starts[leaf + 1] += starts[leaf]
    perm = np.empty(starts[leaves], dtype=np.int64)
    fill = starts[:-1].copy()
    for p in range(count):
        leaf = root_leaf[root, universe_rows[positions[p]]]
        if leaf >= 0:
            perm[fill[leaf]] = positions[p]
            fill[leaf] += 1
    for leaf in range(leaves):
        if starts[leaf] < starts[leaf + 1]:
            _run_leaf(leaf, perm, starts[leaf], starts[leaf + 1], root, sink, row, asset_base, universe_rows,
                      leaf_table, segments, static_ok, job_ok, job_scalar_base, job_scalar_ok, *rest)


@njit(**_JIT)
def _run_leaf(leaf, perm, g0, g1, root, sink, row, asset_base, universe_rows, leaf_table, segments, static_ok, job_ok,
              job_scalar_base, job_scalar_ok, code, register_t, register_i, register_f, scalar_t, scalar_i, scalar_f,
              static_t, static_i, static_f, dynamic_t, dynamic_i, dynamic_f, out_t, out_i, out_f, string_lower,
              string_rank, conversion_t, conversion_i, conversion_f):
    """One leaf of a root over positions ``perm[g0:g1]`` (see :func:`_run_root`)."""
    s0 = leaf_table[leaf, LEAF_SEGMENTS_START]
    s1 = leaf_table[leaf, LEAF_SEGMENTS_END]
    if leaf_table[leaf, LEAF_KIND] == LEAF_CHAIN:
        kept = g0
        for p in range(g0, g1):
            k = perm[p]
            out_f[row, k] = 0.0
            if static_ok[leaf, universe_rows[k]] and job_ok[root, universe_rows[k]]:
                perm[kept] = k
                kept += 1
        if leaf_table[leaf, LEAF_NEVER] == 1 or not job_scalar_ok[leaf]:
            kept = g0
        if s0 == s1:
            for p in range(g0, kept):
                out_f[row, perm[p]] = 1.0
            return
        g1 = kept
    _run_segments(code, segments, s0, s1, sink, row, perm, g0, g1, universe_rows, job_scalar_base[leaf], asset_base,
                  register_t, register_i, register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
                  dynamic_t, dynamic_i, dynamic_f, out_t, out_i, out_f, string_lower, string_rank, conversion_t,
                  conversion_i, conversion_f)


@njit(**_JIT)
def assess_rows(universe_rows: np.ndarray, consumption_policy: np.ndarray, amounts: np.ndarray, base: np.ndarray,
                base_is_int: np.ndarray, root_leaf: np.ndarray, may_need_python: bool, leaf_table: np.ndarray,
                segments: np.ndarray, static_ok: np.ndarray, job_ok: np.ndarray, job_scalar_base: np.ndarray,
                job_scalar_ok: np.ndarray, code: np.ndarray, scalar_t: np.ndarray, scalar_i: np.ndarray,
                scalar_f: np.ndarray, static_t: np.ndarray, static_i: np.ndarray, static_f: np.ndarray,
                register_t: np.ndarray, register_i: np.ndarray, register_f: np.ndarray, dynamic_t: np.ndarray,
                dynamic_i: np.ndarray, dynamic_f: np.ndarray, string_lower: np.ndarray, string_rank: np.ndarray,
                conversion_t: np.ndarray, conversion_i: np.ndarray, conversion_f: np.ndarray, matched: np.ndarray,
                consumption: np.ndarray, cost: np.ndarray, rank: np.ndarray, ranked: bool = True) -> bool:
    """HTCondor's assessment of one request against rows of slots (see evaluator.py), all stages
    in one call. ``dynamic`` rows from 3 * assets on hold classad2 steps computed beforehand. Returns
    False, having written nothing, when a leaf needs Python; the rows are only checked for that
    when ``may_need_python`` (some leaf of ``root_leaf`` might). Without ``ranked`` the ranks are
    left UNRANKED (a re-assessment keeps the rank its candidate was listed with)."""
    n, assets = amounts.shape
    everyone = np.arange(n)
    if may_need_python and _needs_python(everyone, n, universe_rows, root_leaf, leaf_table, job_scalar_base):
        return False
    out_t = np.empty((1, 1), dtype=np.int8)       # no root here has a raw sink: only out_f is written
    out_i = np.empty((1, 1), dtype=np.int64)
    out_f = np.zeros((OUT_ROWS + assets, n), dtype=np.float64)
    rest = (register_t, register_i, register_f, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f, dynamic_t,
            dynamic_i, dynamic_f, out_t, out_i, out_f, string_lower, string_rank, conversion_t, conversion_i,
            conversion_f)
    used = np.full((n, assets), np.nan)
    asset_inputs(amounts, base, base_is_int, used, dynamic_t, dynamic_i, dynamic_f)
    positions = np.empty(n, dtype=np.int64)

    # 1. consumption on consumption-policy slots, then cp_sufficient_assets. A row whose
    # consumption of one asset does not fit is out whatever the others consume, so each asset is
    # only computed on the rows every earlier asset fitted (fragments mostly fail the first ones).
    any_cp = False
    misfit = np.zeros(n, dtype=np.bool_)
    for c in range(assets):
        count = 0
        for k in range(n):
            if consumption_policy[k] and not misfit[k] and base[k, c] == base[k, c]:
                positions[count] = k
                count += 1
        any_cp |= count > 0
        _run_root(c, positions, count, SINK_CONSUME, OUT_ROWS + c, 0, universe_rows, root_leaf, leaf_table, segments,
                  static_ok, job_ok, job_scalar_base, job_scalar_ok, code, *rest)
        for p in range(count):
            k = positions[p]
            u = out_f[OUT_ROWS + c, k]
            used[k, c] = u
            if _misfits(u, amounts[k, c]):
                misfit[k] = True
    if any_cp:      # the overrides and what is left, for the rows that go on to Requirements
        count = 0
        for k in range(n):
            if consumption_policy[k] and not misfit[k]:
                positions[count] = k
                count += 1
        _asset_inputs_at(positions, count, amounts, base, base_is_int, used, dynamic_t, dynamic_i, dynamic_f)
    sufficient = sufficient_assets(used, amounts)

    # 2-3. the slot's then the job's Requirements (on consumption-policy slots with overrides)
    alive = np.empty(n, dtype=np.int64)
    count = 0
    for k in range(n):
        if not consumption_policy[k] or sufficient[k]:
            alive[count] = k
            count += 1
    for root, row in ((assets + ROOT_SLOT_REQ, O_SLOT_REQ), (assets + ROOT_JOB_REQ, O_JOB_REQ)):
        for policy_rows in (False, True):
            part = 0
            for p in range(count):
                if consumption_policy[alive[p]] == policy_rows:
                    positions[part] = alive[p]
                    part += 1
            _run_root(root + (1 if policy_rows else 0), positions, part, SINK_MATCH, row, 0, universe_rows, root_leaf,
                      leaf_table, segments, static_ok, job_ok, job_scalar_base, job_scalar_ok, code, *rest)
        kept = 0
        for p in range(count):
            if out_f[row, alive[p]] == 1.0:
                alive[kept] = alive[p]
                kept += 1
        count = kept

    # 4. match cost: SlotWeight before minus after (consumption policy), or the whole SlotWeight
    _run_root(assets + ROOT_WEIGHT, alive, count, SINK_NUMBER, O_WEIGHT, 0, universe_rows, root_leaf, leaf_table,
              segments, static_ok, job_ok, job_scalar_base, job_scalar_ok, code, *rest)
    part = 0
    for p in range(count):
        if consumption_policy[alive[p]]:
            positions[part] = alive[p]
            part += 1
    _run_root(assets + ROOT_WEIGHT, positions, part, SINK_NUMBER, O_WEIGHT_AFTER, 2 * assets, universe_rows, root_leaf,
              leaf_table, segments, static_ok, job_ok, job_scalar_base, job_scalar_ok, code, *rest)
    winners = 0
    for k in range(n):
        matched[k] = False
        cost[k] = np.nan
        for c in range(assets):
            consumption[k, c] = np.nan
        for r in range(3):
            rank[k, r] = UNRANKED
    for p in range(count):
        k = alive[p]
        price = out_f[O_WEIGHT, k] - out_f[O_WEIGHT_AFTER, k] if consumption_policy[k] else out_f[O_WEIGHT, k]
        if price == price:
            matched[k] = True
            cost[k] = price
            for c in range(assets):
                consumption[k, c] = used[k, c] if consumption_policy[k] else amounts[k, c]
            positions[winners] = k
            winners += 1

    # 5. ranks, for matched rows only
    if not ranked:
        return True
    for r, row in ((ROOT_PRE, O_PRE), (ROOT_JOB_RANK, O_JOB_RANK), (ROOT_POST, O_POST)):
        sink = SINK_RANK_ZERO if r == ROOT_JOB_RANK else SINK_RANK_UNRANKED
        _run_root(assets + r, positions, winners, sink, row, 0, universe_rows, root_leaf, leaf_table, segments,
                  static_ok, job_ok, job_scalar_base, job_scalar_ok, code, *rest)
        for p in range(winners):
            k = positions[p]
            if root_leaf[assets + r, universe_rows[k]] >= 0:
                rank[k, r - ROOT_PRE] = out_f[row, k]
    return True


# -- a request's loading in one call ------------------------------------------------------------------

(LOAD_JOBS, LOAD_CONCURRENCY, LOAD_NO_MATCH, LOAD_SUBMITTER_LIMIT, LOAD_GROUP_QUOTA,
 LOAD_NEEDS_PYTHON) = (int(stop) for stop in Stop)


@njit(**_JIT)
def load_request(c_rows: np.ndarray, c_rank: np.ndarray, c_cost: np.ndarray, c_consumption: np.ndarray,
                 c_version: np.ndarray, head: int, amounts: np.ndarray, weights: np.ndarray, available: np.ndarray,
                 version: np.ndarray, consumption_policy: np.ndarray, base: np.ndarray, base_is_int: np.ndarray,
                 universe_of: np.ndarray, jobs: int, limit: float, room_allocated: float, room_usage: np.ndarray,
                 room_term: int, concurrency_names: np.ndarray, concurrency_increments: np.ndarray,
                 concurrency_in_use: np.ndarray, concurrency_limits: np.ndarray, breadth_first: bool,
                 unit_cost_legacy: bool, one_match_per_slot: bool, out_rows: np.ndarray, out_consumption: np.ndarray,
                 out_cost: np.ndarray, known_prunable: np.ndarray, known_kind: np.ndarray, known_index: np.ndarray,
                 root_leaf: np.ndarray, may_need_python: bool, leaf_table: np.ndarray,
                 segments: np.ndarray, static_ok: np.ndarray, job_ok: np.ndarray, job_scalar_base: np.ndarray,
                 job_scalar_ok: np.ndarray, code: np.ndarray, scalar_t: np.ndarray, scalar_i: np.ndarray,
                 scalar_f: np.ndarray, static_t: np.ndarray, static_i: np.ndarray, static_f: np.ndarray,
                 register_t: np.ndarray, register_i: np.ndarray, register_f: np.ndarray, dynamic_t: np.ndarray,
                 dynamic_i: np.ndarray, dynamic_f: np.ndarray, string_lower: np.ndarray, string_rank: np.ndarray,
                 conversion_t: np.ndarray, conversion_i: np.ndarray,
                 conversion_f: np.ndarray) -> tuple[int, int, int, int, float, int]:
    """A request's loading (loading.py: evaluation.loading.load_plainly compiled). Place up to
    ``jobs`` jobs; returns (matches, stop, blocking entry, head, limit left,
    re-assessments). Matches are written to ``out_*``; the candidate columns, the pool columns,
    ``room_usage`` and ``concurrency_in_use`` are updated in place."""
    m = c_rows.shape[0]
    assets = amounts.shape[1]
    one_universe = np.empty(1, dtype=np.int64)
    one_policy = np.empty(1, dtype=np.bool_)
    one_amounts = np.empty((1, assets))
    one_base = np.empty((1, assets))
    one_integer = np.empty((1, assets), dtype=np.bool_)
    one_matched = np.empty(1, dtype=np.bool_)
    one_consumption = np.empty((1, assets))
    one_cost = np.empty(1)
    one_rank = np.empty((1, 3))
    one_misfit = np.zeros(1, dtype=np.bool_)
    prunable = known_prunable.any()
    entries = concurrency_names.shape[0]
    count = 0
    reassessed = 0
    while count < jobs:
        for e in range(entries):
            name = concurrency_names[e]
            if concurrency_in_use[name] + concurrency_increments[e] > concurrency_limits[name] + EPSILON:
                return count, LOAD_CONCURRENCY, e, head, limit, reassessed
        # the best candidate still on offer, re-assessed if a match changed it
        found = False
        while head < m:
            row = c_rows[head]
            if not available[row]:
                head += 1
                continue
            if c_version[head] != version[row]:
                one_universe[0] = universe_of[row]
                one_policy[0] = consumption_policy[row]
                for c in range(assets):
                    one_amounts[0, c] = amounts[row, c]
                    one_base[0, c] = base[row, c]
                    one_integer[0, c] = base_is_int[row, c]
                if prunable:    # a known consumption that no longer fits rules it out (bounds.py)
                    one_misfit[0] = False
                    if consumption_misfits(known_prunable, known_kind, known_index, root_leaf, one_universe,
                                           one_policy, one_base, one_amounts, job_scalar_base, scalar_t, scalar_i,
                                           scalar_f, static_t, static_i, static_f, one_misfit) > 0:
                        reassessed += 1
                        head += 1
                        continue
                ok = assess_rows(one_universe, one_policy, one_amounts, one_base, one_integer, root_leaf,
                                 may_need_python, leaf_table, segments, static_ok, job_ok, job_scalar_base,
                                 job_scalar_ok, code, scalar_t, scalar_i, scalar_f, static_t, static_i, static_f,
                                 register_t, register_i, register_f, dynamic_t, dynamic_i, dynamic_f, string_lower,
                                 string_rank, conversion_t, conversion_i, conversion_f, one_matched, one_consumption,
                                 one_cost, one_rank, False)
                if not ok:
                    return count, LOAD_NEEDS_PYTHON, -1, head, limit, reassessed
                reassessed += 1
                if not one_matched[0]:
                    head += 1
                    continue
                c_cost[head] = one_cost[0]
                for c in range(assets):
                    c_consumption[head, c] = one_consumption[0, c]
                c_version[head] = version[row]
            found = True
            break
        if not found:
            return count, LOAD_NO_MATCH, -1, head, limit, reassessed
        row = c_rows[head]
        cost = 1.0 if unit_cost_legacy and not consumption_policy[row] else c_cost[head]
        if cost > limit + EPSILON:
            return count, LOAD_SUBMITTER_LIMIT, -1, head, limit, reassessed
        used = 0.0
        for g in range(room_usage.shape[0]):
            used += room_usage[g]
        if cost > room_allocated - used + EPSILON:
            return count, LOAD_GROUP_QUOTA, -1, head, limit, reassessed
        # the match: recorded, deducted from the slot (PoolColumns.take), placed (Candidates.taken)
        out_rows[count] = row
        out_cost[count] = cost
        for c in range(assets):
            out_consumption[count, c] = c_consumption[head, c]
        version[row] += 1
        if not consumption_policy[row]:
            available[row] = False
        else:
            for c in range(assets):
                taken = out_consumption[count, c]
                amounts[row, c] = amounts[row, c] - (0.0 if taken != taken else taken)
            weights[row] = weights[row] - cost
            if weights[row] <= EPSILON:
                available[row] = False
        if one_match_per_slot:
            available[row] = False
        if breadth_first and available[row]:
            _behind_equals(head, c_rows, c_rank, c_cost, c_consumption, c_version)
        # the charges (LoadingLimits.charge)
        limit -= cost
        room_usage[room_term] += cost
        for e in range(entries):
            concurrency_in_use[concurrency_names[e]] += concurrency_increments[e]
        count += 1
    return count, LOAD_JOBS, -1, head, limit, reassessed


@njit(**_JIT)
def _behind_equals(head: int, rows: np.ndarray, rank: np.ndarray, cost: np.ndarray, consumption: np.ndarray,
                   version: np.ndarray) -> None:
    """Move the head behind the candidates right after it with an equal rank (breadth-first)."""
    m = rows.shape[0]
    end = head + 1
    while end < m and rank[end, 0] == rank[head, 0] and rank[end, 1] == rank[head, 1] and rank[end, 2] == rank[head, 2]:
        end += 1
    if end - head < 2:
        return
    first_row, first_cost, first_version = rows[head], cost[head], version[head]
    first_rank = rank[head].copy()
    first_consumption = consumption[head].copy()
    for k in range(head, end - 1):
        rows[k] = rows[k + 1]
        cost[k] = cost[k + 1]
        version[k] = version[k + 1]
        rank[k] = rank[k + 1]
        consumption[k] = consumption[k + 1]
    rows[end - 1] = first_row
    cost[end - 1] = first_cost
    version[end - 1] = first_version
    rank[end - 1] = first_rank
    consumption[end - 1] = first_consumption
