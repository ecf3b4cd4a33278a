"""Ingest speed of negotiatord.ads against classad2.parseAds on the same text.

The input is --ads N ads from one of three sources, in the chosen form:

- `sample` (default): the real OSPool pool sample (205 ads, ~475 attributes
  each, /work/shared/data/ospool/pool_sample.ads.gz), replicated;
- `slots` / `jobs`: the slot / idle job ads of an OSPool-shaped pool from
  pool_generator (matchmaking detail: ~61 attributes, 3.8 KB per slot ad),
  what the daemon's load benchmark posts; at most 2,000 are generated, then
  replicated.

`old` is the long form (the sample file's own text), `new` and `json` are the
same ads printed by classad2 (JSON one object per line, the one multi-ad JSON
layout classad2.parseAds reads).  Both readers are consumed one ad at a time
and drop each ad, so memory stays flat at any N.

`--to-jobs` measures instead what the dry run does with a job file: from long-form text to the
snapshot's idle job records (reading, the one-off builder's job records and autoclusters), on
--ads generated idle jobs, all distinct (clusters of jobs alike but for ProcId and GlobalJobId).
It is timed twice in the same run: reading once the jobs of a cluster that differ only in their
identity (as `negotiatord negotiate` does), and reading every ad whole; both must give the same
job records and autoclusters.

Also printed, measured in the same run (best of --repeat runs each):
classad2's own per-ad parse cost on texts split in advance, i.e. the floor
any reader built on classad2 pays; ours minus that is the cost of finding ad
boundaries and checking for silently dropped attributes. Of that, the scan of
each ad against the expression limits (negotiatord.ads.limits: what every ad
passes before classad2 reads it) is timed alone on the same pre-split texts.

    .venv/bin/python benchmarks/ingest_bench.py                 # 1,000 sample ads, long form
    .venv/bin/python benchmarks/ingest_bench.py --source slots --ads 5000
    .venv/bin/python benchmarks/ingest_bench.py --ads 20000 --form json
    .venv/bin/python benchmarks/ingest_bench.py --to-jobs --ads 25000
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import classad2
from classad2 import ParserType

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from pool_generator import generate_pool  # noqa: E402

from negotiatord.ads import AdProblem, iter_ads  # noqa: E402
from negotiatord.ads.bracketed import JSON, NEW_FORM, limits_refusal  # noqa: E402
from negotiatord.ads.limits import lines_within  # noqa: E402
from negotiatord.pool.builder import build_snapshot  # noqa: E402
from negotiatord.pool.job_ads import IDENTITY  # noqa: E402
from negotiatord.settings import load_settings  # noqa: E402

POOL_SAMPLE = HERE.parents[1] / "shared/data/ospool/pool_sample.ads.gz"
_PARSERS = {"old": ParserType.Old, "new": ParserType.New, "json": ParserType.JSON}
_GENERATED_AT_MOST = 2000


def sample_texts(form: str) -> list[str]:
    """The 205 sample ads, one text each, in `form`."""
    text = gzip.decompress(POOL_SAMPLE.read_bytes()).decode()
    chunks = [c.strip() for c in re.split(r"\n[ \t]*\n", text) if c.strip()]
    if form == "old":
        return chunks
    return printed([classad2.parseNext(c, ParserType.Old) for c in chunks], form)


def generated_texts(source: str, count: int, form: str) -> list[str]:
    """Up to _GENERATED_AT_MOST generated slot or job ads, one text each, in `form`."""
    count = min(count, _GENERATED_AT_MOST)
    pool = generate_pool(count if source == "slots" else 1, count if source == "jobs" else 0)
    return printed(pool.slot_ads if source == "slots" else pool.job_ads, form)


def printed(ads: list[classad2.ClassAd], form: str) -> list[str]:
    if form == "old":
        return [ad.printOld().strip() for ad in ads]
    if form == "new":
        return [str(ad).strip() for ad in ads]
    return [" ".join(ad.printJson().split("\n")) for ad in ads]


def best_of(repeat: int, runs: dict[str, Callable[[], int]]) -> dict[str, tuple[float, int]]:
    """Each run's best time and its ad count; the runs take turns, so that a
    noisy neighbour on the machine slows all of them alike."""
    best: dict[str, tuple[float, int]] = {}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            count = run()
            elapsed = time.perf_counter() - start
            if name not in best or elapsed < best[name][0]:
                best[name] = (elapsed, count)
    return best


def ours(text: str) -> int:
    count = 0
    for _, outcome in iter_ads(text, "<bench>"):
        if isinstance(outcome, AdProblem):
            raise SystemExit(f"unexpected problem: {outcome}")
        count += 1
    return count


def baseline(text: str, parser: ParserType) -> int:
    return sum(1 for _ in classad2.parseAds(text, parser))


def floor(texts: list[str], parser: ParserType) -> int:
    return sum(1 for t in texts if classad2.parseNext(t, parser) is not None)


def to_jobs(count: int, repeat: int) -> None:
    """The --to-jobs mode (see the module docstring)."""
    pool = generate_pool(1, count)
    text = "\n".join(ad.printOld() for ad in pool.job_ads)
    settings = load_settings(pool.config_path)

    def snapshot(repeats: tuple[str, ...]) -> tuple:
        outcomes = (outcome for _, outcome in iter_ads(text, "<bench>", repeats))
        built = build_snapshot(pool.slot_ads, (o for o in outcomes if not isinstance(o, AdProblem)), settings)
        return built.jobs, [tuple(job.id for job in cluster.jobs) for cluster in built.autoclusters]

    results: dict[str, tuple] = {}

    def run(name: str, repeats: tuple[str, ...]) -> Callable[[], int]:
        def timed() -> int:
            results[name] = snapshot(repeats)
            return len(results[name][0])
        return timed

    best = best_of(repeat, {"repeats": run("repeats", IDENTITY), "whole": run("whole", ())})
    if results["repeats"] != results["whole"]:
        raise SystemExit("job records or autoclusters differ between reading repeats and reading every ad whole")
    print(f"{count} generated idle job ads, long form, {len(text) / 1e6:.1f} MB, "
          f"{len(results['whole'][1])} autoclusters; from text to the snapshot's job records, best of {repeat}")
    for label, name in (("a cluster's repeats read once (the dry run)", "repeats"), ("every ad read whole", "whole")):
        seconds, jobs = best[name]
        print(f"  {label:44} {seconds:7.2f} s  {jobs / seconds:8.0f} ads/s")
    print(f"  speed-up: {best['whole'][0] / best['repeats'][0]:.2f}x")


def limit_scan(texts: list[str], form: str) -> int:
    """The limit scan the reader runs on each ad of ``form`` before classad2 reads it; the ads
    found within the limits."""
    if form == "old":
        return sum(map(lines_within, texts))
    syntax = JSON if form == "json" else NEW_FORM
    return sum(limits_refusal(text, 1, syntax) is None for text in texts)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--ads", type=int, default=1000, help="number of ads (default 1000)")
    cli.add_argument("--form", choices=sorted(_PARSERS), default="old")
    cli.add_argument("--source", choices=["sample", "slots", "jobs"], default="sample")
    cli.add_argument("--repeat", type=int, default=3, help="runs of each reader; the best counts (default 3)")
    cli.add_argument("--repeated-attribute", action="store_true",
                     help="old form: each ad ends by defining its first attribute again (legal; the last value wins)")
    cli.add_argument("--to-jobs", action="store_true",
                     help="time generated job ads from text to the snapshot's job records (see above)")
    args = cli.parse_args()
    if args.to_jobs:
        to_jobs(args.ads, args.repeat)
        return

    distinct = sample_texts(args.form) if args.source == "sample" else generated_texts(args.source, args.ads, args.form)
    if args.repeated_attribute:
        if args.form != "old":
            raise SystemExit("--repeated-attribute is for the old form")
        distinct = [f"{text}\n{text.splitlines()[0]}" for text in distinct]
    texts = list(itertools.islice(itertools.cycle(distinct), args.ads))
    separator = "\n" if args.form == "json" else "\n\n"
    text = separator.join(texts) + "\n"
    parser = _PARSERS[args.form]
    attributes = sum(t.count("\n") + 1 - args.repeated_attribute for t in texts) if args.form == "old" else None

    best = best_of(args.repeat, {
        "ours": lambda: ours(text),
        "floor": lambda: floor(texts, parser),
        "limits": lambda: limit_scan(texts, args.form),
        "parseAds": lambda: baseline(text, parser),
    })
    counts = {name: count for name, (_, count) in best.items()}
    if set(counts.values()) != {args.ads}:
        raise SystemExit(f"ad counts differ: {counts}, wanted {args.ads}")
    seconds = {name: elapsed for name, (elapsed, _) in best.items()}

    def row(label: str, name: str, note: str = "") -> str:
        line = f"  {label:40} {seconds[name]:7.2f} s  {args.ads / seconds[name]:8.0f} ads/s"
        if attributes and name == "ours":
            line += f"  {attributes / seconds[name] / 1e6:5.2f} M attributes/s"
        return line + note

    print(f"{args.ads} {args.source} ads ({len(distinct)} distinct), {args.form} form, {len(text) / 1e6:.1f} MB"
          + (f", {attributes / args.ads:.0f} attributes/ad" if attributes else "") + f"; best of {args.repeat}")
    print(row("negotiatord.ads.iter_ads", "ours"))
    print(row("classad2.parseNext, pre-split", "floor", "   (floor of any classad2-based reader)"))
    print(row("limit scan alone (ads.limits), pre-split", "limits",
              f"   ({seconds['limits'] / seconds['floor']:.0%} of the floor)"))
    print(row("classad2.parseAds", "parseAds", "   (baseline)"))
    print(f"  speed-up over parseAds: {seconds['parseAds'] / seconds['ours']:.2f}x; "
          f"overhead over the floor: {(seconds['ours'] - seconds['floor']) / seconds['floor']:+.0%}")


if __name__ == "__main__":
    main()
