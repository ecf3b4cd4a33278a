"""A job's cells and job-only values kept by its ad's record across cycles.

Each cycle's evaluator reads the autoclusters' representatives (:class:`JobCells`) and works out
the values of their job-only nodes (:class:`JobScalars`: owner, requests, the job's sides of
Requirements and Rank). Both depend on the ad, on the compilations' cells and IR graph, and on the
clock only where a job reads it (the old-semantics ``CurrentTime`` each call reads anew, which
JobScalars drops when the second moves; an undefined ``CurrentTime`` frozen at the cycle's time,
which JobCells reads at most once). A daemon's or a replay's unchanged job ads keep their records
from one cycle to the next (the snapshot builder), so the next cycle takes both from here instead
of reading the ad and working the values out again; and, while the match space is kept
(kept_space.py) and its universe has not grown, what was compiled and laid out for the job there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from negotiatord.fastpath.compiler.cells import JobCells
from negotiatord.fastpath.compiler.descriptions import RecordMemo

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.jobs import JobLayout

JobValues = dict[int, tuple[int, int, float]]     # job-only node -> its value (job_scalars.py)


@dataclass
class KeptJob:
    """One job ad's cells, its values and its layout in the kept match space (not the JobScalars
    that computes the values: that holds an evaluator's context, which holds these, and the loop
    would wait for the cyclic collector)."""

    cells: JobCells | None = None
    values: JobValues = field(default_factory=dict)
    layout: JobLayout | None = None


class KeptJobs(RecordMemo[KeptJob]):
    """Kept jobs by the record of their ad (a MatchmakingAd), held by the compilations of one
    scoping mode and list of assets (they start over, and this with them, when either changes)."""

    def __init__(self) -> None:
        super().__init__(KeptJob)
