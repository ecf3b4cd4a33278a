"""negotiatord as the only negotiator of a real HTCondor 25.14 pool (the minipool): jobs submitted
with htcondor2 start and complete because negotiatord handed their schedd the matches.

The pool is a collector, two schedds (``vm`` and ``schedd2@vm``, a second schedd of the same host,
as HTCondor's ``-local-name`` runs one) and a startd with two 4-cpu partitionable slots under a
consumption policy, secured with IDTOKENS. negotiatord reads the pool's own config, as a
negotiator on its central manager would, with a token for ``negotiatord@minipool`` in a token
directory of its own. Cycles run on request (``POST /v1/reschedule``, as ``condor_reschedule``).
"""

from __future__ import annotations

import os
import signal
import time
import classad2
import pytest

from negotiatord.accountant import AccountantStore
from tests.minipool import MiniPool, minipool, wait_for
from tests.real_pool.conftest import JOB, SCHEDD2, negotiatord

def _slot_ads(pool: MiniPool) -> dict[str, classad2.ClassAd]:
    text = pool.condor("condor_status", "-l")
    return {ad["Name"]: ad for ad in classad2.parseAds(text, classad2.ParserType.Old)}


def _weight_after(slot: classad2.ClassAd, consumed: dict[str, float]) -> float:
    after = classad2.ClassAd({name: slot.lookup(name) for name in slot.keys()})
    for asset, amount in consumed.items():
        after[asset] = slot.eval(asset) - amount
    return after.eval("SlotWeight")


def test_jobs_run_and_a_pslot_takes_several_in_one_cycle(pool, tmp_path):
    cluster = pool.submit(4, arguments="3", **JOB)
    pool.wait_until_advertised("minipool@minipool", idle=4)
    slots = _slot_ads(pool)
    daemon = negotiatord(pool, tmp_path / "negotiatord")
    try:
        first = daemon.wait_for_cycle(0)
        matches = daemon.get("/v1/matches")["matches"]
        # depth first: one p-slot takes all four jobs in the first cycle
        assert first["Matches"] == 4 and {m["cycle"] for m in matches} == {first["Id"]}
        assert len({m["slot"] for m in matches}) == 1
        slot = slots[matches[0]["slot"]]
        # each match costs the slot's SlotWeight before it minus after it (consumption policies,
        # seed 003), as classad2 evaluates the real slot ad: 1.5 match units here
        weight = slot.eval("SlotWeight")
        for match in matches:
            after = _weight_after(slot, match["consumed"])
            assert match["cost"] == pytest.approx(weight - after) == pytest.approx(1.5)
            slot = classad2.ClassAd({name: slot.lookup(name) for name in slot.keys()})
            for asset, amount in match["consumed"].items():
                slot[asset] = slot.eval(asset) - amount
            weight = after
        with AccountantStore(daemon.state / "accountant.sqlite") as accountant:
            assert accountant.charges(first["Id"])["minipool@minipool"] == pytest.approx(6.0)

        def completed() -> list[dict]:
            done = [job for job in pool.history() if job["ClusterId"] == cluster and job["JobStatus"] == 4]
            return done if len(done) == 4 else []
        for job in wait_for(completed, 90, "the four jobs to complete"):
            assert job["ExitCode"] == 0 and job["NumJobStarts"] == 1
        status = daemon.status()["schedds"]
        assert status["hand_out"]["handed"] == 4 and status["failed_schedds"] == []
        # the sessions with both schedds, behind the shared port, are IDTOKENS and AES-GCM
        assert {(c["method"], c["user"], c["encrypted"]) for c in status["connections"]} == {
            ("IDTOKENS", "negotiatord@minipool", True)}
        assert all("sock=" in c["address"] for c in status["connections"])
    finally:
        daemon.stop()


def test_a_second_cycle_matches_what_the_first_left(pool, tmp_path):
    """Claim ids and assets are not handed out twice: a cycle right after the first one, before
    the startd has reported, matches only into what is left. The startd is stopped (SIGSTOP) for
    the two cycles, so that it cannot report in between: a p-slot it reports after one claim of
    several shows the others' cpus free, and any negotiator, HTCondor's too, may match them again
    (the startd then refuses the extra claim)."""
    daemon = negotiatord(pool, tmp_path / "negotiatord")
    startd = pool.daemon_pid_of("condor_startd")
    try:
        daemon.wait_for_cycle(0)
        cluster = pool.submit(10, arguments="20", **JOB)
        pool.wait_until_advertised("minipool@minipool", idle=10)
        os.kill(startd, signal.SIGSTOP)
        try:
            first = daemon.reschedule()
            second = daemon.reschedule()
        finally:
            os.kill(startd, signal.SIGCONT)
        matches = daemon.get("/v1/matches")["matches"]
        made = [m for m in matches if m["cycle"] in (first, second)]
        assert len(made) == 8          # the pool's 8 cpus, once each
        wait_for(lambda: _running(pool, cluster) == 8, 60, "eight jobs running")
    finally:
        daemon.stop()
        pool.remove_all()


def test_a_token_the_collector_refuses_is_named_and_the_daemon_keeps_running(pool, tmp_path):
    outsider = pool.token_directory("someone@minipool")
    daemon = negotiatord(pool, tmp_path / "negotiatord", tokens=outsider)
    try:
        daemon.wait_for_cycle(0)
        collector = daemon.status()["collector"]
        assert collector["reason"] == "not authorized"
        assert "ALLOW_NEGOTIATOR" in collector["error"]
        failures = [e for e in daemon.log_events() if e.get("event", "").startswith("collector query failed")]
        assert failures and "Traceback" not in daemon.log_text()
        assert daemon.reschedule() > 0    # still cycling
        # its ads are refused too (collector.cpp takes UPDATE_NEGOTIATOR_AD at the NEGOTIATOR level):
        # said once with the cause, however many cycles try again, and nothing else is lost
        cycle = daemon.reschedule()
        advertised = wait_for(lambda: (state := daemon.status()["advertising"])["failed"] and
                              daemon.status()["last_cycle"]["Id"] == cycle and state, 30, "the ads to be refused")
        [refused] = advertised["failed"]
        assert refused["reason"] == "not authorized" and "ALLOW_NEGOTIATOR" in refused["detail"]
        said = [e for e in daemon.log_events() if e.get("event", "").startswith("advertising to the collector failed")]
        assert len(said) == 1 and said[0]["reason"] == "not authorized"
    finally:
        daemon.stop()


def test_a_missing_token_is_named_with_where_it_was_looked_for(pool, tmp_path):
    empty = tmp_path / "no-tokens"
    empty.mkdir(mode=0o700)
    daemon = negotiatord(pool, tmp_path / "negotiatord", tokens=empty)
    try:
        daemon.wait_for_cycle(0)
        collector = daemon.status()["collector"]
        assert collector["reason"] == "authentication refused"
        assert "Traceback" not in daemon.log_text()
    finally:
        daemon.stop()


def _running(pool: MiniPool, cluster: int, schedd: str | None = None) -> int:
    return len([job for job in pool.jobs_at(schedd, f"ClusterId == {cluster} && JobStatus == 2")])


def test_a_schedd_that_refuses_negotiatord_is_named_and_costs_only_its_submitters(pool, tmp_path):
    # schedd2 alone stops trusting negotiatord at the NEGOTIATOR level (schedd.cpp registers
    # NEGOTIATE there); the collector and the other schedd still answer
    pool.add_config("60-refuse.config", "SCHEDD2.ALLOW_NEGOTIATOR = condor@minipool\n"
                                        "SCHEDD2.ALLOW_NEGOTIATOR_SCHEDD = condor@minipool\n")
    pool.reconfig()
    time.sleep(2)
    mine = pool.submit(1, arguments="30", **JOB)
    theirs = pool.submit(1, schedd=SCHEDD2, arguments="30", **JOB)
    pool.wait_until_advertised("minipool@minipool")
    pool.wait_until_advertised("minipool@minipool", schedd=SCHEDD2)
    daemon = negotiatord(pool, tmp_path / "negotiatord")
    try:
        daemon.wait_for_cycle(0)
        failed = daemon.status()["schedds"]["failed_schedds"]
        assert len(failed) == 1 and failed[0]["schedd"] == SCHEDD2 and failed[0]["phase"] == "prefetch"
        assert failed[0]["reason"] == "not authorized" and "negotiatord@minipool" in failed[0]["detail"]
        assert "ALLOW_NEGOTIATOR" in failed[0]["detail"]
        assert failed[0]["submitters"] == ["minipool@minipool"]
        wait_for(lambda: _running(pool, mine) == 1, 60, "the job at the schedd that answered to run")
        assert _running(pool, theirs, SCHEDD2) == 0
        assert "Traceback" not in daemon.log_text()
    finally:
        daemon.stop()
        (pool.directory / "config.d" / "60-refuse.config").unlink()
        pool.reconfig()
        pool.remove_all()


def test_a_schedd_that_stops_answering_mid_session_costs_only_its_own_submitters(pool, tmp_path):
    pool.submit(1, arguments="1", **JOB)
    pool.submit(1, schedd=SCHEDD2, arguments="1", **JOB)
    pool.wait_until_advertised("minipool@minipool")
    pool.wait_until_advertised("minipool@minipool", schedd=SCHEDD2)
    daemon = negotiatord(pool, tmp_path / "negotiatord", NEGOTIATOR_TIMEOUT="3")
    schedd2 = pool.daemon_pid("schedd2")
    try:
        # both schedds negotiate; negotiatord keeps a connection to each for the next session
        daemon.wait_for_cycle(0)
        assert daemon.status()["schedds"]["prefetch"]["submitters"] == 2
        mine = pool.submit(2, arguments="30", **JOB)
        theirs = pool.submit(2, schedd=SCHEDD2, arguments="30", **JOB)
        pool.wait_until_advertised("minipool@minipool", idle=2)
        pool.wait_until_advertised("minipool@minipool", idle=2, schedd=SCHEDD2)
        os.kill(schedd2, signal.SIGSTOP)
        try:
            daemon.reschedule()
            failed = daemon.status()["schedds"]["failed_schedds"]
            assert [(f["schedd"], f["reason"], f["submitters"]) for f in failed] == [
                (SCHEDD2, "no answer in time", ["minipool@minipool"])]
            assert "waiting for an answer" in failed[0]["detail"]      # on the kept connection
            wait_for(lambda: _running(pool, mine) == 2, 60, "the two jobs at the answering schedd to run")
        finally:
            os.kill(schedd2, signal.SIGCONT)

        # once it answers again, its jobs get their turn
        def theirs_run() -> bool:
            daemon.reschedule()
            return _running(pool, theirs, SCHEDD2) == 2
        wait_for(theirs_run, 60, "schedd2's jobs to run once it answers", every=1)
        assert daemon.status()["schedds"]["failed_schedds"] == []
    finally:
        daemon.stop()
        pool.remove_all()


def test_two_groups_get_their_quotas(pool, tmp_path):
    # GROUP_QUOTA in slot weight: each job here weighs 1.5, so quotas of 4.5 and 1.5 are three jobs
    # and one (HTCondor's hierarchical group quotas, no surplus)
    daemon = negotiatord(pool, tmp_path / "negotiatord", GROUP_NAMES="group_a, group_b",
                         GROUP_QUOTA_group_a="4.5", GROUP_QUOTA_group_b="1.5", GROUP_ACCEPT_SURPLUS="False")
    try:
        daemon.wait_for_cycle(0)
        a = pool.submit(6, arguments="60", accounting_group="group_a", accounting_group_user="alice", **JOB)
        b = pool.submit(6, arguments="60", accounting_group="group_b", accounting_group_user="bob", **JOB)
        pool.wait_until_advertised("group_a.alice@minipool", "group_b.bob@minipool")
        daemon.reschedule()
        wait_for(lambda: (_running(pool, a), _running(pool, b)) == (3, 1), 60, "three group_a jobs and one group_b job")
        in_use = {c["name"]: c["weighted_in_use"] for c in daemon.get("/v1/accountant")["customers"]}
        assert in_use["group_a"] == pytest.approx(4.5) and in_use["group_b"] == pytest.approx(1.5)
    finally:
        daemon.stop()
        pool.remove_all()


def test_jobs_run_on_a_pool_without_a_shared_port(tmp_path):
    with minipool(cpus=2, shared_port=False) as direct:
        cluster = direct.submit(1, arguments="1")
        direct.wait_until_advertised("minipool@minipool")
        daemon = negotiatord(direct, tmp_path / "negotiatord")
        try:
            wait_for(lambda: any(job["ClusterId"] == cluster for job in direct.history()), 60,
                     "the job to complete")
            [connection] = daemon.status()["schedds"]["connections"]
            assert "sock=" not in connection["address"] and connection["encrypted"]
        finally:
            daemon.stop()
