"""The fair-sharing rule in the cycle: which claimed slot a job takes under Dominant Resource Share.

The cycle asks it after every job has had the free slots (allocation rounds and autoregroup),
which the no-loop argument of ``docs/fair-sharing.md`` assumes. For a request's next job it
builds the rule's inputs from the claimed slots and the cycle's usage and asks
:func:`~negotiatord.cycle.fair_sharing.choose_victims`:

- running jobs are the claimed static and dynamic slots still open that the job matches (its
  Requirements and the slot's, as for any candidate, :meth:`PairEvaluator.assess`), each one
  holding its whole slot (:mod:`negotiatord.cycle.claimed`), of the groups whose jobs may be
  victims now (other groups whose leaf borrows: :func:`choose_victims` passes over the rest);
- the job's request on such a slot is what the match would take there (the slot, whole) and its
  cost in :data:`WEIGHT_UNIT`; slots where the request is the same are asked about together, the
  request with the best ranked open candidate first (NEGOTIATOR_PRE_JOB_RANK, the job's Rank,
  NEGOTIATOR_POST_JOB_RANK);
- group usage is every claimed slot's plus this cycle's matches, with victims already removed.

An autocluster's claimed candidates are assessed once per victim group in the cycle, when the
group first borrows while the autocluster asks, and a request the rule refuses is not asked
again in it (another group's preemption later in the cycle could turn the answer; the job is
asked again next cycle) (``benchmarks/fair_sharing_bench.py`` times the rule,
``benchmarks/preemption_bench.py`` the cycle).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping

import numpy as np

from negotiatord.cycle.claimed import match_resources, running_job
from negotiatord.cycle.matchlist import Candidate, best_first
from negotiatord.cycle.fair_sharing import (
    FairSharePreemption,
    GroupUsage,
    RunningJob,
    candidate_order,
    choose_victims,
    job_kind,
    nominal_shares,
)
from negotiatord.cycle.fair_sharing.shares import borrowing_on
from negotiatord.cycle.preemption import FAIR_SHARING, PreemptingCandidate
from negotiatord.cycle.result import Match, Preemption
from negotiatord.evaluation import PairEvaluator
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.slots import SlotKind
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings
from negotiatord.settings.groups import WEIGHT_UNIT


class FairSharePreemptor:
    """The claimed slots fair sharing may take this cycle, and the groups' usage as it moves."""

    def __init__(self, table: SlotTable, weights: np.ndarray, amounts: np.ndarray, settings: Settings,
                 evaluator: PairEvaluator, group_of: Callable[[str], str], pool_size: float,
                 hgq_quota: Mapping[str, float], matches: list[Match], preemptions: list[Preemption],
                 trimmed: frozenset[int] = frozenset()) -> None:
        """``amounts`` are the cycle's slot amounts as its matches left them (read as they move);
        ``matches`` and ``preemptions`` are what the cycle decided so far; ``trimmed`` are rows of
        slots about to shut down (NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD), whose jobs count in the
        usage but are not preempted (nor, on a p-slot about to shut down, are its dynamic slots')."""
        self._table = table
        self._amounts = amounts
        self._evaluator = evaluator
        self._strategies = settings.fair_sharing_strategies
        self._group_of = group_of
        tree = settings.group_tree
        pool = {asset.lower(): float(np.nansum(table.amounts[:, column])) for column, asset in enumerate(table.assets)}
        pool[WEIGHT_UNIT] = pool_size
        self.usage = GroupUsage(tree, nominal_shares(tree, pool, hgq_quota))
        # ALLOW_PSLOT_PREEMPTION: a dynamic slot's job is preempted through its partitionable
        # slot, with as many of the p-slot's other dynamic slots as the preemptor needs
        parents = table.partitionable_parents if settings.allow_pslot_preemption else {}
        held: dict[str, tuple[int, RunningJob]] = {}     # slot name -> its row and the job on it
        self._running: dict[int, RunningJob] = {}        # row -> a job fair sharing may preempt
        self._children: dict[int, list[int]] = {}        # p-slot row -> its rows in _running
        self._partitionable: dict[int, int] = {}         # a row in _running -> its p-slot's row
        for row, (slot, weight) in enumerate(zip(table.slots, weights.tolist())):
            if slot.claim is None or weight != weight:
                continue
            parent = parents.get(row)
            job = running_job(slot, weight, group_of(slot.claim.customer),
                              None if parent is None else table.slots[parent].name)
            held[slot.name] = row, job
            self.usage.admit(job.group, job.resources)
            if slot.kind is not SlotKind.PARTITIONABLE and row not in trimmed and parent not in trimmed and (
                    not slot.claim.retiring or settings.consider_early_preemption):
                self._running[row] = job
                if parent is not None:
                    self._children.setdefault(parent, []).append(row)
                    self._partitionable[row] = parent
        self._alive = np.zeros(len(table), dtype=bool)      # rows whose job is still in _running
        self._alive[list(self._running)] = True
        for match in matches:
            self.usage.admit(group_of(match.submitter), match_resources(match))
        for preemption in preemptions:
            row, victim = held[preemption.slot]
            self.usage.remove(victim.group, victim.resources)
            self._release(row)
        self.claimed = len(self._running)            # claimed slots considered
        grouped: dict[str, list[int]] = {}
        for row, job in self._running.items():
            if row not in self._partitionable:
                grouped.setdefault(job.group, []).append(row)
        for row in self._partitionable:
            grouped.setdefault(self._running[row].group, [])
        # group -> its rows in _running not on a p-slot (_alive says which still are)
        self._group_rows = {name: np.array(rows, dtype=np.int64) for name, rows in grouped.items()}
        self._columns: dict[tuple[str, ...], list[tuple[str, int]]] = {}   # a slot's assets -> lower-cased, column
        self._refused: set[int] = set()
        self._group_assessments: dict[tuple[int, str | None], tuple[np.ndarray, ...]] = {}
        self._assessed: dict[tuple[int, tuple[str, ...]], dict[tuple[tuple[str, float], ...], list[Candidate]]] = {}
        self._alike_by: dict[tuple, dict[tuple, deque[tuple[tuple, Candidate]]] | None] = {}
        self._layout_of: dict[int, int] = {}
        self._layout_ids: dict[tuple[tuple[str, int], ...], int] = {}
        self._layout_masks = np.zeros((0, table.amounts.shape[1]), dtype=bool)
        self._kinds: dict[int, tuple[tuple, tuple]] = {}    # row -> its order and kind (_alike)

    def __len__(self) -> int:
        return len(self._running)

    def best(self, autocluster: Autocluster, group: str) -> PreemptingCandidate | None:
        """The claimed slot a job of ``autocluster`` (of ``group``) takes under fair sharing, or
        None; a None is remembered for the cycle. A candidate that is a partitionable slot names
        the dynamic slots whose jobs go (:attr:`PreemptingCandidate.victims`)."""
        if autocluster.id in self._refused or not self._running:
            return None
        # only jobs of other groups whose leaf borrows can be victims (choose_victims's own
        # first filter): left out here, a pool where few groups borrow is walked quickly
        own = self.usage.leaf(group)
        victims_of = {name: leaf is not own and borrowing_on(leaf, self.usage.resources)
                      for name, leaf in ((name, self.usage.leaf(name)) for name in self._group_rows)}

        def open_to(job: RunningJob) -> bool:
            return victims_of[job.group]

        open_groups = tuple(name for name, victim in victims_of.items() if victim)
        for request, candidates in self._candidates(autocluster, open_groups).items():
            alike = self._alike(autocluster, open_groups, request, candidates)
            if alike is not None:
                first = self._first_alike(alike, group, request)
                if first is None:
                    continue
                chosen, found = first
                rows = {id(found.victims[0].job): chosen.row}
            else:
                chosen_or_none, found_or_none, rows = self._any_slot(candidates, group, request, open_to)
                if chosen_or_none is None or found_or_none is None:
                    continue
                chosen, found = chosen_or_none, found_or_none
            victims = tuple((rows[id(victim.job)], victim.strategy) for victim in found.victims)
            claim = self._table.slots[victims[0][0]].claim
            assert claim is not None
            return PreemptingCandidate(chosen.row, chosen.rank, chosen.cost, chosen.consumption, 0, claim=claim,
                                       rule=FAIR_SHARING, strategy=found.victims[0].strategy,
                                       victims=victims if chosen.row in self._children else ())
        self._refused.add(autocluster.id)
        return None

    def _any_slot(self, candidates: list[Candidate], group: str, request: tuple[tuple[str, float], ...],
                  open_to: Callable[[RunningJob], bool]
                  ) -> tuple[Candidate | None, FairSharePreemption | None, dict[int, int]]:
        """:func:`choose_victims` over every candidate of one request, partitionable slots among
        them: the candidate chosen, the rule's answer and each victim's row (by ``id`` of its job)."""
        by_slot: dict[str, Candidate] = {}
        running: list[RunningJob] = []
        free: dict[str, dict[str, float]] = {}
        rows: dict[int, int] = {}                    # id(job) -> its slot's row
        for candidate in candidates:
            children = self._children.get(candidate.row)
            if children is None:
                job = self._running.get(candidate.row)
                jobs = [(candidate.row, job)] if job is not None and open_to(job) else []
            else:
                jobs = [(row, self._running[row]) for row in children if open_to(self._running[row])]
            if not jobs:
                continue
            name = jobs[0][1].slot
            by_slot[name] = candidate
            for row, job in jobs:
                rows[id(job)] = row
                running.append(job)
            if children is not None:
                free[name] = self._free(candidate.row)
        found = choose_victims(self.usage, group, dict(request), free, running, self._strategies) \
            if running else None
        return (None if found is None else by_slot[found.slot]), found, rows

    def _alike(self, autocluster: Autocluster, groups: tuple[str, ...], request: tuple[tuple[str, float], ...],
               candidates: list[Candidate]) -> dict[tuple, deque[tuple[tuple, Candidate]]] | None:
        """One request's candidates when each is a slot with one job (None when a partitionable
        slot is among them), in :func:`choose_victims`'s order (Kueue's candidate order, then the
        slot's name) and by what decides the rule's answer for such a slot: the job's group and
        what it holds. Kept per autocluster, groups and request for the cycle; slots whose job is
        gone are dropped from the front as they are met."""
        key = (autocluster.id, groups, request)
        if key in self._alike_by:
            return self._alike_by[key]
        found: dict[tuple, deque[tuple[tuple, Candidate]]] | None = None
        if not any(candidate.row in self._children for candidate in candidates):
            ordered = sorted((self._kind(candidate.row), candidate) for candidate in candidates
                             if candidate.row in self._running)
            found = {}
            for (order, kind), candidate in ordered:
                found.setdefault(kind, deque()).append((order, candidate))
        self._alike_by[key] = found
        return found

    def _kind(self, row: int) -> tuple[tuple, tuple]:
        """``row``'s place in :func:`choose_victims`'s order and its kind (the job's group and
        what it holds), worked out once per row."""
        found = self._kinds.get(row)
        if found is None:
            job = self._running[row]
            found = self._kinds[row] = ((candidate_order(job), job.slot), job_kind(job))
        return found

    def _first_alike(self, alike: dict[tuple, deque[tuple[tuple, Candidate]]], group: str,
                     request: tuple[tuple[str, float], ...]) -> tuple[Candidate, FairSharePreemption] | None:
        """What :func:`choose_victims` answers over one-job slots, asking it only of the first
        slot of each kind (group, holding) still running, first in its order: the rule refuses
        or allows every slot of a kind alike, so the first allowed kind's first slot is the
        answer it gives over them all."""
        firsts = []
        for kind, queue in alike.items():
            while queue and queue[0][1].row not in self._running:
                queue.popleft()
            if queue:
                firsts.append((queue[0][0], kind))
        for _, kind in sorted(firsts):
            candidate = alike[kind][0][1]
            found = choose_victims(self.usage, group, dict(request), {}, [self._running[candidate.row]],
                                   self._strategies)
            if found is not None:
                return candidate, found
        return None

    def _free(self, row: int) -> dict[str, float]:
        """What partitionable slot ``row`` has left, by lower-cased asset."""
        return {name: float(self._amounts[row, column]) for name, column in self._asset_columns(row)}

    def _candidates(self, autocluster: Autocluster,
                    groups: tuple[str, ...]) -> dict[tuple[tuple[str, float], ...], list[Candidate]]:
        """The claimed slots ``autocluster`` matches that run jobs of ``groups`` (the groups whose
        jobs may be victims now), best ranked first, by what a match there takes; partitionable
        slots with dynamic slots fair sharing may preempt come in whatever their groups.
        Remembered per autocluster and set of groups for the cycle: a claimed slot's ad and
        amounts do not change within it, and the slots other rules take are left out when asked
        (:meth:`best`)."""
        key = (autocluster.id, groups)
        found = self._assessed.get(key)
        if found is not None:
            return found
        parts = [self._assessment(autocluster, name) for name in groups]
        if self._children:
            parts.append(self._assessment(autocluster, None))
        rows = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
        found = self._assessed[key] = {}
        if not len(rows):
            return found
        rank, cost, consumption = (np.concatenate([part[i] for part in parts]) for i in (1, 2, 3))
        order = best_first(rows, rank)
        rows, rank, cost, consumption = rows[order], rank[order], cost[order], consumption[order]
        row_list, rank_list, cost_list = rows.tolist(), rank.tolist(), cost.tolist()
        for positions in self._same_request(rows, cost, consumption):
            first = int(positions[0])
            request = self._request(consumption[first], cost_list[first], row_list[first])
            found[request] = [Candidate(row_list[p], tuple(rank_list[p]), cost_list[p], consumption[p], 0)
                              for p in positions.tolist()]
        return found

    def _same_request(self, rows: np.ndarray, cost: np.ndarray, consumption: np.ndarray) -> list[np.ndarray]:
        """Positions of candidates whose match would take the same (:meth:`_request`: the same
        assets consumed alike, the same cost), each group in position order, the groups by their
        first position. A consumption that is not a number makes a group of its own, as its
        request equals no other."""
        layouts = np.array([self._layout(row) for row in rows.tolist()], dtype=np.int64)
        masked = np.where(self._layout_masks[layouts], consumption, 0.0)
        keys = np.column_stack([layouts.astype(np.float64), masked, cost])
        alone = np.isnan(keys).any(axis=1)
        group = np.empty(len(rows), dtype=np.int64)
        others = np.flatnonzero(~alone)
        groups = 0
        if len(others):
            _, inverse = np.unique(keys[others], axis=0, return_inverse=True)
            group[others] = inverse.reshape(-1)
            groups = int(group[others].max()) + 1
        single = np.flatnonzero(alone)
        group[single] = groups + np.arange(len(single))
        first = np.full(groups + len(single), len(rows), dtype=np.int64)
        np.minimum.at(first, group, np.arange(len(rows)))
        by_position = np.lexsort((np.arange(len(rows)), first[group]))
        bounds = np.flatnonzero(np.diff(first[group][by_position])) + 1
        return np.split(by_position, bounds)

    def _layout(self, row: int) -> int:
        """An id for ``row``'s assets as :meth:`_request` names them (lower-cased, sorted, with
        their columns); :attr:`_layout_masks` holds each id's columns."""
        found = self._layout_of.get(row)
        if found is None:
            columns = tuple(self._asset_columns(row))
            found = self._layout_ids.get(columns)
            if found is None:
                found = self._layout_ids[columns] = len(self._layout_ids)
                mask = np.zeros((1, self._table.amounts.shape[1]), dtype=bool)
                mask[0, [column for _, column in columns]] = True
                self._layout_masks = np.concatenate([self._layout_masks, mask])
            self._layout_of[row] = found
        return found

    def _assessment(self, autocluster: Autocluster, group: str | None) -> tuple[np.ndarray, ...]:
        """The rows, ranks, costs and consumptions of the claimed slots ``autocluster`` matches
        among ``group``'s running jobs not on a p-slot (None: the p-slots with dynamic slots fair
        sharing may preempt, each assessed as it would be with all of them preempted, as HTCondor's
        pslotMultiMatch gives a p-slot its dynamic slots' resources back before it asks whether
        the job matches; which of them must go is :func:`choose_victims`'s answer). Assessed once
        per autocluster and group in the cycle."""
        key = (autocluster.id, group)
        found = self._group_assessments.get(key)
        if found is not None:
            return found
        if group is None:
            rows = np.fromiter(self._children, dtype=np.int64, count=len(self._children))
            amounts = self._table.amounts[rows]
            for position, children in enumerate(self._children.values()):
                amounts[position] = self._amounts[rows[position]] + np.nansum(self._table.amounts[children], axis=0)
        else:
            rows = self._group_rows[group]
            rows = rows[self._alive[rows]]
            amounts = self._table.amounts[rows]
        assessment = self._evaluator.assess(autocluster, rows, amounts)
        matched = np.flatnonzero(assessment.matched)
        found = self._group_assessments[key] = (assessment.rows[matched], assessment.rank[matched],
                                                assessment.cost[matched], assessment.consumption[matched])
        return found

    def take(self, candidate: PreemptingCandidate, group: str) -> None:
        """Move usage from the victims' groups to ``group``, whose job took the slot."""
        for row in candidate.victim_rows:
            victim = self._running[row]
            self.usage.remove(victim.group, victim.resources)
            self._release(row)
        self.usage.admit(group, dict(self._request(candidate.consumption, candidate.cost, candidate.row)))

    def _release(self, row: int) -> None:
        """``row``'s job is preempted: no longer a candidate."""
        self._running.pop(row, None)
        self._alive[row] = False
        parent = self._partitionable.pop(row, None)
        if parent is not None:
            self._children[parent].remove(row)

    def _request(self, consumption: np.ndarray, cost: float, row: int) -> tuple[tuple[str, float], ...]:
        """What a match on ``row`` takes: the slot's assets as the assessment consumes them, and its cost."""
        return tuple((name, float(consumption[column])) for name, column in self._asset_columns(row)) \
            + ((WEIGHT_UNIT, cost),)

    def _asset_columns(self, row: int) -> list[tuple[str, int]]:
        """``row``'s assets, lower-cased and sorted, with their table columns."""
        assets = self._table.slots[row].assets
        columns = self._columns.get(assets)
        if columns is None:
            columns = self._columns[assets] = sorted(zip(map(str.lower, assets), self._table.asset_columns(assets)))
        return columns
