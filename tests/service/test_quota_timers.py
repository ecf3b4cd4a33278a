"""Quota preemption timers kept by the accountant across cycles and restarts.

As YuniKorn's design "Quota Enforcement through Preemption" (``../shared/seeds/004_*``, "Quota
Preemption Delay"): the timer starts when a group's maximum is first seen below its usage, and a
change of the maximum or of the delay starts it again from the beginning. Its "Impact of Restart"
section has YuniKorn start every timer again after a restart; here a restart keeps the original
deadline, which these tests check through the real accountant database and cycle runner.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from negotiatord.accountant import AccountantStore
from negotiatord.accountant.quota_timers import QuotaTimer, group_maximum, updated_timers
from negotiatord.cycle.claimed import RunningJob
from negotiatord.cycle.quota_enforcement import due_enforcements
from negotiatord.cycle.result import CycleResult
from negotiatord.feed import AdKind, AdStore
from negotiatord.feed.api import take_in_text
from negotiatord.publish.matchlog import MatchLog, Retention
from negotiatord.service.accounting import accountant_document
from negotiatord.service.cycles import CycleRunner
from negotiatord.settings import GroupSettings, GroupTree, SubmitterOrder
from negotiatord.settings.groups import WEIGHT_UNIT
from tests.builders import settings, static_slot
from tests.service_harness import in_process

T0 = 1_790_000_000
DELAY = 600.0


def group_a(limit: dict | None = None, delay: float = DELAY, quota: float | None = None) -> GroupSettings:
    return GroupSettings("group_a", quota, None, False, False, None, limit=limit, quota_preemption_delay=delay)


def tree(**changes) -> GroupTree:
    return GroupTree([group_a(**changes)])


# --- the timer's rules -----------------------------------------------------------------------

def test_a_timer_starts_when_usage_first_exceeds_the_maximum_and_is_kept():
    groups = tree(limit={"cpus": 8})
    assert updated_timers({}, groups, {"group_a": {"cpus": 8}}, T0) == {}
    started = updated_timers({}, groups, {"group_a": {"cpus": 10}}, T0)
    assert started == {"group_a": QuotaTimer("group_a", {"cpus": 8}, DELAY, T0)}
    assert updated_timers(started, groups, {"group_a": {"cpus": 9}}, T0 + 100) == started
    assert started["group_a"].due == T0 + DELAY


def test_a_change_of_maximum_or_delay_restarts_the_timer():
    started = updated_timers({}, tree(limit={"cpus": 8}), {"group_a": {"cpus": 10}}, T0)
    lowered = updated_timers(started, tree(limit={"cpus": 6}), {"group_a": {"cpus": 10}}, T0 + 100)
    assert lowered["group_a"].started == T0 + 100 and dict(lowered["group_a"].maximum) == {"cpus": 6}
    longer = updated_timers(started, tree(limit={"cpus": 8}, delay=1200), {"group_a": {"cpus": 10}}, T0 + 200)
    assert longer["group_a"].started == T0 + 200 and longer["group_a"].due == T0 + 1400


def test_no_timer_without_a_delay_or_once_usage_is_back_within_the_maximum():
    assert updated_timers({}, tree(limit={"cpus": 8}, delay=0), {"group_a": {"cpus": 10}}, T0) == {}
    started = updated_timers({}, tree(limit={"cpus": 8}), {"group_a": {"cpus": 10}}, T0)
    assert updated_timers(started, tree(limit={"cpus": 8}), {"group_a": {"cpus": 8}}, T0 + 10) == {}


def test_a_static_quota_counts_as_a_maximum_in_slot_weight_units():
    assert group_maximum(group_a(quota=5)) == {WEIGHT_UNIT: 5}
    assert group_maximum(group_a(limit={"cpus": 8}, quota=5)) == {"cpus": 8, WEIGHT_UNIT: 5}
    assert updated_timers({}, tree(quota=5), {"group_a": {WEIGHT_UNIT: 6}}, T0)["group_a"].due == T0 + DELAY


# --- through the cycle runner and the accountant database, across a restart ----------------

RUNNING = [("alice", 1, 3000), ("alice", 2, 2900), ("alice", 3, 2800), ("alice", 4, 2700), ("alice", 5, 2600),
           ("bob", 1, 2000), ("bob", 2, 1000), ("bob", 3, 900), ("bob", 4, 800), ("bob", 5, 700)]


def _view():
    slots = [static_slot(f"{owner}-{k}", cpus=1, State="Claimed", Activity="Busy",
                         AccountingGroup=f"group_a.{owner}@site", JobStart=T0 - age)
             for owner, k, age in RUNNING]
    store = AdStore()
    store.update(AdKind.SLOT, take_in_text(AdKind.SLOT, "\n".join(s.printOld() for s in slots), "test").accepted,
                 0.0, 1e12)
    return store.view()


def _running() -> list[RunningJob]:
    return [RunningJob(f"{owner}-{k}", f"group_a.{owner}@site", "group_a", {"cpus": 1.0}, 0, T0 - age,
                       f"{owner}-{k}") for owner, k, age in RUNNING]


@pytest.fixture()
def config():
    return settings(groups=(group_a(limit={"cpus": 8}),), quota_preemption=True)


def _cycle(tmp_path: Path, config, now: int) -> AccountantStore:
    """One cycle on freshly opened databases (a daemon started for it), left open for reading."""
    return _run(tmp_path, config, now)[0]


def _run(tmp_path: Path, config, now: int) -> tuple[AccountantStore, CycleResult]:
    """:func:`_cycle`, with the cycle's result."""
    accountant = AccountantStore(tmp_path / "accountant.sqlite")
    log = MatchLog(tmp_path / "matches.sqlite")
    try:
        outcome = CycleRunner(accountant, log).run(_view(), config, now, retention=Retention())
    finally:
        log.close()
    return accountant, outcome.result


def test_a_restart_halfway_keeps_the_original_deadline(tmp_path, config):
    """GROUP_LIMIT_group_a lowered to Cpus:8 over 10 running: the timer starts at the first cycle;
    the daemon restarts halfway through the delay; at the original deadline the two youngest
    jobs of alice (bob's jobs took the group over 8, so his go last) are due for preemption."""
    with _cycle(tmp_path, config, T0) as first:
        assert first.quota_timers() == {"group_a": QuotaTimer("group_a", {"cpus": 8}, DELAY, T0)}
    restarted, halfway = _run(tmp_path, config, T0 + int(DELAY / 2))    # a new process, same database
    assert halfway.preemptions == ()
    with restarted:
        timers = restarted.quota_timers()
        assert timers["group_a"].due == T0 + DELAY
        assert due_enforcements(config.group_tree, timers, _running(), T0 + DELAY / 2) == ()
        document = accountant_document(restarted.load(), config, (), T0 + DELAY / 2)
        assert document["quota_timers"] == [{"group": "group_a", "maximum": {"cpus": 8.0}, "delay_s": DELAY,
                                             "started": T0, "due": T0 + DELAY, "due_in_s": DELAY / 2,
                                             "enforced": False}]
    due, deadline = _run(tmp_path, config, T0 + int(DELAY))
    # the cycle at the original deadline preempts them, with no job taking their slots
    assert sorted((p.slot, p.rule, p.job) for p in deadline.preemptions) == [
        ("alice-4", "quota", None), ("alice-5", "quota", None)]
    assert deadline.stats.quota_shortfalls == 0
    with due:    # their release brings group_a back within its maximum: the timer has done its work
        assert due.quota_timers() == {}


def test_a_reconfigured_delay_restarts_the_timer_at_the_next_cycle(tmp_path, config):
    _cycle(tmp_path, config, T0).close()
    longer = replace(config, groups=(group_a(limit={"cpus": 8}, delay=1200),))
    with _cycle(tmp_path, longer, T0 + 300) as store:
        assert store.quota_timers()["group_a"].due == T0 + 300 + 1200


def test_switching_quota_preemption_off_drops_the_running_timers(tmp_path, config):
    _cycle(tmp_path, config, T0).close()
    with _cycle(tmp_path, replace(config, quota_preemption=False), T0 + 60) as store:
        assert store.quota_timers() == {}


def test_the_cycle_runner_samples_and_keeps_admission_usage(tmp_path, config):
    """With admission fair sharing, the runner folds what each submitter holds into its decayed
    usage after the cycle and the accountant database keeps it: alice holds 5 cpus, bob 5; one
    half-life later, with nothing running, both are down to half."""
    afs = replace(config, submitter_order=SubmitterOrder.ADMISSION_FAIR_SHARING, admission_half_life=3600.0)
    with _cycle(tmp_path, afs, T0) as store:
        first = store.load()
    alice = first.admission_usage("group_a.alice@site").resources
    assert (alice["cpus"], alice["memory"], alice[WEIGHT_UNIT]) == (5.0, 5 * 1024.0, 5.0)
    log = MatchLog(tmp_path / "matches.sqlite")
    with AccountantStore(tmp_path / "accountant.sqlite") as store:
        CycleRunner(store, log).run(AdStore().view(), afs, T0 + 3600, retention=Retention())
        later = store.load().admission_usage("group_a.bob@site")
    log.close()
    assert (later.resources["cpus"], later.resources[WEIGHT_UNIT]) == pytest.approx((2.5, 2.5))
    assert later.last_update_time == T0 + 3600


def test_the_daemon_logs_a_timer_when_it_starts_and_once_when_it_falls_due(tmp_path):
    daemon = in_process(tmp_path / "daemon", {})
    timer = QuotaTimer("group_a", {"cpus": 8}, DELAY, T0)
    try:
        with capture_logs() as events:
            daemon._note_quota_timers({"group_a": timer}, T0)
            daemon._note_quota_timers({"group_a": timer}, T0 + 300)
            daemon._note_quota_timers({"group_a": timer}, T0 + 600)
            daemon._note_quota_timers({"group_a": timer}, T0 + 660)
    finally:
        daemon.accountant.close()
        daemon.matchlog.close()
    logged = [(e["event"].split(";")[0], e["group"]) for e in events if "quota" in e["event"]]
    assert logged == [("quota preemption timer started", "group_a"), ("quota preemption is due", "group_a")]


def test_the_daemon_status_shows_the_timers_of_its_accountant_database(tmp_path):
    """A timer committed by an earlier run is in /v1/status as soon as the daemon is up."""
    home = tmp_path / "daemon"
    (home / "state").mkdir(parents=True)
    with AccountantStore(home / "state" / "accountant.sqlite") as store:
        store.commit_cycle(1, T0, store.load().with_quota_timers(
            {"group_a": QuotaTimer("group_a", {"cpus": 8}, DELAY, T0)}), {})
    daemon = in_process(home, {"GROUP_NAMES": "$(GROUP_NAMES), group_a", "GROUP_LIMIT_group_a": "Cpus:8",
                               "GROUP_QUOTA_PREEMPTION_DELAY_group_a": str(DELAY)})
    try:
        (shown,) = daemon.status()["quota_timers"]
        assert (shown["group"], shown["maximum"], shown["due"]) == ("group_a", {"cpus": 8.0}, T0 + DELAY)
    finally:
        daemon.accountant.close()
        daemon.matchlog.close()
