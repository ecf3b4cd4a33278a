"""Pull mode: when ``COLLECTOR_HOST`` is set, each cycle starts from what a real collector says.

The query runs in a child process (:mod:`negotiatord.feed.collector_query`) with the daemon's own
config, so the pool's security settings apply and a broken config cannot take the daemon down; the
daemon keeps the child from one cycle to the next (:class:`CollectorQueries`).
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
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

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


class CollectorQueries:
    """The query worker (:mod:`negotiatord.feed.collector_query`) for one config, started at the
    first query and kept for the next ones; a worker that dies or takes too long is ended, and the
    next query starts another."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self._child: asyncio.subprocess.Process | None = None
        # what the worker writes besides its answers (HTCondor's messages outside a query, its
        # last words): a file, which no unread pipe can fill and stall it
        self._said: IO[bytes] | None = None

    async def _worker(self) -> asyncio.subprocess.Process:
        if self._child is None or self._child.returncode is not None:
            package_root = str(Path(__file__).resolve().parents[2])
            env = dict(os.environ, CONDOR_CONFIG=str(self.config))
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
            self._said = tempfile.TemporaryFile()
            self._child = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "negotiatord.feed.collector_query", env=env, limit=1 << 30,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self._said)
        return self._child

    async def pull(self, host: str, timeout: float = PULL_TIMEOUT_S, *, slots: str | None = None,
                   submitters: str | None = None) -> Pulled:
        """Query ``host`` for the slot and submitter ads that meet the constraints ``slots`` and
        ``submitters`` (None: all); raise :class:`PullError` if the collector is not reached."""
        child = await self._worker()
        assert child.stdin is not None and child.stdout is not None
        asked = {"host": host, "slots": slots, "submitters": submitters}
        try:
            child.stdin.write(json.dumps(asked).encode() + b"\n")
            await child.stdin.drain()
            line = await asyncio.wait_for(child.stdout.readline(), timeout)
        except TimeoutError:
            await self.close()
            raise PullError(host, TIMEOUT, f"the query took more than {timeout:g} s") from None
        except (ConnectionError, OSError):
            line = b""
        if not line:
            said = await self._ended()
            raise failure(host, said or "the query worker ended without an answer")
        try:
            answer = json.loads(line)
            if "error" in answer:
                raise failure(host, str(answer["error"]))
            text = str(answer["ads"])
            claims = [SlotClaims(str(c["name"]), str(c["address"]), tuple(map(str, c["ids"])))
                      for c in answer["claims"]]
        except (ValueError, KeyError, TypeError) as error:
            raise PullError(host, "query failed", f"the query's answer is not what it should be: {error}") from None
        return await asyncio.to_thread(_sorted, text, claims, f"collector {host}")

    async def _ended(self) -> str:
        """What a worker that died said on its way out."""
        child, said = self._child, self._said
        await self.close(keep_said=True)
        if child is None or said is None:
            return ""
        said.seek(0)
        text = said.read()[-8192:].decode(errors="replace").strip()
        said.close()
        return text or f"the query worker exited with status {child.returncode}"

    async def close(self, *, keep_said: bool = False) -> None:
        child, self._child = self._child, None
        if child is not None and child.returncode is None:
            child.kill()
            await child.wait()
        if self._said is not None and not keep_said:
            self._said.close()
        self._said = None


async def pull(host: str, config: Path, timeout: float = PULL_TIMEOUT_S) -> Pulled:
    """One query of ``host`` with the config ``config``, in a worker of its own."""
    queries = CollectorQueries(config)
    try:
        return await queries.pull(host, timeout)
    finally:
        await queries.close()


def _sorted(text: str, claims: list[SlotClaims], source: str) -> Pulled:
    pulled = sort_ads(text, source)
    pulled.claims = claims
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
