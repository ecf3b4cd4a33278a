"""Sending ads to a collector, as DaemonCore's ``DCCollector`` sends its updates over TCP.

An update is a command (``UPDATE_NEGOTIATOR_AD``, ``UPDATE_ACCOUNTING_AD``, ...) and one ad, in one
message; the collector answers nothing (``CollectorDaemon::receive_update``). An invalidation
(``INVALIDATE_*_ADS``) is the same with a query ad: the collector removes the ad its ``Name`` keys,
or, without one, those its ``Requirements`` select (``collect_op::process_invalidation``).

The collector keeps the connection for the next update (``stashSocket``). So does this side, as
``DCCollector::sendTCPUpdate`` keeps its ``update_rsock``: the first update of a connection rides
in the security handshake, each later one starts with the bare command integer. Updates queued
together leave in one write. A kept connection the collector has closed is dropped and the updates
are sent again on a new one, once; any other failure is the caller's, as a
:class:`~negotiatord.cedar.errors.CedarError`.
"""

from __future__ import annotations

from collections.abc import Sequence

import classad2

from negotiatord.cedar.classads import put_classad
from negotiatord.cedar.client import CommandStream, open_command
from negotiatord.cedar.errors import CedarError, ConnectionFailed
from negotiatord.cedar.handshake import SessionCache
from negotiatord.cedar.policy import ClientSecurity

# DCCollector's timeout for an update (startCommand(..., 20))
UPDATE_TIMEOUT_S = 20.0

Update = tuple[int, classad2.ClassAd]


class CollectorUpdates:
    """The updates to one collector, on a connection kept from one batch to the next."""

    def __init__(self, address: str, security: ClientSecurity, sessions: SessionCache,
                 timeout: float = UPDATE_TIMEOUT_S) -> None:
        self.address = address
        self.security = security
        self.sessions = sessions
        self.timeout = timeout
        self._stream: CommandStream | None = None

    @property
    def connected(self) -> bool:
        return self._stream is not None

    async def send(self, updates: Sequence[Update]) -> None:
        """Send ``updates`` in order; raises :class:`CedarError` if they could not all be written."""
        if not updates:
            return
        kept = self._stream
        if kept is not None and kept.stream.reader.at_eof():
            self.close()
            kept = None
        if kept is not None:
            try:
                await self._write(kept, updates, command_sent=False)
                return
            except CedarError:
                self.close()       # closed by the collector meanwhile: once more, on a new connection
        stream = await open_command(self.address, updates[0][0], self.security, self.sessions, self.timeout,
                                    name="collector")
        self._stream = stream
        try:
            await self._write(stream, updates, command_sent=True)
        except CedarError:
            self.close()
            raise

    async def _write(self, stream: CommandStream, updates: Sequence[Update], *, command_sent: bool) -> None:
        """Each update as its message; the first one's command integer left out where the
        handshake carried it. A connection the collector closed shows as an end of file."""
        for position, (command, ad) in enumerate(updates):
            message = stream.message()
            if position or not command_sent:
                message.put_int(command)
            put_classad(message, ad)
            stream.write(message)
        await stream.drain()
        if stream.stream.reader.at_eof():
            raise ConnectionFailed(stream.peer, "the collector closed the connection", reason="connection closed")

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
