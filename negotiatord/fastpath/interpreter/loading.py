"""A request's loading in one kernel call: job after job on its candidates, re-assessing in place.

:func:`load_request` is :func:`negotiatord.evaluation.loading.load_plainly` compiled: the same
checks in the same order (the jobs' ConcurrencyLimits, the best candidate still on offer, the
submitter's limit, the group's room), the same deductions (PoolColumns.take) and the same
placement of a p-slot with room left (Candidates.taken). A candidate a match changed since it
was assessed (its version moved) is assessed again inside the kernel: ruled out at once when a
consumption known before the assessment no longer fits (bounds.py, as the assessment's first
stage would), else by :func:`kernels.assess_rows` on its one row, at the slot's amounts left: Consumption<asset>, both
Requirements with the consumption in Request<asset>, SlotWeight before minus after. When that
row reaches a leaf that needs classad2 the kernel stops (Stop.NEEDS_PYTHON) having changed
nothing for the job it was placing, and the rest of the request is loaded in Python.

The float arithmetic is the Python loop's, operation for operation (the submitter's limit, the
group's usage summed in order, each concurrency entry added in turn), so both give the very same
matches.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from negotiatord.evaluation.loading import EPSILON, Candidates, Loading, LoadingLimits, PoolColumns, Stop
from negotiatord.fastpath.interpreter import kernels

_JOBS, _CONCURRENCY, _NO_MATCH, _SUBMITTER_LIMIT, _GROUP_QUOTA, _NEEDS_PYTHON = (int(s) for s in Stop)


@njit(nogil=True, cache=True, error_model="numpy")
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
    """Place up to ``jobs`` jobs; returns (matches, stop, blocking entry, head, limit left,
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
                return count, _CONCURRENCY, e, head, limit, reassessed
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
                    if kernels.consumption_misfits(known_prunable, known_kind, known_index, root_leaf, one_universe,
                                                   one_policy, one_base, one_amounts, job_scalar_base, scalar_t,
                                                   scalar_i, scalar_f, static_t, static_i, static_f, one_misfit) > 0:
                        reassessed += 1
                        head += 1
                        continue
                ok = kernels.assess_rows(one_universe, one_policy, one_amounts, one_base, one_integer, root_leaf,
                                         may_need_python, leaf_table, segments, static_ok, job_ok, job_scalar_base,
                                         job_scalar_ok, code, scalar_t, scalar_i, scalar_f, static_t, static_i,
                                         static_f, register_t, register_i, register_f, dynamic_t, dynamic_i, dynamic_f,
                                         string_lower, string_rank, conversion_t, conversion_i, conversion_f,
                                         one_matched, one_consumption, one_cost, one_rank, False)
                if not ok:
                    return count, _NEEDS_PYTHON, -1, head, limit, reassessed
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
            return count, _NO_MATCH, -1, head, limit, reassessed
        row = c_rows[head]
        cost = 1.0 if unit_cost_legacy and not consumption_policy[row] else c_cost[head]
        if cost > limit + EPSILON:
            return count, _SUBMITTER_LIMIT, -1, head, limit, reassessed
        used = 0.0
        for g in range(room_usage.shape[0]):
            used += room_usage[g]
        if cost > room_allocated - used + EPSILON:
            return count, _GROUP_QUOTA, -1, head, limit, reassessed
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
    return count, _JOBS, -1, head, limit, reassessed


@njit(nogil=True, cache=True, error_model="numpy")
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


def load_in_kernel(candidates: Candidates, pool: PoolColumns, limits: LoadingLimits, base: np.ndarray,
                   base_is_int: np.ndarray, universe_of: np.ndarray, evaluation: tuple) -> tuple[Loading, int]:
    """One :func:`load_request` call; the matches it made, how it stopped, and the re-assessments
    it made. ``base``, ``base_is_int``: the slot table's amounts and whether each is an integer
    literal; ``evaluation``: kernels.assess_rows' job and space inputs
    (OneCallAssessment.loading_inputs)."""
    jobs = limits.jobs
    assets = pool.amounts.shape[1]
    rows, consumption, cost = np.empty(jobs, dtype=np.int64), np.empty((jobs, assets)), np.empty(jobs)
    count, stop, blocking, head, limit, reassessed = load_request(
        candidates.rows, candidates.rank, candidates.cost, candidates.consumption, candidates.version,
        candidates.head, pool.amounts, pool.weights, pool.available, pool.version, pool.consumption_policy, base,
        base_is_int, universe_of, jobs, limits.submitter_limit, limits.room_allocated, limits.room_usage,
        limits.room_term, limits.concurrency_names, limits.concurrency_increments, limits.concurrency_in_use,
        limits.concurrency_limits, limits.breadth_first, limits.unit_cost_legacy, limits.one_match_per_slot,
        rows, consumption, cost, *evaluation)
    candidates.head = head
    limits.submitter_limit = limit
    if count:
        pool.changed()
    return Loading(rows[:count], consumption[:count], cost[:count], Stop(stop), blocking), reassessed
