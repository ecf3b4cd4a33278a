"""Group usage per resource over the group tree, and each node's Dominant Resource Share (DRS).

The model is Kueue's (``pkg/cache/scheduler/resource_node.go`` and ``fair_sharing.go``), with
accounting groups in the part of cohorts and ClusterQueues:

- Every group is a node whose **nominal share** is its subtree quota: the HGQ quota
  (``GROUP_QUOTA``/``GROUP_QUOTA_DYNAMIC``) in slot-weight units, or ``GROUP_RESOURCE_QUOTA``
  per resource (:func:`nominal_shares`). The root ``<none>`` holds the whole pool.
- Jobs belong to leaves, as Kueue's workloads belong to ClusterQueues. A group without child
  groups is its own leaf. A group with children (and ``<none>``) also has a leaf for its **own
  submitters**, a child whose nominal share is what the group does not pass to its children
  (HGQ's ``own_quota``), as a Kueue cohort's own quota sits beside its children's.
- A node's usage is the sum over its subtree (Kueue's cohort usage without lending limits);
  **borrowed** is usage above the subtree quota.
- **Lendable** for a node is what its parent could potentially reach: Kueue's
  ``potentialAvailable`` of the parent, which is the root's quota cut by every borrowing limit
  (``GROUP_BORROWING_LIMIT``) on the way up (a node may hold at most its quota plus its limit).
- **DRS** = max over resources of borrowed / lendable, in per mille, divided by
  ``GROUP_FAIRSHARE_WEIGHT``. A weight of 0 makes any borrowing infinite; two such infinite
  shares compare by their unweighted ratio, as Kueue's ``CompareDRS`` does. The root's share
  is always 0 (it has no parent to borrow from).

Kueue counts in integer milli-units; here amounts are floats, and differences smaller than
:data:`_RESIDUE` of the amounts involved count as none, so a sum that drifted by an ulp is
not borrowing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from negotiatord.settings.groups import ROOT_GROUP, WEIGHT_UNIT, GroupTree

# Relative size below which a float difference is rounding noise, not borrowing.
_RESIDUE = 1e-9


@dataclass(frozen=True, order=True)
class Share:
    """A node's Dominant Resource Share, ordered as Kueue's ``CompareDRS`` orders them.

    ``infinite`` (borrowing on a fair-share weight of 0) ranks above every finite share; among
    infinite shares ``value`` is the unweighted per-mille ratio, otherwise the weighted one.
    """

    infinite: bool
    value: float                                   # per mille (weighted unless infinite)
    borrowing: bool = field(default=False, compare=False)   # usage above quota in any resource
    dominant: str = field(default="", compare=False)        # the resource giving the ratio

    @property
    def per_mille(self) -> float:
        """The share as a number: the weighted per-mille ratio, ``inf`` on a weight of 0."""
        return math.inf if self.infinite else self.value


NO_SHARE = Share(False, 0.0)


@dataclass(eq=False)
class UsageNode:
    """One group (or a group's own submitters) in the usage tree."""

    name: str                                  # the group's configured name
    parent: UsageNode | None
    quota: dict[str, float]                    # subtree quota per resource (nominal share)
    weight: float                              # GROUP_FAIRSHARE_WEIGHT
    borrowing_limit: Mapping[str, float]       # GROUP_BORROWING_LIMIT (missing: unlimited)
    own_leaf: bool = False                     # the own-submitters leaf of an interior group
    children: list[UsageNode] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=dict)
    lendable: dict[str, float] = field(default_factory=dict)   # potentialAvailable(parent)
    reach: dict[str, float] = field(default_factory=dict)      # potentialAvailable(self)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def lineage(self) -> Iterator[UsageNode]:
        """This node, then its ancestors up to the root."""
        node: UsageNode | None = self
        while node is not None:
            yield node
            node = node.parent


def nominal_shares(tree: GroupTree, pool: Mapping[str, float],
                   hgq_quota: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Each group's nominal share (its subtree quota) per resource, ``<none>`` included.

    Without any ``GROUP_RESOURCE_QUOTA`` the one resource is :data:`WEIGHT_UNIT` and a group's
    share is its HGQ quota (``hgq_quota``, keyed by group, as ``allocate_quotas`` gives it in
    ``GroupAllocation.quota``). Once any group sets ``GROUP_RESOURCE_QUOTA``, the resources are
    those named there; ``pool`` gives the root's amount of each (the pool's total), a group
    without the knob asks for what its children ask, and, as HGQ does with static quotas
    (``hgq_assign_quotas``), children asking for more than their parent holds are scaled down
    in proportion, resource by resource, so the promises add up.
    """
    if not any(_resource_quota(tree, name) for name in tree.names[1:]):
        return {name: {WEIGHT_UNIT: float(hgq_quota.get(name, 0.0))} for name in tree.names[1:]} | {
            ROOT_GROUP: {WEIGHT_UNIT: float(pool.get(WEIGHT_UNIT, hgq_quota.get(ROOT_GROUP, 0.0)))}}
    resources = sorted({r for name in tree.names[1:] for r in _resource_quota(tree, name)})

    def asked(name: str) -> dict[str, float]:
        given = _resource_quota(tree, name)
        below = [asked(child) for child in tree.children(name)]
        return {r: given[r] if r in given else math.fsum(b[r] for b in below) for r in resources}

    shares: dict[str, dict[str, float]] = {ROOT_GROUP: {r: float(pool.get(r, 0.0)) for r in resources}}

    def split(name: str) -> None:
        children = tree.children(name)
        wants = {child: asked(child) for child in children}
        for r in resources:
            total = math.fsum(want[r] for want in wants.values())
            scale = 1.0 if total <= shares[name][r] else shares[name][r] / total
            for child in children:
                shares.setdefault(child, {})[r] = wants[child][r] * scale
        for child in children:
            split(child)

    split(ROOT_GROUP)
    return shares


def _resource_quota(tree: GroupTree, name: str) -> Mapping[str, float]:
    settings = tree.settings_of(name)
    return (settings.resource_quota or {}) if settings else {}


class GroupUsage:
    """Usage per resource of every group over the tree, for one cycle, with Kueue's shares.

    Built from the nominal shares (:func:`nominal_shares`) and the running jobs' resources;
    :meth:`admit` and :meth:`remove` move usage as a cycle admits a job or preempts one.
    Resources outside the nominal shares' resources are not accounted (a job's ``disk`` when
    only ``cpus`` has a quota).
    """

    def __init__(self, tree: GroupTree, nominal: Mapping[str, Mapping[str, float]]) -> None:
        self._tree = tree
        self.resources: tuple[str, ...] = tuple(sorted({r for share in nominal.values() for r in share}))
        self._group_node: dict[str, UsageNode] = {}
        self._leaf: dict[str, UsageNode] = {}               # configured name -> leaf
        self._leaf_of: dict[str, UsageNode] = {}            # any spelling -> leaf, as asked
        self._saved: dict[UsageNode, dict[str, float]] | None = None   # during a trial
        self._root = self._build(ROOT_GROUP, None, nominal)
        self._set_reach(self._root)

    def _build(self, name: str, parent: UsageNode | None, nominal: Mapping[str, Mapping[str, float]]) -> UsageNode:
        settings = self._tree.settings_of(name)
        weight = settings.fairshare_weight if settings else 1.0
        limit = (settings.borrowing_limit or {}) if settings else {}
        quota = {r: float(nominal.get(name, {}).get(r, 0.0)) for r in self.resources}
        node = UsageNode(name, parent, quota, weight, limit, usage=dict.fromkeys(self.resources, 0.0))
        self._group_node[name] = node
        node.children = [self._build(child, node, nominal) for child in self._tree.children(name)]
        if node.children or parent is None:
            # The group's own submitters: what it keeps after its children's quotas.
            own = {r: max(0.0, quota[r] - math.fsum(c.quota[r] for c in node.children)) for r in self.resources}
            leaf = UsageNode(name, node, own, weight, {}, own_leaf=True, usage=dict.fromkeys(self.resources, 0.0))
            node.children.append(leaf)
            self._leaf[name] = leaf
        else:
            self._leaf[name] = node
        return node

    def _set_reach(self, node: UsageNode) -> None:
        """Kueue's ``potentialAvailable``: the root's quota, cut by each borrowing limit met on
        the way down (no lending limits here, so a node's local quota is 0)."""
        for r in self.resources:
            if node.parent is None:
                node.reach[r] = node.quota[r]
            else:
                node.lendable[r] = node.parent.reach[r]
                limit = node.borrowing_limit.get(r)
                cap = math.inf if limit is None else node.quota[r] + limit
                node.reach[r] = min(cap, node.parent.reach[r])
        for child in node.children:
            self._set_reach(child)

    # --- the tree, as the decision walks it -------------------------------------------------

    def leaf(self, group: str) -> UsageNode:
        """The leaf a job of ``group`` (any case) is accounted in."""
        leaf = self._leaf_of.get(group)
        if leaf is None:
            declared = self._tree.declared(group)
            if declared is None:
                raise KeyError(f"{group!r} is not a configured group")
            leaf = self._leaf_of[group] = self._leaf[declared]
        return leaf

    @property
    def root(self) -> UsageNode:
        return self._root

    # --- usage ------------------------------------------------------------------------------

    def admit(self, group: str, resources: Mapping[str, float]) -> None:
        """Charge ``resources`` to ``group``'s leaf and every node above it."""
        self._move(self.leaf(group), resources, 1.0)

    def remove(self, group: str, resources: Mapping[str, float]) -> None:
        """Take ``resources`` (a preempted or finished job's) back from ``group``."""
        self._move(self.leaf(group), resources, -1.0)

    def _move(self, leaf: UsageNode, resources: Mapping[str, float], sign: float) -> None:
        for node in leaf.lineage():
            if self._saved is not None and node not in self._saved:
                self._saved[node] = dict(node.usage)
            for r, amount in resources.items():
                if r in node.usage:
                    node.usage[r] += sign * amount

    @contextmanager
    def trial(self) -> Iterator[None]:
        """Usage moved inside the block is put back as it was when the block ends: a preemption
        is simulated on the real tree, and only the nodes it touches are saved."""
        if self._saved is not None:
            raise RuntimeError("trials do not nest")
        self._saved = {}
        try:
            yield
        finally:
            for node, usage in self._saved.items():
                node.usage = usage
            self._saved = None

    # --- shares -----------------------------------------------------------------------------

    def share(self, group: str) -> Share:
        """``group``'s DRS over its whole subtree (its own submitters' leaf for :meth:`own_share`)."""
        declared = self._tree.declared(group)
        if declared is None:
            raise KeyError(f"{group!r} is not a configured group")
        return node_share(self._group_node[declared])

    def own_share(self, group: str) -> Share:
        """The DRS of ``group``'s own submitters (the group's own share when it has no children)."""
        return node_share(self.leaf(group))


def above(usage: float, quota: float) -> bool:
    """Whether ``usage`` exceeds ``quota`` by more than rounding noise."""
    return usage - quota > _RESIDUE * max(1.0, abs(quota), abs(usage))


def borrowing_on(node: UsageNode, resources: Iterable[str]) -> bool:
    """Whether ``node`` holds more than its quota of any of ``resources``."""
    return any(above(node.usage[r], node.quota[r]) for r in resources if r in node.usage)


def resource_shares(node: UsageNode) -> dict[str, Share]:
    """Each resource's share of ``node``: borrowed / lendable in per mille over the weight (the
    terms Kueue's ``dominantResourceShare`` takes the largest of); none for the root, for a
    resource the node does not borrow, or one nothing can be lent of."""
    shares = {}
    for r in sorted(node.usage):
        borrowed = node.usage[r] - node.quota[r]
        lendable = node.lendable.get(r, 0.0)
        if node.parent is None or not above(node.usage[r], node.quota[r]) or lendable <= 0:
            shares[r] = NO_SHARE
        elif node.weight == 0:
            shares[r] = Share(True, borrowed * 1000.0 / lendable, True, r)
        else:
            shares[r] = Share(False, borrowed * 1000.0 / lendable / node.weight, True, r)
    return shares


def node_share(node: UsageNode) -> Share:
    """Kueue's ``dominantResourceShare`` of one node: its largest resource share (the first
    resource by name on a tie), borrowing if it holds more than its quota of anything."""
    borrowing = node.parent is not None and borrowing_on(node, node.usage)
    dominant = max(resource_shares(node).values(), default=NO_SHARE)
    return Share(dominant.infinite, dominant.value, borrowing, dominant.dominant)


def fits_borrowing_limits(leaf: UsageNode) -> bool:
    """Whether the usage at ``leaf`` and every node above it stays within reach: the root's
    quota, and quota plus borrowing limit where one is set (Kueue's ``available`` >= 0)."""
    for node in leaf.lineage():
        for r, used in node.usage.items():
            limit = node.borrowing_limit.get(r)
            cap = node.quota[r] if node.parent is None else math.inf if limit is None else node.quota[r] + limit
            if above(used, cap):
                return False
    return True
