"""Quota preemption timers: when a lowered group maximum is enforced.

As YuniKorn's quota preemption delay (design "Quota Enforcement through Preemption"): a group's
timer starts when its maximum (``GROUP_LIMIT_<g>``) is first seen below its usage, and a change of
the maximum or of ``GROUP_QUOTA_PREEMPTION_DELAY_<g>`` restarts it from the beginning. Unlike
YuniKorn, which starts every timer again after a restart, the timers are kept in the accountant
database, so a restart does not postpone enforcement. Pure, like the rest of the accountant.

A timer is enforced once: YuniKorn's queue clears its start time when its quota preemptor has run
(``setQuotaPreemptionState(false)``: "preventing a re-run based on the same change"), and sets a
new one only on a change of the maximum or the delay (``setPreemptionTime``) or when an allocation
raises the queue's usage while it is above its maximum (``IncAllocatedResource``). Here an enforced
timer stays, marked with the lowest usage seen since, until the group is back within its maximum
(dropped), its maximum or delay changes, or its usage rises above that lowest (a new timer).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from collections.abc import Collection, Mapping

from negotiatord.accountant.records import check_finite, check_non_negative
from negotiatord.settings.groups import WEIGHT_UNIT, GroupSettings, GroupTree


@dataclass(frozen=True)
class QuotaTimer:
    """A running timer: the maximum and delay it was started for, and when."""

    group: str
    maximum: Mapping[str, float] = field(default_factory=dict)   # lower-cased resource -> amount
    delay: float = 0.0
    started: float = 0.0
    # None until enforced; then the group's lowest usage since, on the maximum's resources
    enforced: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        for resource, amount in self.maximum.items():
            check_non_negative(f"maximum of {resource!r} for group {self.group!r}", amount)
        check_non_negative(f"quota preemption delay of group {self.group!r}", self.delay)
        check_finite(f"quota preemption timer start of group {self.group!r}", self.started)
        object.__setattr__(self, "maximum", MappingProxyType(dict(self.maximum)))
        if self.enforced is not None:
            object.__setattr__(self, "enforced", MappingProxyType(dict(self.enforced)))

    def awaits_enforcement(self, now: float) -> bool:
        """Whether the timer is due at ``now`` and not yet enforced."""
        return self.enforced is None and self.due <= now

    @property
    def due(self) -> float:
        """When the lowered maximum is enforced."""
        return self.started + self.delay


def timer_document(timer: QuotaTimer, now: float) -> dict[str, object]:
    """A running timer as ``/v1/status`` and the accountant document show it."""
    return {"group": timer.group, "maximum": dict(timer.maximum), "delay_s": timer.delay,
            "started": timer.started, "due": timer.due, "due_in_s": round(timer.due - now, 3),
            "enforced": timer.enforced is not None}


def group_resources(tree: GroupTree, held: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Each group's subtree usage per resource, from what each submitter holds."""
    own: dict[str, dict[str, float]] = {}
    for submitter, resources in held.items():
        mine = own.setdefault(tree.assigned_group(submitter), {})
        for resource, amount in resources.items():
            mine[resource] = mine.get(resource, 0.0) + amount
    return tree.subtree_resources(own)


def group_maximum(settings: GroupSettings) -> dict[str, float]:
    """The group's maximum per resource: ``GROUP_LIMIT_<g>``, with ``GROUP_QUOTA_<g>`` counting as
    a maximum in slot-weight units (:data:`WEIGHT_UNIT`) unless the limit names that unit."""
    maximum = dict(settings.limit or {})
    if settings.static_quota is not None:
        maximum.setdefault(WEIGHT_UNIT, settings.static_quota)
    return maximum


def over_maximum(maximum: Mapping[str, float], usage: Mapping[str, float]) -> bool:
    """Whether ``usage`` exceeds ``maximum`` on a resource the maximum names."""
    return any(usage.get(resource, 0.0) > amount for resource, amount in maximum.items())


def updated_timers(
    timers: Mapping[str, QuotaTimer],
    tree: GroupTree,
    usage: Mapping[str, Mapping[str, float]],
    now: float,
    enforced: Collection[str] = (),
) -> dict[str, QuotaTimer]:
    """The timers after seeing each group's ``usage`` (its subtree's, per resource) at ``now``,
    the cycle having enforced the timers of the groups ``enforced``.

    A group with a maximum (:func:`group_maximum`) and a delay above 0 (0 means never enforce, as
    in YuniKorn) whose usage exceeds its maximum keeps a timer started for the same maximum and
    delay, or gets a new one started now. Any other group's timer is dropped: its usage came down
    by itself, or it is no longer limited. A timer that is due stays until the group's usage is
    within its maximum; once enforced it is not enforced again (module docstring): it keeps the
    lowest usage seen since, and a rise above that starts a new timer.
    """
    kept: dict[str, QuotaTimer] = {}
    for name in tree.names:
        configured = tree.settings_of(name)
        if configured is None or configured.quota_preemption_delay <= 0:
            continue
        maximum = group_maximum(configured)
        if not over_maximum(maximum, usage.get(name, {})):
            continue
        running = timers.get(name)
        held = {resource: usage.get(name, {}).get(resource, 0.0) for resource in maximum}
        if (running is None or dict(running.maximum) != maximum
                or running.delay != configured.quota_preemption_delay
                or (running.enforced is not None and name not in enforced
                    and any(held[r] > running.enforced.get(r, 0.0) for r in held))):
            kept[name] = QuotaTimer(name, maximum, configured.quota_preemption_delay, now)
        elif name in enforced or running.enforced is not None:
            before = running.enforced or held
            kept[name] = replace(running, enforced={r: min(v, before.get(r, v)) for r, v in held.items()})
        else:
            kept[name] = running
    return kept
