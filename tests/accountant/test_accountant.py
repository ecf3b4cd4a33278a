"""The accountant: HTCondor's priority decay, priority factors, and the SQLite store.

The decay reference is HTCondor's manual (User Priorities and Negotiation): with beta =
0.5 ** (dt / PRIORITY_HALFLIFE), real priority pi(t) = beta * pi(t - dt) + (1 - beta) * rho(t - dt),
rho being the resources used over the interval, and never below 0.5. Factor precedence is
Accountant::GetPriorityFactor; the store's guarantees are those its interface promises.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from negotiatord.accountant import (
    MIN_PRIORITY,
    AccountantState,
    AccountantStore,
    AccountantStoreError,
    CustomerRecord,
    UnknownCustomer,
    advance,
)
from negotiatord.settings import GroupSettings, GroupTree, PslotLoading, Settings

HOUR = 3600.0
ALICE = "group_a.alice@site"


def make_settings(
    groups: tuple[GroupSettings, ...] = (), default_prio_factor: float = 1000.0
) -> Settings:
    return Settings(
        source=Path("test.conf"),
        consumption_policy=False,
        consumption={},
        slot_weight="Cpus",
        use_slot_weights=True,
        pslot_loading=PslotLoading.DEPTH_FIRST,
        pre_job_rank=None,
        post_job_rank=None,
        groups=groups,
        accept_surplus=False,
        autoregroup=False,
        allow_quota_oversubscription=False,
        group_sort_expr="0",
        priority_halflife=86400.0,
        default_prio_factor=default_prio_factor,
        concurrency_limit_default=1e6,
    )


def group(name: str, prio_factor: float | None) -> GroupSettings:
    return GroupSettings(name, None, None, False, False, prio_factor)


def customer(
    name: str, real: float, usage: float, at: float, factor: float | None = None
) -> CustomerRecord:
    return CustomerRecord(name, real, factor, usage, 0.0, None, None, at)


# --- decay -------------------------------------------------------------------------------------


def test_one_halflife_with_usage_10_from_best_priority_is_5_25() -> None:
    start = advance(AccountantState(), now=0.0, usage={ALICE: 10.0}, halflife=HOUR)
    after = advance(start, now=HOUR, usage={ALICE: 10.0}, halflife=HOUR).record(ALICE)
    assert after.real_priority == pytest.approx(0.5 * 0.5 + 10.0 * 0.5)  # 5.25
    assert after.accumulated_usage == pytest.approx(10.0 * HOUR)
    assert after.begin_usage_time == HOUR
    assert after.last_usage_time == HOUR


def test_usage_is_charged_from_the_update_that_records_it_onwards() -> None:
    # Matches made now change nothing yet; the next update charges them over the elapsed interval.
    first = advance(AccountantState(), now=0.0, usage={ALICE: 10.0}, halflife=HOUR)
    assert first.record(ALICE).real_priority == MIN_PRIORITY
    assert first.record(ALICE).accumulated_usage == 0.0
    second = advance(first, now=HOUR, usage={}, halflife=HOUR)
    assert second.record(ALICE).real_priority == pytest.approx(5.25)
    assert second.record(ALICE).weighted_usage == 0.0
    third = advance(second, now=2 * HOUR, usage={}, halflife=HOUR).record(ALICE)
    assert third.real_priority == pytest.approx(5.25 / 2)
    assert third.accumulated_usage == pytest.approx(10.0 * HOUR)  # nothing held in the 2nd hour
    assert third.last_usage_time == HOUR  # the last interval that had usage ended at HOUR


def test_idle_priority_decays_to_exactly_the_minimum() -> None:
    state = AccountantState([customer(ALICE, 50.0, 0.0, at=0.0)])
    after = advance(state, now=100 * HOUR, usage={}, halflife=HOUR).record(ALICE)
    assert after.real_priority == MIN_PRIORITY


def test_unknown_customers_get_a_fresh_record_at_the_minimum() -> None:
    record = AccountantState().record("nobody@site")
    assert record.real_priority == MIN_PRIORITY
    assert (record.weighted_usage, record.prio_factor) == (0.0, None)


def test_zero_elapsed_time_changes_nothing() -> None:
    state = AccountantState([customer(ALICE, 7.0, 4.0, at=HOUR)])
    assert advance(state, now=HOUR, usage={ALICE: 4.0}, halflife=HOUR) == state
    # New matches at the same instant only change the usage in force from now on.
    more = advance(state, now=HOUR, usage={ALICE: 9.0}, halflife=HOUR).record(ALICE)
    assert (more.real_priority, more.accumulated_usage, more.weighted_usage) == (7.0, 0.0, 9.0)


def test_a_clock_stepped_back_restarts_the_clock_without_charging() -> None:
    state = AccountantState([customer(ALICE, 7.0, 4.0, at=HOUR)])
    after = advance(state, now=0.0, usage={ALICE: 4.0}, halflife=HOUR).record(ALICE)
    assert (after.real_priority, after.accumulated_usage, after.last_update_time) == (7.0, 0.0, 0.0)
    later = advance(AccountantState([after]), now=HOUR, usage={}, halflife=HOUR).record(ALICE)
    assert later.real_priority == pytest.approx(7.0 * 0.5 + 4.0 * 0.5)


priorities = st.floats(min_value=MIN_PRIORITY, max_value=1e6)
usages = st.floats(min_value=0.0, max_value=1e4)
durations = st.floats(min_value=1e-3, max_value=1e7)
halflives = st.floats(min_value=1.0, max_value=1e7)


@given(priorities, usages, st.integers(0, 2_000_000_000), durations, durations, halflives)
def test_two_steps_with_constant_usage_equal_one_step(
    real: float, usage: float, start: int, first: float, second: float, halflife: float
) -> None:
    state = AccountantState([customer(ALICE, real, usage, at=float(start))])
    middle = start + first
    end = middle + second
    stepped = advance(state, middle, {ALICE: usage}, halflife)
    stepped = advance(stepped, end, {ALICE: usage}, halflife)
    direct = advance(state, end, {ALICE: usage}, halflife)
    a, b = stepped.record(ALICE), direct.record(ALICE)
    assert math.isclose(a.real_priority, b.real_priority, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(a.accumulated_usage, b.accumulated_usage, rel_tol=1e-9, abs_tol=1e-6)


clock_steps = st.floats(min_value=-10.0, max_value=1e6)  # the clock may also step back
cycle_usages = st.dictionaries(st.sampled_from([ALICE, "bob@site", "group_a"]), usages, max_size=3)
steps = st.lists(st.tuples(clock_steps, cycle_usages), max_size=8)


@given(steps, halflives)
def test_priorities_and_usage_stay_in_range_over_any_history(
    history: list[tuple[float, dict[str, float]]], halflife: float
) -> None:
    state, now = AccountantState(), 0.0
    for step, usage in history:
        now += step
        state = advance(state, now, usage, halflife)
        for record in state.customers():
            assert record.real_priority >= MIN_PRIORITY
            assert record.weighted_usage >= 0.0
            assert record.accumulated_usage >= 0.0


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_negative_or_non_finite_usage_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="bob@site"):
        advance(AccountantState(), 0.0, {"bob@site": bad}, HOUR)


def test_an_accumulated_usage_that_overflows_is_refused_naming_the_customer() -> None:
    """advance makes its records without their checks where the inputs passed them; a sum that
    overflows still fails them."""
    state = AccountantState([CustomerRecord(ALICE, 1.0, None, 1e300, 1.7e308, 0.0, 0.0, 0.0)])
    with pytest.raises(ValueError, match=f"accumulated usage of customer '{ALICE}' must be a finite number"):
        advance(state, now=1e10, usage={}, halflife=HOUR)


def test_advanced_records_are_those_the_checked_constructor_makes() -> None:
    """The same fields, the same types: a record made without its checks passes them."""
    state = advance(AccountantState(), 0.0, {ALICE: 3.0, "bob@site": 0.0}, HOUR)
    for now in (HOUR, HOUR, 2.5 * HOUR):
        state = advance(state, now, {ALICE: 1.0}, HOUR)
        for record in state.customers():
            fields = {name: getattr(record, name) for name in CustomerRecord.__dataclass_fields__}
            assert vars(record) == fields and CustomerRecord(**fields) == record
            assert all(type(value) in (str, float, type(None)) for value in fields.values())


def test_halflife_must_be_positive() -> None:
    with pytest.raises(ValueError, match="PRIORITY_HALFLIFE"):
        advance(AccountantState(), 0.0, {}, 0.0)


# --- priority factors --------------------------------------------------------------------------


def test_effective_priority_prefers_explicit_then_group_then_default_factor() -> None:
    groups = (group("group_a", 10.0), group("group_b", None))
    settings = make_settings(groups, default_prio_factor=1000.0)
    state = AccountantState([
        customer(ALICE, 2.0, 0.0, at=0.0, factor=3.0),
        customer("group_a.carol@site", 2.0, 0.0, at=0.0),
        customer("group_b.dave@site", 2.0, 0.0, at=0.0),
    ])
    assert state.effective_priority(ALICE, "group_a", settings) == 6.0
    assert state.effective_priority("group_a.carol@site", "group_a", settings) == 20.0
    assert state.effective_priority("group_b.dave@site", "group_b", settings) == 2000.0
    assert state.effective_priority("erin@site", "<none>", settings) == MIN_PRIORITY * 1000.0


def test_group_factor_is_not_inherited_from_ancestor_groups() -> None:
    # Accountant::getGroupPriorityFactor reads GROUP_PRIO_FACTOR_ of the assigned group only.
    groups = (group("group_a", 10.0), group("group_a.x", None))
    settings = make_settings(groups, default_prio_factor=7.0)
    state = AccountantState()
    assert state.priority_factor("group_a.x.alice@site", "group_a.x", settings) == 7.0


def test_configured_factors_below_one_count_as_one() -> None:
    # Accountant::SetPriorityFactor raises anything below MIN_PRIORITY_FACTOR to 1.
    settings = make_settings((group("group_a", 0.25),), default_prio_factor=0.5)
    state = AccountantState()
    assert state.priority_factor(ALICE, "group_a", settings) == 1.0
    assert state.priority_factor("bob@site", "<none>", settings) == 1.0


def test_usage_rolls_up_the_group_tree_into_none() -> None:
    # <none> is the root of the tree: its total is the pool's, as a group's is its subtree's.
    tree = GroupTree((group("group_a", None), group("group_a.x", None), group("group_b", None)))
    usage = {"group_a.x.alice@site": 2.0, "group_a.bob@site": 3.0, "carol@site": 1.0}
    assert tree.roll_up(usage) == {
        **usage, "group_a.x": 2.0, "group_a": 5.0, "<none>": 6.0,
    }


# --- the store ---------------------------------------------------------------------------------


def cycle_state(previous: AccountantState, now: float, usage: dict[str, float]) -> AccountantState:
    return advance(previous, now, usage, HOUR)


def test_state_and_charges_persist_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "accountant.sqlite"
    with AccountantStore(path) as store:
        state = cycle_state(store.load(), 0.0, {ALICE: 4.0, "group_a": 4.0})
        assert store.commit_cycle(1, 0.0, state, {ALICE: 4.0, "group_a": 4.0})
        state = cycle_state(store.load(), HOUR, {ALICE: 6.0, "group_a": 6.0})
        assert store.commit_cycle(2, HOUR, state, {ALICE: 2.0, "group_a": 2.0})
    with AccountantStore(path) as reopened:
        assert reopened.last_cycle_id() == 2
        assert reopened.charges(1) == {ALICE: 4.0, "group_a": 4.0}
        assert reopened.charges(2) == {ALICE: 2.0, "group_a": 2.0}
        assert reopened.load().customers() == state.customers()
        record = reopened.load().record(ALICE)
        assert record.real_priority == pytest.approx(0.5 * 0.5 + 4.0 * 0.5)
        assert record.weighted_usage == 6.0


def test_file_databases_use_wal(tmp_path: Path) -> None:
    AccountantStore(tmp_path / "a.sqlite").close()
    with sqlite3.connect(tmp_path / "a.sqlite") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_memory_database_works() -> None:
    with AccountantStore(":memory:") as store:
        assert store.last_cycle_id() == 0
        state = cycle_state(store.load(), 5.0, {ALICE: 1.0})
        assert store.commit_cycle(1, 5.0, state, {ALICE: 1.0})
        assert store.load().record(ALICE).weighted_usage == 1.0


def _committed_once(path: Path) -> AccountantState:
    with AccountantStore(path) as store:
        state = cycle_state(store.load(), 0.0, {ALICE: 4.0})
        assert store.commit_cycle(1, 0.0, state, {ALICE: 4.0})
        return store.load()


def test_a_failing_sql_write_mid_commit_leaves_nothing_of_that_cycle(tmp_path: Path) -> None:
    path = tmp_path / "accountant.sqlite"
    before = _committed_once(path)
    with sqlite3.connect(path) as raw:  # charges are written after the cycle row and the customers
        raw.execute(
            "CREATE TRIGGER no_charges BEFORE INSERT ON charges"
            " BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
    with AccountantStore(path) as store:
        state = cycle_state(store.load(), HOUR, {ALICE: 9.0, "bob@site": 1.0})
        with pytest.raises(AccountantStoreError, match="accountant.sqlite.*cycle 2.*disk on fire"):
            store.commit_cycle(2, HOUR, state, {ALICE: 5.0})
    with AccountantStore(path) as reopened:
        assert reopened.last_cycle_id() == 1
        assert reopened.charges(2) == {}
        assert reopened.load() == before


def test_any_exception_mid_commit_rolls_the_cycle_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "accountant.sqlite"
    before = _committed_once(path)
    with AccountantStore(path) as store:
        def crash(*_: object) -> None:
            raise RuntimeError("killed mid-commit")
        monkeypatch.setattr(store, "_write_charges", crash)
        with pytest.raises(RuntimeError, match="killed mid-commit"):
            store.commit_cycle(2, HOUR, cycle_state(store.load(), HOUR, {ALICE: 9.0}), {ALICE: 5.0})
    with AccountantStore(path) as reopened:
        assert (reopened.last_cycle_id(), reopened.charges(2), reopened.load()) == (1, {}, before)


def test_recommitting_a_cycle_id_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "accountant.sqlite"
    before = _committed_once(path)
    with AccountantStore(path) as store:
        other = cycle_state(store.load(), HOUR, {ALICE: 100.0})
        assert store.commit_cycle(1, HOUR, other, {ALICE: 100.0}) is False
        assert (store.load(), store.charges(1), store.last_cycle_id()) == (before, {ALICE: 4.0}, 1)
        assert store.commit_cycle(2, HOUR, other, {ALICE: 100.0}) is True
        assert store.commit_cycle(2, HOUR, other, {ALICE: 100.0}) is False
        assert store.charges(2) == {ALICE: 100.0}


def test_a_stale_lower_cycle_id_is_refused() -> None:
    with AccountantStore(":memory:") as store:
        assert store.commit_cycle(5, 0.0, AccountantState(), {})
        assert store.commit_cycle(4, 0.0, cycle_state(store.load(), 0.0, {ALICE: 1.0}), {}) is False
        assert store.load().customers() == []


def test_set_factor_persists_and_survives_a_cycle_loaded_before_it(tmp_path: Path) -> None:
    path = tmp_path / "accountant.sqlite"
    with AccountantStore(path) as store:
        loaded = store.load()
        store.set_factor(ALICE, 20.0)  # an administrator, while the cycle runs
        assert store.commit_cycle(1, 0.0, cycle_state(loaded, 0.0, {ALICE: 1.0}), {ALICE: 1.0})
    with AccountantStore(path) as reopened:
        state = reopened.load()
        assert state.record(ALICE).prio_factor == 20.0
        assert state.effective_priority(ALICE, "group_a", make_settings()) == MIN_PRIORITY * 20.0


def test_reset_usage_zeroes_accumulated_usage_and_keeps_what_a_running_cycle_adds() -> None:
    with AccountantStore(":memory:") as store:
        assert store.commit_cycle(1, 0.0, cycle_state(store.load(), 0.0, {ALICE: 2.0}), {})
        assert store.commit_cycle(2, HOUR, cycle_state(store.load(), HOUR, {ALICE: 2.0}), {})
        loaded = store.load()
        assert loaded.record(ALICE).accumulated_usage == pytest.approx(2.0 * HOUR)
        store.reset_usage(ALICE, now=HOUR + 10.0)  # lands between this cycle's load and its commit
        assert store.load().record(ALICE).accumulated_usage == 0.0
        assert store.commit_cycle(3, 2 * HOUR, cycle_state(loaded, 2 * HOUR, {ALICE: 2.0}), {})
        record = store.load().record(ALICE)
        assert record.accumulated_usage == pytest.approx(2.0 * HOUR)  # only cycle 3's charge
        assert record.begin_usage_time == HOUR + 10.0
        assert record.real_priority == pytest.approx(0.5 * 0.25 + 2.0 * 0.75)  # priority untouched


def test_an_administrators_priority_and_last_usage_time_outlast_a_cycle_loaded_before_them() -> None:
    """HTCondor's negotiator serves no command while it negotiates; negotiatord does, and a commit
    keeps the edits made since its cycle loaded (negotiatord.accountant.edits)."""
    with AccountantStore(":memory:") as store:
        assert store.commit_cycle(1, 0.0, cycle_state(store.load(), 0.0, {ALICE: 2.0}), {})
        mark, loaded = store.edit_mark(), store.load()
        store.set_priority(ALICE, 42.0)          # condor_userprio -setprio, while cycle 2 runs
        store.set_last_time(ALICE, 1000.0)       # -setlast
        assert store.commit_cycle(2, HOUR, cycle_state(loaded, HOUR, {ALICE: 2.0}), {}, edit_mark=mark)
        record = store.load().record(ALICE)
        assert (record.real_priority, record.last_usage_time) == (42.0, 1000.0)
        assert record.last_update_time == HOUR                 # the cycle's own figures still land
        # the next cycle, loaded after the edits, computes from them
        assert store.commit_cycle(3, 2 * HOUR, cycle_state(store.load(), 2 * HOUR, {ALICE: 2.0}), {},
                                  edit_mark=store.edit_mark())
        assert store.load().record(ALICE).real_priority == pytest.approx(42.0 * 0.5 + 2.0 * 0.5)


def test_a_customer_deleted_while_a_cycle_runs_stays_deleted_until_the_next() -> None:
    with AccountantStore(":memory:") as store:
        assert store.commit_cycle(1, 0.0, cycle_state(store.load(), 0.0, {ALICE: 2.0}), {})
        mark, loaded = store.edit_mark(), store.load()
        store.delete_customer(ALICE)             # -delete
        assert store.commit_cycle(2, HOUR, cycle_state(loaded, HOUR, {ALICE: 2.0}), {}, edit_mark=mark)
        assert store.load().customers() == []
        # its next cycle makes it afresh, as HTCondor's next update does
        assert store.commit_cycle(3, 2 * HOUR, cycle_state(store.load(), 2 * HOUR, {ALICE: 2.0}), {},
                                  edit_mark=store.edit_mark())
        assert store.load().record(ALICE).real_priority == MIN_PRIORITY
        with pytest.raises(UnknownCustomer):
            store.delete_customer("nobody@site")


def test_ceilings_and_floors_are_the_administrators_and_follow_accountant_cpp() -> None:
    """SetCeiling/SetFloor, read back as GetCeiling (below 0: none) and GetFloor (0 or below: none)."""
    with AccountantStore(":memory:") as store:
        store.set_ceiling(ALICE, 4)
        store.set_floor(ALICE, 2)
        assert store.commit_cycle(1, 0.0, cycle_state(store.load(), 0.0, {ALICE: 2.0}), {})
        record = store.load().record(ALICE)
        assert (record.ceiling, record.floor) == (4.0, 2.0)    # a cycle never writes them
        store.set_ceiling(ALICE, -1)
        store.set_floor(ALICE, 0)
        assert (store.load().record(ALICE).ceiling, store.load().record(ALICE).floor) == (None, None)
        store.set_accumulated_usage(ALICE, 7200)
        store.set_begin_time(ALICE, 100)
        names = store.reset_all_usage(now=500.0)
        assert names == [ALICE] and store.load().record(ALICE).accumulated_usage == 0.0
        assert store.load().record(ALICE).begin_usage_time == 500.0


@pytest.mark.parametrize("bad", [0.5, 0.0, -3.0, math.nan, math.inf])
def test_set_factor_refuses_factors_condor_userprio_refuses(bad: float) -> None:
    with AccountantStore(":memory:") as store:
        with pytest.raises(ValueError, match=f"{ALICE}.*factor|factor.*{ALICE}"):
            store.set_factor(ALICE, bad)
        assert store.load().customers() == []


def test_negative_charges_and_bad_cycle_ids_are_refused() -> None:
    with AccountantStore(":memory:") as store:
        with pytest.raises(ValueError, match="bob@site"):
            store.commit_cycle(1, 0.0, AccountantState(), {"bob@site": -1.0})
        for bad_id in (0, -1, True, 1.5):
            with pytest.raises(ValueError, match="cycle id"):
                store.commit_cycle(bad_id, 0.0, AccountantState(), {})  # type: ignore[arg-type]
        assert store.last_cycle_id() == 0


def test_a_file_that_is_not_sqlite_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "Accountantnew.log"
    path.write_text("105 Customer.alice@site\n" * 200)
    with pytest.raises(AccountantStoreError, match="Accountantnew.log"):
        AccountantStore(path)
    assert path.read_text().startswith("105 Customer.alice@site")  # and left as it was


def test_another_applications_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE photos (id INTEGER)")
    with pytest.raises(AccountantStoreError, match="other.sqlite.*not a negotiatord accountant"):
        AccountantStore(path)


def test_a_newer_schema_version_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "accountant.sqlite"
    AccountantStore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE schema_version SET version = version + 1")
    with pytest.raises(AccountantStoreError, match="accountant.sqlite.*newer"):
        AccountantStore(path)


def test_a_corrupt_record_is_reported_with_the_file_and_customer(tmp_path: Path) -> None:
    path = tmp_path / "accountant.sqlite"
    AccountantStore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("INSERT INTO customers VALUES ('bob@site', 0.1, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL)")
    with AccountantStore(path) as store:
        with pytest.raises(AccountantStoreError, match="accountant.sqlite.*bob@site"):
            store.load()


def test_reset_usage_of_a_customer_the_accountant_does_not_know_adds_none() -> None:
    with AccountantStore(":memory:") as store:
        assert store.commit_cycle(1, 0.0, cycle_state(store.load(), 0.0, {ALICE: 2.0}), {})
        with pytest.raises(UnknownCustomer, match="bob@site"):
            store.reset_usage("bob@site", now=10.0)
        assert [record.name for record in store.load().customers()] == [ALICE]
