"""load_bench's pacing of slot updates (benchmarks/load_bench.py), without timing anything.

A startd re-advertises each of its slots every ``UPDATE_INTERVAL`` (300 s by default, HTCondor
manual, configuration macros, condor_startd), so a pool's slot updates reach the collector as a
steady stream; the benchmark's paced mode sends a rate as such a stream of equal posts. The
regrouped batches are checked with classad2's own long-form parser.
"""

import argparse
import math

import classad2
import pytest
from hypothesis import given, strategies as st

from benchmarks.load_bench import PACING_TICK_S, paced_batches, rate_list, regroup


def test_the_ospools_rate_is_a_small_post_every_tick():
    # 45.6k slots every 300 s is ~150 updates/s: 15 ads every 0.1 s
    assert paced_batches(150, 1000) == (15, pytest.approx(0.1))


def test_a_rate_beyond_the_batch_limit_posts_full_batches_more_often():
    size, interval = paced_batches(50_000, 1000)
    assert size == 1000
    assert interval == pytest.approx(0.02)


def test_a_rate_below_one_ad_a_tick_posts_single_ads_further_apart():
    size, interval = paced_batches(4, 1000)
    assert size == 1
    assert interval == pytest.approx(0.25)


@given(st.floats(min_value=0.01, max_value=1e6), st.integers(min_value=1, max_value=5000))
def test_posts_carry_the_rate_exactly_and_respect_the_batch_limit(rate, limit):
    size, interval = paced_batches(rate, limit)
    assert 1 <= size <= limit
    assert math.isclose(size / interval, rate, rel_tol=1e-9)
    if 1 <= rate * PACING_TICK_S <= limit:
        # the nearest whole number of ads to a tick's worth: posts are a tick apart, give or take half an ad
        assert abs(interval - PACING_TICK_S) <= 0.5 / rate + 1e-12


@pytest.mark.parametrize("rate, limit", [(0, 1000), (-5, 1000), (100, 0)])
def test_pacing_refuses_what_cannot_be_paced(rate, limit):
    with pytest.raises(ValueError, match="pacing needs"):
        paced_batches(rate, limit)


def test_regrouped_batches_hold_the_same_ads_in_order():
    ads = []
    for number in range(7):
        ad = classad2.ClassAd()
        ad["MyType"] = "Machine"
        ad["Name"] = f"slot{number}@node{number % 3}"
        ad["Cpus"] = number + 1
        ads.append(ad)
    texts = ["\n".join(ad.printOld() for ad in ads[i:i + 3]) for i in range(0, len(ads), 3)]
    regrouped = regroup(texts, 2)
    assert len(regrouped) == 4
    parsed = [list(classad2.parseAds(text, classad2.ParserType.Old)) for text in regrouped]
    assert [len(batch) for batch in parsed] == [2, 2, 2, 1]
    assert [(ad["Name"], ad["Cpus"]) for batch in parsed for ad in batch] == [
        (ad["Name"], ad["Cpus"]) for ad in ads]


def test_rate_lists_read_counts_and_max():
    assert rate_list("150, 1.5k,7500,max") == [150.0, 1500.0, 7500.0, None]


@pytest.mark.parametrize("text", ["0", "-150", "fast", "150,,7500"])
def test_rate_lists_name_the_bad_item(text):
    with pytest.raises(argparse.ArgumentTypeError, match="rate"):
        rate_list(text)
