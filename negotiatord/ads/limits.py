"""Limits on one attribute's expression, checked on its text before classad2 reads it.

classad2 (HTCondor's own ClassAd library) parses, prints and evaluates an expression by recursing
once per level of its tree on the C stack: a long enough chain of operators crashes the whole
process instead of raising (its printer at ~50,000 terms, its parser at ~200,000), and it refuses
to evaluate a tree more than ~400 levels deep (``failed to evaluate expression``), so HTCondor
itself could never match on such an expression. negotiatord's own walks are iterative or bounded
(:mod:`negotiatord.classad.parser`, :mod:`negotiatord.pool.significance`, the fast path's
compiler). So an ad holding an expression beyond these limits is refused as it is read, naming the
attribute, and its text never reaches classad2.

The largest values in ``../shared/data`` (the OSPool central manager's 205 ads, HTCondor's job,
history and startd ads) and ``samples/``, counted as below, are 4,352 characters (a slot's
``ChildName`` list), 9 brackets open at once (``DaemonShutdown``) and 96 operators (the OSPool
``START``). The limits leave 15, 7 and 3 times that; the last is held below classad2's evaluation
depth: a tree is at most operators + nesting + 1 = 385 levels deep.

- :data:`MAX_EXPRESSION_CHARS`: the text of one attribute's value, string literals included;
- :data:`MAX_NESTING`: brackets ``( [ {`` open at once within one value, outside string literals;
- :data:`MAX_OPERATORS`: operators in one value outside string literals (every unary, binary and
  ternary operator token, ``.`` selections, ``is``/``isnt``): a value of N operators holds at most
  N + 1 terms.

Whole ads are bounded too, so that reading one ad costs a bounded time (a 10 MB ad of repeated
lines took classad2 and the long-form reader 9 s, holding up every other body): at most
:data:`MAX_AD_CHARS` characters and :data:`MAX_AD_ATTRIBUTES` attributes, counted as lines in the
long form, ``;`` in the new form and ``,`` in JSON (each attribute needs one; a list's members
count too, so this errs on the side of counting more). The largest real ads (the OSPool central
manager's) have 47,233 characters and 847 attributes; the limits leave 22 and 11 times that.

The scan is a conservative reading of the text: a string literal is taken to end no later than
classad2 ends it (the long form's ``\\"`` rule included), so it never counts fewer operators or
brackets than classad2 reads. An ad well within the limits as a whole (every ad of the sample
pools) is let through after a few C-speed counts; only the rest are scanned attribute by attribute.
"""

from __future__ import annotations

import re

MAX_EXPRESSION_CHARS = 65_536
MAX_NESTING = 64
MAX_OPERATORS = 320
MAX_AD_CHARS = 1 << 20
MAX_AD_ATTRIBUTES = 10_000

_OPERATOR = re.compile(
    r">>>|=\?=|=!=|<<|>>|&&|\|\||==|!=|<=|>=|\?:|[-+*/%<>!~&|^?:]|\.(?=\s*[A-Za-z_'])|\b(?:isnt|is)\b",
    re.IGNORECASE)
_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")
_OPENERS = "([{"
_OPERATOR_CHARS = "&|=!<>+-*/%^~?:."
# bytes.translate deletion tables keeping only newlines and openers, or newlines and operator characters
_ALL_BUT_OPENERS = bytes(b for b in range(256) if chr(b) not in _OPENERS + "\n")
_ALL_BUT_OPERATORS = bytes(b for b in range(256) if chr(b) not in _OPERATOR_CHARS + "\n")
_CROWDED = re.compile(rb"[^\n]{%d}" % (MAX_NESTING + 1))   # a line of more openers than MAX_NESTING

# String literals as the old long form reads them (no newline inside; `\"` does not end one), and
# as the new form and JSON expressions do (C escapes), with the new form's comments.
LONG_FORM_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*+"')
DOUBLE_QUOTED = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
SINGLE_QUOTED = r"'[^'\\]*+(?:\\.[^'\\]*+)*+'"
COMMENT = r"//[^\n]*+|/\*.*?\*/"
NEW_FORM_STRING = re.compile(f"{DOUBLE_QUOTED}|{SINGLE_QUOTED}|{COMMENT}", re.S)


def expression_fault(value: str, strings: re.Pattern[str]) -> str | None:
    """Why the text of one attribute's value is beyond the limits, or None when it is within.
    ``strings`` matches the string literals (and comments) of the text's form."""
    if len(value) > MAX_EXPRESSION_CHARS:
        return f"{len(value):,} characters, more than the {MAX_EXPRESSION_CHARS:,} an expression may have"
    if len(value) <= MAX_NESTING:
        return None
    code = strings.sub('""', value)
    depth = nesting(code) if sum(map(code.count, _OPENERS)) > MAX_NESTING else 0
    if depth > MAX_NESTING:
        return f"brackets nested {depth:,} deep, more than the {MAX_NESTING} an expression may have"
    if len(code) > MAX_OPERATORS:
        operators = operator_count(code)
        if operators > MAX_OPERATORS:
            return f"{operators:,} operators, more than the {MAX_OPERATORS:,} an expression may have"
    return None


def ad_size_fault(text: str, separator: str) -> str | None:
    """Why the ad ``text`` is beyond the limits of a whole ad, or None; ``separator`` ends an
    attribute in its form (``\\n``, ``;``, ``,``). A few C-speed counts."""
    if len(text) > MAX_AD_CHARS:
        return f"the ad has {len(text):,} characters, more than the {MAX_AD_CHARS:,} an ad may have"
    attributes = text.count(separator)
    if attributes > MAX_AD_ATTRIBUTES:
        return f"the ad has {attributes:,} attributes or more, more than the {MAX_AD_ATTRIBUTES:,} an ad may have"
    return None


def operator_count(code: str) -> int:
    """The operators of ``code`` (string literals already taken out), as :data:`MAX_OPERATORS`
    counts them."""
    return len(_OPERATOR.findall(code))


def nesting(code: str) -> int:
    """The most brackets open at once in ``code`` (string literals already taken out); a closing
    bracket with none open is ignored."""
    deepest = depth = 0
    for bracket in _NOT_BRACKET.sub("", code):
        if bracket in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


def clearly_within(text: str) -> bool:
    """Whether no attribute of the ad ``text`` can be beyond a limit, judged on the whole text
    (strings and all): few enough brackets and operator characters in all. Cheap; real job ads
    pass."""
    return (len(text) <= MAX_EXPRESSION_CHARS and sum(map(text.count, _OPENERS)) <= MAX_NESTING
            and sum(map(text.count, _OPERATOR_CHARS)) <= MAX_OPERATORS)


def lines_within(text: str) -> bool:
    """Whether every line of the long-form ``text`` is within the limits, for a reader that hands
    classad2 one line per attribute. Each line's brackets and operator characters are counted on
    the bytes at once (each operator has at least one such character); only a line whose counts
    could be beyond a limit is scanned."""
    data = text.encode("utf-8", "surrogateescape")
    openers = data.translate(None, _ALL_BUT_OPENERS)
    operators = data.translate(None, _ALL_BUT_OPERATORS)
    if (len(data) <= MAX_EXPRESSION_CHARS and _CROWDED.search(openers) is None
            and (len(operators) - operators.count(b"\n") <= MAX_OPERATORS
                 or max(map(len, operators.split(b"\n"))) <= MAX_OPERATORS)):
        return True
    return all(expression_fault(line.partition("=")[2], LONG_FORM_STRING) is None
               for line, opened, operated in zip(text.split("\n"), openers.split(b"\n"), operators.split(b"\n"))
               if len(line) > MAX_EXPRESSION_CHARS or len(opened) > MAX_NESTING or len(operated) > MAX_OPERATORS)


_STATEMENTS_AS_LINES = str.maketrans({";": "\n", "\n": " "})
_SQUARE = re.compile(r"[\[\]]")


def statements_within(text: str) -> bool:
    """Whether every attribute of the new-form ad ``text`` is surely within the limits, judged as
    :func:`lines_within` judges lines: with string literals and comments taken out, each
    ``;``-separated statement is a line. False when that cannot tell: an ad longer than one
    expression may be, or one that nests an ad (whose own ``;`` would split a value; a subscript
    ``x[0]`` or a list holds none). A real slot ad holds more operator characters than
    :func:`clearly_within` lets through, so this is what spares it the statement-by-statement
    scan."""
    if len(text) > MAX_EXPRESSION_CHARS:
        return False
    code = NEW_FORM_STRING.sub('""', text)
    if code.count("[") > 1 and _nests_statements(code):
        return False
    return lines_within(code.translate(_STATEMENTS_AS_LINES))


def _nests_statements(code: str) -> bool:
    """Whether a ``;`` stands within brackets ``[ ]`` nested in the outer ad's."""
    depth = opened = 0
    for bracket in _SQUARE.finditer(code):
        if bracket.group() == "[":
            depth += 1
            if depth == 2:
                opened = bracket.start()
        else:
            if depth == 2 and ";" in code[opened:bracket.start()]:
                return True
            depth -= 1
    return False
