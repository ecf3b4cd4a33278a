"""Ingest speed of negotiatord.ads against classad2.parseAds on the same text.

The input is the real OSPool pool sample (205 ads, ~475 attributes each,
/work/shared/data/ospool/pool_sample.ads.gz), replicated to --ads N ads, in
the chosen form: `old` is the file's own long-form text, `new` and `json`
are the same ads printed by classad2 (JSON one object per line, the one
multi-ad JSON layout classad2.parseAds reads).  Both readers are consumed one
ad at a time and drop each ad, so memory stays flat at any N.

Also printed: classad2's own per-ad parse cost on texts split in advance,
i.e. the floor any reader built on classad2 pays; ours minus that is the cost
of finding ad boundaries and checking for silently dropped attributes.

    .venv/bin/python benchmarks/ingest_bench.py                 # 1,000 ads, long form
    .venv/bin/python benchmarks/ingest_bench.py --ads 20000 --form json
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import re
import time
from pathlib import Path

import classad2
from classad2 import ParserType

from negotiatord.ads import AdProblem, iter_ads

POOL_SAMPLE = Path(__file__).resolve().parents[2] / "shared/data/ospool/pool_sample.ads.gz"
_PARSERS = {"old": ParserType.Old, "new": ParserType.New, "json": ParserType.JSON}


def ad_texts(form: str) -> list[str]:
    """The 205 sample ads, one text each, in `form`."""
    text = gzip.decompress(POOL_SAMPLE.read_bytes()).decode()
    chunks = [c.strip() for c in re.split(r"\n[ \t]*\n", text) if c.strip()]
    if form == "old":
        return chunks
    ads = [classad2.parseNext(c, ParserType.Old) for c in chunks]
    if form == "new":
        return [str(ad).strip() for ad in ads]
    return [" ".join(ad.printJson().split("\n")) for ad in ads]


def timed(run) -> tuple[float, int]:
    start = time.perf_counter()
    count = run()
    return time.perf_counter() - start, count


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


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--ads", type=int, default=1000, help="number of ads (default 1000)")
    cli.add_argument("--form", choices=sorted(_PARSERS), default="old")
    args = cli.parse_args()

    sample = ad_texts(args.form)
    texts = list(itertools.islice(itertools.cycle(sample), args.ads))
    separator = "\n" if args.form == "json" else "\n\n"
    text = separator.join(texts) + "\n"
    parser = _PARSERS[args.form]
    attributes = sum(t.count("\n") + 1 for t in texts) if args.form == "old" else None

    ours_s, ours_n = timed(lambda: ours(text))
    floor_s, floor_n = timed(lambda: floor(texts, parser))
    base_s, base_n = timed(lambda: baseline(text, parser))
    if not ours_n == floor_n == base_n == args.ads:
        raise SystemExit(f"ad counts differ: ours {ours_n}, floor {floor_n}, parseAds {base_n}, wanted {args.ads}")

    print(f"{args.ads} OSPool ads, {args.form} form, {len(text) / 1e6:.1f} MB"
          + (f", {attributes / args.ads:.0f} attributes/ad" if attributes else ""))
    print(f"  negotiatord.ads.iter_ads        {ours_s:8.2f} s  {args.ads / ours_s:9.0f} ads/s"
          + (f"  {attributes / ours_s / 1e6:5.2f} M attributes/s" if attributes else ""))
    print(f"  classad2.parseNext, pre-split   {floor_s:8.2f} s  {args.ads / floor_s:9.0f} ads/s   (floor)")
    print(f"  classad2.parseAds (baseline)    {base_s:8.2f} s  {args.ads / base_s:9.0f} ads/s")
    print(f"  speed-up over parseAds: {base_s / ours_s:.2f}x; "
          f"overhead over the floor: {(ours_s - floor_s) / floor_s:+.0%}")


if __name__ == "__main__":
    main()
