"""A fixed ``time()`` for the whole cycle.

HTCondor evaluates ``time()`` afresh on every call, and its ClassAd library resolves an otherwise
undefined ``CurrentTime`` attribute to the current time (glidein START expressions use both). A cycle
that must be reproducible (the dry-run ``--now``, trace replay, tests) needs one value for the whole
cycle. classad2 has no clock hook, so the reference evaluator rewrites ``time()`` calls into the
cycle's time and defines ``CurrentTime`` in ads that read it.
"""

from __future__ import annotations

import copy
import re

import classad2

_TIME_CALL = re.compile(r"\btime\s*\(\s*\)", re.IGNORECASE)
_CURRENT_TIME = re.compile(r"\bCurrentTime\b", re.IGNORECASE)
_CURRENT_TIME_AS_SPELT = re.compile(r"CurrentTime\b")    # no leading \b: it would stop the literal scan
_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')


def mentions_time(text: str) -> bool:
    """Whether ``text`` calls ``time()`` outside string literals."""
    return "time" in text.lower() and _TIME_CALL.search(_STRING_LITERAL.sub('""', text)) is not None


def mentions_current_time(text: str) -> bool:
    """Whether ``text`` (an ad's or an expression's) names ``CurrentTime``, which an ad lacking it
    resolves to the clock."""
    # The usual spelling first, found by a literal scan, with the word boundary before it checked
    # by hand (``\w`` is str.isalnum or an underscore): a search that ignores case or starts with
    # ``\b`` tries every position of a whole ad's text, twenty times slower.
    for match in _CURRENT_TIME_AS_SPELT.finditer(text):
        start = match.start()
        if start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_"):
            return True
    return _CURRENT_TIME.search(text) is not None


def references_current_time(expression: str) -> bool:
    """Whether an expression's text (classad2's unparse of it) names ``CurrentTime`` as an
    attribute: outside its string literals, in a text with no quoted attribute name or escape
    left, so that the ad's text (``printOld``, the same expression in old syntax) names it too."""
    bare = _STRING_LITERAL.sub('""', expression)
    return "'" not in bare and "\\" not in bare and mentions_current_time(bare)


def freeze_time(text: str, now: int) -> str:
    """``text`` with every ``time()`` call outside string literals replaced by ``now``."""
    pieces: list[str] = []
    position = 0
    for literal in _STRING_LITERAL.finditer(text):
        pieces.append(_TIME_CALL.sub(str(now), text[position : literal.start()]))
        pieces.append(literal.group())
        position = literal.end()
    pieces.append(_TIME_CALL.sub(str(now), text[position:]))
    return "".join(pieces)


def frozen_expr(expr: classad2.ExprTree, now: int) -> classad2.ExprTree:
    text = str(expr)
    return classad2.ExprTree(freeze_time(text, now)) if mentions_time(text) else expr


def frozen_ad(ad: classad2.ClassAd, now: int) -> classad2.ClassAd:
    """``ad`` itself when it reads no clock, else a copy whose expressions use ``now``: classad2's
    own whole copy, with ``time()`` replaced by ``now`` in the expressions that call it (looked
    at one by one only when the ad's text calls it), and ``CurrentTime = now`` where the ad reads
    it undefined."""
    text = ad.printOld()
    reads_current_time = "CurrentTime" not in ad and mentions_current_time(text)
    calls_time = mentions_time(text)
    if not (calls_time or reads_current_time):
        return ad
    frozen = copy.deepcopy(ad)
    if calls_time:
        for name in ad.keys():
            text = str(ad.lookup(name))
            if mentions_time(text):
                frozen[name] = classad2.ExprTree(freeze_time(text, now))
    if reads_current_time:
        frozen["CurrentTime"] = now
    return frozen


def private_frozen_ad(ad: classad2.ClassAd, now: int) -> classad2.ClassAd:
    """A copy of ``ad`` the caller may change, its expressions using ``now``: the frozen copy
    when the ad reads the clock (one copy, not a copy of a copy), else a plain copy."""
    frozen = frozen_ad(ad, now)
    return copy.deepcopy(ad) if frozen is ad else frozen
