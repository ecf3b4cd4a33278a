"""Requests as jobs, claim ids spent once, and the attributes a schedd is told to send."""

from __future__ import annotations

from dataclasses import replace

import classad2

from negotiatord.pool.job_ads import ProcAd, whole_ad
from negotiatord.pool.jobs import submitter_of
from negotiatord.schedds.attributes import significant_attributes, trimmed
from negotiatord.schedds.claims import ClaimIds
from negotiatord.schedds.requests import RequestJobs
from negotiatord.schedds.submitters import Submitter, submitter_from_ad
from negotiatord.settings import load_settings
from tests.service_harness import ROOT

SUBMITTER = Submitter("alice@pool", "schedd.example", "<10.0.0.1:9618>", "", "alice@pool", True)


def _request(count: int, **extra: object) -> classad2.ClassAd:
    # the attributes a 25.x schedd sends with a request (schedd_negotiate.cpp sendJobInfo)
    ad = classad2.ClassAd({"ClusterId": 7, "ProcId": 2, "GlobalJobId": "schedd#7.2#100", "AutoClusterId": 3,
                           "RequestCpus": 1, "Owner": "alice", "WantMatchDiagnostics": 2,
                           "_condor_RESOURCE_COUNT": count})
    for name, value in extra.items():
        ad[name] = value
    return ad


def test_a_request_of_count_n_is_n_idle_jobs_of_the_submitter():
    jobs = RequestJobs()
    jobs.add(SUBMITTER, _request(3), max_count=100)
    assert list(jobs.records) == ["schedd#7.2#100", "schedd#7.2#100/1", "schedd#7.2#100/2"]
    copies = [whole_ad(record) for record in jobs.records.values()]
    assert [ad["GlobalJobId"] for ad in copies] == list(jobs.records)
    assert {(ad["JobStatus"], ad["User"], ad["ProcId"]) for ad in copies} == {(1, "alice@pool", 2)}
    request = jobs.request_of["schedd#7.2#100/2"]
    assert (request.cluster, request.proc, request.autocluster, request.diagnostics, request.count) == (7, 2, 3, 2, 3)
    # the copies share one ad, as the feed keeps a cluster's jobs
    assert all(isinstance(record, ProcAd) for record in list(jobs.records.values())[1:])


def test_a_submitter_group_prefix_renamed_is_charged_under_its_new_name_whatever_its_accounting_group():
    # matchmaker.cpp charges the session's submitter, which TransformSubmitterAd renamed; the
    # job's own AccountingGroup would name the submitter before the renaming (pool.jobs.submitter_of)
    renamed = replace(SUBMITTER, name="group_p.group_x.alice@pool")
    jobs = RequestJobs()
    jobs.add(renamed, _request(1, AccountingGroup="group_x.alice"), max_count=100)
    [record] = jobs.records.values()
    assert submitter_of(whole_ad(record)) == "group_p.group_x.alice@pool"
    # a submitter left as it was keeps its job's AccountingGroup
    jobs = RequestJobs()
    jobs.add(replace(SUBMITTER, name="group_x.alice@pool", owner="group_x.alice@pool"),
             _request(1, AccountingGroup="group_x.alice"), max_count=100)
    [record] = jobs.records.values()
    assert whole_ad(record)["AccountingGroup"] == "group_x.alice"
    assert submitter_of(whole_ad(record)) == "group_x.alice@pool"


def test_a_request_whose_expressions_read_its_identity_keeps_whole_copies():
    jobs = RequestJobs()
    jobs.add(SUBMITTER, _request(2, Rank=classad2.ExprTree("ProcId")), max_count=100)
    assert all(isinstance(record, classad2.ClassAd) for record in jobs.records.values())


def test_copies_are_capped_and_a_request_without_identity_is_named():
    jobs = RequestJobs()
    jobs.add(SUBMITTER, _request(1000), max_count=5)
    assert len(jobs.records) == 5
    nameless = classad2.ClassAd({"RequestCpus": 1})
    jobs.add(SUBMITTER, nameless, max_count=5)
    assert jobs.problems and "alice@pool" in jobs.problems[0]


def test_a_claim_id_is_handed_out_once_until_the_startd_replaces_it():
    claims = ClaimIds()
    claims.refresh([("slot1@vm", "<a>", ["c1", "c2"]), ("slot2@vm", "<a>", ["d1"])])
    assert [claims.take("slot1@vm", "<a>") for _ in range(3)] == ["c1", "c2", None]
    claims.give_back("c2")
    assert claims.take("slot1@vm", "<a>") == "c2"
    # a stale private ad still lists c1 and c2: they stay spent; a new id is not
    claims.refresh([("slot1@vm", "<a>", ["c1", "c2", "c3"])])
    assert claims.take("slot1@vm", "<a>") == "c3"
    # ids the startd no longer lists are forgotten, so a reused text would be handed again
    claims.refresh([("slot1@vm", "<a>", ["c9"])])
    claims.refresh([("slot1@vm", "<a>", ["c1"])])
    assert claims.take("slot1@vm", "<a>") == "c1"
    assert claims.take("slot1@vm", "<other address>") is None


def test_a_submitter_ad_without_its_schedd_is_not_negotiable():
    good = classad2.ClassAd({"Name": "alice@pool", "ScheddName": "s", "ScheddIpAddr": "<1.2.3.4:9618>",
                             "SubmitterTag": "", "CondorVersion": "$CondorVersion: 25.14.0 2026-11-29 $"})
    assert submitter_from_ad(good).request_lists
    old = classad2.ClassAd({**{k: good[k] for k in good.keys()}, "CondorVersion": "$CondorVersion: 8.2.10 $"})
    assert not submitter_from_ad(old).request_lists
    for missing in ("ScheddIpAddr", "SubmitterTag"):
        bad = classad2.ClassAd({k: good[k] for k in good.keys() if k != missing})
        try:
            submitter_from_ad(bad)
        except ValueError as error:
            assert missing in str(error)
        else:
            raise AssertionError(f"a submitter ad without {missing} was taken")


def test_reference_names_are_trimmed_as_htcondor_trims_them():
    # TrimReferenceNames (compat_classad.cpp)
    assert [trimmed(n) for n in ("TARGET.RequestCpus", "other.Owner", "MY.x", "Foo.Bar", "A[0]")] == [
        "RequestCpus", "Owner", "MY", "Foo", "A"]


def test_the_attributes_a_schedd_is_told_to_send_are_what_the_slots_and_policies_read():
    settings = load_settings(ROOT / "config" / "default.conf")
    slot = classad2.ClassAd({"Cpus": 4, "Memory": 8192,
                             "Requirements": classad2.ExprTree("START && TARGET.RequestMemory <= MY.Memory"),
                             "START": classad2.ExprTree('TARGET.Department == "physics" && CurrentTime > 0'),
                             "ChildName": classad2.ExprTree('{ TARGET.NotThis }')})
    names = significant_attributes([slot], settings).split(",")
    assert {"RequestMemory", "Department", "RequestCpus", "ConcurrencyLimits", "JobPrio"} <= set(names)
    # dropped as HTCondor drops them: the clock, list values
    assert "CurrentTime" not in names and "NotThis" not in names


def test_the_claim_id_of_a_pslot_its_schedd_claimed_whole_is_handed_once_a_cycle():
    """The startd lists the schedd's own claim on a p-slot it claimed whole for as long as the
    claim lasts; HTCondor's negotiator reads the ids afresh each cycle and hands one out once a
    cycle (matchmaker.cpp ``matchmakingProtocol`` erases it from the cycle's set once sent), and
    the minipool's schedd used it to carve its next job's dynamic slot."""
    claims = ClaimIds()
    claims.refresh([("slot1@vm", "<a>", ["pslot-claim"])], again={("slot1@vm", "<a>")})
    assert [claims.take("slot1@vm", "<a>") for _ in range(2)] == ["pslot-claim", None]
    claims.refresh([("slot1@vm", "<a>", ["pslot-claim"])], again={("slot1@vm", "<a>")})
    assert claims.take("slot1@vm", "<a>") == "pslot-claim"
    # once the p-slot is unclaimed again its ids follow the rule of any other slot
    claims.refresh([("slot1@vm", "<a>", ["pslot-claim"])])
    assert claims.take("slot1@vm", "<a>") is None


def test_the_job_constraints_references_are_significant():
    """compute_significant_attrs adds the external references of NEGOTIATOR_JOB_CONSTRAINT, read
    in an empty ad: a name the slots define is still the job's to send."""
    settings = replace(load_settings(ROOT / "config" / "default.conf"),
                       job_constraint='TARGET.Queue == "short" && Memory > 1 && ProjectName =!= undefined')
    slot = classad2.ClassAd({"Cpus": 4, "Memory": 8192})
    names = significant_attributes([slot], settings).split(",")
    assert {"Queue", "Memory", "ProjectName"} <= set(names)
