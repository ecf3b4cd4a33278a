"""A cycle whose accountant commit succeeded is done, even when its matches cannot be published yet.

The match log is a second SQLite database; publishing into it can fail after the charges are
committed: another process holding a write lock longer than the 5 s busy timeout, a full disk, an
I/O error. The daemon must then retry the publication (logged, shown in ``/v1/status``), hold the
matched jobs and slots at once, and start no new cycle until the matches are out, so that no
charge is made twice and no match is published twice, across restarts too.

The daemon runs in this process (its event loop in the test's main thread), so the match log can
be locked or made to fail at the exact moment between the accountant commit and the publication.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from negotiatord.accountant import AccountantStore
from negotiatord.publish.matchlog import MatchLog
from negotiatord.service import daemon as daemon_module
from negotiatord.service.daemon import Daemon

from tests.service_harness import SAMPLE_FIRST_CYCLE_MATCHES, SAMPLE_POOL, cycle_after, in_process, next_cycle, serve

LOCK_S = 7.0   # longer than the match log's 5 s busy timeout
QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}


def _daemon(home: Path) -> Daemon:
    return in_process(home, QUICK, SAMPLE_POOL)


async def _two_more_cycles(daemon: Daemon) -> None:
    """Cycles after the troubled one: the publication must be out before they start."""
    for _ in range(2):
        await next_cycle(daemon)


def _check_exactly_once(state: Path, events: list[dict]) -> None:
    log = MatchLog(state / "matches.sqlite")
    try:
        published = log.since(0, 100000)
        assert log.recover(10**9) == (0, 0)                       # nothing left staged
    finally:
        log.close()
    jobs = Counter(m.match.job for m in published)
    assert published and max(jobs.values()) == 1, [job for job, n in jobs.items() if n > 1]
    with AccountantStore(state / "accountant.sqlite") as store:
        cycles = store.last_cycle_id()
        charged = sum(cost for cycle in range(1, cycles + 1)
                      for name, cost in store.charges(cycle).items() if "@" in name)
        first = sum(cost for name, cost in store.charges(1).items() if "@" in name)
    assert charged == pytest.approx(sum(m.match.cost for m in published))
    assert first == pytest.approx(sum(m.match.cost for m in published if m.cycle == 1))
    assert {m.cycle for m in published} <= set(range(1, cycles + 1))
    assert not [e for e in events if "nothing was committed" in e["event"]]


def test_a_locked_match_log_delays_publication_and_charges_once(tmp_path, monkeypatch):
    daemon = _daemon(tmp_path / "d")
    commit = daemon.accountant.commit_cycle
    locks: list[sqlite3.Connection] = []

    def commit_then_lock(*args, **kwargs):
        committed = commit(*args, **kwargs)
        if not locks:   # another writer takes the match log between the commit and the publication
            holder = sqlite3.connect(daemon.paths.match_log, isolation_level=None, check_same_thread=False)
            holder.execute("BEGIN IMMEDIATE")
            locks.append(holder)
            threading.Timer(LOCK_S, holder.rollback).start()
        return committed

    monkeypatch.setattr(daemon.accountant, "commit_cycle", commit_then_lock)
    seen: list[dict] = []

    async def scenario(daemon: Daemon) -> None:
        deadline = time.monotonic() + 60
        while not seen or seen[-1]["attempts"] < 1:
            assert time.monotonic() < deadline, "publication never reported as pending"
            pending = daemon.status()["publication"]
            if pending is not None:
                seen.append(pending)
            await asyncio.sleep(0.1)
        assert seen[-1]["cycle"] == 1 and "locked" in seen[-1]["error"]
        # held from the commit on, not from publication
        assert daemon.status()["held"]["jobs"] == SAMPLE_FIRST_CYCLE_MATCHES
        while daemon.status()["publication"] is not None:
            assert time.monotonic() < deadline, "the publication was never retried"
            await asyncio.sleep(0.1)
        assert daemon.history.last.outcome.cycle_id == 1    # no other cycle ran meanwhile
        await _two_more_cycles(daemon)

    with capture_logs() as events:
        serve(daemon, scenario)
    _check_exactly_once(daemon.paths.state_dir, events)
    failed = [e for e in events if e["event"].startswith("publishing the matches failed")]
    assert failed and failed[0]["cycle"] == 1 and "locked" in failed[0]["error"]
    assert [e for e in events if e["event"] == "matches published" and e["cycle"] == 1]


def test_an_io_error_at_publication_is_retried_and_charges_once(tmp_path, monkeypatch):
    monkeypatch.setattr(daemon_module, "PUBLISH_RETRY_FIRST_S", 0.2)
    daemon = _daemon(tmp_path / "d")
    publish = daemon.matchlog.publish
    failures = [sqlite3.OperationalError("disk I/O error") for _ in range(3)]

    def failing_publish(*args, **kwargs):
        if failures:
            raise failures.pop()
        return publish(*args, **kwargs)

    monkeypatch.setattr(daemon.matchlog, "publish", failing_publish)

    async def scenario(daemon: Daemon) -> None:
        await cycle_after(daemon, 0)
        await _two_more_cycles(daemon)

    with capture_logs() as events:
        serve(daemon, scenario)
    assert not failures
    _check_exactly_once(daemon.paths.state_dir, events)
    failed = [e for e in events if e["event"].startswith("publishing the matches failed")]
    assert [e["attempt"] for e in failed] == [1, 2, 3] and all("disk I/O error" in e["error"] for e in failed)
    assert daemon.counters.publication_failures == 3


def test_a_restart_with_publication_pending_publishes_once_and_keeps_the_holds(tmp_path, monkeypatch):
    first = _daemon(tmp_path / "d")
    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(first.matchlog, "publish", broken)

    async def stop_while_pending(daemon: Daemon) -> None:
        await cycle_after(daemon, 0)
        assert daemon.status()["publication"]["cycle"] == 1

    with capture_logs() as events:
        serve(first, stop_while_pending)
    monkeypatch.undo()

    assert [e for e in events if e["event"].startswith("stopping with committed matches unpublished")]

    async def two_more_cycles_after_start(daemon: Daemon) -> None:
        await cycle_after(daemon, 1)
        await _two_more_cycles(daemon)

    second = _daemon(tmp_path / "d")
    with capture_logs() as more:
        serve(second, two_more_cycles_after_start)
    assert [e for e in more
            if e["event"] == "finished publishing after a crash" and e["published"] == SAMPLE_FIRST_CYCLE_MATCHES]
    _check_exactly_once(second.paths.state_dir, events + more)
