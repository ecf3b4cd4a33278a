"""Cycle scheduling, and the two-phase publication that keeps matches and charges in step.

Timing follows HTCondor's ``Matchmaker::negotiationTime`` gating and ``RESCHEDULE_commandHandler``.
Publication is checked against the real accountant store: a crash at each point between staging,
committing and publishing is simulated by closing the databases there and reopening them.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from negotiatord.accountant import AccountantState, AccountantStore
from negotiatord.ads import read_ads
from negotiatord.cycle.result import Match
from negotiatord.feed import AdKind, AdStore, take_in
from negotiatord.publish.matchlog import MatchLog, MatchLogError, Retention
from negotiatord.runtime import CycleProcessFailed
from negotiatord.service.cycles import CycleAbandoned, CycleRunner, CycleTiming
from negotiatord.settings import CycleWorker, Settings, load_settings

from tests.service_harness import ROOT

TIMING = CycleTiming(interval=60, min_interval=5, cycle_delay=20)


# --- timing --------------------------------------------------------------------------------

def test_the_first_cycle_is_due_at_start_up():
    assert TIMING.next_start(None, None, rescheduled=False) == -math.inf


def test_cycles_start_an_interval_after_the_previous_start():
    # a 10 s cycle started at 100: the next one starts at 160, not 170
    assert TIMING.next_start(100.0, 110.0, rescheduled=False) == 160.0


def test_a_long_cycle_is_followed_by_the_cycle_delay():
    # started at 100, ended at 190 (past the interval): wait NEGOTIATOR_CYCLE_DELAY after the end
    assert TIMING.next_start(100.0, 190.0, rescheduled=False) == 210.0


def test_a_reschedule_is_due_at_once_but_the_gates_still_hold():
    assert TIMING.next_start(100.0, 101.0, rescheduled=True) == 121.0      # cycle delay after the end
    quick = CycleTiming(interval=60, min_interval=5, cycle_delay=0)
    assert quick.next_start(100.0, 101.0, rescheduled=True) == 105.0      # min interval after the start
    assert quick.next_start(100.0, 101.0, rescheduled=False) == 160.0


# --- match log and accountant, two phases ----------------------------------------------------

def _match(job: str, cost: float = 1.0) -> Match:
    return Match(job, f"slot-{job}", "alice@site", "<none>", cost, {"Cpus": int(cost)})


def _open(tmp_path: Path) -> tuple[AccountantStore, MatchLog]:
    return AccountantStore(tmp_path / "accountant.sqlite"), MatchLog(tmp_path / "matches.sqlite")


def _commit(accountant: AccountantStore, cycle: int, cost: float) -> None:
    assert accountant.commit_cycle(cycle, 1000.0 * cycle, AccountantState(), {"alice@site": cost})


def test_matches_are_visible_only_once_published(tmp_path):
    accountant, log = _open(tmp_path)
    log.stage(1, 1000.0, [_match("a"), _match("b")])
    assert log.since(0, 10) == []                     # staged, not published
    _commit(accountant, 1, 2.0)
    assert log.publish(1) == 2
    assert [m.match.job for m in log.since(0, 10)] == ["a", "b"]
    assert [m.match.job for m in log.since(1, 10)] == ["b"] and log.bounds() == (1, 2)


def test_a_crash_after_the_accountant_commit_publishes_at_restart(tmp_path):
    accountant, log = _open(tmp_path)
    log.stage(1, 1000.0, [_match("a")])
    _commit(accountant, 1, 1.0)
    accountant.close()
    log.close()                                       # killed before publish
    accountant, log = _open(tmp_path)
    assert log.recover(accountant.last_cycle_id()) == (1, 0)
    assert [(m.cycle, m.match.job) for m in log.since(0, 10)] == [(1, "a")]


def test_a_crash_before_the_accountant_commit_drops_the_staged_matches(tmp_path):
    accountant, log = _open(tmp_path)
    log.stage(1, 1000.0, [_match("a")])
    _commit(accountant, 1, 1.0)
    log.publish(1)
    log.stage(2, 2000.0, [_match("b"), _match("c")])   # killed before cycle 2 committed
    accountant.close()
    log.close()
    accountant, log = _open(tmp_path)
    assert log.recover(accountant.last_cycle_id()) == (0, 2)
    assert accountant.charges(2) == {}
    # cycle 2 is negotiated again after the restart: new sequence numbers, never the dropped ones
    log.stage(2, 2100.0, [_match("d")])
    _commit(accountant, 2, 1.0)
    log.publish(2)
    assert [(m.seq, m.match.job) for m in log.since(0, 10)] == [(1, "a"), (4, "d")]
    assert accountant.charges(1) == {"alice@site": 1.0} and accountant.charges(2) == {"alice@site": 1.0}


def test_pruning_forgets_only_old_published_matches(tmp_path):
    _, log = _open(tmp_path)
    log.stage(1, 100.0, [_match("old")])
    log.publish(1)
    log.stage(2, 200.0, [_match("new")])
    log.publish(2)
    log.stage(3, 50.0, [_match("staged")])
    assert log.prune(Retention(before=150.0), 3) == 1
    assert [m.match.job for m in log.since(0, 10)] == ["new"]


def test_a_foreign_database_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "accountant.sqlite"
    AccountantStore(path).close()
    with pytest.raises(MatchLogError, match=str(path)):
        MatchLog(path)


# --- the cycle runner ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample_view():
    store = AdStore()
    for kind, name in ((AdKind.SLOT, "slots.ads"), (AdKind.JOB, "jobs.ads")):
        store.update(kind, take_in(kind, read_ads(ROOT / "samples" / name), name).accepted, 0.0, 900.0)
    return store.view(), load_settings(ROOT / "config" / "default.conf")


def test_a_cycle_commits_its_charges_and_publishes_its_matches_together(tmp_path, sample_view):
    view, settings = sample_view
    accountant, log = _open(tmp_path)
    outcome = CycleRunner(accountant, log).run(view, settings, 1790000000, retention=Retention())
    assert outcome.cycle_id == 1 and outcome.result.matches
    published = log.since(0, 10000)
    assert [p.match for p in published] == list(outcome.result.matches)
    charged: dict[str, float] = {}
    for p in published:
        charged[p.match.submitter] = charged.get(p.match.submitter, 0.0) + p.match.cost
    stored = accountant.charges(1)
    for submitter, cost in charged.items():
        assert stored[submitter] == pytest.approx(cost)
    # usage from now on: this cycle's matches, per submitter, as the accountant records it
    for submitter, cost in charged.items():
        assert accountant.load().record(submitter).weighted_usage == pytest.approx(cost)


def test_an_abandoned_cycle_commits_and_publishes_nothing(tmp_path, sample_view):
    view, settings = sample_view
    accountant, log = _open(tmp_path)
    runner = CycleRunner(accountant, log)
    runner.abandon()
    with pytest.raises(CycleAbandoned):
        runner.run(view, settings, 1790000000, retention=Retention())
    assert accountant.last_cycle_id() == 0 and log.bounds() == (0, 0)
    assert log.recover(0) == (0, 0)                    # nothing was even staged


def test_a_failed_attempt_at_a_cycle_leaves_nothing_to_publish_with_the_retry(tmp_path):
    accountant, log = _open(tmp_path)
    log.stage(1, 1000.0, [_match("first-try")])        # then the accountant commit failed
    log.stage(1, 1100.0, [_match("retry")])            # the next cycle reuses the id
    _commit(accountant, 1, 1.0)
    log.publish(1)
    assert [m.match.job for m in log.since(0, 10)] == ["retry"]


def test_a_cycle_without_a_usable_accountant_publishes_nothing(tmp_path, sample_view):
    view, settings = sample_view
    accountant, log = _open(tmp_path)
    accountant.close()                                 # every accountant read and write now fails
    with pytest.raises(Exception, match="closed"):
        CycleRunner(accountant, log).run(view, settings, 1790000000, retention=Retention())
    assert log.bounds() == (0, 0) and log.recover(0) == (0, 0)


# --- where the negotiation runs --------------------------------------------------------------

def _with_worker(settings: Settings, worker: CycleWorker) -> Settings:
    return replace(settings, service=replace(settings.service, cycle_worker=worker))


def test_a_cycle_negotiated_in_a_child_process_is_the_cycle_negotiated_on_a_thread(tmp_path, sample_view):
    # NEGOTIATORD_CYCLE_WORKER = thread (the default) and fork run the same pure cycle over the
    # same view: the same matches, charges and accountant state come out and are committed.
    view, settings = sample_view
    assert settings.service.cycle_worker is CycleWorker.THREAD
    outcomes, states = {}, {}
    for worker in CycleWorker:
        (tmp_path / worker.value).mkdir()
        accountant, log = _open(tmp_path / worker.value)
        outcome = CycleRunner(accountant, log).run(view, _with_worker(settings, worker), 1790000000, Retention())
        outcomes[worker], states[worker] = outcome, (accountant.charges(1), accountant.load())
        assert [p.match for p in log.since(0, 10000)] == list(outcome.result.matches)
    forked, threaded = outcomes[CycleWorker.FORK], outcomes[CycleWorker.THREAD]
    assert forked.result.matches and forked.result.matches == threaded.result.matches
    assert forked.result.charges == threaded.result.charges and forked.result.problems == threaded.result.problems
    assert states[CycleWorker.FORK] == states[CycleWorker.THREAD]
    assert [h.key for h in forked.holds] == [h.key for h in threaded.holds]
    # the child's own memory is measured (Linux); a thread has none of its own
    assert forked.child_private_bytes is not None and forked.child_private_bytes > 0
    assert threaded.child_private_bytes is None
    assert "child_process" in forked.phases_s and "child_process" not in threaded.phases_s


def test_a_cycle_abandoned_while_its_child_process_negotiates_kills_the_child(tmp_path, sample_view):
    # a daemon that stops (abandon) kills the child negotiating for it: it would otherwise run
    # its cycle to the end for nobody, holding its share of the daemon's memory
    view, settings = sample_view
    accountant, log = _open(tmp_path)
    runner = CycleRunner(accountant, log)
    runner.abandon()
    with pytest.raises(CycleAbandoned) as abandoned:
        runner.run(view, _with_worker(settings, CycleWorker.FORK), 1790000000, retention=Retention())
    killed = abandoned.value.__cause__
    assert isinstance(killed, CycleProcessFailed) and "signal 9 (SIGKILL)" in killed.reason
    with pytest.raises(ChildProcessError):
        os.waitpid(killed.pid, 0)                     # reaped, not left running
    assert runner.child_pid is None
    assert accountant.last_cycle_id() == 0 and log.bounds() == (0, 0) and log.recover(0) == (0, 0)
