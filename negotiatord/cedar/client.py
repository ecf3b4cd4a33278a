"""Opening a command to an HTCondor daemon: connect, get past ``condor_shared_port``, negotiate
security (reusing a cached session where one serves), and hand back an encrypted message stream.

Every wait is bounded by the command's timeout; every failure becomes a
:class:`~negotiatord.cedar.errors.CedarError` naming the daemon and the cause.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from negotiatord.cedar.auth.channel import Channel
from negotiatord.cedar.commands import SHARED_PORT_CONNECT, command_name
from negotiatord.cedar.errors import CedarError, ConnectionFailed, ProtocolError, TimedOut
from negotiatord.cedar.handshake import Session, SessionCache, SessionNotFound, start_command
from negotiatord.cedar.packets import PacketError, PacketStream
from negotiatord.cedar.policy import ClientSecurity
from negotiatord.cedar.sinful import BadAddress, Sinful, parse_sinful
from negotiatord.cedar.wire import MessageReader, MessageWriter, WireError

T = TypeVar("T")
CLOSED_IN_HANDSHAKE = "connection closed during the security handshake"


@dataclass
class CommandStream:
    """One command's conversation with a daemon, after the handshake."""

    peer: str
    address: str
    stream: PacketStream
    session: Session
    resumed: bool
    timeout: float

    def message(self) -> MessageWriter:
        """A new outgoing message in the stream's crypto mode."""
        return MessageWriter(crypto=self.stream.crypto)

    def write(self, writer: MessageWriter) -> None:
        """Queue ``writer``'s message; :meth:`drain` sends what is queued."""
        self.stream.write_message(writer.payload())

    async def drain(self) -> None:
        await _bounded(self.stream.drain(), self.peer, self.timeout, "sending")

    async def send(self, writer: MessageWriter) -> None:
        self.write(writer)
        await self.drain()

    async def receive(self, timeout: float | None = None) -> MessageReader:
        payload = await _bounded(self.stream.receive_message(), self.peer,
                                 self.timeout if timeout is None else timeout, "waiting for an answer")
        return MessageReader(payload, crypto=self.stream.crypto)

    def close(self) -> None:
        self.stream.close()


async def open_command(address: str, command: int, security: ClientSecurity, sessions: SessionCache,
                       timeout: float, *, name: str | None = None, subcommand: int | None = None) -> CommandStream:
    """A stream on which ``command`` may be sent to the daemon at ``address`` (a sinful string).

    ``name`` (the daemon's name, where known) only makes messages clearer."""
    peer = f"{name} ({address})" if name else address
    try:
        target = parse_sinful(address)
    except BadAddress as error:
        raise ConnectionFailed(peer, str(error), reason="bad address") from None
    for _ in range(2):   # the second time after a daemon forgot our session
        stream = await _connect(target, peer, timeout)
        server = stream.writer.get_extra_info("peername") or (target.host, target.port)
        channel = Channel(stream, peer, address, (str(server[0]), int(server[1])))
        try:
            started = await asyncio.wait_for(start_command(channel, command, security, sessions, subcommand), timeout)
        except TimeoutError:
            stream.close()
            raise TimedOut(peer, f"no answer within {timeout:g} s while negotiating security for "
                           f"{command_name(command)}") from None
        except SessionNotFound:
            stream.close()
            continue
        except CedarError:
            stream.close()
            raise
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            stream.close()
            raise ConnectionFailed(peer, _closed_detail(target, error), reason=CLOSED_IN_HANDSHAKE) from None
        except (WireError, PacketError) as error:
            stream.close()
            raise ProtocolError(peer, f"during the security handshake: {error}") from None
        return CommandStream(peer, address, stream, started.session, started.resumed, timeout)
    raise ProtocolError(peer, "the daemon refused the session it had just granted")


async def _connect(target: Sinful, peer: str, timeout: float) -> PacketStream:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(target.host, target.port), timeout)
    except TimeoutError:
        raise TimedOut(peer, f"no connection to {target.host}:{target.port} within {timeout:g} s") from None
    except socket.gaierror as error:
        raise ConnectionFailed(peer, f"{target.host}: {error.strerror}", reason="unknown host") from None
    except ConnectionRefusedError:
        raise ConnectionFailed(peer, f"nothing listens at {target.host}:{target.port}: the daemon is down "
                               "or the address is stale", reason="connection refused") from None
    except OSError as error:
        raise ConnectionFailed(peer, f"{target.host}:{target.port}: {error.strerror or error}") from None
    stream = PacketStream(reader, writer)
    if target.shared_port_id:
        # SharedPortClient::sendSharedPortID: the id to hand the connection to, who asks (for
        # the shared port's log), how long the daemon may take, and an unused argument
        preamble = MessageWriter().put_int(SHARED_PORT_CONNECT).put_string(target.shared_port_id)
        preamble.put_string(f"negotiatord {os.getpid()}").put_int(int(timeout)).put_int(0)
        stream.write_message(preamble.payload())
        stream.restart_handshake_digest()
    return stream


def _closed_detail(target: Sinful, error: BaseException) -> str:
    detail = ("the daemon dropped the connection: it refuses this host or identity before authenticating "
              "(ALLOW_* and SEC_* settings there), or does not know the command")
    if target.shared_port_id:
        detail += f"; or condor_shared_port has no daemon with id {target.shared_port_id!r} (a restarted daemon?)"
    return f"{detail} ({type(error).__name__})"


async def _bounded(work: Awaitable[T], peer: str, timeout: float, doing: str) -> T:
    try:
        return await asyncio.wait_for(work, timeout)
    except TimeoutError:
        raise TimedOut(peer, f"no answer within {timeout:g} s while {doing}") from None
    except asyncio.IncompleteReadError:
        raise ConnectionFailed(peer, f"the daemon closed the connection while {doing}",
                               reason="connection closed") from None
    except ConnectionError as error:
        raise ConnectionFailed(peer, f"{error.strerror or type(error).__name__} while {doing}",
                               reason="connection lost") from None
    except PacketError as error:
        raise ProtocolError(peer, f"{error} while {doing}") from None
