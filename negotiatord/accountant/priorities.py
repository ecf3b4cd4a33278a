"""Customer priorities: HTCondor's real priority, its exponential decay, and the priority factor.

Every customer's record (:mod:`negotiatord.accountant.records`) is held in one state. Everything
here is pure: the cycle reads an :class:`AccountantState`, :func:`advance` returns the next one, and
the store persists it.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar
from collections.abc import Iterable, Mapping

from negotiatord.accountant.columns import CustomerColumns
from negotiatord.accountant.records import (
    MIN_PRIORITY_FACTOR, NICE_USER_PREFIX, CustomerRecord, check_finite, check_non_negative, check_usage, plain_floats,
)
from negotiatord.settings.model import Settings

if TYPE_CHECKING:
    from negotiatord.accountant.admission import AdmissionUsage
    from negotiatord.accountant.quota_timers import QuotaTimer

_Value = TypeVar("_Value")


class AccountantState:
    """An immutable snapshot of every customer record, as the pure cycle reads it.

    ``accrued_usage`` is the weighted usage :func:`advance` has added to each customer's
    accumulated usage since this state was loaded. The store adds it to the stored value instead
    of overwriting, so a ``condor_userprio -resetusage`` that lands while a cycle runs is kept.

    ``admission`` is each submitter's decayed usage for admission fair sharing
    (:mod:`negotiatord.accountant.admission`), kept beside the priorities, and ``quota_timers``
    each group's running quota preemption timer (:mod:`negotiatord.accountant.quota_timers`).
    """

    __slots__ = ("_records", "_accrued", "_admission", "_quota_timers")

    def __init__(
        self,
        records: Iterable[CustomerRecord] = (),
        accrued_usage: Mapping[str, float] | None = None,
        admission: Mapping[str, AdmissionUsage] | None = None,
        quota_timers: Mapping[str, QuotaTimer] | None = None,
    ) -> None:
        by_name: dict[str, CustomerRecord] = {}
        for record in records:
            if record.name in by_name:
                raise ValueError(f"customer {record.name!r} appears twice in an accountant state")
            by_name[record.name] = record
        accrued = dict(accrued_usage or {})
        # the checks' messages are made only when a check fails: a replay makes a state per cycle
        if not (accrued.keys() <= by_name.keys()
                and plain_floats(accrued.values())):
            for name, amount in accrued.items():
                check_non_negative(f"accrued usage of customer {name!r}", amount)
                if name not in by_name:
                    raise ValueError(f"accrued usage given for unknown customer {name!r}")
        self._records = CustomerColumns.of(by_name)
        self._accrued = MappingProxyType(accrued)
        self._admission = MappingProxyType(dict(admission or {}))
        self._quota_timers = MappingProxyType(dict(quota_timers or {}))

    def record(self, name: str) -> CustomerRecord:
        """``name``'s record; a customer never seen before gets a fresh one at MIN_PRIORITY."""
        return self._records.get(name) or CustomerRecord.fresh(name)

    def customers(self) -> list[CustomerRecord]:
        """Every known customer's record, by name."""
        return list(self._records.values())

    def accrued_usage(self, name: str) -> float:
        """Weighted seconds added to ``name``'s accumulated usage since the state was loaded."""
        return self._accrued.get(name, 0.0)

    def admission_usage(self, name: str) -> AdmissionUsage | None:
        """``name``'s admission fair sharing usage; None for a submitter never sampled."""
        return self._admission.get(name)

    @property
    def admission_usages(self) -> Mapping[str, AdmissionUsage]:
        """Every sampled submitter's admission usage, by submitter."""
        return self._admission

    def with_admission_usage(self, admission: Mapping[str, AdmissionUsage]) -> AccountantState:
        """This state with ``admission`` in place of its admission usages."""
        return self._sharing_records(admission, self._quota_timers)

    @property
    def quota_timers(self) -> Mapping[str, QuotaTimer]:
        """The running quota preemption timers, by group."""
        return self._quota_timers

    def with_quota_timers(self, timers: Mapping[str, QuotaTimer]) -> AccountantState:
        """This state with ``timers`` in place of its quota preemption timers."""
        return self._sharing_records(self._admission, timers)

    def _sharing_records(self, admission: Mapping[str, AdmissionUsage],
                         timers: Mapping[str, QuotaTimer]) -> AccountantState:
        """A state with these admission usages and timers, sharing this one's customer records
        and accrued usage, which were checked when this state was made: a daemon or a replay
        replaces both after every cycle, and checking every customer again costs as much again."""
        return AccountantState._of_checked(self._records, self._accrued, dict(admission), dict(timers))

    @staticmethod
    def _of_checked(records: CustomerColumns, accrued: Mapping[str, float],
                    admission: Mapping[str, AdmissionUsage], timers: Mapping[str, QuotaTimer]) -> AccountantState:
        """A state of records and accrued usage that passed the constructor's checks, made
        without them. The mappings are kept, not copied: nothing may change them after (a
        read-only view, another state's, is kept as it is)."""
        state = object.__new__(AccountantState)
        state._records, state._accrued = records, _read_only(accrued)
        state._admission, state._quota_timers = _read_only(admission), _read_only(timers)
        return state

    def priority_factor(self, customer: str, group: str, settings: Settings) -> float:
        """The factor multiplying ``customer``'s real priority; ``group`` is its assigned group.

        Follows Accountant::GetPriorityFactor: an explicit factor wins; else, in this order,
        ``NICE_USER_PRIO_FACTOR`` for a name starting with ``nice-user`` (HTCondor compares with its
        constant NiceUserName, not with NICE_USER_ACCOUNTING_GROUP_NAME), ``GROUP_PRIO_FACTOR_<group>``
        of the customer's *assigned* group only (HTCondor's getGroupPriorityFactor does not look at
        ancestor groups, and treats 0 as unset), ``REMOTE_PRIO_FACTOR`` when ``ACCOUNTANT_LOCAL_DOMAIN``
        is set and differs from the customer's domain (the text after its last ``@``, none for a
        group's own record; compared case-sensitively, as HTCondor compares GetDomain's result),
        else ``DEFAULT_PRIO_FACTOR``. Like Accountant::SetPriorityFactor, factors below 1 count as 1.
        Unlike HTCondor, the configured factor is not frozen into the record on first use, so a
        reconfigured factor reaches existing customers too.
        """
        explicit = self.record(customer).prio_factor
        if explicit is not None:
            return explicit
        return max(MIN_PRIORITY_FACTOR, configured_factor(customer, group, settings))

    def effective_priority(self, submitter: str, group: str, settings: Settings) -> float:
        """Real priority times priority factor (Accountant::GetPriority); lower is better."""
        real = self.record(submitter).real_priority
        return real * self.priority_factor(submitter, group, settings)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AccountantState):
            return NotImplemented
        return (self._records == other._records and self._accrued == other._accrued
                and self._admission == other._admission and self._quota_timers == other._quota_timers)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as __eq__ makes it; typeshed types it a method

    def __repr__(self) -> str:
        return f"AccountantState({len(self._records)} customers)"


def _read_only(mapping: Mapping[str, _Value]) -> MappingProxyType[str, _Value]:
    return mapping if isinstance(mapping, MappingProxyType) else MappingProxyType(mapping)


def configured_factor(customer: str, group: str, settings: Settings) -> float:
    """The factor the config gives ``customer`` of assigned group ``group`` (see
    :meth:`AccountantState.priority_factor`), before the clamp to 1."""
    if customer.startswith(NICE_USER_PREFIX):
        return settings.nice_user_prio_factor
    configured = settings.group_tree.settings_of(group)
    if configured is not None and configured.prio_factor:
        return configured.prio_factor
    _, at, domain = customer.rpartition("@")
    local = settings.accountant_local_domain
    if local is not None and local != (domain if at else ""):
        return settings.remote_prio_factor
    return settings.default_prio_factor


def advance(
    state: AccountantState, now: float, usage: Mapping[str, float] | None, halflife: float
) -> AccountantState:
    """The state at ``now``: priorities decayed and usage charged, then ``usage`` in force
    (None: the usage in force stays, as a replay advances the state over cycles it skips).

    Follows Accountant::UpdatePriorities / UpdateOnePriority for every known customer and every
    customer in ``usage`` (:meth:`CustomerColumns.advanced`). The usage held over the elapsed
    interval is the one recorded at the previous update (HTCondor charges WeightedResourcesUsed
    over TimePassed); ``usage`` (running work plus this cycle's matches) is what the *next*
    update will charge.
    """
    now = check_finite("now", now)
    halflife = check_finite("PRIORITY_HALFLIFE", halflife)
    if halflife <= 0:
        raise ValueError(f"PRIORITY_HALFLIFE must be > 0 seconds, got {halflife!r}")
    usage_now: dict[str, float] | None
    if usage is None:
        usage_now = None
    elif plain_floats(usage.values()):
        usage_now = dict(usage)         # plain floats, checked without making the checks' messages
    else:
        usage_now = {name: check_usage(name, amount) for name, amount in usage.items()}
    records, charged = state._records.advanced(now, usage_now, halflife)
    accrued = state._accrued.copy()     # a read-only view's copy() is its dict's: one C loop
    for name, amount in charged.items():
        accrued[name] = accrued.get(name, 0.0) + amount
    if not all(map(math.isfinite, (accrued[name] for name in charged))):      # the others were checked
        return AccountantState(records.values(), accrued, state._admission, state._quota_timers)
    # every record is checked by CustomerColumns.advanced, and accrued usage here
    return AccountantState._of_checked(records, accrued, state._admission, state._quota_timers)
