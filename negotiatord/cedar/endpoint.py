"""A daemon's end behind ``condor_shared_port``: connections handed over on a named Unix socket.

``condor_shared_port`` listens on the host's one port for every daemon. It reads the client's
``SHARED_PORT_CONNECT`` preamble (the id of the daemon it wants) and passes the connection on to
that daemon's named socket (``SharedPortEndpoint``, ``src/condor_io/shared_port_endpoint.cpp``):
it connects there, sends the command ``SHARED_PORT_PASS_SOCK`` as one CEDAR message, then one
byte carrying the connection's file descriptor (``SCM_RIGHTS``). The daemon serves the connection
as if it had accepted it itself; the client carries on after its preamble.

The named socket's listening descriptor comes from the parent daemon (:mod:`~.inherit`).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import structlog

from negotiatord.cedar.commands import SHARED_PORT_PASS_SOCK
from negotiatord.cedar.packets import HEADER
from negotiatord.cedar.wire import MessageReader

PASS_TIMEOUT_S = 10.0
log = structlog.get_logger("negotiatord.cedar.endpoint")

Serve = Callable[[socket.socket], Awaitable[None]]


def receive_connection(named: socket.socket) -> socket.socket:
    """The connection ``condor_shared_port`` passes over ``named`` (blocking; run it off the
    event loop); raises OSError or ValueError on anything else."""
    named.settimeout(PASS_TIMEOUT_S)
    header = _exactly(named, HEADER.size)
    end, length = HEADER.unpack(header)
    command = MessageReader(_exactly(named, length)).get_int32()
    if command != SHARED_PORT_PASS_SOCK or not end:
        raise ValueError(f"condor_shared_port sent command {command}, not SHARED_PORT_PASS_SOCK")
    _, descriptors, _, _ = socket.recv_fds(named, 1, 1)
    if not descriptors:
        raise ValueError("condor_shared_port passed no connection")
    return socket.socket(fileno=descriptors[0])


def _exactly(named: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = named.recv(count - len(data))
        if not chunk:
            raise ConnectionError("condor_shared_port closed the named socket")
        data += chunk
    return data


class SharedPortEndpoint:
    """Accepts on the inherited named socket and hands each passed connection to ``serve``."""

    def __init__(self, listener: socket.socket, serve: Serve) -> None:
        self.listener = listener
        self.serve = serve
        self._task: asyncio.Task[None] | None = None
        self._passing: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self.listener.setblocking(False)
        self._task = asyncio.ensure_future(self._accepting())

    async def _accepting(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            named, _ = await loop.sock_accept(self.listener)
            task = asyncio.ensure_future(self._pass(named))
            self._passing.add(task)
            task.add_done_callback(self._passing.discard)

    async def _pass(self, named: socket.socket) -> None:
        try:
            named.setblocking(True)
            connection = await asyncio.to_thread(receive_connection, named)
        except (OSError, ValueError) as error:
            log.warning("condor_shared_port handed over no connection", error=str(error))
            return
        finally:
            named.close()
        await self.serve(connection)

    async def close(self) -> None:
        tasks = [task for task in (self._task, *self._passing) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.listener.close()
