"""A one-off build given the jobs of a cluster as RepeatedAds (the earlier ad and each job's own
ProcId and GlobalJobId, as the dry run reads a job file) gives the snapshot and the cycle of a
build that reads every job ad whole: the same job records, autoclusters, problems and matches."""

from __future__ import annotations

from pathlib import Path

import classad2
import pytest

from benchmarks.pool_generator import CONFIG_PATH, generate_pool
from negotiatord.accountant import AccountantState
from negotiatord.ads import AdProblem, RepeatedAd, iter_ads
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.job_ads import IDENTITY
from negotiatord.pool.snapshot import Snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, load_settings
from tests.builders import pslot, settings

NOW = 1783286288
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _ads(text: str, repeats: tuple[str, ...]) -> list[classad2.ClassAd | RepeatedAd]:
    return [outcome for _, outcome in iter_ads(text, "t", repeats) if not isinstance(outcome, AdProblem)]


def _same_build(slot_ads: list[classad2.ClassAd], text: str, config: Settings) -> tuple[Snapshot, int]:
    """The snapshot of ``text``'s jobs read with repeats, asserted equal to the one read whole; and
    the count of RepeatedAds."""
    repeated = _ads(text, IDENTITY)
    whole = build_snapshot(slot_ads, _ads(text, ()), config)
    snapshot = build_snapshot(slot_ads, repeated, config)
    assert snapshot.jobs == whole.jobs
    assert [[job.id for job in a.jobs] for a in snapshot.autoclusters] == [[job.id for job in a.jobs]
                                                                           for a in whole.autoclusters]
    assert snapshot.significant_attributes == whole.significant_attributes
    assert snapshot.problems == whole.problems and snapshot.non_idle_jobs == whole.non_idle_jobs
    cycles = [run_cycle(s, AccountantState(), config, NOW) for s in (whole, snapshot)]
    assert cycles[0].matches == cycles[1].matches
    return snapshot, sum(isinstance(ad, RepeatedAd) for ad in repeated)


def test_a_generated_pool_builds_and_negotiates_the_same() -> None:
    pool = generate_pool(300, 1500, seed=4, now=NOW)
    text = "\n".join(ad.printOld() for ad in pool.job_ads)
    snapshot, repeats = _same_build(pool.slot_ads, text, load_settings(CONFIG_PATH))
    assert repeats > 1000 and len(snapshot.jobs) == 1500


def test_the_bundled_sample_builds_and_negotiates_the_same() -> None:
    slot_ads = _ads((SAMPLES / "slots.ads").read_text(), ())
    config = load_settings(SAMPLES.parent / "config" / "default.conf")
    _, repeats = _same_build([ad for ad in slot_ads if isinstance(ad, classad2.ClassAd)],
                             (SAMPLES / "jobs.ads").read_text(), config)
    assert repeats > 0


def _cluster(first: dict[str, str], procs: int = 4) -> str:
    """``procs`` job ads of cluster 7 in long form, each ``first`` but for its identity."""
    ads = []
    for proc in range(procs):
        lines = {"MyType": '"Job"', "ClusterId": "7", "ProcId": str(proc), "GlobalJobId": f'"ap#7.{proc}#1"',
                 "RequestCpus": "1", "RequestMemory": "100", "Owner": '"alice"', "JobStatus": "1", **first}
        ads.append("\n".join(f"{name} = {value}" for name, value in lines.items()))
    return "\n\n".join(ads) + "\n"


# What the first job of a cluster may say differently from the plain ad: each a reason the jobs
# of a cluster could not, or could only partly, share one ad.
CLUSTER_VARIANTS: list[dict[str, str]] = [
    {},
    {"Rank": "ProcId"},                                    # an expression reads the identity
    {"RequestMemory": "100 * ProcId"},                     # ... one the slots read: ProcId is significant
    {"JobStatus": "2"},                                    # not idle
    {"JobStatus": "ifThenElse(ProcId > 1, 1, 2)"},         # idle for some procs only
    {"Owner": "undefined", "User": "undefined"},           # no submitter: a problem naming each job
    {"ConcurrencyLimits": '"db:2"', "JobPrio": "5"},
]


@pytest.mark.parametrize("first", CLUSTER_VARIANTS, ids=repr)
def test_a_cluster_builds_the_same(first: dict[str, str]) -> None:
    """Whatever the earlier ad says, its repeats give the job records of their own ads (HTCondor
    reads each job's own ProcId and GlobalJobId: condor_q -l prints them per job)."""
    config = settings(consumption_policy=True)
    _, repeats = _same_build([pslot("a", cpus=8)], _cluster(first), config)
    assert repeats == 3
