"""Pull mode: when ``COLLECTOR_HOST`` is set, each cycle starts from what a real collector says.

The query runs in a child process (:mod:`negotiatord.feed.collector_query`) with the daemon's own
config, so the pool's security settings apply and a broken config cannot take the daemon down.
The answer replaces what the previous pull filed; ads posted over HTTP are left alone.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import classad2

from negotiatord.ads import parse_ads
from negotiatord.feed.kinds import AdKind, UnkeyedAd, ad_key

# How long a collector query may take: HTCondor's QUERY_TIMEOUT default (condor_status & co.).
PULL_TIMEOUT_S = 60.0
_KIND_OF = {kind.my_type.lower(): kind for kind in AdKind}


class PullError(Exception):
    """The collector could not be queried; the message names the host and the reason."""


@dataclass
class Pulled:
    ads: dict[AdKind, list[tuple[str, classad2.ClassAd]]] = field(
        default_factory=lambda: {kind: [] for kind in AdKind})
    problems: list[str] = field(default_factory=list)   # ads left out and schedds not reached


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
    except asyncio.TimeoutError:
        child.kill()
        await child.wait()
        raise PullError(f"collector {host}: no answer within {timeout:g} s") from None
    message = err.decode(errors="replace").strip()
    if child.returncode != 0:
        raise PullError(message or f"collector {host}: query failed (exit status {child.returncode})")
    pulled = await asyncio.to_thread(sort_ads, out.decode(errors="replace"), f"collector {host}")
    pulled.problems[:0] = message.splitlines()
    return pulled


def sort_ads(text: str, source: str) -> Pulled:
    """File each ad of a pull under its kind (by ``MyType``) and key."""
    pulled = Pulled()
    batch = parse_ads(text, source)
    pulled.problems += [str(problem) for problem in batch.problems]
    for ad, position in zip(batch.ads, batch.positions):
        kind = _KIND_OF.get(str(ad.get("MyType", "")).lower())
        if kind is None:
            continue  # a pull asks for three kinds; anything else is not ours to keep
        try:
            pulled.ads[kind].append((ad_key(kind, ad), ad))
        except UnkeyedAd as refused:
            pulled.problems.append(f"{source} (ad {position}): {refused}")
    return pulled
