"""A customer's accounting record, HTCondor's ``Customer.<name>`` ad, and the checks its figures pass.

A *customer* is anything the accountant keeps a record for: a submitter (``alice@site``,
``group_a.alice@site``) or an accounting group (``group_a``, ``group_a.x``, ``<none>``).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import cast

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
            and plain_float(record.real_priority, MIN_PRIORITY)
            and plain_float(record.weighted_usage) and plain_float(record.accumulated_usage)
            and all(moment is None or plain_float(moment, -math.inf) for moment in times))


def plain_float(value: object, low: float = 0.0) -> bool:
    """Whether ``value`` is a plain, finite float of at least ``low``: what the checks accept,
    asked without making the messages they would raise (see :func:`_plainly_valid`)."""
    return type(value) is float and math.isfinite(value) and value >= low


def plain_floats(values: Collection[object]) -> bool:
    """Whether every one of ``values`` is a plain, finite float of at least 0 (:func:`plain_float`),
    asked of them all at once in C loops: a replay charges every customer with running work after
    every cycle. A sum of finite values that overflows says False, and the caller checks them one
    by one."""
    if not set(map(type, values)) <= {float}:
        return False
    floats = cast("Collection[float]", values)
    return not floats or (min(floats) >= 0 and math.isfinite(sum(floats)))
