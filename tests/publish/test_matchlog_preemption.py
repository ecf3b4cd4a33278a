"""A preempting match keeps what it preempted through the match log: what /v1/matches and its
stream serve, and what a restarted daemon holds again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from negotiatord.cycle.result import Match, Preemption
from negotiatord.publish.matchlog import SCHEMA_VERSION, MatchLog

PREEMPTION = Preemption("bob-schedd#7.0#1", "slot1@host", "bob@site", "group_a", "alice-schedd#1.0#2",
                        "alice@site", "group_b", "priority", None)
PREEMPTING = Match("alice-schedd#1.0#2", "slot1@host", "alice@site", "group_b", 1.0, {"Cpus": 1}, PREEMPTION)
PLAIN = Match("alice-schedd#1.1#2", "slot2@host", "alice@site", "group_b", 1.0, {"Cpus": 1})


def test_a_preempting_match_is_published_with_its_victim(tmp_path: Path) -> None:
    log = MatchLog(tmp_path / "matches.sqlite")
    try:
        log.stage(1, 100.0, [PREEMPTING, PLAIN])
        log.publish(1)
        published = log.since(0, 10)
        assert [p.match for p in published] == [PREEMPTING, PLAIN]
        document = published[0].document()
        assert document["preempts"] == "bob-schedd#7.0#1"
        assert (document["victim_submitter"], document["victim_group"], document["rule"], document["strategy"]) == (
            "bob@site", "group_a", "priority", None)
        assert "preempts" not in published[1].document()
    finally:
        log.close()


def test_a_match_log_of_schema_2_gains_the_preemption_column(tmp_path: Path) -> None:
    path = tmp_path / "matches.sqlite"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (2);
        CREATE TABLE matches (seq INTEGER PRIMARY KEY AUTOINCREMENT, cycle_id INTEGER NOT NULL,
            time REAL NOT NULL, job TEXT NOT NULL, slot TEXT NOT NULL, submitter TEXT NOT NULL,
            grp TEXT NOT NULL, cost REAL NOT NULL, consumed TEXT NOT NULL,
            published INTEGER NOT NULL DEFAULT 0, job_version TEXT, slot_version TEXT);
        INSERT INTO matches (cycle_id, time, job, slot, submitter, grp, cost, consumed, published)
            VALUES (1, 100.0, 'j', 's', 'alice@site', '<none>', 1.0, '{"Cpus": 1}', 1);
    """)
    old.close()
    log = MatchLog(path)
    try:
        assert [(m.match.job, m.match.preemption) for m in log.since(0, 10)] == [("j", None)]
        log.stage(2, 200.0, [PREEMPTING])
        log.publish(2)
        assert log.since(1, 10)[0].match == PREEMPTING
    finally:
        log.close()
    assert sqlite3.connect(path).execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
