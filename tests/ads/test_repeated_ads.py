"""Asked for per-job attribute names, the long-form reader gives an ad whose text is the last
cleanly read ad's but for those attributes' lines as a RepeatedAd: the earlier ad and its own
values. Read whole, it must be exactly the ad classad2 reads from its text (classad2.parseNext,
the reference), and every other ad must come out as without the names."""

from __future__ import annotations

import gzip
from pathlib import Path

import classad2
import pytest
from classad2 import ParserType
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.pool_generator import generate_pool
from negotiatord.ads import AdProblem, RepeatedAd, iter_ads
from negotiatord.pool.job_ads import IDENTITY

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FILES = [DATA / "ospool/pool_sample.ads.gz", SAMPLES / "jobs.ads", SAMPLES / "slots.ads",
         *sorted((DATA / "htcondor/job_ads").glob("*.ad")), *sorted((DATA / "htcondor/history").iterdir())]


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data.startswith(b"\x1f\x8b") else data).decode("utf-8", "surrogateescape")


def _attributes(ad: classad2.ClassAd) -> dict[str, str]:
    return {name.lower(): str(ad.lookup(name)) for name in ad.keys()}


def _as_read(repeat: RepeatedAd) -> dict[str, str]:
    """The ad a RepeatedAd stands for: the earlier ad with its own values in place."""
    return _attributes(repeat.ad) | _attributes(repeat.own)


def _same_reading(text: str) -> int:
    """Assert that reading ``text`` with and without IDENTITY gives the same ads; the count of
    RepeatedAds."""
    plain = list(iter_ads(text, "t"))
    repeated = list(iter_ads(text, "t", IDENTITY))
    assert [position for position, _ in repeated] == [position for position, _ in plain]
    repeats = 0
    for (_, alone), (_, outcome) in zip(plain, repeated):
        if isinstance(outcome, RepeatedAd):
            repeats += 1
            assert isinstance(alone, classad2.ClassAd)
            assert _as_read(outcome) == _attributes(alone) == _attributes(outcome.whole())
            assert set(map(str.lower, outcome.own.keys())) <= {name.lower() for name in IDENTITY}
        elif isinstance(outcome, AdProblem):
            assert isinstance(alone, AdProblem) and str(alone) == str(outcome)
        else:
            assert isinstance(alone, classad2.ClassAd) and _attributes(alone) == _attributes(outcome)
    return repeats


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_shared_data_file_reads_the_same(path: Path) -> None:
    _same_reading(_text(path))


def test_the_bundled_jobs_repeat_within_their_clusters() -> None:
    """samples/jobs.ads: clusters whose jobs differ only in ProcId and GlobalJobId."""
    assert _same_reading(_text(SAMPLES / "jobs.ads")) > 0


def test_generated_clusters_are_read_once() -> None:
    pool = generate_pool(1, 300, now=1_790_000_000)
    text = "\n".join(ad.printOld() for ad in pool.job_ads)
    clusters = len({ad["ClusterId"] for ad in pool.job_ads})
    assert _same_reading(text) == len(pool.job_ads) - clusters


BASE = ['MyType = "Job"', "ClusterId = 7", "ProcId = 0", 'GlobalJobId = "s#7.0#1"', 'Owner = "alice"',
        "JobStatus = 1", "RequestCpus = 1", 'Args = "x"', "Requirements = TARGET.Cpus >= RequestCpus"]

# what each later ad of a cluster may do to the first one's lines
EDITS = {
    "identity": lambda lines, proc: [line.replace("0", str(proc)) if line.startswith(("ProcId", "GlobalJobId"))
                                     else line for line in lines],
    "args": lambda lines, proc: [f'Args = "{proc}"' if line.startswith("Args") else line for line in lines],
    "moved": lambda lines, proc: [line for line in lines if not line.startswith("ProcId")] + [f"ProcId = {proc}"],
    "spelt": lambda lines, proc: [f"procid = {proc}" if line.startswith("ProcId") else line for line in lines],
    "comment": lambda lines, proc: ["# queued by hand", *lines],
    "repeated": lambda lines, proc: [*lines, f"ProcId = {proc + 100}"],
    "no identity": lambda lines, proc: [line for line in lines if not line.startswith(("ProcId", "GlobalJobId"))],
    "expression": lambda lines, proc: [f"ProcId = {proc} + 0" if line.startswith("ProcId") else line
                                       for line in lines],
    "deep": lambda lines, proc: [f"ProcId = {'(' * 100}{proc}{')' * 100}" if line.startswith("ProcId") else line
                                 for line in lines],
    "broken": lambda lines, proc: [f"ProcId = {proc} +" if line.startswith("ProcId") else line for line in lines],
    "spaced": lambda lines, proc: [f"  ProcId   =   {proc}" if line.startswith("ProcId") else line for line in lines],
    "last": lambda lines, proc: [line for line in lines if not line.startswith("GlobalJobId")]
                                + [f'GlobalJobId = "s#7.{proc}#1"'],
}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(sorted(EDITS)), max_size=3), min_size=1, max_size=8))
def test_any_cluster_reads_as_every_ad_alone(edits: list[list[str]]) -> None:
    """Ads made from one by any mix of edits (an identity change, another attribute changed, a line
    moved, renamed, commented, repeated, beyond the limits or broken) read as classad2 reads each."""
    ads = [BASE]
    for proc, chosen in enumerate(edits, 1):
        lines = list(BASE)
        for edit in chosen:
            lines = EDITS[edit](lines, proc)
        ads.append(lines)
    _same_reading("\n\n".join("\n".join(lines) for lines in ads) + "\n")


def test_only_the_identity_lines_differ() -> None:
    first = "\n".join(BASE)
    second = first.replace("ProcId = 0", "ProcId = 1").replace("#7.0#", "#7.1#")
    outcomes = [outcome for _, outcome in iter_ads(f"{first}\n\n{second}\n", "t", IDENTITY)]
    assert isinstance(outcomes[0], classad2.ClassAd) and isinstance(outcomes[1], RepeatedAd)
    assert outcomes[1].ad is outcomes[0]
    assert dict(outcomes[1].own.items()) == {"ProcId": 1, "GlobalJobId": "s#7.1#1"}
    # classad2 reads the whole text the same
    assert _attributes(outcomes[1].whole()) == _attributes(classad2.parseNext(second, ParserType.Old))
