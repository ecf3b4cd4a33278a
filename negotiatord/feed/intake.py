"""Turning a request body or a file into ads to file, and the ads to refuse with the reason.

One bad ad never costs its neighbours: the reader reports unparsable ads by position and line,
and this module adds the ads that parse but cannot be filed (wrong ``MyType``, no key). An ad
refused for an attribute beyond the reader's limits (:mod:`negotiatord.ads.limits`) is named by
the key its other attributes give, so a client re-sending it learns which ad to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import classad2

from negotiatord.ads import AdBatch, AdProblem, parse_ads
from negotiatord.feed.kinds import AdKind, UnkeyedAd, ad_key, kind_of


@dataclass(frozen=True)
class Intake:
    """The ads to file (key, ad) in input order, and one problem per refused ad."""

    accepted: list[tuple[str, classad2.ClassAd]]
    problems: list[AdProblem]


def take_in(kind: AdKind, batch: AdBatch, source: str) -> Intake:
    """Key every parsed ad of ``batch`` (read from ``source``); refuse those that cannot be
    filed as ``kind``."""
    accepted = []
    problems = [named(kind, problem) for problem in batch.problems]
    for ad, position, line in zip(batch.ads, batch.positions, batch.lines):
        try:
            accepted.append((ad_key(kind, ad), ad))
        except UnkeyedAd as refused:
            problems.append(AdProblem(source, position, line, str(refused)))
    problems.sort(key=lambda p: p.position)
    return Intake(accepted, problems)


def named(kind: AdKind | None, problem: AdProblem) -> AdProblem:
    """``problem`` with the key of the ad it refused, where what could be read of the ad has one
    (``kind`` None: the kind its ``MyType`` says, for input of several kinds)."""
    if problem.readable is None:
        return problem
    if kind is None:
        kind = kind_of(problem.readable)
        if kind is None:
            return replace(problem, readable=None)
    try:
        return replace(problem, key=ad_key(kind, problem.readable), readable=None)
    except UnkeyedAd:
        return replace(problem, readable=None)


def take_in_text(kind: AdKind, text: str, source: str) -> Intake:
    """Parse and key ``text`` (long form, ``[...]`` form or JSON); the CPU-heavy part of an update."""
    return take_in(kind, parse_ads(text, source), source)
