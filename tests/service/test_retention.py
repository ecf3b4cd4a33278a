"""Match retention does not trust a clock that jumps, and never forgets what a hold still needs.

``NEGOTIATORD_MATCH_RETENTION`` is an age on the daemon's wall clock. A clock stepped years ahead
(or stepped back, then corrected) makes every published match look older than that at once; the
match log forgot them all, and the next restart handed the same jobs out again. Now a published
match is forgotten only once it is both older than the retention and more cycles old than the
retention spans at ``NEGOTIATOR_INTERVAL``, and never while its job or slot is still held (a
restarted daemon holds them again from the match log). A clock step larger than the cycle
interval is logged.
"""

from __future__ import annotations

import asyncio
import re
import time

from structlog.testing import capture_logs

from negotiatord.publish.matchlog import MatchLog, Retention
from negotiatord.service.daemon import DaemonClock

from tests.service.test_cycles import _match
from tests.service_harness import SAMPLE_FIRST_CYCLE_MATCHES, SAMPLE_POOL, DaemonProcess, in_process, next_cycle, serve

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
PRELOAD = ["--preload-slots", str(SAMPLE_POOL["slots"]), "--preload-jobs", str(SAMPLE_POOL["jobs"])]
NOW = 1790000200           # the sample jobs' own time
TEN_YEARS = 10 * 365 * 86400


def published(daemon: DaemonProcess) -> list[dict]:
    return daemon.get("/v1/matches?after=0&limit=1000")["matches"]


def test_a_clock_ten_years_ahead_forgets_no_match_and_hands_none_out_again(tmp_path):
    first = DaemonProcess(tmp_path / "d", settings=QUICK, args=[*PRELOAD, "--now", str(NOW)])
    first.start()
    try:
        assert first.wait_for_cycle(0)["Matches"] == SAMPLE_FIRST_CYCLE_MATCHES
    finally:
        first.stop()
    ahead = DaemonProcess(tmp_path / "d", settings=QUICK, args=[*PRELOAD, "--now", str(NOW + TEN_YEARS)])
    ahead.start()
    try:
        assert ahead.wait_for_cycle(1)["Matches"] == 0
        assert len(published(ahead)) == SAMPLE_FIRST_CYCLE_MATCHES
    finally:
        ahead.stop()
    back = DaemonProcess(tmp_path / "d", settings=QUICK, args=[*PRELOAD, "--now", str(NOW + 60)])
    back.start()
    try:
        assert back.wait_for_cycle(2)["Matches"] == 0             # every matched job is still held
        assert len(published(back)) == SAMPLE_FIRST_CYCLE_MATCHES
    finally:
        back.stop()


def test_a_match_whose_job_is_still_held_is_kept_past_the_retention(tmp_path):
    settings = {**QUICK, "NEGOTIATORD_MATCH_RETENTION": "0"}
    first = DaemonProcess(tmp_path / "d", settings=settings, args=PRELOAD)
    first.start()
    try:
        assert first.wait_for_cycle(0)["Matches"] == SAMPLE_FIRST_CYCLE_MATCHES
        first.reschedule()
        first.reschedule()
        assert len(published(first)) == SAMPLE_FIRST_CYCLE_MATCHES      # all held, none forgotten
        # newer ads for a matched job and its slot end their holds: the match is forgotten at the
        # next cycle (the slot's other matches stay: their jobs are still held)
        match = published(first)[0]
        job, slot = match["job"], match["slot"]
        job_ad = next(text for text in SAMPLE_POOL["jobs"].read_text().split("\n\n") if f'"{job}"' in text)
        slot_ad = next(text for text in SAMPLE_POOL["slots"].read_text().split("\n\n") if f'Name = "{slot}"' in text)
        assert first.request("POST", "/v1/ads/jobs", job_ad.replace("JobPrio = 0", "JobPrio = 5")).status == 200
        newer_slot = re.sub(r"UpdateSequenceNumber = (\d+)", lambda n: f"UpdateSequenceNumber = {int(n[1]) + 1}",
                            slot_ad)
        assert first.request("POST", "/v1/ads/slots", newer_slot).status == 200
        assert first.status()["held"]["jobs"] == SAMPLE_FIRST_CYCLE_MATCHES - 1
        time.sleep(1.1)          # a cycle's time is a whole second: the next one's is later than cycle 1's
        first.reschedule()
        assert job not in {m["job"] for m in published(first) if m["cycle"] == 1}
    finally:
        first.stop()
    second = DaemonProcess(tmp_path / "d", settings=settings, args=PRELOAD)
    second.start()
    try:
        second.wait_for_cycle(4)
        # the restarted daemon held every job whose match it kept: none was matched twice
        jobs = [m["job"] for m in published(second)]
        assert len(jobs) == len(set(jobs))
    finally:
        second.stop()


def test_pruning_needs_the_age_and_the_cycles_both(tmp_path):
    log = MatchLog(tmp_path / "matches.sqlite")
    try:
        for cycle in (1, 2, 3):
            log.stage(cycle, 100.0 * cycle, [_match(f"job{cycle}")])
            log.publish(cycle)
        assert log.prune(Retention(before=1e12, cycles=2), 3) == 1          # cycle 1 only: 2 and 3 are the last 2
        assert log.prune(Retention(before=150.0, cycles=0), 3) == 0         # old enough: none left
        assert log.prune(Retention(before=1e12, cycles=0, held_jobs=frozenset({"job2"})), 3) == 1
        assert [m.match.job for m in log.since(0, 10)] == ["job2"]
        assert log.prune(Retention(before=1e12, cycles=0, held_slots=frozenset({"slot-job2"})), 3) == 0
    finally:
        log.close()


def test_a_clock_step_larger_than_the_cycle_interval_is_logged(tmp_path, monkeypatch):
    daemon = in_process(tmp_path / "d", {**QUICK, "NEGOTIATOR_INTERVAL": "60"})
    real = time.time

    async def scenario(daemon) -> None:
        await next_cycle(daemon)
        monkeypatch.setattr(time, "time", lambda: real() + 3600)
        deadline = time.monotonic() + 10
        while not any(e["event"].startswith("the wall clock stepped") for e in events):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)

    with capture_logs() as events:
        serve(daemon, scenario)
    [step] = [e for e in events if e["event"].startswith("the wall clock stepped")]
    assert 3590 < step["step_s"] < 3610 and step["log_level"] == "warning"
    assert DaemonClock().offset == 0.0
