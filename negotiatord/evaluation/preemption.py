"""What decides whether an idle job may take a claimed slot, answered by classad2.

HTCondor's matchmaker.cpp (``matchmakingAlgorithm``) asks three things of a claimed slot that
matches a job, all with the slot as MY and the job as TARGET:

- ``MY.Rank > MY.CurrentRank``: the startd prefers the job to the one it runs (RANK preemption,
  whatever the priorities);
- ``MY.Rank >= MY.CurrentRank`` and ``PREEMPTION_REQUIREMENTS``: priority preemption is allowed;
- ``PREEMPTION_RANK``: which of the slots such a job could preempt it takes first.

Before that, HTCondor inserts the submitter's figures into the job ad (``SubmitterUserPrio``,
``SubmitterGroup``, ...) and the running customer's into the slot ad (``RemoteUserPrio``,
``RemoteGroup``, ...). Here they go into private copies, made once per claimed slot and per
request, so the snapshot's ads are never changed. Both evaluators answer through this class:
the fast path's kernels decide whether a claimed slot matches at all, and these three questions
are left to classad2 (counted as fallback evaluations).
"""

from __future__ import annotations

import copy
import classad2
import numpy as np

from negotiatord.classad.conversion import as_number, evaluated
from negotiatord.classad.cycle_time import frozen_ad, frozen_expr
from negotiatord.evaluation.protocol import UNRANKED, PreemptionAssessment, PreemptionInserts
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

# matchmaker.cpp's rankCondStd and rankCondPrioPreempt
RANK_ABOVE = classad2.ExprTree("MY.Rank > MY.CurrentRank")
RANK_AT_LEAST = classad2.ExprTree("MY.Rank >= MY.CurrentRank")

class PreemptionQuestions:
    """Asks the three questions with classad2 for claimed slots of one slot table."""

    EXPRESSIONS = 4     # evaluations per row: the two rank conditions, requirements, rank

    def __init__(self, table: SlotTable, settings: Settings, now: int) -> None:
        self._table = table
        self._now = now
        self._requirements = _frozen(settings.preemption_requirements, now)
        self._rank = _frozen(settings.preemption_rank, now)
        self._slot_ads: dict[int, classad2.ClassAd] = {}
        self._job_ads: dict[int, classad2.ClassAd] = {}

    def assess(self, autocluster: Autocluster, rows: np.ndarray, inserts: PreemptionInserts) -> PreemptionAssessment:
        job = self._job_ad(autocluster)
        job.update(inserts.submitter)
        n = len(rows)
        rank_above = np.zeros(n, dtype=bool)
        rank_at_least = np.zeros(n, dtype=bool)
        requirements = np.zeros(n, dtype=bool)
        preemption_rank = np.full(n, UNRANKED)
        for i, row in enumerate(np.asarray(rows).tolist()):
            slot = self._slot_ad(row)
            slot.update(inserts.remote[i])
            rank_above[i] = evaluated(RANK_ABOVE, slot, job) is True
            rank_at_least[i] = evaluated(RANK_AT_LEAST, slot, job) is True
            # matchmaker.cpp: no PREEMPTION_REQUIREMENTS (set empty) puts no condition on it
            requirements[i] = self._requirements is None or evaluated(self._requirements, slot, job) is True
            if self._rank is not None:
                value = evaluated(self._rank, slot, job)
                number = float(value) if isinstance(value, bool) else as_number(value)
                preemption_rank[i] = UNRANKED if number is None else number
        return PreemptionAssessment(np.asarray(rows), rank_above, rank_at_least, requirements, preemption_rank)

    def _job_ad(self, autocluster: Autocluster) -> classad2.ClassAd:
        ad = self._job_ads.get(autocluster.id)
        if ad is None:
            ad = self._job_ads[autocluster.id] = copy.deepcopy(frozen_ad(autocluster.ad, self._now))
        return ad

    def _slot_ad(self, row: int) -> classad2.ClassAd:
        ad = self._slot_ads.get(row)
        if ad is None:
            ad = self._slot_ads[row] = copy.deepcopy(frozen_ad(self._table.slots[row].ad, self._now))
        return ad


def _frozen(text: str | None, now: int) -> classad2.ExprTree | None:
    return None if text is None else frozen_expr(classad2.ExprTree(text), now)
