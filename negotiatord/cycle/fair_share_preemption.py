"""The fair-sharing rule in the cycle: which claimed slot a job takes under Dominant Resource Share.

The cycle asks it after every job has had the free slots (allocation rounds and autoregroup),
which the no-loop argument of ``docs/fair-sharing.md`` assumes. For a request's next job it
builds the rule's inputs from the claimed slots and the cycle's usage and asks
:func:`~negotiatord.cycle.fair_sharing.choose_victims`:

- running jobs are the claimed static and dynamic slots still open that the job matches (its
  Requirements and the slot's, as for any candidate, :meth:`PairEvaluator.assess`), each one
  holding its whole slot (:mod:`negotiatord.cycle.claimed`);
- the job's request on such a slot is what the match would take there (the slot, whole) and its
  cost in :data:`WEIGHT_UNIT`; slots where the request is the same are asked about together, best
  ranked first (NEGOTIATOR_PRE_JOB_RANK, the job's Rank, NEGOTIATOR_POST_JOB_RANK);
- group usage is every claimed slot's plus this cycle's matches, with victims already removed.

A request the rule refuses is not asked again in the cycle: later preemptions only lower the
shares of groups that were borrowing, so a refused job is not let in later in the cycle by
anything but a change of the pool, and each question costs an assessment of the claimed slots
(``benchmarks/fair_sharing_bench.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from negotiatord.cycle.claimed import match_resources, running_job
from negotiatord.cycle.fair_sharing import GroupUsage, RunningJob, choose_victims, nominal_shares
from negotiatord.cycle.preemption import FAIR_SHARING, PreemptingCandidate
from negotiatord.cycle.result import Match
from negotiatord.evaluation import PairEvaluator
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.slots import SlotKind
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings
from negotiatord.settings.groups import WEIGHT_UNIT


class FairSharePreemptor:
    """The claimed slots fair sharing may take this cycle, and the groups' usage as it moves."""

    def __init__(self, table: SlotTable, weights: np.ndarray, settings: Settings, evaluator: PairEvaluator,
                 group_of: Callable[[str], str], pool_size: float, hgq_quota: Mapping[str, float],
                 matches: list[Match]) -> None:
        self._table = table
        self._evaluator = evaluator
        self._strategies = settings.fair_sharing_strategies
        self._group_of = group_of
        tree = settings.group_tree
        pool = {asset.lower(): float(np.nansum(table.amounts[:, column])) for column, asset in enumerate(table.assets)}
        pool[WEIGHT_UNIT] = pool_size
        self.usage = GroupUsage(tree, nominal_shares(tree, pool, hgq_quota))
        held: dict[str, tuple[int, RunningJob]] = {}     # slot name -> its row and the job on it
        self._running: dict[int, RunningJob] = {}        # row -> a job fair sharing may preempt
        for row, (slot, weight) in enumerate(zip(table.slots, weights.tolist())):
            if slot.claim is None or weight != weight:
                continue
            job = running_job(slot, weight, group_of(slot.claim.customer))
            held[slot.name] = row, job
            self.usage.admit(job.group, job.resources)
            if slot.kind is not SlotKind.PARTITIONABLE and (
                    not slot.claim.retiring or settings.consider_early_preemption):
                self._running[row] = job
        for match in matches:
            self.usage.admit(group_of(match.submitter), match_resources(match))
            if match.preemption is not None:
                row, victim = held[match.slot]
                self.usage.remove(victim.group, victim.resources)
                self._running.pop(row, None)
        self._refused: set[int] = set()

    def __len__(self) -> int:
        return len(self._running)

    def best(self, autocluster: Autocluster, group: str) -> PreemptingCandidate | None:
        """The claimed slot a job of ``autocluster`` (of ``group``) takes under fair sharing, or
        None; a None is remembered for the cycle."""
        if autocluster.id in self._refused or not self._running:
            return None
        rows = np.fromiter(self._running, dtype=np.int64, count=len(self._running))
        assessment = self._evaluator.assess(autocluster, rows, self._table.amounts[rows])
        matched = np.flatnonzero(assessment.matched)
        rank = assessment.rank[matched]
        order = matched[np.lexsort((assessment.rows[matched], -rank[:, 2], -rank[:, 1], -rank[:, 0]))]
        requests: dict[tuple[tuple[str, float], ...], list[int]] = {}
        for position in order.tolist():
            requests.setdefault(self._request(assessment.consumption[position], float(assessment.cost[position]),
                                              int(assessment.rows[position])), []).append(position)
        for request, positions in requests.items():
            by_slot = {self._table.slots[int(assessment.rows[p])].name: p for p in positions}
            running = [self._running[int(assessment.rows[p])] for p in positions]
            found = choose_victims(self.usage, group, dict(request), {}, running, self._strategies)
            if found is None:
                continue
            position = by_slot[found.slot]
            row = int(assessment.rows[position])
            claim = self._table.slots[row].claim
            assert claim is not None
            slot_rank = assessment.rank[position]
            return PreemptingCandidate(
                row, (float(slot_rank[0]), float(slot_rank[1]), float(slot_rank[2])),
                float(assessment.cost[position]), assessment.consumption[position], 0, claim=claim,
                rule=FAIR_SHARING, strategy=found.victims[0].strategy)
        self._refused.add(autocluster.id)
        return None

    def take(self, candidate: PreemptingCandidate, group: str) -> None:
        """Move usage from the victim's group to ``group``, whose job took the slot."""
        victim = self._running.pop(candidate.row)
        self.usage.remove(victim.group, victim.resources)
        self.usage.admit(group, dict(self._request(candidate.consumption, candidate.cost, candidate.row)))

    def _request(self, consumption: np.ndarray, cost: float, row: int) -> tuple[tuple[str, float], ...]:
        """What a match on ``row`` takes: the slot's assets as the assessment consumes them, and its cost."""
        slot = self._table.slots[row]
        taken = [(asset.lower(), float(consumption[self._table.asset_column(asset)])) for asset in slot.assets]
        return tuple(sorted(taken)) + ((WEIGHT_UNIT, cost),)

