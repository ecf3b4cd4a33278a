"""The accountant's records advanced as columns give, bit for bit, what one record at a time gives.

The reference below is Accountant::UpdateOnePriority (src/condor_negotiator.V6/Accountant.cpp in
htcondor/htcondor) for one customer: ``Priority = Priority * AgingFactor + ResourcesUsed *
(1 - AgingFactor)`` with ``AgingFactor = pow(0.5, TimePassed / HalfLifePeriod)``, never below
MinPriority; the usage held over the interval is charged to AccumulatedUsage, BeginUsageTime is set
once usage has accumulated and LastUsageTime when usage was held; nothing is decayed or charged
when no time passed.
"""

from __future__ import annotations

import struct
from dataclasses import fields, replace

from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from negotiatord.accountant import MIN_PRIORITY, AccountantState, CustomerRecord, advance

NAMES = ["alice@site", "bob@site", "carol@other", "group_a", "group_a.dave@site", "<none>"]


def update_one_priority(record: CustomerRecord, now: float, halflife: float,
                        usage: float) -> tuple[CustomerRecord, float]:
    """One customer's record after an update at ``now``, and the weighted seconds charged."""
    elapsed = 0.0 if record.last_update_time is None else now - record.last_update_time
    if elapsed <= 0:
        return replace(record, weighted_usage=usage, last_update_time=now), 0.0
    aging = 0.5 ** (elapsed / halflife)
    held = record.weighted_usage
    charged = held * elapsed
    accumulated = record.accumulated_usage + charged
    begins = now if record.begin_usage_time is None and accumulated > 0 else record.begin_usage_time
    return replace(record, real_priority=max(MIN_PRIORITY, record.real_priority * aging + held * (1.0 - aging)),
                   weighted_usage=usage, accumulated_usage=accumulated, begin_usage_time=begins,
                   last_usage_time=now if held > 0 else record.last_usage_time, last_update_time=now), charged


def bits(record: CustomerRecord) -> tuple:
    """A record's fields with each float by its bits: -0.0 is not 0.0 here."""
    return tuple(struct.pack("<d", value) if isinstance(value, float) else value
                 for value in (getattr(record, field.name) for field in fields(record)))


times = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e6))
amounts = st.floats(min_value=0.0, max_value=1e4)
administered = st.one_of(st.none(), st.floats(min_value=1.0, max_value=1e3))
loaded_records = st.builds(CustomerRecord, st.sampled_from(NAMES), st.floats(min_value=MIN_PRIORITY, max_value=1e6),
                           administered, amounts, st.floats(min_value=0.0, max_value=1e9), times, times, times,
                           st.one_of(st.none(), amounts), st.one_of(st.none(), amounts))
# None: the usage in force stays (a replay's skipped cycles)
histories = st.lists(st.tuples(st.one_of(st.just(0.0), st.floats(min_value=-50.0, max_value=1e6)),
                               st.one_of(st.none(), st.dictionaries(st.sampled_from(NAMES), amounts, max_size=4))),
                     min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(loaded_records, max_size=5, unique_by=lambda record: record.name), histories,
       st.floats(min_value=1.0, max_value=1e7))
def test_every_record_and_charge_is_the_one_customer_update(loaded: list[CustomerRecord],
                                                             history: list[tuple[float, dict[str, float] | None]],
                                                             halflife: float) -> None:
    """Loaded records updated at assorted times (so customers' intervals differ), customers
    appearing in later cycles, a clock that stands still or steps back, administrators'
    factors, ceilings and floors, the usage in force kept: each advanced record is the
    reference's, bit for bit, and so is the accrued usage."""
    state, now = AccountantState(loaded), 0.0
    expected = {record.name: record for record in loaded}
    accrued: dict[str, float] = {}
    for step, usage in history:
        now += step
        state = advance(state, now, usage, halflife)
        for name in sorted(expected.keys() | (usage or {}).keys()):
            before = expected.get(name) or CustomerRecord.fresh(name)
            in_force = before.weighted_usage if usage is None else usage.get(name, 0.0)
            expected[name], charged = update_one_priority(before, now, halflife, in_force)
            if charged:
                accrued[name] = accrued.get(name, 0.0) + charged
        assert [bits(record) for record in state.customers()] == [bits(expected[name]) for name in sorted(expected)]
        assert {name: state.accrued_usage(name) for name in expected} == {name: accrued.get(name, 0.0)
                                                                          for name in expected}


def test_a_customer_asked_about_is_one_record_and_passes_the_checks() -> None:
    """Records are made when asked for; the same one each time, with the constructor's fields and
    types (a record made without its checks passes them)."""
    state = advance(AccountantState([CustomerRecord("alice@site", 3.0, 2.0, 1.0, 0.0, None, None, 0.0, ceiling=4.0)]),
                    3600.0, {"bob@site": 2.0}, 3600.0)
    alice = state.record("alice@site")
    assert state.record("alice@site") is alice
    assert (alice.prio_factor, alice.ceiling, alice.floor, alice.begin_usage_time) == (2.0, 4.0, None, 3600.0)
    for record in state.customers():
        values = {field.name: getattr(record, field.name) for field in fields(record)}
        assert CustomerRecord(**values) == record
        assert all(type(value) in (str, float, type(None)) for value in values.values())
    assert state.record("nobody@site") == CustomerRecord.fresh("nobody@site")
    assert "nobody@site" not in {record.name for record in state.customers()}


def test_a_charge_that_overflows_names_its_customer_among_others() -> None:
    """An accumulated usage past the largest float fails the record's checks, for the customer it
    belongs to and not the others advanced with it."""
    state = AccountantState([CustomerRecord("alice@site", 1.0, None, 1.0, 0.0, None, None, 0.0),
                             CustomerRecord("bob@site", 1.0, None, 1e300, 1.7e308, None, None, 0.0),
                             CustomerRecord("carol@site", 1.0, None, 1.0, 0.0, None, None, 0.0)])
    with pytest.raises(ValueError, match="accumulated usage of customer 'bob@site' must be a finite number"):
        advance(state, 1e10, {}, 3600.0)


@pytest.mark.parametrize("loaded", [
    CustomerRecord("alice@site", MIN_PRIORITY, None, 0.0, 7200.0, None, None, 0.0),
    CustomerRecord("alice@site", MIN_PRIORITY, None, 0.0, -0.0, None, None, 0.0),
    CustomerRecord("alice@site", MIN_PRIORITY, None, 0.0, 7200.0, 100.0, 100.0, 0.0),
], ids=["usage accumulated but never begun", "negative zero accumulated", "idle at the floor"])
def test_a_customer_idle_at_the_floor_changes_only_as_the_update_changes_it(loaded: CustomerRecord) -> None:
    """An idle customer at MinPriority is left as it is by an update (but for its clock), unless
    the update sets something: BeginUsageTime once usage has accumulated, and -0.0 + 0.0 charged
    is 0.0. Cycle after cycle, then with usage again, it is the reference's, bit for bit."""
    state, expected = AccountantState([loaded]), loaded
    for now, usage in [(600.0, 0.0), (1200.0, 0.0), (1800.0, 2.0), (2400.0, 0.0), (1e7, 0.0), (1e7 + 600, 0.0)]:
        state = advance(state, now, {loaded.name: usage}, 3600.0)
        expected, _ = update_one_priority(expected, now, 3600.0, usage)
        assert bits(state.record(loaded.name)) == bits(expected)
