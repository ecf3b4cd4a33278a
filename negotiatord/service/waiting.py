"""The daemon's waits for an event or a timeout, whichever comes first."""

from __future__ import annotations

import asyncio


async def woken(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds have passed; whether it was set.

    Through ``asyncio.timeout``, not ``asyncio.wait_for``: Python 3.11's wait_for returns normally
    when the task is cancelled as the awaited event is set (bpo-42130), so a stopping daemon whose
    advertising task was cancelled just as a cycle asked it to advertise waited a whole
    NEGOTIATOR_UPDATE_INTERVAL for it."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True
