"""Long-form ads that repeat an attribute (legal: the last value wins, the first spelling of the
name is kept, as classad2 reads them) are read whole, at the speed of one parse, and read exactly
as classad2's own parser reads the same text. Real slot ads from the OSPool sample are the base.
"""

from __future__ import annotations

import classad2
from classad2 import ParserType
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from negotiatord.ads import longform, parse_ads
from tests.ads.test_reader import DATA, same_ads, text_of

SLOT_AD = next(block for block in text_of(DATA / "ospool/pool_sample.ads.gz").split("\n\n")
               if 'MyType = "Machine"' in block)
LINES = SLOT_AD.splitlines()


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, len(LINES) - 1), st.booleans()), min_size=1, max_size=4))
def test_repeats_read_as_classad2_reads_them(repeats: list[tuple[int, bool]]) -> None:
    """Lines of a real slot ad repeated at the end, some with the name's case changed."""
    lines = list(LINES)
    for index, other_case in repeats:
        name, equals, value = LINES[index].partition("=")
        lines.append((name.swapcase() if other_case else name) + equals + value)
    text = "\n".join(lines)
    [ad] = parse_ads(text).ads
    same_ads([ad], [classad2.parseNext(text, ParserType.Old)])


def test_a_repeat_costs_one_whole_read_not_one_per_statement(monkeypatch) -> None:
    reads = []
    real = longform.parse_one
    monkeypatch.setattr(longform, "parse_one", lambda text, parser: reads.append(text) or real(text, parser))
    text = SLOT_AD + "\nCpus = 3\n"
    [ad] = parse_ads(text).ads
    assert ad["Cpus"] == 3
    # the whole ad, the overridden statement alone, the ad with each name once (a clean ad: one)
    assert len(reads) == 3


def test_a_bad_overridden_or_last_value_is_still_named_by_its_line() -> None:
    overridden = parse_ads("Name = \"a\"\nCpus = (1 +\nMemory = 2\nCpus = 4")
    assert not overridden.ads and "line 2" in overridden.problems[0].reason
    last = parse_ads("Name = \"a\"\nCpus = 1\nMemory = 2\nCpus = (4 +")
    assert not last.ads and "line 4" in last.problems[0].reason
