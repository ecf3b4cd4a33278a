"""Hierarchical group quotas: how much each accounting group's own submitters may hold this cycle.

Pure numbers in, numbers out: the group tree (:class:`~negotiatord.settings.groups.GroupTree`,
already checked), the pool size, and each group's demand, all in slot-weight units, *matches* in
the language of HTCondor's consumption policies (slot weight = match cost = quota). Nothing here
looks at slots, jobs or the clock, so the rules can be read, tested and argued about on their own.

Two steps, as in HTCondor's negotiator (``hgq_assign_quotas`` then ``hgq_fairshare``):

1. **Quota assignment**, top-down. The root ``<none>`` holds the whole pool. Among a group's
   children, static quotas (``GROUP_QUOTA_<g>``) are served first and scaled down in proportion
   if together they exceed the parent's quota; dynamic quotas (``GROUP_QUOTA_DYNAMIC_<g>``) are
   fractions of what the parent has left after its static children, normalised when they sum
   above 1. A group with neither gets 0. What a group does not pass to its children is its
   ``own_quota``, for its own submitters.
2. **Allocation.** Quotas are a promise: first every group's own submitters get
   ``min(demand, own_quota)``. Then unused quota (surplus) climbs the tree bottom-up. At each
   group the surplus found inside its subtree is offered to its own submitters and to its child
   subtrees, in proportion to their quota, water-filling (shares capped at unmet demand, the
   excess re-shared among the rest); only what nobody under that group can use climbs to the
   parent. A subtree is offered surplus only if its top group accepts surplus; inside it the
   share is handed down the same way. So surplus stays as close as possible to where it arose.

Zero-quota groups that accept surplus (``hgq_allocate_surplus_loop`` in HTCondor, followed
here): they get nothing while some group with quota > 0 at the same level still has unmet
demand; what those cannot use is then shared equally among the zero-quota ones. A quota share
is the only fairness signal we have, and zero says "no claim"; equal shares are the neutral
choice among claimants that have no quota to compare.

Deviations from HTCondor
------------------------
- **No oversubscription.** The sum of all groups' ``own_quota`` is exactly the pool size.
  HTCondor's ``NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION`` (True in the param table, False only
  as the code fallback) makes ``hgq_assign_quotas`` give every non-root interior group its
  whole subtree quota again as its own quota, and stops scaling static quotas that exceed the
  parent's; HTCondor then allocates more than the pool holds and lets negotiation order (and
  ``strict_enforce_quota`` at match time) decide who really gets the slots. negotiatord
  ignores that knob: a quota is a promise only if the promises add up. The manual's scaling
  example (30 slots shrink to 15: physics 20 -> 10, chemistry 10 -> 5) is what we always do.
- **A subtree refusing surplus is held to its quota by the allocation itself.** HTCondor's
  allocation can exceed it and relies on ``strict_enforce_quota`` during negotiation (with the
  unscaled configured quota); here nothing under a refusing group is ever allocated more than
  that group's (scaled) subtree quota.
- **A group's own submitters take surplus only if the group accepts surplus.** HTCondor's
  ``hgq_allocate_surplus`` treats an interior group's own submitters as always accepting the
  surplus found inside its subtree, whatever ``GROUP_ACCEPT_SURPLUS_<g>`` says. negotiatord
  gives the flag one meaning everywhere: a group's own submitters are allocated more than its
  ``own_quota`` only if the group accepts surplus.
- The root's own submitters accept surplus as ``accept_surplus_root`` says. The cycle passes
  True, as HTCondor's ``hgq_construct_tree`` hard-codes for the root ``<none>``, so ungrouped
  users can use what the groups leave idle whatever ``GROUP_ACCEPT_SURPLUS`` says.
- **Fractional allocations, no remainder round-robin.** Without slot weights HTCondor floors
  each allocation to whole slots and hands the fractional remainders out one slot at a time in
  order of the groups' last round-robin time (``hgq_recover_remainders``, ``hgq_round_robin``).
  negotiatord always keeps the exact fractional allocation: costs are in slot-weight units and
  may be fractional, and the result must not depend on history or tie order.
- **Deterministic, order-free arithmetic.** Sums use ``math.fsum``; water-filling raises one
  common level for all claimants rather than serving them in a sorted order, so the result does
  not depend on tie order, dict order or the order of ``GROUP_NAMES`` (beyond float rounding).
  Residues below ``1e-9`` of the pool size (at least 1e-9 absolute) count as zero; HTCondor
  rounds surplus below ``1e-5`` to zero.
- **Configuration errors are errors.** The group tree refuses a missing parent, a duplicate, a
  group named ``<none>``, a quota out of range and a group with both a static and a dynamic
  quota when the config is loaded (:class:`~negotiatord.settings.groups.GroupTree`); HTCondor
  logs and ignores such groups, or exits on a quota outside ``param_double``'s range.

Followed as in HTCondor: the base of a dynamic quota is the parent's quota minus what its static
children were given; a child subtree's weight in surplus sharing is its whole subtree quota, the
parent's own submitters' weight is the parent's ``own_quota`` (``hgq_allocate_surplus``); group
names compare case-insensitively.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence

from negotiatord.settings.groups import ROOT_GROUP, GroupSettings, GroupTree

# Float residues smaller than this fraction of the pool (or this absolute amount, for pools
# under one unit) are rounding noise, not quota.
_RESIDUE = 1e-9


@dataclass(frozen=True)
class GroupAllocation:
    """One group's quota and what its own submitters may hold this cycle (slot-weight units)."""

    name: str
    parent: str | None        # None for the root "<none>"
    quota: float              # the group's subtree quota, after normalisation
    own_quota: float          # the part of `quota` not given to child groups
    demand: float             # the group's own submitters' demand (usage + idle demand)
    allocated: float          # what the group's own submitters may hold (usage included)
    accept_surplus: bool


@dataclass(eq=False)
class _Group:
    """Working state of one group during a single allocation."""

    name: str
    settings: GroupSettings | None          # None for the root
    accept_surplus: bool
    parent: str | None = None               # its name: a link to the parent's _Group would make a
                                            # reference cycle of the tree, left to the cyclic collector
    children: list[_Group] = field(default_factory=list)
    quota: float = 0.0
    own_quota: float = 0.0
    demand: float = 0.0
    allocated: float = 0.0

    def unmet(self, residue: float) -> float:
        """Own demand not yet allocated; rounding noise counts as nothing."""
        left = self.demand - self.allocated
        return left if left > residue else 0.0


def allocate_quotas(
    tree: GroupTree,
    pool_size: float,
    demand: Mapping[str, float],
    accept_surplus_root: bool,
) -> dict[str, GroupAllocation]:
    """Assign quotas from ``pool_size`` down the group tree and allocate them against ``demand``.

    ``demand`` is keyed by group name (case-insensitive, ``<none>`` for the root's own
    submitters); a missing group has demand 0. The result has every configured group plus
    ``<none>``, keyed by the configured spelling, root first then ``GROUP_NAMES`` order.
    Raises ``ValueError`` on a bad pool size or demand.
    """
    if not (math.isfinite(pool_size) and pool_size >= 0):
        raise ValueError(f"pool size must be a finite number >= 0, got {pool_size!r}")
    pool_size = float(pool_size)
    residue = _RESIDUE * max(1.0, pool_size)
    root, ordered = _working_tree(tree, accept_surplus_root)
    _attach_demand(tree, ordered, demand)
    _assign_quota(root, pool_size, residue)
    for group in ordered:
        group.allocated = min(group.demand, group.own_quota)
    _share_surplus_within(root, residue)
    return {
        group.name: GroupAllocation(
            name=group.name,
            parent=group.parent,
            quota=group.quota,
            own_quota=group.own_quota,
            demand=group.demand,
            # water-filling may overshoot demand by an ulp; demand is the hard ceiling
            allocated=min(group.allocated, group.demand),
            accept_surplus=group.accept_surplus,
        )
        for group in ordered
    }


def water_fill(amount: float, weights: Sequence[float], needs: Sequence[float],
               residue: float = _RESIDUE) -> list[float]:
    """Split ``amount`` among claimants in proportion to ``weights``, capped at ``needs``.

    A claimant whose share would exceed its need gets its need, and the rest is re-shared
    among the others at a common, higher level, so every uncapped claimant ends with the same
    amount per unit of weight. Claimants of weight 0 are served only once every weighted
    claimant is satisfied, and then equally (HTCondor's ``hgq_allocate_surplus_loop``, by
    quota then by count). Each round caps at least one claimant or spends everything, so this
    ends after at most ``len(needs)`` rounds. Needs at or below ``residue`` are ignored.
    """
    shares = [0.0] * len(needs)
    wanting = [i for i, need in enumerate(needs) if need > residue]
    weighted = [i for i in wanting if weights[i] > 0]
    unweighted = [i for i in wanting if not weights[i] > 0]
    left = amount
    for claimants, weight_of in ((weighted, weights.__getitem__), (unweighted, lambda _: 1.0)):
        while claimants and left > residue:
            total_weight = math.fsum(weight_of(i) for i in claimants)
            # weight fractions, not left / total_weight: tiny weights must not overflow
            offer = {i: left * (weight_of(i) / total_weight) for i in claimants}
            capped = [i for i in claimants if needs[i] <= offer[i]]
            if not capped:
                for i in claimants:
                    shares[i] = offer[i]
                return shares
            for i in capped:
                shares[i] = needs[i]
            claimants = [i for i in claimants if i not in capped]
            left = amount - math.fsum(shares)
    return shares


def _working_tree(tree: GroupTree, accept_surplus_root: bool) -> tuple[_Group, list[_Group]]:
    """Working state for every group of ``tree``, linked as it is; root first, then config order."""
    by_name = {ROOT_GROUP: _Group(ROOT_GROUP, None, accept_surplus_root)}
    for name in tree.names[1:]:
        settings = tree.settings_of(name)
        assert settings is not None          # every name after <none> is a configured group
        by_name[name] = _Group(name, settings, settings.accept_surplus)
    for name, group in by_name.items():
        group.children = [by_name[child] for child in tree.children(name)]
        for child in group.children:
            child.parent = name
    return by_name[ROOT_GROUP], list(by_name.values())


def _attach_demand(tree: GroupTree, ordered: list[_Group], demand: Mapping[str, float]) -> None:
    by_name = {group.name: group for group in ordered}
    seen: dict[_Group, str] = {}
    for key in sorted(demand):
        declared = tree.declared(key)
        group = by_name.get(declared) if declared is not None else None
        if group is None:
            raise ValueError(f"demand given for {key!r}, which is not a configured group")
        if group in seen:
            raise ValueError(f"demand given twice for group {group.name!r}: "
                             f"as {seen[group]!r} and as {key!r}")
        value = demand[key]
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"demand of group {key!r} must be a finite number >= 0, got {value!r}")
        seen[group] = key
        group.demand = float(value)


def _assign_quota(group: _Group, quota: float, residue: float) -> None:
    """Give ``group`` its subtree quota and split it among its children (``hgq_assign_quotas``)."""
    group.quota = quota
    static_quotas = [q for q in map(_static_quota, group.children) if q is not None]
    dynamics = [c for c in group.children if _static_quota(c) is None]
    static_sum = math.fsum(static_quotas)
    # static children first; scaled down together when they ask for more than there is
    static_scale = 1.0 if static_sum <= quota else quota / static_sum
    # dynamic children share what the static ones left, normalised when fractions sum above 1
    dynamic_base = max(0.0, quota - min(static_sum, quota))
    dynamic_scale = dynamic_base / max(1.0, math.fsum(_dynamic_quota(c) for c in dynamics))
    child_quotas = []
    for child in group.children:
        static = _static_quota(child)
        if static is not None:
            child_quota = static * static_scale
        else:
            child_quota = _dynamic_quota(child) * dynamic_scale
        child_quotas.append(child_quota)
        _assign_quota(child, child_quota, residue)
    own = quota - math.fsum(child_quotas)
    group.own_quota = own if own > residue else 0.0


def _static_quota(group: _Group) -> float | None:
    return group.settings.static_quota if group.settings else None


def _dynamic_quota(group: _Group) -> float:
    """A group's dynamic fraction; 0 when it has no quota at all (as HTCondor defaults it)."""
    if group.settings is None or group.settings.dynamic_quota is None:
        return 0.0
    return group.settings.dynamic_quota


def _share_surplus_within(group: _Group, residue: float) -> float:
    """Share the surplus arising in ``group``'s subtree inside it; return what nobody there can use.

    Children go first, so surplus is spent as deep as possible (``hgq_fairshare``).
    """
    parts = [group.own_quota - group.allocated]
    parts.extend(_share_surplus_within(child, residue) for child in group.children)
    return _offer_surplus(group, math.fsum(parts), residue)


def _offer_surplus(group: _Group, surplus: float, residue: float) -> float:
    """Water-fill ``surplus`` over ``group``'s own submitters and accepting child subtrees.

    Returns what is left once every eligible claimant under ``group`` is satisfied.
    """
    if surplus <= residue:
        return 0.0
    claimants = [c for c in group.children if c.accept_surplus]
    weights = [c.quota for c in claimants]
    needs = [_eligible_need(c, residue) for c in claimants]
    if group.accept_surplus:
        weights.append(group.own_quota)
        needs.append(group.unmet(residue))
    shares = water_fill(surplus, weights, needs, residue)
    for child, share in zip(claimants, shares):
        if share > 0:
            # the share never exceeds the subtree's eligible need, so nothing comes back
            _offer_surplus(child, share, residue)
    if group.accept_surplus:
        group.allocated += shares[-1]
    left = surplus - math.fsum(shares)
    return left if left > residue else 0.0


def _eligible_need(group: _Group, residue: float) -> float:
    """Unmet demand in an accepting subtree that surplus offered to it can reach."""
    return math.fsum([group.unmet(residue)] + [
        _eligible_need(child, residue) for child in group.children if child.accept_surplus
    ])
