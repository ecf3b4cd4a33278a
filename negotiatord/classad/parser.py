"""ClassAd expression text -> AST, and back.

classad2 exposes no expression tree, so the fast path parses the canonical text classad2 prints
(``str(ExprTree)``). The grammar follows classad2's parser as observed (the differential tests pin
it down): the usual C precedence ladder from ``?:`` down to ``* / %``, then unary ``- + ! ~``, then
the elvis operator ``?:`` which binds *tighter* than unary operators (``!a ?: b`` is ``!(a ?: b)``)
and takes postfix operands, then ``.attr`` / ``[index]`` / calls. A ``-`` directly followed by a
digit where an operand is expected is part of a negative number literal, as in classad2.

The AST is made of tuples so it hashes and compares structurally:

    ("lit", value)                   value: (tag, payload), see negotiatord.classad.values
    ("attr", scope | None, name)     scope as spelled: MY / TARGET (any case)
    ("sel", base, name)  ("sub", base, index)
    ("un", op, x)        ("bin", op, a, b)      ("cond", c, a, b)    ("elvis", a, b)
    ("call", name, args) ("list", items)        ("rec", ((name, expr), ...))
    ("paren", x)
    ("inexact", text)                a real literal classad2 may have printed rounded (see below)

Parentheses are kept so that :func:`unparse` reproduces classad2's own tree exactly.

Chains of operators (``a && b && ...``, ``!!x``) are read in loops, so their length costs no
recursion; sub-expressions nested more than :data:`MAX_DEPTH` deep (brackets, ``?:`` branches)
are refused with a :class:`ParseError`, and the fast path then leaves the expression to classad2.
The ads reader bounds nesting and length long before classad2 (:mod:`negotiatord.ads.limits`);
this bound keeps the parser within Python's recursion limit wherever it is called from.

classad2 prints reals with 16 significant digits, one short of what a double needs, so a literal
printed with all 16 digits may stand for a slightly different double in the ad itself; such a
literal is kept as ``inexact`` and the expression is left to classad2.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from negotiatord.classad.values import BOOL, ERROR, INT, INT64_MAX, REAL, STR, UNDEF, Value, quote_string

Node = tuple[Any, ...]

KEYWORD_VALUES = {"true": (BOOL, True), "false": (BOOL, False), "undefined": (UNDEF, None), "error": (ERROR, None)}
SCOPES = ("my", "target")
_RESERVED = {"is", "isnt", "parent", *KEYWORD_VALUES}

# binary operators by precedence level, loosest first (below the ternary)
_LEVELS = (
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!=", "=?=", "=!="),
    ("<", "<=", ">", ">="),
    ("<<", ">>", ">>>"),
    ("+", "-"),
    ("*", "/", "%"),
)
_OPERATORS = sorted(
    {"(", ")", "[", "]", "{", "}", ",", ";", ".", "?", ":", "?:", "=", "!", "~",
     *(op for level in _LEVELS for op in level)},
    key=len,
    reverse=True,
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SIMPLE_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "b": b"\b", "f": b"\f", "v": b"\v", "a": b"\a"}
_OPERAND_END = {"num", "str", "id"}
# Nested sub-expressions the parser reads (each costs ~15 Python frames); real ones nest at most
# ~10 deep (the OSPool sample: 9 brackets).
MAX_DEPTH = 32


class ParseError(ValueError):
    """Text the fast path's parser does not accept (it then falls back to classad2)."""


# -- lexer -----------------------------------------------------------------------------------------


def _tokens(text: str) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    pos, end = 0, len(text)
    while pos < end:
        char = text[pos]
        if char.isspace():
            pos += 1
            continue
        previous = tokens[-1] if tokens else None
        operand_before = previous is not None and (
            (previous[0] in _OPERAND_END and not _is_operator_word(previous))
            or (previous[0] == "op" and previous[1] in (")", "]", "}"))
        )
        if char.isdigit() or (char == "." and pos + 1 < end and text[pos + 1].isdigit()) or (
            char == "-" and not operand_before and pos + 1 < end and (text[pos + 1].isdigit() or text[pos + 1] == ".")
        ):
            match = _NUMBER.match(text, pos)
            if match is None:
                raise ParseError(f"bad number at {pos}: {text[pos:pos + 10]!r}")
            tokens.append(("num", _number(match.group())))
            pos = match.end()
            if pos < end and (text[pos].isalnum() or text[pos] in "._"):
                raise ParseError(f"bad number at {match.start()}: {text[match.start():pos + 1]!r}")
            continue
        if char == '"':
            value, pos = _string(text, pos)
            if previous is not None and previous[0] == "str":
                tokens[-1] = ("str", previous[1] + value)   # adjacent literals concatenate
            else:
                tokens.append(("str", value))
            continue
        if char == "'":
            value, pos = _string(text, pos)
            tokens.append(("id", (value, True)))
            continue
        match = _IDENT.match(text, pos)
        if match:
            tokens.append(("id", (match.group(), False)))
            pos = match.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, pos):
                tokens.append(("op", op))
                pos += len(op)
                break
        else:
            raise ParseError(f"unexpected character {char!r} at {pos}")
    tokens.append(("eof", None))
    return tokens


def _is_operator_word(token: tuple[str, Any]) -> bool:
    return token[0] == "id" and not token[1][1] and token[1][0].lower() in ("is", "isnt")


def _number(text: str) -> Value | tuple[Literal["inexact"], str]:
    """The literal's value, or the ``inexact`` node of a real classad2 may have printed rounded."""
    if any(c in text for c in ".eE"):
        mantissa = re.split("[eE]", text.lstrip("-"))[0].replace(".", "").strip("0")
        if len(mantissa) > 15:
            return ("inexact", text)
        return (REAL, float(text))
    digits = text.lstrip("-")
    if len(digits) > 1 and digits.startswith("0"):
        raise ParseError(f"integer with leading zero: {text}")
    value = int(text)
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise ParseError(f"integer out of range: {text}")
    return (INT, value)


def _string(text: str, pos: int) -> tuple[str, int]:
    """A quoted literal starting at ``pos``: its value and the position after it."""
    quote = text[pos]
    pos += 1
    out = bytearray()
    while True:
        if pos >= len(text):
            raise ParseError("unterminated string")
        char = text[pos]
        if char == quote:
            pos += 1
            break
        if char != "\\":
            out += char.encode()
            pos += 1
            continue
        pos += 1
        if pos >= len(text):
            raise ParseError("unterminated escape")
        char = text[pos]
        if char in "01234567":
            octal = re.match(r"[0-7]{1,3}", text[pos:])
            assert octal is not None        # text[pos] is an octal digit
            digits = octal.group()
            if len(digits) == 3 and digits[0] > "3":
                digits = digits[:2]
            code = int(digits, 8)
            if code == 0:
                raise ParseError("NUL in string")
            out.append(code)
            pos += len(digits)
        else:
            out += _SIMPLE_ESCAPES.get(char, char.encode())
            pos += 1
    try:
        return out.decode("utf-8"), pos
    except UnicodeDecodeError as error:
        raise ParseError(f"string is not UTF-8: {error}") from error


# -- parser ----------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.depth = 0

    def peek(self) -> tuple[str, Any]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, Any]:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def is_op(self, *ops: str) -> bool:
        kind, value = self.peek()
        return kind == "op" and value in ops

    def is_word(self, *words: str) -> bool:
        kind, value = self.peek()
        return kind == "id" and not value[1] and value[0].lower() in words

    def expect(self, op: str) -> None:
        if not self.is_op(op):
            raise ParseError(f"expected {op!r}, found {self.peek()[1]!r}")
        self.pos += 1

    def parse(self) -> Node:
        node = self.ternary()
        if self.peek()[0] != "eof":
            raise ParseError(f"unexpected {self.peek()[1]!r} after expression")
        return node

    def ternary(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"sub-expressions nested more than {MAX_DEPTH} deep")
        node = self.binary(0)
        if self.is_op("?"):
            self.pos += 1
            then = self.ternary()
            self.expect(":")
            node = ("cond", node, then, self.ternary())
        self.depth -= 1
        return node

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        ops = _LEVELS[level]
        while True:
            if self.is_op(*ops):
                op = self.take()[1]
            elif "==" in ops and self.is_word("is", "isnt"):
                op = "=?=" if self.take()[1][0].lower() == "is" else "=!="
            else:
                return left
            left = ("bin", op, left, self.binary(level + 1))

    def unary(self) -> Node:
        ops = []
        while self.is_op("-", "+", "!", "~"):
            ops.append(self.take()[1])
        node = self.elvis()
        for op in reversed(ops):
            node = ("un", op, node)
        return node

    def elvis(self) -> Node:
        left = self.postfix()
        while self.is_op("?:"):
            self.pos += 1
            left = ("elvis", left, self.postfix())
        return left

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.is_op("."):
                self.pos += 1
                node = ("sel", node, self.name())
            elif self.is_op("["):
                self.pos += 1
                index = self.ternary()
                self.expect("]")
                node = ("sub", node, index)
            else:
                return node

    def name(self) -> str:
        kind, value = self.take()
        if kind != "id" or (not value[1] and value[0].lower() in _RESERVED):
            raise ParseError(f"expected an attribute name, found {value!r}")
        return value[0]

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "num" and value[0] == "inexact":
            return value
        if kind in ("num", "str"):
            return ("lit", value if kind == "num" else (STR, value))
        if kind == "op":
            if value == "(":
                inner = self.ternary()
                self.expect(")")
                return ("paren", inner)
            if value == "{":
                return ("list", tuple(self.sequence("}")))
            if value == "[":
                return ("rec", tuple(self.record()))
            raise ParseError(f"unexpected {value!r}")
        if kind != "id":
            raise ParseError("unexpected end of expression")
        name, quoted = value
        lower = name.lower()
        if not quoted and lower in KEYWORD_VALUES:
            return ("lit", KEYWORD_VALUES[lower])
        if not quoted and lower in _RESERVED:
            raise ParseError(f"reserved word {name!r}")
        if not quoted and self.is_op("("):
            self.pos += 1
            return ("call", name, tuple(self.sequence(")")))
        if not quoted and lower in SCOPES and self.is_op(".") and self.tokens[self.pos + 1][0] == "id":
            self.pos += 1
            return ("attr", name, self.name())
        return ("attr", None, name)

    def sequence(self, close: str) -> list[Node]:
        items: list[Node] = []
        if self.is_op(close):
            self.pos += 1
            return items
        while True:
            items.append(self.ternary())
            if self.is_op(close):
                self.pos += 1
                return items
            self.expect(",")

    def record(self) -> list[tuple[str, Node]]:
        fields: list[tuple[str, Node]] = []
        while not self.is_op("]"):
            name = self.name()
            self.expect("=")
            fields.append((name, self.ternary()))
            if self.is_op(";"):
                self.pos += 1
            elif not self.is_op("]"):
                raise ParseError("expected ';' or ']' in record")
        self.pos += 1
        return fields


@lru_cache(maxsize=65536)
def parse(text: str) -> Node:
    """The AST of ``text`` (cached: pools repeat the same expressions across thousands of ads).
    ParseError also when the text nests deeper than the Python stack left to the caller allows."""
    try:
        return _Parser(text).parse()
    except RecursionError:
        raise ParseError("nested too deep for the fast path's parser") from None


# -- unparser --------------------------------------------------------------------------------------


def unparse(node: Node) -> str:
    """ClassAd text that classad2 parses into the same tree ``node`` came from (written out with a
    stack: a chain of thousands of operators is as deep as it is long)."""
    out: list[str] = []
    stack: list[str | Node] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        else:
            stack.extend(reversed(_pieces(item)))
    return "".join(out)


def _pieces(node: Node) -> list[str | Node]:
    """The text of ``node`` as literal strings and child nodes, in order."""
    kind = node[0]
    if kind == "lit":
        return [_literal(node[1])]
    if kind == "attr":
        name = _name(node[2])
        return [f"{node[1]}.{name}" if node[1] else name]
    if kind == "sel":
        return [node[1], f".{_name(node[2])}"]
    if kind == "sub":
        return [node[1], "[", node[2], "]"]
    if kind == "un":
        spacer = " " if node[1] in "-+" else ""
        return [f"{node[1]}{spacer}", node[2]]
    if kind == "bin":
        return [node[2], f" {node[1]} ", node[3]]
    if kind == "cond":
        return [node[1], " ? ", node[2], " : ", node[3]]
    if kind == "elvis":
        return [node[1], " ?: ", node[2]]
    if kind == "call":
        return [f"{node[1]}(", *_separated(node[2], ", "), ")"]
    if kind == "list":
        return ["{", *_separated(node[1], ", "), "}"]
    if kind == "rec":
        fields = [part for n, e in node[1] for part in ("; ", f"{_name(n)} = ", e)][1:]
        return ["[", *fields, "]"]
    if kind == "paren":
        return ["(", node[1], ")"]
    if kind in ("text", "inexact"):          # pre-rendered text, or a literal kept as printed
        return [node[1]]
    raise ValueError(f"not an AST node: {node!r}")


def _separated(items: tuple[Node, ...], separator: str) -> list[str | Node]:
    return [part for item in items for part in (separator, item)][1:]


def _literal(value: tuple[int, Any]) -> str:
    tag, payload = value
    if tag == INT:
        return str(payload)
    if tag == REAL:
        if payload != payload:
            raise ValueError("NaN has no literal form")
        if payload in (float("inf"), float("-inf")):
            return "1e999" if payload > 0 else "-1e999"     # what an overflowing literal parses to
        return repr(payload)
    if tag == STR:
        return quote_string(payload)
    return {UNDEF: "undefined", ERROR: "error"}.get(tag) or ("true" if payload else "false")


def _name(name: str) -> str:
    if _PLAIN_NAME.match(name) and name.lower() not in _RESERVED:
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"
