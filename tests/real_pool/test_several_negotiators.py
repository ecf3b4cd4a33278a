"""Two negotiatords splitting one real pool, each seen by HTCondor's own tools.

As the HTCondor manual sets up several negotiators for one pool: each with its own name
(``NEGOTIATOR_NAME``), its own slots (``NEGOTIATOR_SLOT_CONSTRAINT``, which matchmaker.cpp's
``obtainAdsFromCollector`` puts in its collector query) and its own accountant, both negotiating
with the same schedds. References: matchmaker.cpp (``obtainAdsFromCollector``,
``startNegotiateProtocol`` sending ``NegotiatorJobConstraint``, ``updateCollector``,
``forwardAccountingData``, ``invalidateNegotiatorAd``), the collector's keys (hashkey.cpp: a
Negotiator ad by ``Name``, an Accounting ad by ``Name`` and ``NegotiatorName``), schedd.cpp
``negotiate`` (the schedd offers only the jobs ``NegotiatorJobConstraint`` selects), and the
stock ``condor_status`` and ``condor_userprio`` of HTCondor 25.14 reading what the collector holds.
"""

from __future__ import annotations

import json

import pytest

from tests.minipool import MiniPool, wait_for
from tests.real_pool.conftest import JOB, SCHEDD2, negotiatord


def _negotiators(pool: MiniPool) -> dict[str, dict]:
    """The Negotiator ads the collector holds, by Name (``condor_status -negotiator``'s)."""
    ads = json.loads(pool.condor("condor_status", "-negotiator", "-json") or "[]")
    return {ad["Name"]: ad for ad in ads}


def _accounting(pool: MiniPool) -> dict[tuple[str, str], dict]:
    """The Accounting ads, by (NegotiatorName, Name) (``condor_status -subsystem accounting``'s)."""
    ads = json.loads(pool.condor("condor_status", "-subsystem", "accounting", "-json") or "[]")
    return {(ad["NegotiatorName"], ad["Name"]): ad for ad in ads}


def _advertised(pool: MiniPool, name: str, cycle: int) -> dict:
    """The Negotiator ad ``name``, once the collector has it with ``cycle`` as its last cycle."""
    def current() -> dict | None:
        ad = _negotiators(pool).get(name)
        return ad if ad is not None and ad.get("LastNegotiationCycleId0", 0) >= cycle else None
    return wait_for(current, 30, f"{name}'s Negotiator ad with cycle {cycle}")


def _accounting_of(pool: MiniPool, name: str, last_update: float) -> dict[str, dict]:
    """The Accounting ads of negotiator ``name`` by customer, once updated to ``last_update``."""
    def current() -> dict[str, dict] | None:
        mine = {key[1]: ad for key, ad in _accounting(pool).items() if key[0] == name}
        return mine if mine.get("minipool@minipool", {}).get("LastUpdate") == int(last_update) else None
    return wait_for(current, 30, f"{name}'s Accounting ads")


def test_two_negotiatords_split_the_slots_and_both_are_seen_by_htcondors_tools(pool, tmp_path):
    one = negotiatord(pool, tmp_path / "one", NEGOTIATOR_NAME="shard_one", NEGOTIATOR_SLOT_CONSTRAINT="SlotID == 1",
                      NEGOTIATOR_UPDATE_INTERVAL="1")
    two = negotiatord(pool, tmp_path / "two", NEGOTIATOR_NAME="shard_two", NEGOTIATOR_SLOT_CONSTRAINT="SlotID == 2")
    names = {"shard_one@vm": one, "shard_two@vm": two}
    try:
        # the start-up cycles, over an idle pool: each sees its own p-slot only
        for daemon in (one, two):
            assert daemon.wait_for_cycle(0)["TotalSlots"] == 1
        cluster = pool.submit(8, arguments="3", **JOB)
        pool.wait_until_advertised("minipool@minipool", idle=8)
        slot_of = {}
        for name, daemon in names.items():
            daemon.reschedule()
            matches = daemon.get("/v1/matches")["matches"]
            assert matches, f"{name} matched nothing"
            slot_of[name] = {match["slot"] for match in matches}
        # neither matched the other's slot, and jobs start under both
        assert slot_of == {"shard_one@vm": {"slot1@vm"}, "shard_two@vm": {"slot2@vm"}}

        def ran_on_both() -> bool:
            hosts = {job.get("LastRemoteHost", "").partition("_")[0].partition("@")[0]
                     for job in pool.history() if job["ClusterId"] == cluster}
            return {"slot1", "slot2"} <= hosts
        wait_for(ran_on_both, 90, "jobs to run on both negotiatords' slots")

        # condor_status -negotiator shows both, with each one's last cycle
        for name, daemon in names.items():
            ad = _advertised(pool, name, daemon.status()["last_cycle"]["Id"])
            assert ad["LastNegotiationCycleTotalSlots0"] == 1 and ad["AuthenticatedIdentity"] == "negotiatord@minipool"
            assert ad["NegotiatordURL"] == daemon.url
        table = pool.condor("condor_status", "-negotiator")
        assert "shard_one@vm" in table and "shard_two@vm" in table
        # between cycles, every NEGOTIATOR_UPDATE_INTERVAL (updateCollector's timer)
        before = _negotiators(pool)["shard_one@vm"]
        again = wait_for(lambda: (ad := _negotiators(pool)["shard_one@vm"])["UpdateSequenceNumber"] >=
                         before["UpdateSequenceNumber"] + 2 and ad, 10, "shard_one's ad to be sent again")
        assert again["LastNegotiationCycleId0"] == before["LastNegotiationCycleId0"]

        # each its own accountant, advertised under its name with /v1/accountant's figures
        for name, daemon in names.items():
            daemon.reschedule()
            document = daemon.get("/v1/accountant")
            mine = _accounting_of(pool, name, document["last_update"])
            customer = {c["name"]: c for c in document["customers"]}["minipool@minipool"]
            ad = mine["minipool@minipool"]
            assert ad["Priority"] == pytest.approx(customer["effective_priority"])
            assert ad["PriorityFactor"] == pytest.approx(customer["factor"])
            assert ad["WeightedAccumulatedUsage"] == pytest.approx(customer["accumulated_usage_s"])
            assert ad["AccountingGroup"] == "<none>" and ad["IsAccountingGroup"] is False
            assert mine["<none>"]["IsAccountingGroup"] is True
        # the stock condor_userprio reads them from the collector, one negotiator's by -name
        shown = pool.condor("condor_userprio", "-name", "shard_one@vm", "-allusers", "-collector")
        assert "minipool@minipool" in shown
    finally:
        for daemon in names.values():
            daemon.stop()
        pool.remove_all()
    # a stopped negotiatord takes its ads back
    assert not names.keys() & _negotiators(pool).keys()
    assert not {key[0] for key in _accounting(pool)} & names.keys()


def test_the_job_and_submitter_constraints_are_applied_by_the_schedds_and_the_collector(pool, tmp_path):
    """NegotiatorJobConstraint: the schedd offers only the 512 MB jobs; NEGOTIATOR_SUBMITTER_CONSTRAINT
    in the collector query: schedd2's submitter is not negotiated with at all. (The schedd may run
    the other jobs on the leftovers of the p-slot it claimed, CLAIM_PARTITIONABLE_LEFTOVERS,
    without any negotiator: that is not asked here.)"""
    small = pool.submit(2, arguments="1", **JOB)
    pool.submit(2, arguments="1", request_memory="600")
    theirs = pool.submit(1, schedd=SCHEDD2, arguments="1", **JOB)
    pool.wait_until_advertised("minipool@minipool", idle=4)
    pool.wait_until_advertised("minipool@minipool", schedd=SCHEDD2)
    daemon = negotiatord(pool, tmp_path / "negotiatord", NEGOTIATOR_JOB_CONSTRAINT="RequestMemory == 512",
                         NEGOTIATOR_SUBMITTER_CONSTRAINT='ScheddName == "vm"', NEGOTIATOR_NAME="jobs_of_512",
                         NEGOTIATOR_ADVERTISE_ACCOUNTING="False")
    try:
        cycle = daemon.wait_for_cycle(0)["Id"]
        # its Negotiator ad, and no Accounting ad (NEGOTIATOR_ADVERTISE_ACCOUNTING)
        _advertised(pool, "jobs_of_512@vm", cycle)
        assert not [key for key in _accounting(pool) if key[0] == "jobs_of_512@vm"]
        schedds = daemon.status()["schedds"]
        # only the schedd vm was asked (its submitters of earlier tests too, with nothing idle),
        # and it offered the two 512 MB jobs only
        addresses = dict(line.split() for line in pool.condor("condor_status", "-schedd", "-af", "Name",
                                                              "MyAddress").splitlines())
        assert {c["address"] for c in schedds["connections"]} == {addresses["vm"]}
        assert schedds["prefetch"]["jobs"] == 2
        assert "RequestMemory" in schedds["significant_attributes"].split(",")
        assert {m["job"].split("#")[1].split(".")[0] for m in daemon.get("/v1/matches")["matches"]} == {str(small)}
        wait_for(lambda: len([j for j in pool.history() if j["ClusterId"] == small]) == 2, 60, "the 512 MB jobs to run")
        [waiting] = pool.jobs_at(SCHEDD2, f"ClusterId == {theirs}")
        assert waiting["JobStatus"] == 1
    finally:
        daemon.stop()
        pool.remove_all()
