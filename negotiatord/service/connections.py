"""Connections to the HTTP API: bounded per client and in all, and kept below the file limit.

Each open connection holds a file descriptor. Without a bound, clients that connect and send
nothing (or headers a byte at a time) held them until ``accept()`` failed for want of descriptors,
and asyncio logged a traceback for every failed attempt, tens of thousands a minute, while the
daemon served no one. So:

* a connection is refused (a 503 naming the knob, then closed) when its client already holds
  ``NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT`` connections, or the daemon
  ``NEGOTIATORD_MAX_CONNECTIONS``; a refusal is logged once a minute with the count. The 503 is
  sent :data:`REFUSAL_DELAY_S` after the connection opens, so that a client reconnecting as soon as
  it is refused does not have the event loop accept and refuse it thousands of times a second; at
  most an eighth of the connection limit wait so, the others are refused at once;
* the daemon raises its soft file limit toward the hard one to make room for the connections and
  :data:`RESERVED_FILES` more (databases, logs, the cycle's child process), and holds fewer
  connections if it cannot (:func:`file_limit_for`);
* should ``accept()`` fail all the same, that is logged once a minute (:class:`AcceptFailures`);
  asyncio stops accepting for a second after each failure on its own.

Idle and slow connections are cut off by the header and body timeouts (see :mod:`~.http`).
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from collections import Counter
from typing import Any
from collections.abc import Callable

import structlog

RESERVED_FILES = 256      # the daemon's own files, and refused connections waiting for their 503
LOG_INTERVAL_S = 60.0
RETRY_AFTER_S = 5
REFUSAL_DELAY_S = 1.0
_ACCEPT_FAILED = "socket.accept() out of system resource"

log = structlog.get_logger("negotiatord.http")


def file_limit_for(max_connections: int, soft: int, hard: int) -> tuple[int, int]:
    """The soft file limit to ask for and the connections to allow under it: room for
    ``max_connections`` and RESERVED_FILES more within ``hard``, else what fits, and never more
    than half the limit when the reserve would take more than that."""
    wanted = min(hard, max(soft, max_connections + RESERVED_FILES))
    return wanted, min(max_connections, max(wanted - RESERVED_FILES, wanted // 2))


def raise_file_limit(max_connections: int) -> int:
    """Raise this process's soft file limit for ``max_connections`` (:func:`file_limit_for`);
    returns the connections that fit, logging it when fewer than asked for."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted, allowed = file_limit_for(max_connections, soft, hard if hard != resource.RLIM_INFINITY else 2**20)
    if wanted != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if allowed < max_connections:
        log.warning("the file limit leaves room for fewer connections than NEGOTIATORD_MAX_CONNECTIONS; raise "
                    "LimitNOFILE (systemd) or ulimit -n", file_limit=wanted, connections=allowed,
                    max_connections=max_connections)
    return allowed


class _Throttled:
    """Counts an event and logs it at most once per interval, with the count since the last line."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.count = 0
        self._unlogged = 0
        self._last = -float("inf")

    def happened(self, level: str, event: str, **fields: Any) -> None:
        self.count += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._last >= self.interval:
            getattr(log, level)(event, times=self._unlogged, **fields)
            self._last, self._unlogged = now, 0


class AcceptFailures:
    """The event loop's exception handler: failed ``accept()`` calls logged once per interval,
    every other exception left to asyncio's default handler."""

    def __init__(self, interval: float = LOG_INTERVAL_S) -> None:
        self._throttled = _Throttled(interval)

    @property
    def count(self) -> int:
        return self._throttled.count

    def handle(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if not str(context.get("message", "")).startswith(_ACCEPT_FAILED):
            loop.default_exception_handler(context)
            return
        self._throttled.happened("error", "accept() failed: no file descriptor or memory left; new connections "
                                 "wait until some close", error=str(context.get("exception")))


class ConnectionLimit:
    """Admits a connection or refuses it with a 503, by its client's address; ``limits()`` gives
    (in all, per client) as the config says now, ``allowed`` caps the first (the file limit)."""

    def __init__(self, limits: Callable[[], tuple[int, int]], allowed: int) -> None:
        self.limits = limits
        self.allowed = allowed
        self.by_client: Counter[str] = Counter()
        self.delayed = 0                         # refused connections waiting for their 503
        self.delayed_at_most = max(1, allowed // 8)
        self._refusals = _Throttled(LOG_INTERVAL_S)

    @property
    def open(self) -> int:
        return sum(self.by_client.values())

    def factory(self, handler: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for ``loop.create_server`` that hands admitted connections to
        ``handler()`` (aiohttp's)."""
        return lambda: _Admission(self, handler)

    def refusal(self, client: str) -> str | None:
        """Why a new connection from ``client`` is refused, or None to admit it."""
        overall, per_client = self.limits()
        if self.by_client[client] >= per_client:
            return (f"this client already holds {per_client} connections (NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT); "
                    "reuse one, or close some")
        if self.open >= min(overall, self.allowed):
            return (f"the daemon holds {min(overall, self.allowed)} connections, its limit "
                    "(NEGOTIATORD_MAX_CONNECTIONS, within the file limit); try again shortly")
        return None

    def refused(self, client: str, reason: str) -> None:
        self._refusals.happened("warning", "connection limit reached; new connections are refused with 503",
                                client=client, reason=reason, open=self.open)

    def document(self) -> dict[str, Any]:
        overall, per_client = self.limits()
        return {"open": self.open, "limit": min(overall, self.allowed), "per_client": per_client,
                "clients": len(self.by_client), "refused": self._refusals.count}


class _Admission(asyncio.Protocol):
    """One connection: refused with a 503 as it opens, or handed to the HTTP handler, which it
    then stands for (every call passed on) until the connection is lost."""

    def __init__(self, limit: ConnectionLimit, handler: Callable[[], asyncio.Protocol]) -> None:
        self._limit = limit
        self._handler_factory = handler
        self._handler: asyncio.Protocol | None = None
        self._refusal: asyncio.TimerHandle | None = None       # a delayed 503 not sent yet
        self._client = ""

    def _refuse(self, transport: asyncio.Transport, reason: str) -> None:
        if self._refusal is not None:
            self._refusal = None
            self._limit.delayed -= 1
        body = json.dumps({"error": reason}).encode()
        transport.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                        + f"Retry-After: {RETRY_AFTER_S}\r\nContent-Length: {len(body)}\r\n".encode()
                        + b"Connection: close\r\n\r\n" + body)
        transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self._client = str(peer[0]) if peer else "unknown"
        reason = self._limit.refusal(self._client)
        if reason is not None:
            assert isinstance(transport, asyncio.Transport)
            self._limit.refused(self._client, reason)
            if self._limit.delayed < self._limit.delayed_at_most:
                self._limit.delayed += 1
                transport.pause_reading()
                self._refusal = asyncio.get_running_loop().call_later(REFUSAL_DELAY_S, self._refuse, transport, reason)
            else:
                self._refuse(transport, reason)
            return
        self._limit.by_client[self._client] += 1
        self._handler = self._handler_factory()
        self._handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._handler is not None:
            self._handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self._handler.eof_received() if self._handler is not None else None

    def pause_writing(self) -> None:
        if self._handler is not None:
            self._handler.pause_writing()

    def resume_writing(self) -> None:
        if self._handler is not None:
            self._handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refusal is not None:          # the client left before its 503
            self._refusal.cancel()
            self._refusal = None
            self._limit.delayed -= 1
        if self._handler is None:
            return
        by_client = self._limit.by_client
        by_client[self._client] -= 1
        if not by_client[self._client]:
            del by_client[self._client]
        self._handler.connection_lost(exc)
        self._handler = None
