"""A restarted daemon does not hand out again the matches it published before the restart.

Holds on matched jobs and slots are kept with the match log (the version of each ad a match was
made against); a restarted daemon holds the same jobs and slots again as soon as ads of those
versions are filed, and lets go of them when newer ones are.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

from negotiatord.cycle.result import Match
from negotiatord.feed.kinds import AdKind
from negotiatord.publish.holds import Hold, RestoredHolds
from negotiatord.publish.matchlog import SCHEMA_VERSION, MatchLog

from tests.service_harness import SAMPLE_FIRST_CYCLE_MATCHES, SAMPLE_POOL, DaemonProcess

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
PRELOAD = ["--preload-slots", str(SAMPLE_POOL["slots"]), "--preload-jobs", str(SAMPLE_POOL["jobs"])]


def test_a_restart_with_the_same_preloads_publishes_no_match_twice(tmp_path):
    first = DaemonProcess(tmp_path / "d", settings=QUICK, args=PRELOAD)
    first.start()
    try:
        assert first.wait_for_cycle(0)["Matches"] == SAMPLE_FIRST_CYCLE_MATCHES
    finally:
        assert first.stop() == 0
    second = DaemonProcess(tmp_path / "d", settings=QUICK, args=PRELOAD)
    second.start()
    try:
        assert second.wait_for_cycle(1)["Id"] == 2
        assert second.status()["held"]["jobs"] == SAMPLE_FIRST_CYCLE_MATCHES
        second.reschedule()
        matches = second.get("/v1/matches?after=0&limit=10000")["matches"]
    finally:
        assert second.stop() == 0
    jobs = Counter(m["job"] for m in matches)
    twice = [job for job, n in jobs.items() if n > 1]
    assert len(jobs) == SAMPLE_FIRST_CYCLE_MATCHES and max(jobs.values()) == 1, twice
    assert {m["cycle"] for m in matches} == {1}
    restored = [e for e in second.log_events() if e["event"].startswith("matched jobs and slots held again")]
    assert restored and restored[0]["held"] == SAMPLE_FIRST_CYCLE_MATCHES + len({m["slot"] for m in matches})


def test_a_match_log_of_schema_1_is_upgraded_in_place(tmp_path):
    path = tmp_path / "matches.sqlite"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (1);
        CREATE TABLE matches (seq INTEGER PRIMARY KEY AUTOINCREMENT, cycle_id INTEGER NOT NULL,
            time REAL NOT NULL, job TEXT NOT NULL, slot TEXT NOT NULL, submitter TEXT NOT NULL,
            grp TEXT NOT NULL, cost REAL NOT NULL, consumed TEXT NOT NULL,
            published INTEGER NOT NULL DEFAULT 0);
        INSERT INTO matches (cycle_id, time, job, slot, submitter, grp, cost, consumed, published)
            VALUES (1, 100.0, 'j', 's', 'alice@site', '<none>', 1.0, '{"Cpus": 1}', 1);
    """)
    old.close()
    log = MatchLog(path)
    try:
        assert [m.match.job for m in log.since(0, 10)] == ["j"]
        assert log.held_matches() == []                      # no versions kept: nothing to hold
    finally:
        log.close()
    assert sqlite3.connect(path).execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION


def test_only_what_may_still_hold_is_read_back(tmp_path):
    log = MatchLog(tmp_path / "matches.sqlite")
    slot_v1 = [Hold(AdKind.SLOT, "p", None, "usn=1", None)]
    slot_v2 = [Hold(AdKind.SLOT, "p", None, "usn=2", None)]
    try:
        for cycle, (job, job_version, slot_holds) in enumerate(
                [("a", "a1", slot_v1), ("b", "b1", slot_v1), ("a", "a2", slot_v2), ("c", "c1", slot_v2)], 1):
            log.stage(cycle, 100.0 * cycle, [Match(job, "p", "alice@site", "<none>", 1.0, {"Cpus": 1})],
                      [Hold(AdKind.JOB, job, None, job_version, None), *slot_holds])
            log.publish(cycle)
        held = log.held_matches()
    finally:
        log.close()
    # job a's first match and the slot's matches against its first version hold nothing any more
    assert [(m.job, job_version, slot_version) for m, job_version, slot_version in held] == \
           [("b", "b1", None), ("a", "a2", "usn=2"), ("c", "c1", "usn=2")]
    restored = RestoredHolds.from_log(held)
    assert restored.jobs == {"a": "a2", "b": "b1", "c": "c1"}
    assert restored.slots == {"p": ("usn=2", [m for m, _, slot_version in held if slot_version])}
