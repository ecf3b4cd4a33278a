"""Limits on one attribute's expression (negotiatord.ads.limits): real ads are far within them, and
an ad beyond them is refused in every form, naming the attribute, before classad2 reads it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import classad2
import pytest

from negotiatord.ads import parse_ads
from negotiatord.ads.limits import (
    MAX_EXPRESSION_CHARS,
    MAX_NESTING,
    MAX_OPERATORS,
    NEW_FORM_STRING,
    expression_fault,
    nesting,
    operator_count,
    statements_within,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def real_ad_files() -> list[Path]:
    files = [DATA / "ospool" / "pool_sample.ads.gz", *sorted((DATA / "htcondor").glob("*/*")),
             *sorted((ROOT / "samples").glob("*.ads"))]
    return [f for f in files if f.name not in ("SOURCES.txt", "real_job_submission.job_queue.log")]


def test_real_ads_are_far_within_the_limits() -> None:
    """The margins the limits are chosen with: every attribute of every real ad, as classad2
    prints it, within a third of each limit (the largest: 4,352 characters, 9 deep, 96 operators)."""
    longest = deepest = most = 0
    for path in real_ad_files():
        data = path.read_bytes()
        data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        batch = parse_ads(data.decode("utf-8", "replace"))
        assert not batch.problems, path
        for ad in batch.ads:
            for name in ad.keys():
                text = str(ad.lookup(name))
                code = NEW_FORM_STRING.sub('""', text)
                assert expression_fault(text, NEW_FORM_STRING) is None
                longest, deepest = max(longest, len(text)), max(deepest, nesting(code))
                most = max(most, operator_count(code))
    assert (longest, deepest, most) == (4352, 9, 96)
    assert longest * 3 < MAX_EXPRESSION_CHARS and deepest * 3 < MAX_NESTING and most * 3 < MAX_OPERATORS


def chain(operators: int) -> str:
    return " && ".join(["TARGET.Memory > 1"] * ((operators + 1) // 3))


@pytest.mark.parametrize("value, fault", [
    (chain(MAX_OPERATORS - 2), None),
    (chain(MAX_OPERATORS + 3), "operators"),
    ("(" * MAX_NESTING + "1" + ")" * MAX_NESTING, None),
    ("(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1), "nested 65 deep"),
    ("(" * 60_000, "nested 60,000 deep"),
    ('"' + "&& (" * 1000 + '"', None),                    # inside a string literal: not read as code
    ('"' + "x" * MAX_EXPRESSION_CHARS + '"', "characters"),
    ("!" * (MAX_OPERATORS + 1) + "x", "operators"),
])
def test_expression_faults(value: str, fault: str | None) -> None:
    found = expression_fault(value, NEW_FORM_STRING)
    assert (found is None) if fault is None else (fault in found)


HUGE = " + ".join(f"x{i}" for i in range(50_000))


def test_the_long_form_refuses_the_attribute_and_keeps_reading_the_rest() -> None:
    text = f'Name = "a"\nStart = {HUGE}\nMemory = 1\n\nName = "b"\nStart = true\n'
    batch = parse_ads(text, "slots.ads")
    [problem] = batch.problems
    assert str(problem).startswith("slots.ads:1 (ad 1): line 2: Start: ")
    assert problem.readable["Name"] == "a" and "Start" not in problem.readable
    assert [ad["Name"] for ad in batch.ads] == ["b"]


def test_a_continued_long_form_value_is_checked_as_a_whole() -> None:
    text = 'Name = "a"\nStart = ' + "(\n" * (MAX_NESTING + 1) + "1" + "\n)" * (MAX_NESTING + 1) + "\n"
    [problem] = parse_ads(text).problems
    assert f"Start: brackets nested {MAX_NESTING + 1} deep" in problem.reason


def test_the_new_form_refuses_the_attribute() -> None:
    text = f'[ Name = "a"; Start = {HUGE}; Memory = [ A = 1; B = 2 ] ]\n[ Name = "b"; X = "; ]" ]'
    batch = parse_ads(text)
    [problem] = batch.problems
    assert problem.reason.startswith("Start: ") and problem.readable["Name"] == "a"
    assert [ad["Name"] for ad in batch.ads] == ["b"]


def test_json_refuses_the_attribute_and_nesting() -> None:
    ads = [{"Name": "a", "Start": f"/Expr({HUGE})/"}, {"Name": "b"}, {"Name": "c", "X": [[[[[[1]]]]]] * 2},
           {"Name": "d", "X": json.loads("[" * (MAX_NESTING + 2) + "]" * (MAX_NESTING + 2))}]
    text = json.dumps(ads).replace("/", "\\/")
    batch = parse_ads(text)
    assert [(p.position, p.reason.split(":")[0], p.readable["Name"]) for p in batch.problems] == [
        (1, "Start", "a"), (4, "X", "d")]
    assert [ad["Name"] for ad in batch.ads] == ["b", "c"]


@pytest.mark.parametrize("text, within", [
    (f"[ A = {chain(200)}; B = {chain(200)} ]", True),             # each attribute within
    (f"[ A = {chain(MAX_OPERATORS + 3)}; B = 1 ]", False),
    # a nested ad: split at its own `;`, each half would pass although A's value is beyond
    (f"[ A = [ B = {chain(200)}; C = {chain(200)} ]; D = 1 ]", False),
    (f"[ A = x[0] + {chain(200)}; B = y[1] ]", True),               # subscripts hold no `;`
    (f'[ A = "{";" * 500}"; B = {chain(200)} ]', True),             # `;` in a string splits nothing
    ("[ A = " + "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1) + " ]", False),
])
def test_the_new_form_quick_scan_is_sure_only_of_ads_within(text: str, within: bool) -> None:
    """statements_within says True only where the attribute-by-attribute scan finds no fault."""
    assert statements_within(text) is within
    if within:
        assert not parse_ads(text).problems


def test_the_new_form_quick_scan_passes_the_real_slot_ads() -> None:
    """Every OSPool sample ad printed in the new form is within the limits; the quick scan is sure
    of all but those longer than one expression may be or nesting an ad."""
    text = gzip.decompress((DATA / "ospool" / "pool_sample.ads.gz").read_bytes()).decode()
    ads = [str(ad) for ad in classad2.parseAds(text, classad2.ParserType.Old)]
    assert sum(map(statements_within, ads)) >= len(ads) - 5
