"""A restarted daemon does not hand out again the matches it published before the restart.

Holds on matched jobs and slots are kept with the match log (the version of each ad a match was
made against); a restarted daemon holds the same jobs and slots again as soon as ads of those
versions are filed, and lets go of them when newer ones are.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

from negotiatord.publish.matchlog import SCHEMA_VERSION, MatchLog

from tests.service_harness import SAMPLE_POOL, DaemonProcess

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
PRELOAD = ["--preload-slots", str(SAMPLE_POOL["slots"]), "--preload-jobs", str(SAMPLE_POOL["jobs"])]


def test_a_restart_with_the_same_preloads_publishes_no_match_twice(tmp_path):
    first = DaemonProcess(tmp_path / "d", settings=QUICK, args=PRELOAD)
    first.start()
    try:
        assert first.wait_for_cycle(0)["Matches"] == 47
    finally:
        assert first.stop() == 0
    second = DaemonProcess(tmp_path / "d", settings=QUICK, args=PRELOAD)
    second.start()
    try:
        assert second.wait_for_cycle(1)["Id"] == 2
        assert second.status()["held"]["jobs"] == 47
        second.reschedule()
        matches = second.get("/v1/matches?after=0&limit=10000")["matches"]
    finally:
        assert second.stop() == 0
    jobs = Counter(m["job"] for m in matches)
    assert len(jobs) == 47 and max(jobs.values()) == 1, [job for job, n in jobs.items() if n > 1]
    assert {m["cycle"] for m in matches} == {1}
    restored = [e for e in second.log_events() if e["event"].startswith("matched jobs and slots held again")]
    assert restored and restored[0]["held"] == 47 + len({m["slot"] for m in matches})


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
