"""Autoclusters and significant attributes, on the real OSPool slot expressions.

The reference for "an attribute does not matter" is classad2 itself: changing a job attribute the
analysis calls dead must not change any slot expression's value.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import classad2
import pytest

from negotiatord.classad.cycle_time import frozen_ad
from negotiatord.pool.autoclusters import significance
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.significance import ANY_ATTRIBUTE, JobRead, job_reads
from tests.builders import jobs, settings

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
NOW = 1783286288


@pytest.fixture(scope="module")
def ospool_slots() -> list[classad2.ClassAd]:
    ads = classad2.parseAds(gzip.open(DATA / "ospool" / "pool_sample.ads.gz", "rt").read(), classad2.ParserType.Old)
    return [frozen_ad(ad, NOW) for ad in ads if ad.get("MyType") == "Machine"]


def catalog_slot(ospool_slots):
    """An unclaimed p-slot with the catalog clause (claimed slots publish their running job's
    GlobalJobId, so there the bare name is the slot's own attribute)."""
    return next(ad for ad in ospool_slots
                if "GlobalJobID" in str(ad.get("WithinResourceLimits")) and ad.get("State") == "Unclaimed")


def ospool_job(proc: int, **extra) -> classad2.ClassAd:
    [job] = jobs("alice", 1, cluster=7, ProjectName="Demo", RequestDisk=1000, **extra)
    job["ProcId"] = proc
    job["GlobalJobId"] = f"ap40#7.{proc}#1"
    return job


def test_global_job_id_behind_the_catalog_guard_is_not_significant(ospool_slots):
    slot = catalog_slot(ospool_slots)
    reads = job_reads(slot.lookup("Requirements"), slot)
    guarded = [r for r in reads if r.attribute == "GlobalJobID"]
    assert guarded and all(r.guards for r in guarded)
    plain = ospool_job(0)
    assert not any(r.is_live_for(plain) for r in guarded)
    cataloged = ospool_job(1)
    cataloged["RequestedCatalogs"] = classad2.ExprTree('{"a"}')
    cataloged["catalogs"] = classad2.ExprTree('{[Catalog = "a"; CatalogSize = 1]}')
    assert any(r.is_live_for(cataloged) for r in guarded)


def test_jobs_differing_only_in_identity_share_an_autocluster(ospool_slots):
    slot_ads = [catalog_slot(ospool_slots)]
    job_ads = [ospool_job(p) for p in range(5)]
    snapshot = build_snapshot(slot_ads, job_ads, settings())
    assert len(snapshot.autoclusters) == 1
    assert "GlobalJobID" in snapshot.significant_attributes   # significant only behind its guard


def test_jobs_that_reach_a_dynamic_lookup_stand_alone(ospool_slots):
    slot_ads = [catalog_slot(ospool_slots)]
    job_ads = []
    for proc in range(3):
        job = ospool_job(proc)
        job["RequestedCatalogs"] = classad2.ExprTree('{"a"}')
        job["catalogs"] = classad2.ExprTree('{[Catalog = "a"; CatalogSize = 1]}')
        job_ads.append(job)
    snapshot = build_snapshot(slot_ads, job_ads + [ospool_job(9)], settings())
    assert sorted(len(a.jobs) for a in snapshot.autoclusters) == [1, 1, 1, 1]


def _probe_values(value: object) -> list[object]:
    return [classad2.Value.Undefined, "probe-string", 12345, True, [1, 2]] if value is not None else ["x", 7]


def test_attributes_called_dead_never_change_a_slot_expression(ospool_slots):
    """For every real OSPool slot and a spread of jobs, each guarded read the analysis says is
    closed for the job is changed to other values; classad2's value of the slot's Requirements,
    START and Rank must stay the same."""
    job_ads = [ospool_job(0), ospool_job(1, MappingMethod="Copy"), ospool_job(2, RequestedCatalogs="a"),
               ospool_job(3, JobDurationCategory="Long"), ospool_job(4, ITB_Sites=True),
               ospool_job(5, RequestGPUs=1), ospool_job(6, SingularityImage="/cvmfs/x.sif")]
    checked = 0
    for slot in ospool_slots:
        expressions = [slot.lookup(name) for name in ("Requirements", "Start", "Rank") if name in slot]
        for job in job_ads:
            reads = set().union(*(job_reads(expr, slot) for expr in expressions))
            live = {r.attribute.lower() for r in reads if r.is_live_for(job)}
            dead = {r.attribute for r in reads if r.attribute.lower() not in live and r.attribute != ANY_ATTRIBUTE}
            before = [expr.eval(slot, job) for expr in expressions]
            for name in dead:
                probe = classad2.parseOne(job.printOld(), classad2.ParserType.Old)
                for value in _probe_values(job.get(name)):
                    if isinstance(value, classad2.Value):
                        probe[name] = classad2.ExprTree("undefined")
                    else:
                        probe[name] = value
                    after = [expr.eval(slot, probe) for expr in expressions]
                    assert repr(after) == repr(before), (slot["Name"], name, value)
                    checked += 1
    assert checked > 100


def test_an_attribute_spelled_two_ways_is_named_the_same_way_in_every_process():
    """Slot expressions may spell an attribute differently (RequestCpus, RequestCPUs); the name
    kept is the first in sorted order, not whichever a set happens to yield under this process's
    hash seed."""
    reads = {JobRead(name) for name in ("RequestCpus", "requestcpus", "RequestCPUs")}
    named = significance(reads, ["Cpus"]).unconditional
    assert [name for name in named if name.lower() == "requestcpus"] == ["RequestCPUs"]
