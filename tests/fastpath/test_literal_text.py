"""Literal attribute values as a slot ad's text gives them, read into the fast path's columns, give
classad2's answers where classad2 reads the text otherwise than its obvious reading.

classad2 is the reference: the same text parsed by classad2 (the old long form of
``condor_status -l`` and the new bracketed form), then ``ExprTree(text).eval(slot, job)``. The
cases are those where a reader of ``Name = literal`` lines could go wrong: an integer beyond 64
bits (classad2 reads 0), reals written ``1e3`` or ``-0.0``, a backslash (literal in the old
form, an escape in the new), ``undefined`` and ``error`` as values, lists, nested ads, absolute
and relative times (the old parser makes a relative time a real), and names of other case.
"""

from __future__ import annotations

import classad2
import pytest

from negotiatord.fastpath.probe import evaluate_over
from tests.fastpath.test_differential import NOW, reference, same

LITERALS = {
    "beyond 64 bits": "99999999999999999999",
    "largest integer": "9223372036854775807",
    "smallest integer": "-9223372036854775808",
    "exponent": "1e3",
    "small exponent": "1.5E-3",
    "negative zero": "-0.0",
    "escaped quote": r'"a\"b"',
    "backslash": r'"a\\b"',
    "backslash n": r'"a\nb"',
    "boolean in capitals": "TRUE",
    "undefined": "undefined",
    "error": "error",
    "list": "{1, 2}",
    "nested ad": "[a = 1]",
    "absolute time": 'absTime("2020-01-01T00:00:00")',
    "relative time": 'relTime("1:00")',
    "string of a number": '"60"',
}
QUESTIONS = ["MY.X", "X == 60", "X + 1", "X * 2 > 100", "X =?= undefined", "X =?= 1000.0", "isReal(X)",
             "isInteger(X)", "isString(X)", "isUndefined(X)", "isError(X)", "X == TARGET.X", "X =?= TARGET.X",
             'X == "a\\"b"', "size(X)", "int(X)", "string(X)", "x"]
JOB = classad2.ClassAd("[X = 1000.0]")


def parsed(text: str, form: str) -> classad2.ClassAd | None:
    """The slot ad ``X = text`` in one form; None where classad2 does not read it."""
    try:
        ad = (classad2.parseOne(f"Name = \"s\"\nX = {text}\n", classad2.ParserType.Old) if form == "old"
              else classad2.ClassAd(f'[Name = "s"; X = {text}]'))
    except (ValueError, classad2.ClassAdException):
        return None
    return ad if "X" in ad else None


@pytest.mark.parametrize("form", ["old", "new"])
def test_each_literal_gives_classad2s_answers(form: str) -> None:
    slots = {case: ad for case, text in LITERALS.items() if (ad := parsed(text, form)) is not None}
    assert len(slots) >= len(LITERALS) - 2          # the new form refuses bare undefined and error
    answered = 0
    for question in QUESTIONS:
        answers = evaluate_over(question, None, list(slots.values()), JOB, NOW)
        for (case, slot), answer in zip(slots.items(), answers):
            if answer is None:          # handed to classad2: its answer by construction
                continue
            expected = reference(question, slot, JOB)
            assert same(answer, expected), (form, case, question, answer, expected)
            answered += 1
    # lists, nested ads and times go to classad2; everything else is the fast path's own answer
    assert answered >= 0.75 * len(QUESTIONS) * len(slots)


def test_classad2_reads_these_texts_otherwise_than_the_obvious_reading() -> None:
    """What the cases above stand for: each of these is read by classad2, and differently from
    how the text looks."""
    def value(text: str, form: str) -> object:
        ad = parsed(text, form)
        assert ad is not None
        return ad.eval("X")

    assert value(LITERALS["beyond 64 bits"], "old") == 0
    assert value(LITERALS["backslash"], "old") == "a\\\\b" and value(LITERALS["backslash"], "new") == "a\\b"
    assert value(LITERALS["relative time"], "old") == 60.0
    assert value(LITERALS["exponent"], "new") == 1000.0 and isinstance(value(LITERALS["exponent"], "new"), float)
    assert value(LITERALS["undefined"], "old") is classad2.Value.Undefined
