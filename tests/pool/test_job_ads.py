"""A one-off build gives jobs equal in everything a cycle reads one shared ad and lets the others
go: the snapshot and the cycle are those of a build that keeps every job's own ad."""

import gc
import weakref

import classad2
import pytest

from benchmarks.pool_generator import CONFIG_PATH, generate_pool
from negotiatord.accountant import AccountantState
from negotiatord.pool.builder import SnapshotBuilder, build_snapshot
from negotiatord.pool.job_ads import SharedAds, SignatureBook
from negotiatord.pool.significance import ANY_ATTRIBUTE, Guard, JobRead, OpenWhen
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings
from tests.builders import pslot, settings

NOW = 1783286288


def job(proc: int, **values: object) -> classad2.ClassAd:
    ad = classad2.ClassAd({"ClusterId": 7, "ProcId": proc, "GlobalJobId": f"ap#7.{proc}#1", "RequestCpus": 1,
                           "ImageSize": 2000, "JobStatus": 1, "Owner": "alice"})
    ad["RequestMemory"] = classad2.ExprTree("(ImageSize + 1023) / 1024")
    for name, value in values.items():
        ad[name] = value
    return ad


def shared_ads(unconditional=("RequestCpus", "RequestMemory"), guarded=()) -> SharedAds:
    return SharedAds(unconditional, guarded, SignatureBook())


CATALOG_GUARD = Guard("TARGET.catalogs =?= undefined", OpenWhen.NOT_TRUE)     # open once catalogs is set


def test_jobs_differing_only_in_their_identity_share_one_ad():
    ads = shared_ads()
    first = ads.of(job(0))
    assert ads.of(job(1)) is first and first.shared
    assert ads.of(job(2, RequestCpus=2)) is not first
    assert ads.of(job(3, Unread=1)) is not first       # any other difference: an ad of its own kind


def test_what_only_looks_like_an_identity_still_tells_jobs_apart():
    ads = shared_ads()
    assert ads.of(job(0, Note='a\nProcId = 5"')) is not ads.of(job(1, Note='a\nProcId = 6"'))
    nested = [ads.of(job(proc, Nested=classad2.ClassAd({"ProcId": proc}))) for proc in (2, 3)]
    assert nested[0] is not nested[1]


def test_a_job_whose_expression_reads_its_identity_keeps_its_own_ad():
    ads = shared_ads()
    reading = [ads.of(job(proc, Arguments=classad2.ExprTree("ProcId * 2"))) for proc in (0, 1)]
    assert reading[0] is not reading[1] and not reading[0].shared


@pytest.mark.parametrize("text", ["my.procid * 2", 'strcat(MY.GLOBALJOBID, "-x")', "isUndefined(Procid)"])
def test_an_expression_naming_the_identity_in_any_case_keeps_its_own_ad(text):
    """ClassAd names are case-insensitive: an expression reading ``procid`` reads ProcId."""
    ads = shared_ads()
    reading = [ads.of(job(proc, Arguments=classad2.ExprTree(text))) for proc in (0, 1)]
    assert reading[0] is not reading[1] and not reading[0].shared


def test_a_value_naming_the_identity_that_is_no_expression_shares_the_ad():
    """A string holding the name is read by no expression: the jobs still share one ad."""
    ads = shared_ads()
    assert ads.of(job(0, Note="ProcId")) is ads.of(job(1, Note="ProcId"))


def test_an_open_guarded_read_of_the_identity_keeps_the_job_its_own_ad():
    ads = shared_ads(guarded=(JobRead("GlobalJobID", (CATALOG_GUARD,)),))
    assert ads.of(job(0)) is ads.of(job(1))
    assert ads.of(job(2, catalogs="a")) is not ads.of(job(3, catalogs="a"))


def test_nothing_is_shared_when_the_identity_or_any_attribute_is_always_read():
    for unconditional in (("RequestCpus", "GlobalJobId"), ("RequestCpus", ANY_ATTRIBUTE)):
        ads = shared_ads(unconditional=unconditional)
        assert ads.of(job(0)) is not ads.of(job(1))


def test_only_jobs_whose_guards_open_a_read_of_any_attribute_keep_their_own_ad():
    ads = shared_ads(guarded=(JobRead(ANY_ATTRIBUTE, (CATALOG_GUARD,)),))
    assert ads.of(job(0)) is ads.of(job(1))
    assert ads.of(job(2, catalogs="a")) is not ads.of(job(3, catalogs="a"))


def test_jobs_sharing_an_ad_are_still_split_when_another_job_makes_their_identity_significant():
    """One job's RequestMemory reads ProcId, so ProcId is significant for every job (as
    HTCondor's significant attributes are): the shared jobs form autoclusters by their own ProcId."""
    config = settings(consumption_policy=True)
    job_ads = [job(proc) for proc in range(4)] + [job(9, RequestMemory=classad2.ExprTree("100 * ProcId"))]
    shared = build_snapshot([pslot("a", cpus=8)], job_ads, config)
    own = SnapshotBuilder().build([pslot("a", cpus=8)], job_ads, config)
    assert "ProcId" in shared.significant_attributes
    assert shared.autoclusters == own.autoclusters and len(own.autoclusters) == 5


@pytest.fixture(scope="module")
def pool():
    return generate_pool(300, 1500, seed=4, now=NOW)


def test_one_off_snapshot_and_cycle_equal_those_with_every_own_ad(pool):
    config = load_settings(CONFIG_PATH)
    own = SnapshotBuilder().build(pool.slot_ads, list(pool.job_ads), config)
    shared = build_snapshot(pool.slot_ads, pool.job_ads, config)
    assert shared.jobs == own.jobs and shared.autoclusters == own.autoclusters
    cycles = [run_cycle(snapshot, AccountantState(), config, pool.now) for snapshot in (own, shared)]
    assert cycles[0].matches == cycles[1].matches and cycles[0].matches


def test_a_one_off_build_keeps_only_its_autoclusters_ads(pool):
    config = load_settings(CONFIG_PATH)
    seen: list[weakref.ref] = []

    def streamed():
        for ad in pool.job_ads:
            seen.append(weakref.ref(ad))
            yield ad

    snapshot = build_snapshot(pool.slot_ads, streamed(), config)
    gc.collect()
    alive = {id(ref()) for ref in seen if ref() is not None}
    assert alive == {id(autocluster.ad) for autocluster in snapshot.autoclusters}
    assert len(alive) < len(pool.job_ads) / 10
