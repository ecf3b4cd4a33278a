"""kill -9 in the middle of a cycle loses that cycle and nothing else, and never charges twice;
SIGTERM in the middle of one abandons it cleanly.

The daemon commits a first cycle over the real OSPool slots and job ads, then is SIGKILLed while
negotiating a second, longer one (hundreds of distinct requests). The databases are read directly
after the kill and again after a restart: cycle 1's charges and published matches are exactly as
served before the kill, the killed cycle left no charge and no match, and the restarted daemon
commits the next cycle under the killed cycle's id, once.

The child process a cycle negotiates in may crash on its own (a signal): that cycle fails, with
nothing committed, and the daemon goes on.
"""

from __future__ import annotations

import os
import signal
import time

import classad2
import pytest

from negotiatord.accountant import AccountantStore
from negotiatord.publish.matchlog import MatchLog

from tests.service_harness import NOW, POOL, DaemonProcess
from tests.commands.test_negotiate import as_ospool_user_would_submit, real_job_ads

SLOW_REQUESTS = 600   # distinct autoclusters: the second cycle negotiates for a second or two


def _slow_jobs() -> str:
    """Idle OSPool-targeted jobs, each its own autocluster (a distinct RequestMemory)."""
    bases = [as_ospool_user_would_submit(ad) for ad in real_job_ads()
             if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]
    texts = []
    for i in range(SLOW_REQUESTS):
        ad = classad2.parseOne(bases[i % len(bases)].printOld(), classad2.ParserType.Old)
        ad["GlobalJobId"] = f"crash.example.org#{i}.0#1"
        ad["ProcId"] = i
        ad["RequestMemory"] = 1024 + i
        texts.append(ad.printOld())
    return "\n".join(texts)


def _wait_for_phase(daemon: DaemonProcess, phase: str) -> None:
    deadline = time.monotonic() + 30
    while daemon.status()["cycle"]["phase"] != phase:
        assert time.monotonic() < deadline, daemon.log_text()
        time.sleep(0.01)


def _published(daemon: DaemonProcess) -> list[tuple]:
    log = MatchLog(daemon.state / "matches.sqlite")
    try:
        return [(m.seq, m.cycle, m.match.job, m.match.slot, m.match.cost) for m in log.since(0, 100000)]
    finally:
        log.close()


def test_sigkill_mid_cycle_keeps_every_committed_charge_and_no_more(tmp_path):
    jobs = tmp_path / "jobs.ads"
    real = real_job_ads()
    jobs.write_text("\n".join(ad.printOld() for ad in real + [as_ospool_user_would_submit(ad) for ad in real
                              if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]))
    settings = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
    first = DaemonProcess(tmp_path / "a", settings=settings,
                          args=["--now", str(NOW), "--preload-slots", str(POOL), "--preload-jobs", str(jobs)])
    first.start()
    assert first.wait_for_cycle(0)["Id"] == 1
    served = first.get("/v1/matches?after=0&limit=10000")["matches"]
    assert served, "cycle 1 matches the re-targeted jobs to free OSPool cores"
    with AccountantStore(first.state / "accountant.sqlite") as store:
        charges_1 = store.charges(1)
        records_1 = {r.name: r for r in store.load().customers()}
    assert sum(cost for name, cost in charges_1.items() if "@" in name) == sum(m["cost"] for m in served)

    assert first.request("POST", "/v1/ads/jobs", _slow_jobs()).body["accepted"] == SLOW_REQUESTS
    assert first.request("POST", "/v1/reschedule").status == 202
    _wait_for_phase(first, "negotiate")
    first.kill()

    with AccountantStore(first.state / "accountant.sqlite") as store:
        assert store.last_cycle_id() == 1
        assert store.charges(1) == charges_1 and store.charges(2) == {}
        assert {r.name: r for r in store.load().customers()} == records_1
    expected = [(m["seq"], m["cycle"], m["job"], m["slot"], m["cost"]) for m in served]
    assert _published(first) == expected

    # the same state directory, the slots only: the restarted daemon's first cycle is cycle 2
    second = DaemonProcess(tmp_path / "a", settings=settings, args=["--now", str(NOW), "--preload-slots", str(POOL)])
    second.start()
    assert second.wait_for_cycle(0)["Id"] == 2
    assert second.get("/v1/matches?after=0&limit=10000")["matches"] == served
    # SIGTERM in the middle of a cycle abandons it cleanly: a prompt exit 0, nothing committed
    assert second.request("POST", "/v1/ads/jobs", _slow_jobs()).body["accepted"] == SLOW_REQUESTS
    assert second.request("POST", "/v1/reschedule").status == 202
    _wait_for_phase(second, "negotiate")
    asked = time.monotonic()
    assert second.stop() == 0
    assert time.monotonic() - asked < 5
    assert [e for e in second.log_events() if e["event"] == "stopping"][-1]["cycle_in_flight"] is True
    with AccountantStore(second.state / "accountant.sqlite") as store:
        assert store.last_cycle_id() == 2
        assert store.charges(1) == charges_1 and store.charges(2) == {}
        for name, before in records_1.items():
            after = store.load().record(name)
            # cycle 2 charged what was in use since cycle 1 (its matches), for the time between: once
            elapsed = after.last_update_time - before.last_update_time
            assert after.accumulated_usage == pytest.approx(before.accumulated_usage + before.weighted_usage * elapsed)
    assert _published(second) == expected


def _wait_for_child(daemon: DaemonProcess) -> int:
    """The pid of the child process negotiating the running cycle, once it has one."""
    deadline = time.monotonic() + 30
    while (pid := daemon.status()["cycle"]["child_pid"]) is None:
        assert time.monotonic() < deadline, daemon.log_text()
        time.sleep(0.01)
    return pid


def test_a_crash_of_the_cycles_child_process_fails_that_cycle_only(tmp_path):
    # A segmentation fault in a native library (classad2, a numba kernel) or the kernel's OOM
    # killer ends the child process that negotiates a cycle; the kernel delivers the same signal
    # to it here. The daemon names the child and the signal, commits nothing of that cycle, and
    # negotiates the next one as usual.
    jobs = tmp_path / "jobs.ads"
    jobs.write_text(_slow_jobs())
    settings = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0",
                "NEGOTIATORD_CYCLE_WORKER": "fork"}
    daemon = DaemonProcess(tmp_path / "a", settings=settings,
                           args=["--now", str(NOW), "--preload-slots", str(POOL), "--preload-jobs", str(jobs)])
    daemon.start()
    try:
        child = _wait_for_child(daemon)
        assert child != daemon.process.pid
        os.kill(child, signal.SIGSEGV)
        deadline = time.monotonic() + 30
        while not (failed := [e for e in daemon.log_events() if e["event"].startswith("cycle process failed")]):
            assert time.monotonic() < deadline, daemon.log_text()
            time.sleep(0.05)
        assert failed[0]["pid"] == child and "signal 11 (SIGSEGV)" in failed[0]["reason"]
        assert failed[0]["level"] == "error"
        status = daemon.status()
        assert status["last_cycle"] is None and status["counters"]["cycle_failures"] == 1
        with AccountantStore(daemon.state / "accountant.sqlite") as store:
            assert store.last_cycle_id() == 0
        assert _published(daemon) == []

        assert daemon.reschedule() == 1                 # the next cycle commits, under the failed one's id
        assert daemon.status()["last_cycle"]["Matches"] > 0
        assert _published(daemon)
    finally:
        daemon.stop()
