"""Which running jobs a job may preempt under fair sharing, and by which rule.

Kueue's fair-sharing preemption (``pkg/scheduler/preemption/preemption.go``
``fairPreemptions``, with ``fairsharing/ordering.go``, ``target.go``, ``strategy.go`` and
``least_common_ancestor.go``), applied to groups and slots:

- The preemptor's request is admitted to its group first, so every share below is "after".
- **Candidates** are running jobs of *other* leaves (preemption inside the preemptor's own
  group is HTCondor's priority rule, not this one) whose leaf borrows a contested resource and
  who hold a resource the slot lacks (Kueue's ``findCandidates``), in Kueue's
  ``CandidatesOrdering``: lower ``JobPrio`` first, then the most recently started, then job id.
- **Targets** come from descending the tree from the root, at each level to the child with the
  highest share among those that borrow (a group on the preemptor's path is entered even when
  it does not, as Kueue's ``nextTarget`` does); equal leaves go by their first candidate,
  equal subtrees to the first in ``GROUP_NAMES`` order, a subtree beats an equal leaf.
- **Reclaim**: while the preemptor's leaf stays within its nominal share on the contested
  resources, each target's next candidate is taken (Kueue's FairSharingPreemptWithinNominal).
- Otherwise the strategies, compared at the *almost lowest common ancestors* (the two children
  of the lowest common ancestor that lead to preemptor and target):

  - ``LessThanOrEqualToFinalShare``: share(preemptor side) <= share(target side without the
    candidate), tried candidate by candidate; a pass re-picks the target;
  - ``LessThanInitialShare``: share(preemptor side) < share(target side before).

  The first configured strategy runs over all targets; the candidates it turned down are
  offered once more, one per target, to the second (Kueue's ``runSecondFsStrategy``).
- As soon as the preemptor fits, earlier victims are put back, last first, while it still fits
  (Kueue's ``fillBackWorkloads``): the set is minimal. If it never fits, nobody is preempted.
- Unlike Kueue, the result must also pass two conditions that keep preemptions from looping
  (:meth:`_Attempt.settles`); Kueue's rules alone can go round for ever.

A job *fits* when the slot's free resources plus the victims' cover every requested resource
except the slot-weight charge (:data:`WEIGHT_UNIT`, which no slot holds), and its group's
borrowing limits (and the pool) still hold after admission. Victims are taken on one slot: a
preemptor needs one slot (a partitionable slot's dynamic slots are freed together, as
HTCondor's ``ALLOW_PSLOT_PREEMPTION`` does); of all slots where it works, the one needing the
fewest victims wins (then the slot whose jobs come first in ``CandidatesOrdering``, then the
slot name, for a deterministic answer). Across slots, the target order by share is not
followed: among slots needing as many victims, the one whose job Kueue's candidate ordering
puts first is taken, whichever borrowing group it belongs to.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from negotiatord.cycle.claimed import RunningJob
from negotiatord.cycle.fair_sharing.shares import (
    GroupUsage,
    Share,
    UsageNode,
    above,
    borrowing_on,
    fits_borrowing_limits,
    node_share,
    resource_shares,
)
from negotiatord.settings.groups import WEIGHT_UNIT

RECLAIM = "reclaim"
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


@dataclass(frozen=True)
class Victim:
    """One job to preempt and the rule that allowed it: ``reclaim`` or a strategy's name."""

    job: RunningJob
    strategy: str


@dataclass(frozen=True)
class FairSharePreemption:
    """The victims, all on one slot, whose resources let the preemptor in."""

    slot: str
    victims: tuple[Victim, ...]


# A strategy looks at (preemptor side after admission, target side before, target side after removal).
_Strategy = Callable[[Share, Share, Share], bool]
_STRATEGIES: dict[str, _Strategy] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: lambda preemptor, _before, after: preemptor <= after,
    LESS_THAN_INITIAL_SHARE: lambda preemptor, before, _after: preemptor < before,
}


def choose_victims(
    usage: GroupUsage,
    group: str,
    request: Mapping[str, float],
    free: Mapping[str, Mapping[str, float]],
    running: Iterable[RunningJob],
    strategies: Sequence[str],
) -> FairSharePreemption | None:
    """The fewest running jobs on one slot whose preemption lets a job of ``group`` requesting
    ``request`` in under fair sharing, or None when no slot allows it.

    ``free`` maps a slot's name to its free resources (a slot with no free resources may be
    left out); ``running`` are the claimed slots' jobs; ``usage`` is not changed (the caller
    moves usage with :meth:`GroupUsage.admit`/``remove`` once it acts on the answer). Slots
    where the job fits without preempting are not considered: that is an ordinary match.
    """
    unknown = [name for name in strategies if name not in _STRATEGIES]
    if unknown:
        raise ValueError(f"unknown fair-sharing strategies {unknown}; known: {sorted(_STRATEGIES)}")
    by_slot: dict[str, list[RunningJob]] = {}
    for job in running:
        by_slot.setdefault(job.slot, []).append(job)
    best: FairSharePreemption | None = None
    # a slot with one job is refused whatever job it is, given its group, what it holds and the
    # slot's free resources: slots refused alike are not asked again
    refused: set[tuple] = set()
    # slots in the CandidatesOrdering of their jobs, so that among slots needing one victim each
    # (static and dynamic slots) the victim is the one Kueue's ordering puts first
    for slot in sorted(by_slot, key=lambda name: (min(map(candidate_order, by_slot[name])), name)):
        slot_free = free.get(slot, {})
        jobs = by_slot[slot]
        alike = (*job_kind(jobs[0]), tuple(sorted(slot_free.items()))) if len(jobs) == 1 else None
        if alike in refused:
            continue
        if not _lacking(request, slot_free) or not _could_fit(request, slot_free, jobs):
            continue
        victims = _victims_on_slot(usage, group, request, slot_free, jobs, strategies)
        if victims is None and alike is not None:
            refused.add(alike)
        if victims is not None and (best is None or len(victims) < len(best.victims)):
            best = FairSharePreemption(slot, victims)
            if len(victims) == 1:
                break                                # no slot can do with fewer
    return best


def _lacking(request: Mapping[str, float], free: Mapping[str, float]) -> set[str]:
    """The slot resources the request needs more of than ``free`` has."""
    return {r for r, amount in request.items()
            if r != WEIGHT_UNIT and above(amount, free.get(r, 0.0))}


def _could_fit(request: Mapping[str, float], free: Mapping[str, float], jobs: Sequence[RunningJob]) -> bool:
    """Whether preempting every job on the slot would make room (a cheap necessary condition)."""
    return not any(above(amount, free.get(r, 0.0) + sum(job.resources.get(r, 0.0) for job in jobs))
                   for r, amount in request.items() if r != WEIGHT_UNIT)


def candidate_order(job: RunningJob) -> tuple[int, float, str]:
    """Kueue's ``CandidatesOrdering``: lower priority first, then the most recently started."""
    return (job.prio, -job.start, job.job_id)


def job_kind(job: RunningJob) -> tuple[str, tuple[tuple[str, float], ...]]:
    """What the rules answer a one-job slot by, beside its free resources: the job's group and
    what it holds. Slots whose jobs are of one kind are refused or taken alike."""
    return (job.group, tuple(sorted(job.resources.items())))


class _Attempt:
    """One simulated preemption on one slot: the usage with the preemptor admitted, the slot's
    freed resources, and the victims so far."""

    def __init__(self, usage: GroupUsage, group: str, request: Mapping[str, float],
                 free: Mapping[str, float]) -> None:
        self.usage = usage                     # inside a trial: put back afterwards
        self.usage.admit(group, request)
        self.group, self.request = group, request
        self.leaf = self.usage.leaf(group)
        self.room = {r: free.get(r, 0.0) for r in request if r != WEIGHT_UNIT}
        self.victims: list[Victim] = []

    def take(self, job: RunningJob, strategy: str) -> bool:
        """Preempt ``job``; whether the preemptor fits now."""
        self._move(job, -1.0)
        self.victims.append(Victim(job, strategy))
        return self.fits()

    def _move(self, job: RunningJob, sign: float) -> None:
        if sign < 0:
            self.usage.remove(job.group, job.resources)
        else:
            self.usage.admit(job.group, job.resources)
        for r in self.room:
            self.room[r] -= sign * job.resources.get(r, 0.0)

    def fits(self) -> bool:
        return (not any(above(self.request[r], self.room[r]) for r in self.room)
                and fits_borrowing_limits(self.leaf))

    def share_without(self, job: RunningJob, node: UsageNode) -> Share:
        """``node``'s share were ``job`` gone (Kueue's ``ComputeTargetShareAfterRemoval``)."""
        self.usage.remove(job.group, job.resources)
        share = node_share(node)
        self.usage.admit(job.group, job.resources)
        return share

    def settles(self, victims: Sequence[Victim]) -> bool:
        """The two conditions that keep preemptions from looping (``docs/fair-sharing.md``).

        1. The victims hold no more of any accounted resource than the preemptor takes: the
           pool's total usage never falls, so nothing freed here can be refilled by a job that
           then raises a share again.
        2. Let L be the highest lowest-common-ancestor of the preemptor with a victim. From the
           pool before (preemptor idle, victims running) to after: no resource share of L or
           above it rises, and among the resource shares of L's children that the preemption
           changes, the highest falls.

        Each preemption then either raises the total usage or keeps it and makes the tree's
        resource shares, read level by level from the root, strictly smaller: neither can go
        on for ever, so a pool whose jobs stay the same settles.
        """
        for r in self.usage.resources:
            if above(sum(victim.job.resources.get(r, 0.0) for victim in victims), self.request.get(r, 0.0)):
                return False
        path = list(self.leaf.lineage())
        sides: dict[UsageNode, set[UsageNode]] = {}          # lowest common ancestor -> touched children
        for victim in victims:
            below = self.usage.leaf(victim.job.group)
            while below.parent not in path:
                assert below.parent is not None              # the root is above every leaf
                below = below.parent
            assert below.parent is not None
            sides.setdefault(below.parent, set()).add(below)
        top = max(sides, key=path.index)
        touched = sides[top] | {path[path.index(top) - 1]}
        above_top = path[path.index(top):]
        after = {node: resource_shares(node) for node in (*touched, *above_top)}
        self.usage.remove(self.group, self.request)
        for victim in victims:
            self.usage.admit(victim.job.group, victim.job.resources)
        before = {node: resource_shares(node) for node in after}
        for victim in victims:
            self.usage.remove(victim.job.group, victim.job.resources)
        self.usage.admit(self.group, self.request)
        if any(_below(before[node][r], after[node][r]) for node in above_top for r in before[node]):
            return False
        changed = [(node, r) for node in touched for r in before[node]
                   if _below(after[node][r], before[node][r]) or _below(before[node][r], after[node][r])]
        return bool(changed) and _below(max(after[n][r] for n, r in changed), max(before[n][r] for n, r in changed))

    def fill_back(self) -> tuple[Victim, ...]:
        """Put victims back, last-but-one first, while the preemptor still fits."""
        kept = list(self.victims)
        for victim in reversed(self.victims[:-1]):
            self._move(victim.job, 1.0)
            if self.fits():
                kept.remove(victim)
            else:
                self._move(victim.job, -1.0)
        return tuple(kept)


def _victims_on_slot(usage: GroupUsage, group: str, request: Mapping[str, float],
                     free: Mapping[str, float], jobs: Sequence[RunningJob],
                     strategies: Sequence[str]) -> tuple[Victim, ...] | None:
    lacking = _lacking(request, free)
    contested = ((lacking & set(usage.resources))
                 or {r for r in usage.resources if request.get(r, 0.0) > 0} or set(usage.resources))
    own_leaf = usage.leaf(group)
    # The preemptor's admission changes no other leaf, so candidates are found before copying.
    candidates = sorted(
        (job for job in jobs
         if usage.leaf(job.group) is not own_leaf
         and any(job.resources.get(r, 0.0) > 0 for r in lacking)
         and borrowing_on(usage.leaf(job.group), contested)),
        key=candidate_order)
    if not candidates or not _could_fit(request, free, candidates):
        return None
    with usage.trial():
        attempt = _Attempt(usage, group, request, free)
        if not borrowing_on(attempt.leaf, contested):
            fits = _reclaim(attempt, candidates)
        else:
            fits, turned_down = _first_strategy(attempt, candidates, _STRATEGIES[strategies[0]], strategies[0]) \
                if strategies else (False, [])
            if not fits and len(strategies) > 1:
                fits = _second_strategy(attempt, turned_down, _STRATEGIES[strategies[1]], strategies[1])
        if not fits:
            return None
        victims = attempt.fill_back()
        return victims if attempt.settles(victims) else None


def _reclaim(attempt: _Attempt, candidates: Sequence[RunningJob]) -> bool:
    """The preemptor stays within its nominal share: take each target's next candidate."""
    targets = _Targets(attempt, candidates)
    for target in targets:
        if attempt.take(targets.pop(target), RECLAIM):
            return True
    return False


def _first_strategy(attempt: _Attempt, candidates: Sequence[RunningJob], strategy: _Strategy,
                    name: str) -> tuple[bool, list[RunningJob]]:
    """Kueue's ``runFirstFsStrategy``: candidate by candidate; a pass re-picks the target."""
    turned_down: list[RunningJob] = []
    targets = _Targets(attempt, candidates)
    for target in targets:
        preemptor_side, target_side = _almost_lowest_common_ancestors(attempt.leaf, target)
        preemptor_share, target_before = node_share(preemptor_side), node_share(target_side)
        while targets.has_candidates(target):
            job = targets.pop(target)
            if strategy(preemptor_share, target_before, attempt.share_without(job, target_side)):
                if attempt.take(job, name):
                    return True, turned_down
                break
            turned_down.append(job)
    return False, turned_down


def _second_strategy(attempt: _Attempt, candidates: Sequence[RunningJob], strategy: _Strategy,
                     name: str) -> bool:
    """Kueue's ``runSecondFsStrategy``: one candidate per target, then the target is dropped."""
    targets = _Targets(attempt, sorted(candidates, key=candidate_order))
    for target in targets:
        preemptor_side, target_side = _almost_lowest_common_ancestors(attempt.leaf, target)
        job = targets.pop(target)
        if strategy(node_share(preemptor_side), node_share(target_side), attempt.share_without(job, target_side)):
            if attempt.take(job, name):
                return True
        targets.drop(target)
    return False


def _below(low: Share, high: Share) -> bool:
    """Whether ``low`` is below ``high`` by more than float noise (shares are recomputed from
    usage that went up and down, so an ulp is no change)."""
    if low.infinite != high.infinite:
        return high.infinite
    return above(high.value, low.value)


def _almost_lowest_common_ancestors(preemptor: UsageNode, target: UsageNode) -> tuple[UsageNode, UsageNode]:
    """The children of the lowest common ancestor on the way to ``preemptor`` and to ``target``
    (Kueue's ``getAlmostLCAs``); the leaves themselves when they are siblings."""
    above_preemptor = list(preemptor.lineage())
    target_side = target
    while target_side.parent not in above_preemptor:
        assert target_side.parent is not None        # the root is above both
        target_side = target_side.parent
    lowest = target_side.parent
    preemptor_side = above_preemptor[above_preemptor.index(lowest) - 1]
    return preemptor_side, target_side


class _Targets:
    """Kueue's ``TargetClusterQueueOrdering`` over the group tree: yields leaves to take
    candidates from, re-deciding after every pop, until every subtree is pruned."""

    def __init__(self, attempt: _Attempt, candidates: Sequence[RunningJob]) -> None:
        self._attempt = attempt
        self._queue: dict[UsageNode, deque[RunningJob]] = {}
        for job in candidates:
            self._queue.setdefault(attempt.usage.leaf(job.group), deque()).append(job)
        self._preemptor_path = set(attempt.leaf.lineage())
        self._pruned: set[UsageNode] = set()

    def __iter__(self) -> Iterator[UsageNode]:
        root = self._attempt.usage.root
        while root not in self._pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def has_candidates(self, leaf: UsageNode) -> bool:
        return bool(self._queue.get(leaf))

    def pop(self, leaf: UsageNode) -> RunningJob:
        return self._queue[leaf].popleft()

    def drop(self, leaf: UsageNode) -> None:
        self._pruned.add(leaf)

    def _next(self, node: UsageNode) -> UsageNode | None:
        """The highest-share borrowing leaf under ``node``, or None after pruning something."""
        best_leaf: UsageNode | None = None
        best_leaf_share: Share | None = None
        best_group: UsageNode | None = None
        best_group_share: Share | None = None
        for child in node.children:
            if child in self._pruned:
                continue
            share = node_share(child)
            if child.is_leaf:
                if not share.borrowing or not self.has_candidates(child):
                    self._pruned.add(child)
                elif best_leaf is None or best_leaf_share is None or share > best_leaf_share or (
                        share == best_leaf_share
                        and candidate_order(self._queue[child][0]) < candidate_order(self._queue[best_leaf][0])):
                    best_leaf, best_leaf_share = child, share
            elif not share.borrowing and child not in self._preemptor_path:
                self._pruned.add(child)
            elif best_group_share is None or share > best_group_share:
                best_group, best_group_share = child, share
        if best_group is not None and (best_leaf_share is None or (best_group_share is not None
                                                                   and best_group_share >= best_leaf_share)):
            return self._next(best_group)
        if best_leaf is not None:
            return best_leaf
        self._pruned.add(node)
        return None
