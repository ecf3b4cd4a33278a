"""Heavy reads of the HTTP API, off the event loop, and bounded per client and in all.

A page of matches, the last cycle in full, the accountant's document: each is read from SQLite or
from the cycle's result and written as JSON, up to tens of milliseconds of Python on a large pool.
Reads need no token. On the event loop, a few hundred of them at once kept ``/v1/status`` (and
systemd's watchdog, which the event loop feeds) waiting for tens of seconds. So they run on
:data:`READER_THREADS` threads of their own, at most :data:`PER_CLIENT` at a time for one client
address and :data:`IN_FLIGHT` in all, running or waiting for a thread. A read beyond that is
refused, with ``Retry-After``: 429 when its client already has its share, 503 when the daemon has
none left to give. The refusal comes after those seconds, not at once: a client that asks again
as soon as it is refused would otherwise have the event loop refuse it thousands of times a
second, and a waiting request costs only a timer.

The event loop still shares Python's GIL with those threads, but each one holds it only a switch
interval at a time, so a status request waits milliseconds, not for the reads queued before it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from collections.abc import Callable

from aiohttp import web

from negotiatord.feed.api import json_error

T = TypeVar("T")

READER_THREADS = 2
PER_CLIENT = 1
IN_FLIGHT = 16
RETRY_AFTER_S = 1


class ReadGate:
    """Runs heavy reads on reader threads, within the per-client and overall bounds."""

    def __init__(self, threads: int = READER_THREADS, per_client: int = PER_CLIENT, in_flight: int = IN_FLIGHT) -> None:
        self.per_client = per_client
        self.in_flight = in_flight
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http-reader")
        self._by_client: Counter[str] = Counter()
        self.refused = Counter({429: 0, 503: 0})      # reads answered at once, by status

    @property
    def active(self) -> int:
        return sum(self._by_client.values())

    async def read(self, client: str, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on a reader thread, for ``client`` (its address); 429 or 503 at
        once beyond the bounds."""
        if self._by_client[client] >= self.per_client:
            self.refused[429] += 1
            await asyncio.sleep(RETRY_AFTER_S)
            raise _refusal(web.HTTPTooManyRequests, f"this client has {self.per_client} reads of pages, cycles or "
                           "the accountant under way already; wait for them (one at a time is enough)")
        if self.active >= self.in_flight:
            self.refused[503] += 1
            await asyncio.sleep(RETRY_AFTER_S)
            raise _refusal(web.HTTPServiceUnavailable, f"the daemon is serving {self.in_flight} reads of pages, "
                           "cycles or the accountant already; try again shortly")
        self._by_client[client] += 1
        try:
            return await self.wait_for(function, *args)
        finally:
            self._by_client[client] -= 1
            if not self._by_client[client]:
                del self._by_client[client]

    async def wait_for(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on a reader thread, waiting for one without a bound: for a match
        stream already open, which reads one page at a time."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, function, *args)

    def shutdown(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)


def _refusal(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    return json_error(kind, message, **{"Retry-After": str(RETRY_AFTER_S)})
