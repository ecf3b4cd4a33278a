"""The daemon's waits for an event or a timeout let a cancellation through, whatever arrives first.

Python 3.11's ``asyncio.wait_for`` returns normally when the waiting task is cancelled in the
very step the awaited event is set (bpo-42130, CPython's issue tracker). The daemon's
advertising task waited that way, so a daemon stopping just as a cycle asked it to advertise
waited a whole NEGOTIATOR_UPDATE_INTERVAL for it (its stop then timed out in the tests of
``condor_off`` and of a SIGTERM during the first cycle).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from negotiatord.service.waiting import woken


async def _cancelled_as_the_event_is_set() -> None:
    event = asyncio.Event()
    waiting = asyncio.create_task(woken(event, 60.0))
    await asyncio.sleep(0)               # the task waits on the event
    event.set()
    waiting.cancel()                     # in the same step of the loop
    await waiting


def test_a_cancellation_arriving_as_the_event_is_set_is_not_swallowed() -> None:
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_cancelled_as_the_event_is_set())
    assert time.monotonic() - started < 5


def test_the_wait_ends_at_the_event_or_at_the_timeout() -> None:
    async def both() -> tuple[float, float]:
        event = asyncio.Event()
        event.set()
        mark = time.monotonic()
        assert await woken(event, 60.0)
        set_after = time.monotonic() - mark
        mark = time.monotonic()
        assert not await woken(asyncio.Event(), 0.05)
        return set_after, time.monotonic() - mark

    set_after, timed_out_after = asyncio.run(both())
    assert set_after < 1
    assert 0.04 <= timed_out_after < 1
