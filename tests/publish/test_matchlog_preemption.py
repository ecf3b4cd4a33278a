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


QUOTA = Preemption("carol-schedd#3.0#1", "slot3@host", "group_a.carol@site", "group_a", None, None, None, "quota")


def test_a_quota_preemption_is_published_in_the_sequence_with_no_job(tmp_path: Path) -> None:
    """YuniKorn's design "Quota Enforcement through Preemption": the victim is preempted with no
    ask taking its place. It goes out after the cycle's matches, in the same sequence, as a row
    without job, submitter or group that names the victim, whose it was and the rule."""
    log = MatchLog(tmp_path / "matches.sqlite")
    try:
        log.stage(1, 100.0, [PREEMPTING, PLAIN], preemptions=[PREEMPTION, QUOTA])
        log.publish(1)
        published = log.since(0, 10)
        assert [p.match for p in published] == [PREEMPTING, PLAIN, QUOTA]   # the match's own preemption once
        assert published[2].document() == {
            "seq": 3, "cycle": 1, "time": 100.0, "job": None, "slot": "slot3@host", "submitter": None,
            "group": None, "cost": 0.0, "consumed": {}, "preempts": "carol-schedd#3.0#1",
            "victim_submitter": "group_a.carol@site", "victim_group": "group_a", "rule": "quota", "strategy": None}
        assert set(published[2].document()) == set(published[0].document())   # one shape for both
        assert log.quota_preemptions() == [(100.0, QUOTA)]
        assert [m for m, _, _ in log.held_matches()] == []     # no ad versions were staged, and QUOTA holds nothing
    finally:
        log.close()


def test_a_match_log_of_schema_3_is_copied_into_rows_that_may_lack_a_job(tmp_path: Path) -> None:
    """Schema 3 required a job on every row; its rows and its sequence carry over: the next number
    follows the highest ever given (seq 3, a staged row dropped before the upgrade), so a reader
    resuming after 3 misses nothing."""
    path = tmp_path / "matches.sqlite"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (3);
        CREATE TABLE matches (seq INTEGER PRIMARY KEY AUTOINCREMENT, cycle_id INTEGER NOT NULL,
            time REAL NOT NULL, job TEXT NOT NULL, slot TEXT NOT NULL, submitter TEXT NOT NULL,
            grp TEXT NOT NULL, cost REAL NOT NULL, consumed TEXT NOT NULL,
            published INTEGER NOT NULL DEFAULT 0, job_version TEXT, slot_version TEXT, preemption TEXT);
        CREATE INDEX matches_by_cycle ON matches (cycle_id);
        INSERT INTO matches (cycle_id, time, job, slot, submitter, grp, cost, consumed, published)
            VALUES (1, 100.0, 'j1', 's1', 'alice@site', '<none>', 1.0, '{"Cpus": 1}', 1),
                   (1, 100.0, 'j2', 's2', 'alice@site', '<none>', 1.0, '{"Cpus": 1}', 1),
                   (2, 200.0, 'j3', 's3', 'alice@site', '<none>', 1.0, '{"Cpus": 1}', 0);
        DELETE FROM matches WHERE published = 0;
    """)
    old.close()
    log = MatchLog(path)
    try:
        assert [(m.seq, m.match.job) for m in log.since(0, 10)] == [(1, "j1"), (2, "j2")]
        log.stage(3, 300.0, [], preemptions=[QUOTA])
        log.publish(3)
        assert [(m.seq, m.match) for m in log.since(2, 10)] == [(4, QUOTA)]
    finally:
        log.close()
    assert sqlite3.connect(path).execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
