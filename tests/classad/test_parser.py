"""The fast path's ClassAd parser against classad2's own parser.

Round trip: for every expression in ../shared/data and for random expression texts, unparsing our
AST and handing it to classad2 gives the same canonical text as classad2 gives for the original
(canonical-of-canonical, since classad2's printer is not always a fixed point: ``- 3`` prints as
`` -3``, which it then reads as the literal -3).
"""

from __future__ import annotations

import classad2
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from negotiatord.classad.parser import ParseError, parse, unparse
from negotiatord.fastpath.compiler.resolution import CONTEXT_FUNCTIONS, NATIVE_BINARY, NATIVE_FUNCTIONS, NATIVE_UNARY
from tests.fastpath.test_data import all_ads, constructs


def canonical(text: str) -> str:
    return str(classad2.ExprTree(text))


def round_trips(text: str) -> bool:
    reference = canonical(text)
    return canonical(unparse(parse(reference))) == canonical(reference)


def classad2_reads_its_own_print(text: str) -> bool:
    """classad2 prints some trees it cannot read back (``MY.'odd name'`` loses its quotes)."""
    try:
        canonical(canonical(text))
    except Exception:
        return False
    return True


def test_every_expression_in_the_shared_data_round_trips():
    texts = {str(ad.lookup(name)) for _, ad in all_ads() for name in ad.keys()}
    assert len(texts) > 10_000
    failures = [t for t in texts if not round_trips(t)]
    assert failures == []


@pytest.mark.parametrize("text, expected", [
    ("5 ?: 1 == 2", ("bin", "==", ("elvis", ("lit", (3, 5)), ("lit", (3, 1))), ("lit", (3, 2)))),
    ("!undefined ?: 4", ("un", "!", ("elvis", ("lit", (0, None)), ("lit", (3, 4))))),
    ("1 - -1", ("bin", "-", ("lit", (3, 1)), ("lit", (3, -1)))),
    ("a isnt b", ("bin", "=!=", ("attr", None, "a"), ("attr", None, "b"))),
    ("TARGET.x", ("attr", "TARGET", "x")),
    ('"a" "b"', ("lit", (5, "ab"))),
])
def test_precedence_and_tokens_follow_classad2(text, expected):
    """Elvis binds tighter than unary operators and comparisons; adjacent strings concatenate."""
    assert parse(text) == expected
    assert round_trips(text)


@pytest.mark.parametrize("text", ["5.", "f(1)(2)", "a.b(1)", "1 +", '"unterminated', "08"])
def test_text_classad2_rejects_is_rejected(text):
    with pytest.raises(classad2.ClassAdException):
        classad2.ExprTree(text)
    with pytest.raises(ParseError):
        parse(text)


_names = st.sampled_from(["a", "B", "Memory", "RequestCpus", "x_1", "'odd name'"])
_scopes = st.sampled_from(["", "MY.", "TARGET.", "my.", "target."])
_strings = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x24F, blacklist_categories=("Cs",)),
                   max_size=6).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')
_atoms = st.one_of(
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    _strings,
    st.sampled_from(["true", "false", "undefined", "error", "TRUE", "Undefined"]),
    st.tuples(_scopes, _names).map("".join),
)
_BINARY = ["+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "=?=", "=!=", "is", "isnt", "&&", "||",
           "&", "|", "^", "<<", ">>", ">>>"]


def _compose(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(_BINARY), children).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(st.sampled_from(["-", "+", "!", "~"]), children).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(children, children).map(lambda t: f"({t[0]}) ?: ({t[1]})"),
        children.map(lambda t: f"({t})"),
        st.tuples(st.sampled_from(["strcat", "ifThenElse", "isUndefined", "floor", "size", "member"]),
                  st.lists(children, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.lists(children, max_size=3).map(lambda items: "{" + ", ".join(items) + "}"),
        st.tuples(children, children).map(lambda t: f"({t[0]})[{t[1]}]"),
    )


EXPRESSION_TEXTS = st.recursive(_atoms, _compose, max_leaves=12)


@hsettings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(EXPRESSION_TEXTS)
def test_random_expressions_round_trip(text):
    try:
        canonical(text)
    except Exception:
        return                      # not ClassAd: nothing to compare
    if classad2_reads_its_own_print(text):
        assert round_trips(text)


def test_constructs_of_the_shared_data_are_covered():
    """Every operator and function in the data's ads is evaluated natively by the kernels or by a
    classad2 step over literal inputs; only scope-dependent functions fall back to classad2."""
    found: set[str] = set()
    for _, ad in all_ads():
        for name in ad.keys():
            try:
                constructs(parse(str(ad.lookup(name))), found)
            except ParseError:
                pytest.fail(f"{name}: {ad.lookup(name)}")
    native = ({f"op:{op}" for op in (*NATIVE_BINARY, *NATIVE_UNARY, "&&", "||")}
              | {f"call:{f}" for f in (*NATIVE_FUNCTIONS, "ifthenelse", "time")} | {"cond", "elvis"})
    fallback = {f"call:{f}" for f in CONTEXT_FUNCTIONS}
    report = {c: "kernel" if c in native else "classad2 fallback" if c in fallback else "classad2 step"
              for c in sorted(found)}
    print("\n".join(f"{c:32} {how}" for c, how in report.items()))
    assert {"op:&&", "op:=?=", "call:stringlistmember", "call:ifthenelse", "elvis"} <= found
    assert {c for c, how in report.items() if how == "classad2 fallback"} == {"call:evalineachcontext"}
