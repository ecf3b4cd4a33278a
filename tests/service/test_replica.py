"""The replica HTCondor's high availability carries between central managers: written whole after
a cycle, adopted by the next leader when newer than its own state, through the start-up checks,
never giving a cycle id or sequence number twice; a torn one refused, naming the file; an older one
ignored, with a log line."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from negotiatord.accountant import AccountantStore
from negotiatord.accountant.records import CustomerRecord
from negotiatord.accountant.priorities import AccountantState
from negotiatord.cycle.result import Match
from negotiatord.feed.kinds import AdKind
from negotiatord.publish.matchlog import MatchLog
from negotiatord.service.high_availability import ReplicaKeeper
from negotiatord.service.replica import ReplicaRefused, read_replica, write_replica
from negotiatord.service.state_check import check_state

from tests.minipool import wait_for
from tests.service.test_damaged_state import PRELOAD, refused
from tests.service_harness import SAMPLE_FIRST_CYCLE_MATCHES, DaemonProcess


class Central:
    """One central manager's state directory: its accountant and match log."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.accountant = AccountantStore(directory / "accountant.sqlite")
        self.matchlog = MatchLog(directory / "matches.sqlite")

    def cycle(self, cycle_id: int, now: float, usage: float, *jobs: str) -> None:
        """Commit and publish a cycle charging alice ``usage`` and matching ``jobs``, as the cycle
        thread does (stage, commit, publish)."""
        matches = [Match(job, f"slot-{job}", "alice@pool", "<none>", 1.0, {"cpus": 1}) for job in jobs]
        holds = [SimpleNamespace(kind=kind, key=key, version=f"v{cycle_id}")
                 for match in matches for kind, key in ((AdKind.JOB, match.job), (AdKind.SLOT, match.slot))]
        seq = self.matchlog.stage(cycle_id, now, matches, holds)   # type: ignore[arg-type]
        record = CustomerRecord("alice@pool", 0.5, None, 1.0, usage, now - 100, now, now)
        assert self.accountant.commit_cycle(cycle_id, now, AccountantState([record]), {"alice@pool": usage}, seq)
        self.matchlog.publish(cycle_id)

    def checked(self) -> list[str]:
        return check_state(self.accountant, self.matchlog, False, 0.0)

    def close(self) -> None:
        self.accountant.close()
        self.matchlog.close()


@pytest.fixture
def leader(tmp_path: Path):
    central = Central(tmp_path / "leader")
    yield central
    central.close()


@pytest.fixture
def standby(tmp_path: Path):
    central = Central(tmp_path / "standby")
    yield central
    central.close()


def adopt(standby: Central, path: Path, now: float = 5000.0):
    with capture_logs() as logs:
        adoption = ReplicaKeeper(path).adopt(standby.accountant, standby.matchlog, now)
    return adoption, logs


def test_the_standby_adopts_the_leaders_usage_and_holds(tmp_path, leader, standby):
    leader.cycle(1, 1000.0, 10.0, "s#1.0")
    leader.cycle(2, 1010.0, 20.0, "s#2.0", "s#3.0")
    path = tmp_path / "spool" / "Accountantnew.log"
    path.parent.mkdir()
    replica = write_replica(path, leader.accountant, leader.matchlog, 1011.0)
    assert (replica.cycle_id, replica.match_seq, replica.held_rows) == (2, 3, 3)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir()] == [path.name]       # the temporary file was renamed

    adoption, logs = adopt(standby, path)
    assert adoption is not None and adoption.adopted
    assert logs[0]["event"].startswith("replica adopted") and logs[0]["file"] == str(path)
    assert standby.checked() == []                                      # the checks accept the adopted state
    assert standby.accountant.load().customers() == leader.accountant.load().customers()
    assert standby.accountant.last_cycle_id() == 2 and standby.accountant.charges(2) == {"alice@pool": 20.0}
    held = sorted(match.job for match, job_version, _ in standby.matchlog.held_matches() if job_version)
    assert held == ["s#1.0", "s#2.0", "s#3.0"]
    tables = {row[0] for row in sqlite3.connect(standby.accountant.path).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not any(name.startswith("negotiatord_replica") for name in tables)


def test_adoption_never_reuses_a_cycle_id_or_sequence_number_the_standby_gave(tmp_path, leader, standby):
    # the standby led before, up to cycle 7 and sequence number 4; the leader's replica stands at
    # cycle 3, written later (cycles are ordered by time: the leader took over from it since)
    for cycle_id in range(1, 8):
        standby.cycle(cycle_id, 100.0 + cycle_id, 1.0, *([f"old#{cycle_id}.0"] if cycle_id <= 4 else []))
    for cycle_id in range(1, 4):
        leader.cycle(cycle_id, 2000.0 + cycle_id, 5.0, f"new#{cycle_id}.0")
    path = tmp_path / "replica"
    write_replica(path, leader.accountant, leader.matchlog, 2004.0)
    seen_before = standby.matchlog.sequence()

    adoption, _ = adopt(standby, path)
    assert adoption is not None and adoption.adopted and adoption.next_cycle == 8
    assert standby.checked() == []
    assert standby.accountant.last_cycle_id() == 7          # goes on after the standby's own cycle 7
    assert standby.accountant.load().customers() == leader.accountant.load().customers()   # the leader's usage
    taken = standby.matchlog.since(seen_before, 100)
    assert [p.match.job for p in taken] == ["new#1.0", "new#2.0", "new#3.0"]
    assert min(p.seq for p in taken) > seen_before          # new numbers, above every one given here
    # the next cycle gets an id and numbers never given here
    standby.cycle(8, 5001.0, 1.0, "next#1.0")
    assert standby.matchlog.since(taken[-1].seq, 10)[0].cycle == 8


def test_an_older_replica_is_ignored_with_a_log_line(tmp_path, leader, standby):
    leader.cycle(1, 1000.0, 10.0, "s#1.0")
    path = tmp_path / "replica"
    write_replica(path, leader.accountant, leader.matchlog, 1001.0)
    standby.cycle(1, 1500.0, 99.0, "mine#1.0")              # committed after the replica's cycle
    own = standby.accountant.load().customers()

    adoption, logs = adopt(standby, path)
    assert adoption is not None and not adoption.adopted
    assert logs[0]["event"].startswith("replica ignored") and "not newer" in logs[0]["reason"]
    assert logs[0]["file"] == str(path)
    assert standby.accountant.load().customers() == own
    # its own replica, adopted once already, is ignored the same way on the next start
    write_replica(path, standby.accountant, standby.matchlog, 1501.0)
    adoption, _ = adopt(standby, path)
    assert adoption is not None and not adoption.adopted


def test_a_half_written_replica_is_refused_naming_the_file(tmp_path, leader, standby):
    for cycle_id in range(1, 30):
        leader.cycle(cycle_id, 1000.0 + cycle_id, 1.0, *(f"s#{cycle_id}.{n}" for n in range(20)))
    path = tmp_path / "replica"
    write_replica(path, leader.accountant, leader.matchlog, 2000.0)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ReplicaRefused, match="half-written") as refused:
        adopt(standby, path)
    assert str(path) in str(refused.value) and "move it aside" in str(refused.value)
    assert standby.accountant.last_cycle_id() == 0           # nothing was taken


@pytest.mark.parametrize("content", [b"[ Customer = ... ]\n", b"SQLite format 3\x00" + b"\x00" * 84])
def test_a_file_that_is_no_replica_is_refused_naming_the_file(tmp_path, content):
    path = tmp_path / "Accountantnew.log"
    path.write_bytes(content)
    with pytest.raises(ReplicaRefused) as refused:
        read_replica(path)
    assert str(path) in str(refused.value)


def test_an_empty_or_missing_file_is_no_replica(tmp_path, standby):
    path = tmp_path / "Accountantnew.log"
    assert read_replica(path) is None
    path.write_bytes(b"")                   # condor_replication creates STATE_FILE empty
    adoption, logs = adopt(standby, path)
    assert adoption is None and logs[0]["event"].startswith("no replica")


HA = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0",
      "MASTER_NEGOTIATOR_CONTROLLER": "HAD", "HAD_USE_REPLICATION": "True"}


def test_the_daemon_writes_its_replica_after_a_cycle_and_the_next_one_adopts_it(tmp_path):
    shipped = tmp_path / "Accountantnew.log"     # where condor_replication puts it, on both central managers
    leader = DaemonProcess(tmp_path / "leader", settings={**HA, "STATE_FILE": str(shipped)}, args=PRELOAD)
    leader.start()
    try:
        assert leader.wait_for_cycle(0)["Matches"] == SAMPLE_FIRST_CYCLE_MATCHES
        usage = leader.get("/v1/accountant")
        written = wait_for(lambda: leader.status()["replica"]["last_written"], 10, "the replica to be written")
    finally:
        assert leader.stop() == 0
    assert written["cycle"] == 1 and written["match_seq"] == SAMPLE_FIRST_CYCLE_MATCHES
    replica = read_replica(shipped)
    assert replica is not None and (replica.cycle_id, replica.held_rows) == (1, written["held_rows"])

    standby = DaemonProcess(tmp_path / "standby", settings={**HA, "STATE_FILE": str(shipped)}, args=PRELOAD)
    standby.start()
    try:
        adoption = standby.status()["replica"]["adoption"]
        assert adoption["adopted"] and adoption["next_cycle"] == 2
        assert [c["name"] for c in standby.get("/v1/accountant")["customers"]] == [
            c["name"] for c in usage["customers"]]
        # it holds what the leader matched: its first cycle matches none of those jobs again
        assert standby.wait_for_cycle(0)["Id"] == 2
        jobs = [m["job"] for m in standby.get("/v1/matches?after=0&limit=1000")["matches"] if m["cycle"] == 2]
    finally:
        assert standby.stop() == 0
    assert jobs == []

    whole = shipped.read_bytes()
    shipped.write_bytes(whole[: len(whole) // 2])
    refused(DaemonProcess(tmp_path / "third", settings={**HA, "STATE_FILE": str(shipped)}), str(shipped),
            "half-written")


def test_a_replica_of_another_negotiatord_version_is_refused_before_anything_is_taken(tmp_path, leader, standby):
    leader.cycle(1, 1000.0, 10.0, "s#1.0")
    path = tmp_path / "replica"
    write_replica(path, leader.accountant, leader.matchlog, 1001.0)
    with sqlite3.connect(path) as replica:
        replica.execute("UPDATE negotiatord_replica SET accountant_schema = accountant_schema + 1")
    with pytest.raises(ReplicaRefused, match="another version of negotiatord") as refused:
        adopt(standby, path)
    assert str(path) in str(refused.value)
    assert standby.accountant.last_cycle_id() == 0
