"""A lost, rolled back or corrupt accountant or match log never goes unnoticed.

The daemon checks both databases before it serves (SQLite's ``PRAGMA quick_check``, then the
accountant against the match log: the highest cycle the match log published, the highest
sequence number it gave). On a mismatch it refuses to start (exit 2), naming the file and what
differs, and never commits a cycle id the match log already holds. ``--accept-state-mismatch``
starts anyway, on purpose: cycle ids and sequence numbers go on past the highest either holds.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from negotiatord.accountant import AccountantStore

from tests.service_harness import SAMPLE_FIRST_CYCLE_MATCHES, SAMPLE_POOL, ROOT, DaemonProcess

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
PRELOAD = ["--preload-slots", str(SAMPLE_POOL["slots"]), "--preload-jobs", str(SAMPLE_POOL["jobs"])]
PAGE = 4096     # SQLite's default page size


def ran_a_cycle(home: Path) -> DaemonProcess:
    """A daemon in ``home`` that committed and published one cycle over the sample pool, stopped."""
    daemon = DaemonProcess(home, settings=QUICK, args=PRELOAD)
    daemon.start()
    try:
        assert daemon.wait_for_cycle(0)["Matches"] == SAMPLE_FIRST_CYCLE_MATCHES
    finally:
        assert daemon.stop() == 0
    return daemon


def start(daemon: DaemonProcess) -> subprocess.CompletedProcess:
    """``negotiatord run`` on the daemon's config, for as long as it takes to refuse (it refuses
    before it loads anything; one still running after 30 s did not refuse)."""
    try:
        return subprocess.run([sys.executable, "-m", "negotiatord", "run", "--config", str(daemon.config), *PRELOAD],
                              cwd=ROOT, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as running:
        pytest.fail(f"the daemon started: {running.stderr!r}")


def refused(daemon: DaemonProcess, *named: str) -> str:
    """The daemon refuses to start, with exit 2 and a message naming ``named``, no traceback."""
    run = start(daemon)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout
    for text in named:
        assert text in run.stderr, run.stderr
    return run.stderr


def overwrite_middle_pages(path: Path) -> None:
    size = path.stat().st_size
    assert size >= 4 * PAGE
    with path.open("r+b") as database:
        database.seek(size // PAGE // 2 * PAGE)
        database.write(b"\xa5" * PAGE * 2)


@pytest.mark.parametrize("loss", ["deleted", "emptied"])
def test_a_lost_accountant_is_refused_and_never_reuses_a_cycle_id(tmp_path, loss):
    daemon = ran_a_cycle(tmp_path / "d")
    accountant = daemon.state / "accountant.sqlite"
    if loss == "deleted":
        accountant.unlink()
    else:
        accountant.write_bytes(b"")
    message = refused(daemon, str(accountant), "cycle 1", "--accept-state-mismatch")
    assert "the match log" in message

    # started over on purpose: priorities start afresh, cycle ids go on after the match log's
    again = DaemonProcess(tmp_path / "d", settings=QUICK, args=[*PRELOAD, "--accept-state-mismatch"])
    again.start()
    try:
        assert again.wait_for_cycle(0)["Id"] == 2
        again.reschedule()
        cycles = [m["cycle"] for m in again.get("/v1/matches?after=0&limit=1000")["matches"]]
    finally:
        assert again.stop() == 0
    # cycle 1's matches are the first run's; nothing was committed or published as cycle 1 again
    assert cycles.count(1) == SAMPLE_FIRST_CYCLE_MATCHES
    with AccountantStore(accountant) as store:
        assert store.charges(1) == {} and store.last_cycle_id() >= 2
    assert any("accepted" in e["event"] for e in again.log_events() if e["level"] == "warning")
    # and the daemon starts without the option from then on: the databases agree again
    assert start_and_stop(again) == 0


def start_and_stop(daemon: DaemonProcess) -> int:
    daemon.args = PRELOAD
    daemon.start()
    return daemon.stop()


def test_an_accountant_rolled_back_to_an_older_copy_is_refused(tmp_path):
    daemon = ran_a_cycle(tmp_path / "d")
    accountant = daemon.state / "accountant.sqlite"
    backup = tmp_path / "backup.sqlite"
    with sqlite3.connect(accountant) as source, sqlite3.connect(backup) as copy:
        source.execute("DELETE FROM charges")
        source.execute("DELETE FROM cycles")   # as it was before the first cycle, customers aside
        source.commit()
        source.backup(copy)
    refused(daemon, str(accountant), "cycle 1")


def test_a_lost_match_log_is_refused_and_never_reuses_a_sequence_number(tmp_path):
    daemon = ran_a_cycle(tmp_path / "d")
    for path in daemon.state.glob("matches.sqlite*"):
        path.unlink()
    refused(daemon, str(daemon.state / "matches.sqlite"), f"sequence number {SAMPLE_FIRST_CYCLE_MATCHES}")

    again = DaemonProcess(tmp_path / "d", settings=QUICK, args=[*PRELOAD, "--accept-state-mismatch"])
    again.start()
    try:
        assert again.wait_for_cycle(0)["Id"] == 2
        seqs = [m["seq"] for m in again.get("/v1/matches?after=0&limit=1000")["matches"]]
    finally:
        assert again.stop() == 0
    # the restarted daemon holds nothing (the versions were in the lost log): it matches again,
    # but under sequence numbers no reader has seen
    assert seqs and min(seqs) > SAMPLE_FIRST_CYCLE_MATCHES


@pytest.mark.parametrize("name", ["accountant.sqlite", "matches.sqlite"])
def test_overwritten_pages_are_found_before_the_daemon_serves(tmp_path, name):
    daemon = ran_a_cycle(tmp_path / "d")
    path = daemon.state / name
    if name == "matches.sqlite":
        # enough matches for the table to fill pages of its own
        with sqlite3.connect(path) as log:
            for _ in range(4):
                log.execute("INSERT INTO matches (cycle_id, time, job, slot, submitter, grp, cost, consumed, "
                            "published) SELECT cycle_id, time, job, slot, submitter, grp, cost, consumed, "
                            "published FROM matches")
    overwrite_middle_pages(path)
    refused(daemon, str(path), "quick_check")
