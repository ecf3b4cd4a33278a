"""The job reads of a slot's expressions, resolved once per distinct slot structure.

Resolving ``Requirements = START && WithinResourceLimits`` against a slot depends only on the text,
the names the slot defines and the texts of the slot expressions the walk follows. Slots that give
the same answers share one resolution; these tests check that a shared resolution is the one the
slot would get alone, and that slots differing in anything the walk reads do not share.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import classad2
import pytest

from negotiatord.pool import significance
from negotiatord.pool.significance import JobRead, job_reads, slot_job_reads

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
NAMES = ("Requirements", "Start", "Rank", "WithinResourceLimits")


@pytest.fixture(scope="module")
def ospool_slots() -> list[classad2.ClassAd]:
    ads = classad2.parseAds(gzip.open(DATA / "ospool" / "pool_sample.ads.gz", "rt").read(), classad2.ParserType.Old)
    return [ad for ad in ads if ad.get("MyType") == "Machine"]


def alone(exprs: list[classad2.ExprTree], slot: classad2.ClassAd) -> set[JobRead]:
    """The reads of ``exprs`` in ``slot`` with no resolution of another slot to share."""
    significance._RESOLUTIONS.clear()
    return slot_job_reads(exprs, slot)


def test_shared_resolutions_are_each_slots_own(ospool_slots):
    """Every real OSPool slot (143, of a few START and WithinResourceLimits variants, claimed ones
    publishing GlobalJobId as their own attribute) gets from shared resolutions what it gets alone."""
    exprs = {id(slot): [slot.lookup(name) for name in NAMES if name in slot] for slot in ospool_slots}
    own = {id(slot): alone(exprs[id(slot)], slot) for slot in ospool_slots}
    significance._RESOLUTIONS.clear()
    for slot in ospool_slots + ospool_slots[::-1]:
        assert slot_job_reads(exprs[id(slot)], slot) == own[id(slot)], slot["Name"]
    assert len(significance._RESOLUTIONS) < len(ospool_slots)   # they did share


def slot(**attrs: str | int) -> classad2.ClassAd:
    ad = classad2.ClassAd()
    for name, value in attrs.items():
        ad[name] = classad2.ExprTree(value) if isinstance(value, str) else value
    return ad


REQUIREMENTS = classad2.ExprTree("START && TARGET.RequestCpus <= Cpus")


def attributes(reads: set[JobRead]) -> set[str]:
    return {read.attribute for read in reads}


def test_slots_whose_followed_expressions_differ_do_not_share():
    first = slot(Cpus=4, START="TARGET.Owner == \"alice\"")
    second = slot(Cpus=4, START="TARGET.ProjectName == \"x\"")
    assert attributes(job_reads(REQUIREMENTS, first)) == {"Owner", "RequestCpus"}
    assert attributes(job_reads(REQUIREMENTS, second)) == {"ProjectName", "RequestCpus"}
    assert attributes(job_reads(REQUIREMENTS, first)) == {"Owner", "RequestCpus"}


def test_a_name_the_slot_lacks_is_the_jobs():
    """Same expression texts, other names: ``Cpus`` undefined in the slot resolves to the job, as
    ClassAd scoping does; and a name defined as a literal is not followed."""
    defined = slot(Cpus=4, START="Site == \"a\"", Site="\"UW\"")
    lacking = slot(START="Site == \"a\"", Site="\"UW\"")
    literal = slot(Cpus=4, START=True, Site="\"UW\"")
    assert attributes(job_reads(REQUIREMENTS, defined)) == {"RequestCpus"}
    assert attributes(job_reads(REQUIREMENTS, lacking)) == {"RequestCpus", "Cpus"}
    assert attributes(job_reads(REQUIREMENTS, literal)) == {"RequestCpus"}
    undefined_site = slot(Cpus=4, START="Site == \"a\"")
    assert attributes(job_reads(REQUIREMENTS, undefined_site)) == {"RequestCpus", "Site"}


def test_a_guard_reading_the_slot_stays_open_in_a_slot_that_defines_it():
    """``Catalog`` guards the read of GlobalJobId: a job-side guard where the slot lacks it, open
    where the slot defines it (then only the slot's value decides)."""
    start = "ifThenElse(Catalog =?= undefined, true, TARGET.GlobalJobId == \"x\")"
    without = job_reads(classad2.ExprTree("START"), slot(START=start))
    with_catalog = job_reads(classad2.ExprTree("START"), slot(START=start, Catalog="\"a\""))
    assert {read.attribute: bool(read.guards) for read in without} == {"Catalog": False, "GlobalJobId": True}
    assert {read.attribute: bool(read.guards) for read in with_catalog} == {"GlobalJobId": False}


def test_names_are_matched_without_regard_to_case():
    """ClassAd names are case-insensitive: a slot spelling ``start`` or ``CPUS`` defines them."""
    lower = slot(cpus=4, start="TARGET.Owner == \"alice\"")
    upper = slot(CPUS=4, START="TARGET.Owner == \"alice\"")
    assert job_reads(REQUIREMENTS, lower) == job_reads(REQUIREMENTS, upper)
    assert attributes(job_reads(REQUIREMENTS, lower)) == {"Owner", "RequestCpus"}


def test_a_name_beyond_ascii_is_matched_as_classad2_matches_it():
    """classad2 folds only ASCII letters when it compares names (C's strcasecmp): ``'größe'``
    finds ``Größe`` but ``'GRÖßE'`` does not, so the latter is the job's."""
    ad = slot(Cpus=2)
    ad["Größe"] = 1
    assert "größe" in ad and "GRÖßE" not in ad
    expr = classad2.ExprTree("'GRÖßE' > 0 && 'größe' > 0 && CPUS > 0")
    assert attributes(job_reads(expr, ad)) == {"GRÖßE"}
    assert attributes(job_reads(expr, slot(Cpus=2))) == {"GRÖßE", "größe"}
