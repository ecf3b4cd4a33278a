"""Expression walks that must not recurse once per operator: chains far longer than the ads reader
lets in (negotiatord.ads.limits) are parsed, printed and analysed with stacks."""

from __future__ import annotations

import classad2
import pytest

from negotiatord.classad.parser import MAX_DEPTH, ParseError, parse, unparse
from negotiatord.pool.significance import job_reads, own_references

LONG = 5_000


def test_the_parser_reads_and_prints_long_chains_without_recursion() -> None:
    for text in (" && ".join(f"TARGET.x{i} > {i}" for i in range(LONG)), " + ".join(f"x{i}" for i in range(LONG))):
        assert unparse(parse(text)) == str(classad2.ExprTree(text))
    assert unparse(parse("!" * LONG + "x")) == "!" * LONG + "x"    # more than classad2 itself parses


def test_the_parser_refuses_nesting_beyond_its_depth() -> None:
    assert parse("(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1)) is not None
    with pytest.raises(ParseError, match="nested"):
        parse("(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1))


def test_significance_walks_long_chains() -> None:
    slot = classad2.ClassAd({"Memory": 1})
    slot["Start"] = classad2.ExprTree(" && ".join(f"(x{i} == {i})" for i in range(LONG)))
    slot["Requirements"] = classad2.ExprTree("Start && " + " || ".join(f"TARGET.y{i}" for i in range(LONG)))
    reads = job_reads(slot.lookup("Requirements"), slot)
    assert {read.attribute for read in reads} == {f"x{i}" for i in range(LONG)} | {f"y{i}" for i in range(LONG)}
    assert own_references(" + ".join(f"z{i}" for i in range(LONG))) == {f"z{i}" for i in range(LONG)}


def test_a_slot_attribute_chain_is_followed_with_a_stack() -> None:
    slot = classad2.ClassAd({f"a{i}": classad2.ExprTree(f"a{i + 1} && TARGET.t{i}") for i in range(LONG)})
    reads = job_reads(classad2.ExprTree("a0"), slot)
    assert {f"t{i}" for i in range(LONG)} | {f"a{LONG}"} == {read.attribute for read in reads}
