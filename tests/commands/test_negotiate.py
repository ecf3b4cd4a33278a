"""``negotiatord negotiate`` end to end, as a pool administrator runs it, on real ads.

Slots: the OSPool central manager sample (143 Machine ads among 205). Jobs: HTCondor's own job and
history ads. Every reported match is re-checked with classad2 alone.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import classad2
import pytest

from negotiatord.classad.cycle_time import frozen_ad

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
POOL = DATA / "ospool" / "pool_sample.ads.gz"
NOW = 1783286288  # the sample's own LastNegotiationCycleTime0: glidein START clauses hold then
CONFIG = ROOT / "config" / "default.conf"


def negotiatord(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "negotiatord", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def real_job_ads() -> list[classad2.ClassAd]:
    """Every job ad under data/htcondor, made idle (history ads are completed or running)."""
    files = sorted((DATA / "htcondor" / "history").glob("*")) + sorted((DATA / "htcondor" / "job_ads").glob("*.ad"))
    ads = []
    for path in files:
        text = path.read_text()
        chunks = text.split("***") if "***" in text else text.split("\n\n")
        for chunk in chunks:
            if "=" in chunk:
                ad = classad2.parseOne(chunk, classad2.ParserType.Old)
                ad["JobStatus"] = 1
                ads.append(ad)
    return ads


def as_ospool_user_would_submit(ad: classad2.ClassAd) -> classad2.ClassAd:
    """A CHTC job re-targeted at the OSPool: its Requirements without the ``PoolName == "CHTC"``
    clause (the rest, e.g. ``OSPool && OSGVO_OS_STRING == "RHEL 9"``, kept as written)."""
    text = str(ad.lookup("Requirements")).replace('(TARGET.PoolName == "CHTC") && ', "")
    copy = classad2.parseOne(ad.printOld(), classad2.ParserType.Old)
    copy["Requirements"] = classad2.ExprTree(text)
    copy["GlobalJobId"] = f"ospool-{ad['GlobalJobId']}"
    return copy


def write_ads(path: Path, ads: list[classad2.ClassAd]) -> Path:
    path.write_text("\n".join(ad.printOld() for ad in ads))
    return path


def verify_with_classad2(matches: list[dict], slot_ads: dict[str, classad2.ClassAd],
                         job_ads: dict[str, classad2.ClassAd]) -> None:
    """Replay the matches in order: p-slots with a consumption policy lose what earlier matches
    consumed, the job's Request<Res> read as the consumption (HTCondor's cp_override_requested),
    and classad2's symmetricMatch must hold with time() at NOW."""
    current = {name: frozen_ad(classad2.parseOne(ad.printOld(), classad2.ParserType.Old), NOW)
               for name, ad in slot_ads.items()}
    for match in matches:
        slot = current[match["slot"]]
        job = frozen_ad(classad2.parseOne(job_ads[match["job"]].printOld(), classad2.ParserType.Old), NOW)
        partitionable = slot.get("PartitionableSlot") is True
        if partitionable:
            for asset, amount in match["consumed"].items():
                if f"Request{asset}" in job:
                    job[f"Request{asset}"] = amount
        assert job.symmetricMatch(slot), match
        if partitionable:
            for asset, amount in match["consumed"].items():
                slot[asset] = slot[asset] - amount


@pytest.fixture(scope="module")
def ospool_slots() -> dict[str, classad2.ClassAd]:
    ads = classad2.parseAds(gzip.open(POOL, "rt").read(), classad2.ParserType.Old)
    return {ad["Name"]: ad for ad in ads if ad.get("MyType") == "Machine"}


def test_real_pool_with_real_jobs_and_every_match_checked_by_classad2(tmp_path, ospool_slots):
    real = real_job_ads()
    retargeted = [as_ospool_user_would_submit(ad) for ad in real
                  if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]
    jobs = write_ads(tmp_path / "jobs.ads", real + retargeted)
    run = negotiatord("negotiate", "--config", str(CONFIG), "--slots", str(POOL), "--jobs", str(jobs),
                      "--now", str(NOW))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["cycle"]["slots"] == 143
    assert result["matches"], "the re-targeted CHTC jobs fit the OSPool's free RHEL 9 cores"
    by_id = {ad.get("GlobalJobId") or f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in real + retargeted
             if "ClusterId" in ad}
    verify_with_classad2(result["matches"], ospool_slots, by_id)
    assert {m["job"] for m in result["matches"]} <= {ad["GlobalJobId"] for ad in retargeted}
    # the jobs written for CHTC itself ask for PoolName == "CHTC": the OSPool has none
    rejected = {r["job"] for r in result["rejections"]}
    assert any(job.startswith("ap2002.chtc.wisc.edu#") for job in rejected)


def test_fast_path_and_classad2_reference_give_the_same_cycle():
    """The default evaluator (the fast path) and ``--evaluator classad`` agree on the bundled pool,
    and the fast path answered everything itself."""
    documents = {}
    for evaluator in ("fast", "classad"):
        run = negotiatord("negotiate", "--config", str(CONFIG), "--slots", "samples/slots.ads",
                          "--jobs", "samples/jobs.ads", "--now", "1790000000", "--evaluator", evaluator)
        assert run.returncode == 0, run.stderr
        documents[evaluator] = json.loads(run.stdout)
    fast, reference = documents["fast"], documents["classad"]
    assert fast["matches"] and fast["matches"] == reference["matches"]
    assert fast["rejections"] == reference["rejections"]
    assert fast["cycle"]["pairs"] == reference["cycle"]["pairs"] > 0
    assert fast["cycle"]["classad_fallbacks"] == 0


def test_table_format_prints_the_cycle(tmp_path):
    run = negotiatord("negotiate", "--config", str(CONFIG), "--slots", "samples/slots.ads",
                      "--jobs", "samples/jobs.ads", "--format", "table", "--now", "1790000000")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("cycle: ")
    assert "group_physics.cms" in run.stdout


def test_malformed_ads_are_reported_and_the_rest_negotiated(tmp_path):
    good = Path(ROOT / "samples" / "jobs.ads").read_text().split("\n\n")
    broken = "\n\n".join([*good[:3], 'MyType = "Job"\nRequirements = (Cpus >\nClusterId = 9', *good[3:]])
    jobs = tmp_path / "jobs.ads"
    jobs.write_text(broken)
    run = negotiatord("negotiate", "--config", str(CONFIG), "--slots", "samples/slots.ads",
                      "--jobs", str(jobs), "--now", "1790000000")
    assert run.returncode == 3
    assert "jobs.ads" in run.stderr and "ad 4" in run.stderr
    result = json.loads(run.stdout)
    assert result["cycle"]["jobs"] == len(good)
    assert result["matches"]


def test_a_job_file_that_holds_no_classads_is_refused_before_any_cycle(tmp_path):
    jobs = tmp_path / "jobs.xml"
    jobs.write_text('<?xml version="1.0"?><classads></classads>')
    run = negotiatord("negotiate", "--config", str(CONFIG), "--slots", "samples/slots.ads", "--jobs", str(jobs))
    assert run.returncode == 2
    assert "jobs.xml" in run.stderr and "XML" in run.stderr
    assert run.stdout == ""


def test_config_error_names_file_and_line(tmp_path):
    config = tmp_path / "bad.conf"
    config.write_text("GROUP_NAMES = group_a\nSLOT_WEIGHT = $(\n")
    run = negotiatord("negotiate", "--config", str(config), "--slots", "samples/slots.ads",
                      "--jobs", "samples/jobs.ads")
    assert run.returncode == 2
    assert "bad.conf" in run.stderr
    assert run.stdout == ""


def test_accountant_database_sets_the_priorities(tmp_path):
    """Priorities come from a negotiatord accountant database: a factor set as with
    ``condor_userprio -setfactor`` shows in the effective priority and shrinks the user's share."""
    from negotiatord.accountant import AccountantStore

    database = tmp_path / "accountant.sqlite"
    with AccountantStore(database) as store:
        store.set_factor("erin@example.org", 4000.0)
    run = negotiatord("negotiate", "--config", str(CONFIG), "--slots", "samples/slots.ads",
                      "--jobs", "samples/jobs.ads", "--now", "1790000000", "--accountant", str(database))
    assert run.returncode == 0, run.stderr
    submitters = {s["name"]: s for s in json.loads(run.stdout)["submitters"]}
    assert submitters["erin@example.org"]["effective_priority"] == 0.5 * 4000
    assert submitters["group_physics.cms.bob@example.org"]["effective_priority"] == 0.5 * 1000

    missing = negotiatord("negotiate", "--config", str(CONFIG), "--slots", "samples/slots.ads",
                          "--jobs", "samples/jobs.ads", "--accountant", str(tmp_path / "nope.sqlite"))
    assert missing.returncode == 2 and "nope.sqlite" in missing.stderr
