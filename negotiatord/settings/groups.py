"""The accounting-group tree: the one place that knows how groups, their parents and customers relate.

Built once per :class:`~negotiatord.settings.Settings` from ``GROUP_NAMES`` and checked as it is
built, so every config mistake in the tree is reported once, naming the knob. Everything else
(quotas, the cycle, the accountant, the daemon's reports) asks it rather than splitting dotted
names itself.

``<none>`` is the root, as in HTCondor's ``GroupEntry`` tree: top-level groups are its children,
and submitters outside every configured group are its own members.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from collections.abc import Iterable, Mapping

from negotiatord.settings.errors import ConfigError

ROOT_GROUP = "<none>"

# The resource a per-group amount given as a plain number is counted in: slot weight, which
# HTCondor's accountant charges as "matches" when SlotWeight is left at its default.
WEIGHT_UNIT = "matches"

# Per-group params are named <PARAM>_<group>, and HTCondor's config parser rejects most
# punctuation in a name ('-', '@', ...), so such a group could never be configured. We accept
# letters, digits and '_', with '.' between levels (HTCondor's group hierarchy separator).
_GROUP_NAME = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")


@dataclass(frozen=True)
class GroupSettings:
    """One accounting group from ``GROUP_NAMES`` and its per-group knobs."""

    name: str                       # as written in GROUP_NAMES, e.g. "group_a.x"
    static_quota: float | None      # GROUP_QUOTA_<name>, in slot-weight units
    dynamic_quota: float | None     # GROUP_QUOTA_DYNAMIC_<name>, a fraction of the parent's quota
    accept_surplus: bool            # GROUP_ACCEPT_SURPLUS_<name>, else GROUP_ACCEPT_SURPLUS
    autoregroup: bool               # GROUP_AUTOREGROUP_<name>, else GROUP_AUTOREGROUP
    prio_factor: float | None       # GROUP_PRIO_FACTOR_<name>
    # Per-resource amounts (lower-cased resource -> amount; WEIGHT_UNIT when a plain number is given)
    resource_quota: Mapping[str, float] | None = None   # GROUP_RESOURCE_QUOTA_<name>: nominal share
    borrowing_limit: Mapping[str, float] | None = None  # GROUP_BORROWING_LIMIT_<name>
    fairshare_weight: float = 1.0                       # GROUP_FAIRSHARE_WEIGHT_<name>
    limit: Mapping[str, float] | None = None            # GROUP_LIMIT_<name>: enforced maximum
    guaranteed: Mapping[str, float] | None = None       # GROUP_GUARANTEED_<name>: floor
    quota_preemption_delay: float = 0.0                 # GROUP_QUOTA_PREEMPTION_DELAY_<name>, s; 0: never


class GroupTree:
    """The configured groups under ``<none>``: lookup, parents, children, lineage, roll-ups.

    Group names compare case-insensitively and come back in their configured spelling. Building
    the tree raises :class:`ConfigError` on the first mistake in ``groups``: ``<none>`` declared,
    a name no per-group param could be written for, a duplicate, a quota out of range, both a
    static and a dynamic quota, or a group whose parent is not declared. HTCondor logs and
    ignores the group in most of these cases (``GroupEntry::hgq_construct_tree``); a dropped
    group silently moves its users to another group, so here the config is refused.
    """

    def __init__(self, groups: Iterable[GroupSettings]) -> None:
        self._settings: dict[str, GroupSettings] = {}       # lower-cased name -> settings
        for group in groups:
            self._declare(group)
        self._parent: dict[str, str] = {}                    # configured name -> parent's
        self._children: dict[str, list[str]] = {ROOT_GROUP: []}
        for group in self._settings.values():
            head, dot, _ = group.name.rpartition(".")
            parent = self._settings.get(head.lower()) if dot else None
            if dot and parent is None:
                # hgq_construct_tree drops such a group with a warning; we refuse, as for a duplicate.
                raise ConfigError(f"GROUP_NAMES: group {group.name!r} needs its parent group "
                                  f"{head!r}, which GROUP_NAMES does not list")
            parent_name = parent.name if parent else ROOT_GROUP
            self._parent[group.name] = parent_name
            self._children.setdefault(parent_name, []).append(group.name)
            self._children.setdefault(group.name, [])
        self._names = (ROOT_GROUP, *(group.name for group in self._settings.values()))
        self._assigned: dict[str, str] = {}       # customer -> its assigned group, as worked out
        walk = [ROOT_GROUP]
        for name in walk:       # grows while it is walked: breadth-first
            walk.extend(sorted(self._children[name], key=str.lower))
        self._breadth_first = tuple(walk)

    def _declare(self, group: GroupSettings) -> None:
        name, key = group.name, group.name.lower()
        if key == ROOT_GROUP:
            raise ConfigError(f"GROUP_NAMES: the name {ROOT_GROUP} is reserved for the root group")
        if not _GROUP_NAME.fullmatch(name):
            raise ConfigError(f"GROUP_NAMES: group name {name!r} is not usable: per-group params "
                              "such as GROUP_QUOTA_<name> allow only letters, digits and '_', "
                              "with '.' between levels")
        if key in self._settings:
            raise ConfigError(f"GROUP_NAMES: group {name!r} is listed twice (as "
                              f"{self._settings[key].name!r} too; group names are case-insensitive)")
        _check_quotas(group)
        _check_limit(group)
        self._settings[key] = group

    @property
    def names(self) -> tuple[str, ...]:
        """Every group, ``<none>`` first, then in ``GROUP_NAMES`` order (configured spelling)."""
        return self._names

    @property
    def breadth_first(self) -> tuple[str, ...]:
        """Every group in HTCondor's ``hgq_groups`` order: ``<none>``, then level by level, each
        group's children in case-insensitive order of their names.

        ``GroupEntry::hgq_construct_tree`` sorts ``GROUP_NAMES`` with ``ci_less`` before linking
        the tree, so children are kept in name order, and lists the groups breadth-first from the
        root. Negotiation order breaks ties in ``GROUP_SORT_EXPR`` by this order.
        """
        return self._breadth_first

    def declared(self, name: str) -> str | None:
        """The group called ``name`` (any case, ``<none>`` included) in its configured spelling;
        None if there is no such group."""
        if name.lower() == ROOT_GROUP:
            return ROOT_GROUP
        group = self._settings.get(name.lower())
        return group.name if group else None

    def _group(self, name: str) -> str:
        """:meth:`declared`, for a name that must be a group (KeyError otherwise)."""
        group = self.declared(name)
        if group is None:
            raise KeyError(f"{name!r} is not a configured group")
        return group

    def settings_of(self, name: str) -> GroupSettings | None:
        """The knobs of the group called ``name`` (any case); None for ``<none>``, which has none
        of its own, and for names that are not groups."""
        return self._settings.get(name.lower())

    def parent(self, name: str) -> str | None:
        """The enclosing group of group ``name`` (``<none>`` for top-level groups, None for the
        root itself)."""
        return self._parent.get(self._group(name))

    def children(self, name: str) -> tuple[str, ...]:
        """The groups directly below group ``name``, in ``GROUP_NAMES`` order."""
        return tuple(self._children[self._group(name)])

    def lineage(self, name: str) -> tuple[str, ...]:
        """Group ``name`` and its ancestors, up to and including ``<none>``."""
        chain = [self._group(name)]
        while chain[-1] != ROOT_GROUP:
            chain.append(self._parent[chain[-1]])
        return tuple(chain)

    def assigned_group(self, customer: str) -> str:
        """The group ``customer``'s usage and priority factor belong to (HTCondor's
        ``GroupEntry::GetAssignedGroup``).

        A name without ``@`` is a group's own record and maps to itself. Otherwise the part before
        the last ``@`` is ``<group path>.<user>``: ``group_a.x.alice@site`` belongs to ``group_a.x``
        if configured, else ``group_a``, else ``<none>``; ``alice@site`` belongs to ``<none>``.
        """
        found = self._assigned.get(customer)
        if found is None:
            found = self._assigned[customer] = self._assigned_group(customer)
        return found

    def _assigned_group(self, customer: str) -> str:
        account, at, _ = customer.rpartition("@")
        name = customer.lower() if not at else account.rpartition(".")[0].lower()
        while name:
            group = self._settings.get(name)
            if group is not None:
                return group.name
            name = name.rpartition(".")[0]
        return ROOT_GROUP

    def roll_up(self, usage: Mapping[str, float]) -> dict[str, float]:
        """Per-customer ``usage`` plus every group's subtree total: a customer's usage also counts
        for its assigned group and each ancestor of it, ``<none>`` included.

        ``<none>`` is the root of the tree (as in ``GroupEntry``), so its total is the whole
        pool's, as the other groups' totals are their subtrees'. HTCondor's accountant walks the
        dotted group name for ``HierWeightedResourcesUsed`` instead and so leaves top-level groups
        out of ``<none>``; one rule for the cycle (``GroupResourcesInUse``, charges), the
        accountant's group records and ``condor_userprio``'s group rows keeps their figures equal.
        Groups no customer in ``usage`` belongs to are left out.
        """
        totals: dict[str, float] = {}
        lineages: dict[str, tuple[str, ...]] = {}
        for customer, amount in usage.items():
            totals[customer] = totals.get(customer, 0.0) + amount
            self._add_up(totals, self.assigned_group(customer), amount, lineages)
        return totals

    def subtree_totals(self, own: Mapping[str, float]) -> dict[str, float]:
        """Each group's subtree total of a figure given per group (its own submitters' allocation,
        say): a group's figure also counts for each ancestor, ``<none>`` included, as
        :meth:`roll_up` counts a customer's usage for its group's lineage."""
        totals: dict[str, float] = {}
        lineages: dict[str, tuple[str, ...]] = {}
        for group, amount in own.items():
            self._add_up(totals, group, amount, lineages)
        return totals

    def subtree_resources(self, own: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """:meth:`subtree_totals` of figures per resource (group -> resource -> amount)."""
        totals: dict[str, dict[str, float]] = {}
        for resource in dict.fromkeys(r for amounts in own.values() for r in amounts):
            of_resource = {group: amounts[resource] for group, amounts in own.items() if resource in amounts}
            for group, total in self.subtree_totals(of_resource).items():
                totals.setdefault(group, {})[resource] = total
        return totals

    def _add_up(self, totals: dict[str, float], group: str, amount: float,
                lineages: dict[str, tuple[str, ...]]) -> None:
        """Add ``amount`` to the totals of ``group`` and each ancestor (lineages cached per caller)."""
        lineage = lineages.get(group)
        if lineage is None:
            lineage = lineages[group] = self.lineage(group)
        for member in lineage:
            totals[member] = totals.get(member, 0.0) + amount


def _check_quotas(group: GroupSettings) -> None:
    """Quota ranges as ``GroupEntry::hgq_construct_tree`` reads them (``param_double`` with
    static in [0, INT_MAX], dynamic in [0, 1]), and at most one kind of quota."""
    static_name, dynamic_name = f"GROUP_QUOTA_{group.name}", f"GROUP_QUOTA_DYNAMIC_{group.name}"
    static, dynamic = group.static_quota, group.dynamic_quota
    if static is not None and not math.isfinite(static):
        raise ConfigError(f"{static_name} = {_shown(static)}: not a finite number")
    if static is not None and static < 0:
        raise ConfigError(f"{static_name} = {_shown(static)}: must be >= 0")
    if dynamic is not None and not 0 <= dynamic <= 1:
        raise ConfigError(f"{dynamic_name} = {_shown(dynamic)}: a dynamic quota is a fraction of "
                          "the parent's quota, in [0, 1]")
    if static is not None and dynamic is not None:
        # HTCondor would silently ignore the dynamic quota; a contradiction is more likely a typo.
        raise ConfigError(f"group {group.name!r} has both {static_name} and {dynamic_name}; set one")


def _check_limit(group: GroupSettings) -> None:
    """A maximum below the guaranteed floor on the same resource could never be enforced (YuniKorn's
    quota preemption design requires the maximum to stay at or above the guaranteed amount)."""
    for resource, floor in (group.guaranteed or {}).items():
        maximum = (group.limit or {}).get(resource)
        if maximum is not None and maximum < floor:
            raise ConfigError(f"GROUP_LIMIT_{group.name}: {resource} {maximum:g} is below "
                              f"GROUP_GUARANTEED_{group.name}'s {floor:g}; a maximum under the floor "
                              "can never be enforced")


def _shown(value: float) -> str:
    """A quota's value as it would be written in the config: ``'-2'``, ``'1.5'``."""
    value = float(value)
    return repr(str(int(value)) if value.is_integer() else repr(value))
