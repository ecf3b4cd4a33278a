"""Fair sharing by Dominant Resource Share across accounting groups, as Kueue preempts.

Two parts: :mod:`.shares` keeps each group's usage per resource over the group tree and its
Dominant Resource Share; :mod:`.victims` decides which running jobs a job may preempt on one
slot, and under which rule. Pure functions of their inputs; the semantics and the argument
that preemptions cannot loop are in ``docs/fair-sharing.md``.
"""

from negotiatord.cycle.fair_sharing.shares import GroupUsage, Share, nominal_shares
from negotiatord.cycle.fair_sharing.victims import (
    RECLAIM,
    FairSharePreemption,
    RunningJob,
    Victim,
    candidate_order,
    choose_victims,
    job_kind,
)

__all__ = [
    "RECLAIM",
    "FairSharePreemption",
    "GroupUsage",
    "RunningJob",
    "Share",
    "Victim",
    "candidate_order",
    "choose_victims",
    "job_kind",
    "nominal_shares",
]
