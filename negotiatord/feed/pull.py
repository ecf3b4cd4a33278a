"""Pull mode: when ``COLLECTOR_HOST`` is set, each cycle starts from what a real collector says.

The query runs in a child process (:mod:`negotiatord.feed.collector_query`) with the daemon's own
config, so the pool's security settings apply and a broken config cannot take the daemon down.
The answer replaces what the previous pull filed; ads posted over HTTP are left alone.

A failed query is reported with its cause, named from what HTCondor said (the exception text
and the library's own messages, which the child passes on): the connection refused, the host
unknown, the credentials refused, the connection dropped during the security handshake, or no
answer in time. Querying a collector on another
host needs the same client security settings in negotiatord's config as ``condor_status`` would
(``SEC_CLIENT_AUTHENTICATION_METHODS``, and the IDTOKENS or SSL settings that go with it).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import classad2

from negotiatord.ads import AdProblem, parse_ads
from negotiatord.feed.intake import named
from negotiatord.feed.kinds import AdKind, UnkeyedAd, ad_key, kind_of

# How long a collector query may take: HTCondor's QUERY_TIMEOUT default (condor_status & co.).
PULL_TIMEOUT_S = 60.0
TIMEOUT = "no answer in time"
CLOSED = "connection closed during the security handshake"
# Causes of a failed query, first match wins: what HTCondor's messages hold, and what it means.
_CAUSES = (
    (("Connection refused",), "connection refused",
     "nothing listens at that address and port: a wrong host or port, or the collector is down"),
    (("Can't resolve", "unknown host", "Name or service not known"), "unknown host",
     "the collector's host name does not resolve"),
    (("DENIED", "not authorized"), "not authorized",
     "the collector authenticated negotiatord but does not let it read the slots' private ads, which "
     "takes the NEGOTIATOR level (ALLOW_NEGOTIATOR at the collector must name negotiatord's identity)"),
    (("AUTHENTICATE:", "SECMAN:2010"), "authentication refused",
     "the collector did not accept this host's credentials "
     "(SEC_CLIENT_AUTHENTICATION_METHODS, the IDTOKENS or SSL settings here; ALLOW_* at the collector)"),
    (("SECMAN:2011", "Socket closed", "Connection reset"), CLOSED,
     "the other end dropped the connection during the security handshake: not a collector, or a "
     "collector refusing this host (ALLOW_READ, SEC_CLIENT_AUTHENTICATION_METHODS)"),
    (("timeout reading", "timed out", "did not respond in a reasonable time"), TIMEOUT,
     "the connection was taken but not answered within QUERY_TIMEOUT: a firewall, a port that is "
     "not the collector's, or an overloaded collector"),
)


@dataclass(frozen=True)
class SlotClaims:
    """A slot's claim ids, from its private ad (never filed, logged or published)."""

    name: str
    address: str
    ids: tuple[str, ...]


class PullError(Exception):
    """The collector could not be queried; the message names the host, the cause and what
    HTCondor said. ``reason`` is the cause alone (connection refused, unknown host,
    authentication refused, connection closed during the security handshake, no answer in time,
    query failed)."""

    def __init__(self, host: str, reason: str, details: str) -> None:
        super().__init__(f"collector {host}: {reason}: {details}")
        self.reason = reason


def failure(host: str, said: str) -> PullError:
    """The error for a query that failed with HTCondor's messages ``said``."""
    for marks, reason, meaning in _CAUSES:
        if any(mark.lower() in said.lower() for mark in marks):
            return PullError(host, reason, f"{meaning} (HTCondor: {said})")
    return PullError(host, "query failed", f"HTCondor: {said}")


@dataclass
class Pulled:
    ads: dict[AdKind, list[tuple[str, classad2.ClassAd]]] = field(
        default_factory=lambda: {kind: [] for kind in AdKind})
    claims: list[SlotClaims] = field(default_factory=list)   # the claim ids of each slot
    problems: list[str] = field(default_factory=list)   # ads left out


async def pull(host: str, config: Path, timeout: float = PULL_TIMEOUT_S) -> Pulled:
    """Query ``host`` in a child process; raise :class:`PullError` if the collector is not reached."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, CONDOR_CONFIG=str(config))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "negotiatord.feed.collector_query", host,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(child.communicate(), timeout)
    except TimeoutError:
        child.kill()
        await child.wait()
        raise PullError(host, TIMEOUT, f"the query took more than {timeout:g} s") from None
    message = err.decode(errors="replace").strip()
    if child.returncode != 0:
        raise failure(host, message or f"the query exited with status {child.returncode}")
    try:
        answer = json.loads(out)
        text, claims = str(answer["ads"]), [SlotClaims(str(c["name"]), str(c["address"]), tuple(map(str, c["ids"])))
                                            for c in answer["claims"]]
    except (ValueError, KeyError, TypeError) as error:
        raise PullError(host, "query failed", f"the query's answer is not what it should be: {error}") from None
    pulled = await asyncio.to_thread(sort_ads, text, f"collector {host}")
    pulled.claims = claims
    pulled.problems[:0] = message.splitlines()
    return pulled


def sort_ads(text: str, source: str) -> Pulled:
    """File each ad of a pull under its kind (by ``MyType``) and key."""
    pulled = Pulled()
    batch = parse_ads(text, source)
    problems = [named(None, problem) for problem in batch.problems]
    for ad, position, line in zip(batch.ads, batch.positions, batch.lines):
        kind = kind_of(ad)
        if kind is None:
            continue  # a pull asks for three kinds; anything else is not ours to keep
        try:
            pulled.ads[kind].append((ad_key(kind, ad), ad))
        except UnkeyedAd as refused:
            problems.append(AdProblem(source, position, line, str(refused)))
    pulled.problems += [str(problem) for problem in sorted(problems, key=lambda problem: problem.position)]
    return pulled
