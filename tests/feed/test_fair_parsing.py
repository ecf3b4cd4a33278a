"""One client's large body cannot hold up another's.

Bodies are parsed a few ads at a time, clients in turn (:class:`FairParser`), and no ad costs more
than a bounded amount of parsing: an ad of more than ``MAX_AD_CHARS`` characters or more than
``MAX_AD_ATTRIBUTES`` attribute lines (statements in the new form, members in JSON) is refused
before classad2 reads it. The largest real ads in ``../shared/data`` (the OSPool central manager's)
have 847 attributes and 47,233 characters.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from negotiatord.ads import parse_ads
from negotiatord.ads.limits import MAX_AD_ATTRIBUTES, MAX_AD_CHARS
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.parsing import FairParser

from tests.service_harness import DaemonProcess

SLOT = 'MyType = "Machine"\nName = "slot{i}@node.example.org"\nCpus = 1\nMemory = 2048\nStart = TARGET.Owner == "x"\n'


def slots(count: int, start: int = 0) -> str:
    return "\n".join(SLOT.format(i=i) for i in range(start, start + count))


@pytest.mark.parametrize("form", ["long", "new", "json"])
def test_an_ad_of_too_many_attributes_is_refused_before_it_is_read(form):
    many = MAX_AD_ATTRIBUTES + 10
    huge = {"long": 'MyType = "Machine"\nName = "big"\n' + "A = 1\n" * many,
            "new": '[ MyType = "Machine"; Name = "big"; ' + "A = 1; " * many + "]",
            "json": '{"MyType": "Machine", "Name": "big", ' + '"A": 1, ' * many + '"B": 2}'}[form]
    neighbour = {"long": 'MyType = "Machine"\nName = "small"\n', "new": '[ MyType = "Machine"; Name = "small" ]',
                 "json": '{"MyType": "Machine", "Name": "small"}'}[form]
    joined = {"long": "\n\n", "new": "\n", "json": ",\n"}[form]
    text = joined.join([neighbour, huge, neighbour])
    if form == "json":
        text = f"[\n{text}\n]"
    started = time.perf_counter()
    batch = parse_ads(text)
    assert time.perf_counter() - started < 0.5
    assert batch.positions == [1, 3]
    [problem] = batch.problems
    assert problem.position == 2 and f"{MAX_AD_ATTRIBUTES:,}" in problem.reason


def test_an_ad_of_too_many_characters_is_refused_before_it_is_read():
    big = 'MyType = "Machine"\nName = "big"\n' + "".join(f'C{i} = "{"x" * 60_000}"\n' for i in range(20))
    assert len(big) > MAX_AD_CHARS          # each value within the expression limit, the ad beyond
    batch = parse_ads(big + '\nMyType = "Machine"\nName = "small"\n')
    assert batch.positions == [2]
    [problem] = batch.problems
    assert problem.position == 1 and f"{MAX_AD_CHARS:,}" in problem.reason


def test_bodies_of_two_clients_are_parsed_in_turn():
    """A client's small body, sent while another's large one is being parsed, is done long before
    the large one, and the large one loses nothing."""
    async def scenario() -> tuple[list[str], int, int]:
        parser = FairParser()
        done: list[str] = []
        try:
            async def take(client: str, text: str) -> int:
                intake = await parser.take_in(client, AdKind.SLOT, text.encode(), client)
                done.append(client)
                return len(intake.accepted)

            large = asyncio.ensure_future(take("large", slots(40_000)))
            await asyncio.sleep(0.2)
            small = await take("small", slots(200, 50_000))
            return done, await large, small
        finally:
            parser.close()

    done, large, small = asyncio.run(scenario())
    assert done == ["small", "large"] and (large, small) == (40_000, 200)


async def _post(url: str, token: str, body: str, source: str) -> float:
    """Seconds until the daemon answered a POST of ``body`` from address ``source``."""
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        async with session.post(f"{url}/v1/ads/slots", data=body.encode(),
                                headers={"Authorization": f"Bearer {token}"}) as answer:
            assert answer.status == 200
            reply = await answer.json()
            assert not reply["rejected"]
        return time.perf_counter() - started


def test_a_normal_batch_is_not_held_up_behind_a_large_body(tmp_path):
    daemon = DaemonProcess(tmp_path / "d", settings={"NEGOTIATOR_INTERVAL": "3600",
                                                     "NEGOTIATORD_MAX_BODY_BYTES": str(64 << 20)})
    daemon.start()
    try:
        async def scenario() -> tuple[float, float]:
            large = asyncio.ensure_future(_post(daemon.url, daemon.token, slots(60_000), "127.0.0.1"))
            await asyncio.sleep(0.5)                 # the large body is being parsed
            normal = await _post(daemon.url, daemon.token, slots(500, 100_000), "127.0.0.2")
            return normal, await large

        normal, large = asyncio.run(scenario())
    finally:
        daemon.stop()
    assert normal < large - 0.5, (normal, large)
