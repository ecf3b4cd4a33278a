"""ClassAds in a CEDAR message, as ``src/condor_utils/classad_oldnew.cpp`` puts and gets them.

An ad travels as the number of its attributes, then one string per attribute, ``Name = expr`` in
the old ClassAd syntax (``putClassAd`` unparses with ``SetOldClassAd(true, true)``), then two empty
strings where ``MyType`` and ``TargetType`` once went (left out with ``PUT_CLASSAD_NO_TYPES``).

Private attributes (``ClassAdAttributeIsPrivateAny`` in ``compat_classad.cpp``: the claim ids and
the transfer key, and any name starting ``_condor_priv``) are left out when an ad is sent with
``PUT_CLASSAD_NO_PRIVATE``, as the negotiator sends a slot to a schedd. Sent in full on a stream
whose crypto mode is off, each goes as the marker ``ZKM`` followed by the line as a secret;
``getClassAd`` reads either form.

The text of each attribute is HTCondor's own: ``classad2`` unparses it (``printOld``) and parses it
back with the old-syntax parser. That parser reads an ad line by line and cannot take a string
holding a raw newline, which the old syntax writes as it is; such a line is read by rewriting its
string literals in the new syntax (:func:`_new_syntax`), whose escapes can say it.
"""

from __future__ import annotations

import classad2
from classad2 import ParserType

from negotiatord.cedar.wire import MessageReader, MessageWriter, WireError

SECRET_MARKER = "ZKM"
PRIVATE_ATTRIBUTES = frozenset(
    name.lower() for name in ("Capability", "ChildClaimIds", "ClaimId", "ClaimIdList", "ClaimIds", "TransferKey"))
PRIVATE_PREFIX = "_condor_priv"
MAX_ATTRIBUTES = 1_000_000   # getClassAd's bound on the attribute count


def is_private(name: str) -> bool:
    lowered = name.lower()
    return lowered in PRIVATE_ATTRIBUTES or lowered.startswith(PRIVATE_PREFIX)


def attribute_lines(ad: classad2.ClassAd) -> list[str]:
    """Each attribute of ``ad`` as ``Name = expr`` in the old syntax, in the ad's order."""
    text = ad.printOld()
    lines = text.split("\n")[:-1]
    if len(lines) == len(ad):
        return lines
    # a string value holds a raw newline: unparse the attributes one by one
    return [classad2.ClassAd({name: ad.lookup(name)}).printOld()[:-1] for name in ad.keys()]


def put_classad(writer: MessageWriter, ad: classad2.ClassAd, *, private: bool = True, types: bool = True) -> None:
    """Append ``ad`` to ``writer``; with ``private`` False, leave its private attributes out; with
    ``types`` False, leave out the two type strings (``PUT_CLASSAD_NO_TYPES``, which a reader
    with ``getClassAdNoTypes`` expects)."""
    lines = attribute_lines(ad)
    names = list(ad.keys())
    kept = [(name, line) for name, line in zip(names, lines) if private or not is_private(name)]
    writer.put_int(len(kept))
    for name, line in kept:
        if private and not writer.crypto and is_private(name):
            writer.put_string(SECRET_MARKER)
            writer.put_secret(line)
        else:
            writer.put_string(line)
    if types:
        writer.put_string("").put_string("")


def get_classad(reader: MessageReader) -> classad2.ClassAd:
    """The next ClassAd in ``reader``; raises :class:`WireError` if it is not one."""
    count = reader.get_int32()
    if not 0 <= count <= MAX_ATTRIBUTES:
        raise WireError(f"a ClassAd of {count} attributes")
    lines = []
    for _ in range(count):
        line = reader.get_string()
        lines.append(reader.get_secret() if line == SECRET_MARKER else line)
    reader.get_string()   # MyType and TargetType, kept for old peers: HTCondor ignores both
    reader.get_string()
    return parse_lines(lines)


def parse_lines(lines: list[str]) -> classad2.ClassAd:
    """An ad from its ``Name = expr`` lines; raises :class:`WireError` naming a line that is not one."""
    if not lines:
        return classad2.ClassAd()
    if not any("\n" in line for line in lines):
        ad = classad2.parseOne("\n".join(lines), ParserType.Old)
        if len(ad) == len({_name(line) for line in lines}):
            return ad
    ad = classad2.ClassAd()
    for line in lines:
        name, _, value = line.partition("=")
        name = name.strip()
        parsed = classad2.parseOne(line, ParserType.Old) if "\n" not in line else None
        if parsed is not None and len(parsed) == 1:
            ad[name] = parsed.lookup(name)
            continue
        try:
            ad[name] = classad2.ExprTree(_new_syntax(value))
        except (classad2.ClassAdException, ValueError):
            raise WireError(f"not a ClassAd attribute: {line[:120]!r}") from None
    return ad


def _name(line: str) -> str:
    return line.partition("=")[0].strip().lower()


def _new_syntax(old: str) -> str:
    """``old``, an expression in the old syntax, with each string literal rewritten in the new one.

    The old syntax escapes nothing in a string but a quote (``\\"``); a backslash before anything
    else is itself, and a newline is written as it is. The new syntax escapes both.
    """
    out: list[str] = []
    at = 0
    while at < len(old):
        char = old[at]
        if char != '"':
            out.append(char)
            at += 1
            continue
        out.append('"')
        at += 1
        while at < len(old) and old[at] != '"':
            if old[at] == "\\" and old[at + 1:at + 2] == '"':
                out.append('\\"')
                at += 2
                continue
            out.append({"\\": "\\\\", "\n": "\\n"}.get(old[at], old[at]))
            at += 1
        out.append('"')
        at += 1
    return "".join(out)
