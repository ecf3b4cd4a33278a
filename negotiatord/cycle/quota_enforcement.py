"""Enforcing a lowered group maximum by preemption, once its quota preemption delay has passed.

Follows YuniKorn's design "Quota Enforcement through Preemption" and its quota preemptor
(``pkg/scheduler/objects/quota_preemptor.go``), in groups and running jobs:

1. a group's *preemptable* amount is its usage above its new maximum, positive parts only, on the
   resource types the maximum names (``setPreemptableResources``), capped so that neither the
   group nor any ancestor falls below its guaranteed floor;
2. a parent group's amount is split among its children in proportion to what each can release
   (usage above its guaranteed floor, or all its usage without one), rounded down, level by level
   (``getChildQueuesPreemptableResource``); a group's own submitters take a share like a child;
3. in each group, victims are the running jobs holding at least one preemptable resource type,
   ordered as the design document orders them: jobs of other submitters before the submitter
   whose usage made the group exceed its maximum, lower job priority first, youngest first; they
   are taken greedily while their total stays within the amount (no overshoot), best effort.

Everything here is pure: running and timers in, victims and reasons out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from negotiatord.accountant.quota_timers import QuotaTimer, over_maximum
from negotiatord.cycle.claimed import RunningJob
from negotiatord.settings.groups import GroupTree

Amounts = Mapping[str, float]       # lower-cased resource -> amount

ONLY_GUARANTEED_LEFT = "only usage within guaranteed floors is left"
NO_VICTIM_FITS = "no running job fits in the preemptable amount"
BEST_EFFORT = "best effort: the victims release less than the preemptable amount"
UNCOVERED = ("part of the preemptable amount falls in no group's share (the split among child groups "
             "rounds down and holds each share to its guaranteed floors): it is not preempted, and the "
             "timer starts again only when the maximum or the delay changes, or the group's usage rises")
PROBLEM_PREFIX = "quota of group"    # how each of :meth:`QuotaEnforcement.problems`'s lines begins


@dataclass(frozen=True)
class GroupShare:
    """What one group (a leaf of the split) is asked to release, and what it releases."""

    group: str
    target: Amounts
    victims: tuple[RunningJob, ...]
    claimed: Amounts
    reason: str | None          # why it releases less than its target; None when it releases it all


@dataclass(frozen=True)
class QuotaEnforcement:
    """The enforcement of one group's maximum."""

    group: str
    maximum: Amounts
    preemptable: Amounts
    shares: tuple[GroupShare, ...] = field(default=())
    reason: str | None = None   # why nothing can be preempted at all
    uncovered: Amounts = field(default_factory=dict)   # of ``preemptable``, what no group's share holds

    @property
    def victims(self) -> tuple[RunningJob, ...]:
        return tuple(victim for share in self.shares for victim in share.victims)

    def problems(self) -> list[str]:
        """Why preemption cannot (fully) help, one line per group concerned."""
        lines = []
        if self.reason is not None:
            lines.append(f"{PROBLEM_PREFIX} {self.group}: {self.reason}")
        if self.uncovered:
            lines.append(f"{PROBLEM_PREFIX} {self.group}: {UNCOVERED} ({_shown(self.uncovered)} of "
                         f"{_shown(self.preemptable)})")
        for share in self.shares:
            if share.reason is not None:
                lines.append(f"{PROBLEM_PREFIX} {self.group}, in group {share.group}: {share.reason} "
                             f"(asked {_shown(share.target)}, released {_shown(share.claimed)})")
        return lines


def group_usage(tree: GroupTree, running: Iterable[RunningJob]) -> tuple[dict[str, dict[str, float]],
                                                                      dict[str, dict[str, float]]]:
    """Per group, its subtree's usage and its own submitters' usage, per resource."""
    own: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for job in running:
        for resource, amount in job.resources.items():
            own[job.group][resource] += amount
    return tree.subtree_resources(own), own


def excess(maximum: Amounts, usage: Amounts) -> dict[str, float]:
    """Usage above ``maximum`` on the resource types it names, positive parts only (YuniKorn's
    ``SubOnlyExisting(max, used)``, keeping the negative entries, negated)."""
    return {r: usage.get(r, 0.0) - amount for r, amount in maximum.items() if usage.get(r, 0.0) > amount}


def releasable(guaranteed: Amounts | None, usage: Amounts) -> dict[str, float]:
    """What a group can give up: usage above its guaranteed floor per resource, or all of its usage
    where no floor is set, positive parts only."""
    floor = guaranteed or {}
    return {r: amount - floor.get(r, 0.0) for r, amount in usage.items() if amount > floor.get(r, 0.0)}


def guaranteed_headroom(tree: GroupTree, group: str, usage: Mapping[str, Amounts]) -> dict[str, float]:
    """Per resource with a guaranteed floor on ``group`` or an ancestor: the least any of them has
    above its floor, so preempting no more keeps every one at or above it."""
    headroom: dict[str, float] = {}
    for member in tree.lineage(group):
        configured = tree.settings_of(member)
        if configured is None or not configured.guaranteed:
            continue
        used = usage.get(member, {})
        for resource, floor in configured.guaranteed.items():
            room = max(0.0, used.get(resource, 0.0) - floor)
            headroom[resource] = min(room, headroom.get(resource, math.inf))
    return headroom


def preemptable(tree: GroupTree, group: str, maximum: Amounts, usage: Mapping[str, Amounts]) -> dict[str, float]:
    """``group``'s excess over ``maximum``, capped by the guaranteed headroom of its lineage;
    resource types left at 0 are dropped."""
    cap = guaranteed_headroom(tree, group, usage)
    amounts = {r: min(amount, cap.get(r, math.inf)) for r, amount in excess(maximum, usage.get(group, {})).items()}
    return {r: amount for r, amount in amounts.items() if amount > 0}


OWN_SUBMITTERS = "{group} (own submitters)"


def split(tree: GroupTree, group: str, amount: Amounts, usage: Mapping[str, Amounts],
          own_usage: Mapping[str, Amounts]) -> dict[str, dict[str, float]]:
    """``amount``, to be released by ``group``'s subtree, split among the groups that hold jobs.

    As YuniKorn's getChildQueuesPreemptableResource: each child with usage above its guaranteed
    floor (all of its usage without one) gets ⌊releasable_r / Σ releasable_r × amount_r⌋ of each
    resource ``amount`` names, and a child with children splits its share again. A group's own
    submitters take part as one more child, with all their usage releasable (the group's floor
    is its subtree's, already counted by the cap). Returns each group's share of its *own*
    submitters' jobs; a leaf group asked directly keeps the whole amount.
    """
    children = tree.children(group)
    if not children:
        return {group: dict(amount)}
    candidates: dict[str, dict[str, float]] = {}
    for child in children:
        configured = tree.settings_of(child)
        share = releasable(configured.guaranteed if configured else None, usage.get(child, {}))
        if share:
            candidates[child] = share
    mine = {r: v for r, v in own_usage.get(group, {}).items() if v > 0}
    if mine:
        candidates[OWN_SUBMITTERS.format(group=group)] = mine
    totals: dict[str, float] = defaultdict(float)
    for share in candidates.values():
        for resource, value in share.items():
            totals[resource] += value
    shares: dict[str, dict[str, float]] = {}
    for candidate, share in candidates.items():
        part = {r: float(math.floor(share[r] / totals[r] * amount[r])) for r in share if r in amount}
        if candidate == OWN_SUBMITTERS.format(group=group):
            shares[group] = part
        else:
            for leaf, leaf_part in split(tree, candidate, part, usage, own_usage).items():
                shares[leaf] = leaf_part
    return shares


def exceeding_submitter(running: Iterable[RunningJob], maximum: Amounts) -> str | None:
    """The submitter whose usage made the group exceed ``maximum``: adding the group's running jobs
    oldest first, the one whose job first takes a resource type over it."""
    used: dict[str, float] = defaultdict(float)
    for job in sorted(running, key=lambda j: (j.start, j.job_id)):
        for resource, amount in job.resources.items():
            used[resource] += amount
        if over_maximum(maximum, used):
            return job.submitter
    return None


def victim_order(running: Iterable[RunningJob], exceeding: str | None) -> list[RunningJob]:
    """The design document's preference: other submitters' jobs before the exceeding submitter's,
    lower priority first, then youngest first (job id breaks remaining ties)."""
    return sorted(running, key=lambda j: (j.submitter == exceeding, j.prio, -j.start, j.job_id))


def select_victims(group: str, running: Iterable[RunningJob], target: Amounts, exceeding: str | None) -> GroupShare:
    """Victims among ``running`` (group ``group``'s) releasing as much of ``target`` as fits without overshoot.

    Only jobs holding at least one resource type ``target`` names are considered (YuniKorn's
    filterAllocations ``MatchAny``); in :func:`victim_order`, a job is taken when, added to those
    taken, it keeps every targeted type within ``target`` (preemptVictims), else skipped.
    """
    wanted = {r: amount for r, amount in target.items() if amount > 0}
    candidates = [h for h in running if any(h.resources.get(r, 0.0) > 0 for r in wanted)]
    claimed = dict.fromkeys(wanted, 0.0)
    victims = []
    for candidate in victim_order(candidates, exceeding):
        if all(claimed[r] + candidate.resources.get(r, 0.0) <= wanted[r] for r in wanted):
            victims.append(candidate)
            for r in wanted:
                claimed[r] += candidate.resources.get(r, 0.0)
    if not victims:
        reason: str | None = NO_VICTIM_FITS
    elif any(claimed[r] < wanted[r] for r in wanted):
        reason = BEST_EFFORT
    else:
        reason = None
    return GroupShare(group, dict(target), tuple(victims), claimed, reason)


def enforce(tree: GroupTree, group: str, maximum: Amounts, running: list[RunningJob]) -> QuotaEnforcement:
    """The victims that bring ``group`` back within ``maximum``, and why not all of the excess if so."""
    usage, own = group_usage(tree, running)
    amount = preemptable(tree, group, maximum, usage)
    if not amount:
        reason = ONLY_GUARANTEED_LEFT if over_maximum(maximum, usage.get(group, {})) else None
        return QuotaEnforcement(group, dict(maximum), {}, (), reason)
    subtree = set(_subtree(tree, group))
    mine = [h for h in running if h.group in subtree]
    exceeding = exceeding_submitter(mine, maximum)
    shares = []
    covered: dict[str, float] = defaultdict(float)
    for member, target in sorted(split(tree, group, amount, usage, own).items()):
        # a share is also held to the floors of its own lineage, which the split does not see
        cap = guaranteed_headroom(tree, member, usage)
        target = {r: min(v, cap.get(r, math.inf)) for r, v in target.items()}
        for resource, value in target.items():
            covered[resource] += value
        if not any(v > 0 for v in target.values()):
            continue
        shares.append(select_victims(member, [h for h in mine if h.group == member], target, exceeding))
    uncovered = {r: v - covered[r] for r, v in amount.items() if v - covered[r] > 0} if shares else {}
    return QuotaEnforcement(group, dict(maximum), amount, tuple(shares),
                            None if shares else ONLY_GUARANTEED_LEFT, uncovered)


def due_enforcements(tree: GroupTree, timers: Mapping[str, QuotaTimer], running: Iterable[RunningJob],
                     now: float) -> tuple[QuotaEnforcement, ...]:
    """Every group whose timer is due at ``now`` and not yet enforced, deepest groups first (the design document lets a
    leaf go before its parent, whose excess the leaf's victims may already remove); each group's
    victims are left out of the groups enforced after it."""
    remaining = list(running)
    done = []
    for timer in sorted((t for t in timers.values() if t.awaits_enforcement(now)),
                        key=lambda t: (-len(tree.lineage(t.group)), t.group)):
        enforcement = enforce(tree, timer.group, timer.maximum, remaining)
        taken = {victim.job_id for victim in enforcement.victims}
        remaining = [h for h in remaining if h.job_id not in taken]
        done.append(enforcement)
    return tuple(done)


def _subtree(tree: GroupTree, group: str) -> list[str]:
    walk = [group]
    for name in walk:
        walk.extend(tree.children(name))
    return walk


def _shown(amounts: Amounts) -> str:
    return ", ".join(f"{r}:{v:g}" for r, v in sorted(amounts.items())) or "nothing"
