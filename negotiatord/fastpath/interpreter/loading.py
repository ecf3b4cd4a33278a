"""A request's loading in one kernel call: job after job on its candidates, re-assessing in place.

:func:`kernels.load_request` is :func:`negotiatord.evaluation.loading.load_plainly` compiled: the same
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

from negotiatord.evaluation.loading import Candidates, Loading, LoadingLimits, PoolColumns, Stop
from negotiatord.fastpath.interpreter import kernels


def load_in_kernel(candidates: Candidates, pool: PoolColumns, limits: LoadingLimits, base: np.ndarray,
                   base_is_int: np.ndarray, universe_of: np.ndarray, evaluation: tuple) -> tuple[Loading, int]:
    """One :func:`kernels.load_request` call; the matches it made, how it stopped, and the re-assessments
    it made. ``base``, ``base_is_int``: the slot table's amounts and whether each is an integer
    literal; ``evaluation``: kernels.assess_rows' job and space inputs
    (OneCallAssessment.loading_inputs)."""
    jobs = limits.jobs
    assets = pool.amounts.shape[1]
    rows, consumption, cost = np.empty(jobs, dtype=np.int64), np.empty((jobs, assets)), np.empty(jobs)
    count, stop, blocking, head, limit, reassessed = kernels.load_request(
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
