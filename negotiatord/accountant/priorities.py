"""Customer priorities: HTCondor's real priority, its exponential decay, and the priority factor.

A *customer* is anything the accountant keeps a record for: a submitter (``alice@site``,
``group_a.alice@site``) or an accounting group (``group_a``, ``group_a.x``, ``<none>``). Everything
here is pure: the cycle reads an :class:`AccountantState`, :func:`advance` returns the next one, and
the store persists it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar
from collections.abc import Iterable, Mapping

from negotiatord.settings.model import Settings

if TYPE_CHECKING:
    from negotiatord.accountant.admission import AdmissionUsage
    from negotiatord.accountant.quota_timers import QuotaTimer

_Value = TypeVar("_Value")

# Accountant::MinPriority: no real priority is ever better (lower) than this.
MIN_PRIORITY = 0.5
# MIN_PRIORITY_FACTOR in Accountant.cpp; condor_userprio -setfactor refuses anything lower.
MIN_PRIORITY_FACTOR = 1.0
# NiceUserName in HTCondor's condor_constants.h: the prefix of a nice user's submitter name.
NICE_USER_PREFIX = "nice-user"
# The longest customer name an administrator may name in an edit (the longest in the OSPool's
# negotiator, group_opportunistic.<project>.<user>@<access point>, has under 80).
MAX_CUSTOMER_NAME = 1024
_SHOWN_VALUE = 40     # characters of a refused value quoted in an error


def check_finite(what: str, value: object) -> float:
    """``value`` as a float, or a ValueError saying which ``what`` is not a finite number (an
    integer too large for a float included)."""
    number = None
    if not isinstance(value, bool) and isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            pass
    if number is None or not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number, got {_shown(value)}")
    return number


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_VALUE else f"{text[:_SHOWN_VALUE]}... ({len(text):,} characters)"


def check_customer_name(name: object) -> str:
    """``name`` if an administrator may edit the customer of that name, else a ValueError saying
    why: the full name of a submitter, ``user@uid.domain``, as ``condor_userprio`` requires before
    it sends ``-setfactor``, ``-resetusage`` or ``-delete`` to the negotiator (``strchr(name, '@')``
    in src/condor_tools/user_prio.cpp); no white space or control characters (no submitter name
    holds any) and at most :data:`MAX_CUSTOMER_NAME` characters."""
    if not isinstance(name, str) or not name:
        raise ValueError('name the customer: {"customer": "user@uid.domain"}')
    if len(name) > MAX_CUSTOMER_NAME:
        raise ValueError(f"a customer name has at most {MAX_CUSTOMER_NAME:,} characters, got {len(name):,}")
    if any(not character.isprintable() and not character.isspace() for character in name):
        raise ValueError(f"customer name {_shown(name)} holds a control character")
    if any(character.isspace() for character in name):
        raise ValueError(f"customer name {_shown(name)} holds white space")
    if "@" not in name:
        raise ValueError(f"customer name {_shown(name)} is not the full name of a submitter "
                         "(user@uid.domain or user@full.host.name), as condor_userprio requires")
    return name


def check_non_negative(what: str, value: float) -> float:
    """``value`` as a float, or a ValueError: usage, accumulated usage and costs are never < 0."""
    value = check_finite(what, value)
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value!r}")
    return value


def check_usage(customer: str, usage: float) -> float:
    return check_non_negative(f"usage of customer {customer!r}", usage)


def check_factor(customer: str, factor: object) -> float:
    """``factor`` as a float, or a ValueError: condor_userprio -setfactor requires a factor >= 1."""
    factor = check_finite(f"priority factor of customer {customer!r}", factor)
    if factor < MIN_PRIORITY_FACTOR:
        raise ValueError(
            f"priority factor of customer {customer!r} must be >= {MIN_PRIORITY_FACTOR} "
            f"(as condor_userprio -setfactor requires), got {factor!r}"
        )
    return factor


@dataclass(frozen=True)
class CustomerRecord:
    """One customer's accounting record (HTCondor's ``Customer.<name>`` accountant log ad)."""

    name: str
    real_priority: float          # >= MIN_PRIORITY
    prio_factor: float | None     # set by condor_userprio -setfactor; None = configured default
    weighted_usage: float         # weighted resources in use since the last update
    accumulated_usage: float      # weighted usage integrated over time, in weighted seconds
    begin_usage_time: float | None
    last_usage_time: float | None  # last update that closed an interval with usage > 0
    last_update_time: float | None
    # set by condor_userprio -setceiling / -setfloor, in weighted resources; None: no ceiling, no floor
    ceiling: float | None = None
    floor: float | None = None

    def __post_init__(self) -> None:
        if _plainly_valid(self):
            return
        real = check_finite(f"real priority of customer {self.name!r}", self.real_priority)
        if real < MIN_PRIORITY:
            raise ValueError(
                f"real priority of customer {self.name!r} must be >= {MIN_PRIORITY}, got {real!r}"
            )
        if self.prio_factor is not None:
            check_factor(self.name, self.prio_factor)
        check_usage(self.name, self.weighted_usage)
        check_non_negative(f"accumulated usage of customer {self.name!r}", self.accumulated_usage)
        for what in ("begin_usage_time", "last_usage_time", "last_update_time"):
            value = getattr(self, what)
            if value is not None:
                check_finite(f"{what} of customer {self.name!r}", value)
        for what in ("ceiling", "floor"):
            value = getattr(self, what)
            if value is not None:
                check_non_negative(f"{what} of customer {self.name!r}", value)

    @classmethod
    def fresh(cls, name: str) -> CustomerRecord:
        """The record of a customer never seen before: best priority, no usage."""
        return cls(name, MIN_PRIORITY, None, 0.0, 0.0, None, None, None)


def _plainly_valid(record: CustomerRecord) -> bool:
    """Whether ``record`` is valid by the checks of its ``__post_init__``, in the common case of
    plain floats, asked without making their error messages: a replay makes a record per customer
    per cycle. False sends it through the checks, which raise the message naming the field."""
    times = (record.begin_usage_time, record.last_usage_time, record.last_update_time)
    return (record.prio_factor is None and record.ceiling is None and record.floor is None
            and _plain(record.real_priority, MIN_PRIORITY)
            and _plain(record.weighted_usage) and _plain(record.accumulated_usage)
            and all(moment is None or _plain(moment, -math.inf) for moment in times))


def _plain(value: object, low: float = 0.0) -> bool:
    """Whether ``value`` is a plain, finite float of at least ``low``: what the checks accept,
    asked without making the messages they would raise (see :func:`_plainly_valid`)."""
    return type(value) is float and math.isfinite(value) and value >= low


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
                and all(map(_plain, accrued.values()))):
            for name, amount in accrued.items():
                check_non_negative(f"accrued usage of customer {name!r}", amount)
                if name not in by_name:
                    raise ValueError(f"accrued usage given for unknown customer {name!r}")
        self._records = MappingProxyType(by_name)
        self._accrued = MappingProxyType(accrued)
        self._admission = MappingProxyType(dict(admission or {}))
        self._quota_timers = MappingProxyType(dict(quota_timers or {}))

    def record(self, name: str) -> CustomerRecord:
        """``name``'s record; a customer never seen before gets a fresh one at MIN_PRIORITY."""
        return self._records.get(name) or CustomerRecord.fresh(name)

    def customers(self) -> list[CustomerRecord]:
        """Every known customer's record, by name."""
        return [self._records[name] for name in sorted(self._records)]

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
    def _of_checked(records: Mapping[str, CustomerRecord], accrued: Mapping[str, float],
                    admission: Mapping[str, AdmissionUsage], timers: Mapping[str, QuotaTimer]) -> AccountantState:
        """A state of records (by name) and accrued usage that passed the constructor's checks,
        made without them. The mappings are kept, not copied: nothing may change them after (a
        read-only view, another state's, is kept as it is)."""
        state = object.__new__(AccountantState)
        state._records, state._accrued = _read_only(records), _read_only(accrued)
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
    state: AccountantState, now: float, usage: Mapping[str, float], halflife: float
) -> AccountantState:
    """The state at ``now``: priorities decayed and usage charged, then ``usage`` in force.

    Follows Accountant::UpdatePriorities / UpdateOnePriority for every known customer and every
    customer in ``usage``. The usage held over the elapsed interval is the one recorded at the
    previous update (HTCondor charges WeightedResourcesUsed over TimePassed); ``usage`` (running
    work plus this cycle's matches) is what the *next* update will charge.
    """
    now = check_finite("now", now)
    halflife = check_finite("PRIORITY_HALFLIFE", halflife)
    if halflife <= 0:
        raise ValueError(f"PRIORITY_HALFLIFE must be > 0 seconds, got {halflife!r}")
    if all(map(_plain, usage.values())):
        usage_now = dict(usage)         # plain floats, checked without making the checks' messages
    else:
        usage_now = {name: check_usage(name, amount) for name, amount in usage.items()}

    records: dict[str, CustomerRecord] = {}
    accrued = dict(state._accrued)
    agings: dict[float, float] = {}     # by elapsed time: the customers updated together share it
    for name in sorted(state._records.keys() | usage_now.keys()):
        record, charged = _advance_one(state.record(name), now, halflife, usage_now.get(name, 0.0), agings)
        records[name] = record
        if charged:
            accrued[name] = accrued.get(name, 0.0) + charged
    if not all(map(math.isfinite, accrued.values())):
        return AccountantState(records.values(), accrued, state._admission, state._quota_timers)
    # every record and accrued usage is checked: by its constructor or _advance_one
    return AccountantState._of_checked(records, accrued, state._admission, state._quota_timers)


def _advance_one(
    record: CustomerRecord, now: float, halflife: float, usage: float, agings: dict[float, float]
) -> tuple[CustomerRecord, float]:
    """``record`` decayed to ``now`` with ``usage`` in force from then, and the weighted seconds
    charged for the interval. ``agings`` holds the decay factors worked out so far, by elapsed time.

    A replay advances the state every cycle, one new record per customer: the new record is made
    without its constructor's checks (:func:`_checked_record`), which ``record`` passed and ``now``
    and ``usage`` (checked by :func:`advance`) keep passing, unless a sum overflowed, which the
    constructor then reports."""
    last = record.last_update_time
    elapsed = 0.0 if last is None else now - last
    if elapsed <= 0:
        # UpdatePriorities returns when no time passed, and only restarts the clock when it went
        # backwards (a reset system clock): nothing is decayed or charged either way.
        return _checked_record(record, record.real_priority, usage, record.accumulated_usage,
                               record.begin_usage_time, record.last_usage_time, now), 0.0
    aging = agings.get(elapsed)
    if aging is None:
        aging = agings[elapsed] = 0.5 ** (elapsed / halflife)
    held = record.weighted_usage
    real = max(MIN_PRIORITY, record.real_priority * aging + held * (1.0 - aging))
    charged = held * elapsed
    accumulated = record.accumulated_usage + charged
    begins = record.begin_usage_time
    if begins is None and accumulated > 0:
        begins = now  # UpdateOnePriority: BeginUsageTime is set once usage has accumulated
    last = now if held > 0 else record.last_usage_time
    if math.isfinite(real) and math.isfinite(accumulated):
        return _checked_record(record, real, usage, accumulated, begins, last, now), charged
    return CustomerRecord(record.name, real, record.prio_factor, usage, accumulated, begins, last, now,
                          record.ceiling, record.floor), charged


def _checked_record(before: CustomerRecord, real_priority: float, weighted_usage: float, accumulated_usage: float,
                    begin_usage_time: float | None, last_usage_time: float | None,
                    last_update_time: float | None) -> CustomerRecord:
    """``before`` with these figures, values known to pass its checks, made without them (a frozen
    dataclass's constructor sets each field through ``object.__setattr__``, then checks: ten times
    the cost of the record's arithmetic). The administrator's settings (factor, ceiling, floor)
    are ``before``'s."""
    record = object.__new__(CustomerRecord)
    object.__setattr__(record, "__dict__", {
        "name": before.name, "real_priority": real_priority, "prio_factor": before.prio_factor,
        "weighted_usage": weighted_usage, "accumulated_usage": accumulated_usage, "begin_usage_time": begin_usage_time,
        "last_usage_time": last_usage_time, "last_update_time": last_update_time, "ceiling": before.ceiling,
        "floor": before.floor})
    return record
