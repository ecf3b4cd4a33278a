"""Serving HTCondor's commands: connections in, DaemonCore's command protocol, authorization, and
the handler registered for each command.

A daemon registers each command it serves with the authorization level it requires
(``DaemonCore::Register_Command``); this package knows no command of its own beyond DaemonCore's
protocol ones (``DC_AUTHENTICATE``, ``DC_SEC_QUERY``): the service layer registers the rest.

Each connection carries one command (``DaemonCommandProtocol``, ``daemon_command.cpp``):

* the first message is either ``DC_AUTHENTICATE`` with a policy ad
  (:mod:`~negotiatord.cedar.server_handshake`), or a bare command number, which is served without
  a session only where the level's policy requires neither negotiation nor authentication;
* the command's level is checked against the authorization table for the identity the client
  proved (:mod:`~negotiatord.cedar.authorization`), within the levels its token limits it to;
* a new session's client is told the verdict, the session id and the commands the session serves
  (the command's level and the levels it implies); a refused command ends the connection there;
* ``DC_AUTHENTICATE`` as the command only sets up a session; ``DC_SEC_QUERY`` (``condor_ping``)
  asks whether the command it names would be authorized, and is answered without running it;
  anything else runs its handler, which reads the rest of the command from the stream.

Connections come from a listening TCP socket (one the daemon opens, or one its parent daemon
handed it) or, behind ``condor_shared_port``, one by one from the shared-port endpoint
(:mod:`~negotiatord.cedar.endpoint`). A refusal is logged naming the command, the peer, the
identity, the level and the setting that decided.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import classad2
import structlog

from negotiatord.cedar.auth.channel import Channel
from negotiatord.cedar.authorization import Decision, Level, implied
from negotiatord.cedar.classads import get_classad, put_classad
from negotiatord.cedar.commands import DC_AUTHENTICATE, DC_SEC_QUERY, command_name
from negotiatord.cedar.packets import PacketError, PacketStream
from negotiatord.cedar.policy import Requirement
from negotiatord.cedar.server_handshake import (
    Accepted, Refused, ServerSession, ServerSessions, UnknownCommand, accept, session_ad,
)
from negotiatord.cedar.server_policy import ServerSecurity
from negotiatord.cedar.wire import MessageReader, MessageWriter, WireError

TIMEOUT_S = 20.0     # DaemonCore gives a command handler's socket 20 s
# Connections served at once; beyond, a new one is closed at once, as DaemonCore refuses commands
# beyond its file descriptor safety limit (DaemonCore::TooManyRegisteredSockets)
MAX_CONNECTIONS = 256
# The longest message a command may send: the commands served carry a name, a number or a query
MAX_MESSAGE_BYTES = 4 << 20
REFUSALS_LOGGED_EVERY_S = 60.0

Handler = Callable[["Command"], Awaitable[None]]
log = structlog.get_logger("negotiatord.cedar.server")


@dataclass(frozen=True)
class Registration:
    number: int
    name: str
    level: Level
    handler: Handler
    alternates: tuple[Level, ...] = ()   # levels that also let a client run it


class Command:
    """One command from a client, as its handler sees it: who sent it, and its stream."""

    def __init__(self, registration: Registration, stream: PacketStream, session: ServerSession, peer_ip: str,
                 pending: MessageReader | None, authorize: Callable[[Level], Decision]) -> None:
        self.number = registration.number
        self.name = registration.name
        self.level = registration.level
        self.stream = stream
        self.user = session.user
        self.method = session.method
        self.peer_ip = peer_ip
        self._pending = pending
        self._authorize = authorize

    @property
    def who(self) -> str:
        return f"{self.user or 'an unauthenticated client'} at {self.peer_ip}"

    def holds(self, level: Level) -> Decision:
        """Whether the client also holds ``level`` (a handler that asks more of some requests)."""
        return self._authorize(level)

    async def receive(self) -> MessageReader:
        """The command's next message (a bare command's first is the rest of the one that named it)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        payload = await asyncio.wait_for(self.stream.receive_message(), TIMEOUT_S)
        return MessageReader(payload, crypto=self.stream.crypto)

    def message(self) -> MessageWriter:
        return MessageWriter(crypto=self.stream.crypto)

    async def send(self, writer: MessageWriter) -> None:
        self.stream.write_message(writer.payload())
        await asyncio.wait_for(self.stream.drain(), TIMEOUT_S)

    async def send_ad(self, ad: classad2.ClassAd, *, private: bool = True, types: bool = True) -> None:
        writer = self.message()
        put_classad(writer, ad, private=private, types=types)
        await self.send(writer)


class CommandServer:
    """The commands a daemon serves, and the sockets it serves them on."""

    def __init__(self, security: ServerSecurity) -> None:
        self.security = security
        self.sessions = ServerSessions()
        self._registrations: dict[int, Registration] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._hostnames: dict[str, list[str]] = {}
        self.max_connections = MAX_CONNECTIONS
        self.refused_connections = 0
        self._refusals_logged = -REFUSALS_LOGGED_EVERY_S

    def register(self, number: int, level: Level, handler: Handler, name: str | None = None,
                 alternates: tuple[Level, ...] = ()) -> None:
        """Serve ``number`` at ``level`` (or any of ``alternates``) with ``handler``."""
        self._registrations[number] = Registration(number, name or command_name(number), level, handler, alternates)

    def add_session(self, session: ServerSession) -> None:
        """A session made outside the protocol (the one a parent daemon hands its child)."""
        self.sessions.add(session)

    def _level_of(self, number: int) -> Level | None:
        registration = self._registrations.get(number)
        return registration.level if registration else None

    def valid_commands(self, level: Level) -> list[int]:
        """The commands a session set up for ``level`` serves (``GetCommandsInAuthLevel``)."""
        return [registration.number for step in implied(level) for registration in self._registrations.values()
                if registration.level is step]

    async def listen(self, host: str, port: int) -> tuple[str, int]:
        """Serve on a new TCP socket; the address it is bound to (``port`` 0: any free port)."""
        server = await asyncio.start_server(self._accepted, host, port, reuse_address=True)
        self._servers.append(server)
        bound = server.sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def adopt(self, listener: socket.socket) -> tuple[str, int]:
        """Serve on a listening TCP socket made by someone else (the parent daemon)."""
        listener.setblocking(False)
        server = await asyncio.start_server(self._accepted, sock=listener)
        self._servers.append(server)
        bound = listener.getsockname()
        return str(bound[0]), int(bound[1])

    async def serve_connected(self, connection: socket.socket, shared_port_id: str | None) -> None:
        """Serve one connection handed over by ``condor_shared_port``."""
        reader, writer = await asyncio.open_connection(sock=connection)
        await self._serve(reader, writer, shared_port_id)

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._serve(reader, writer, None)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     shared_port_id: str | None) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._connections) >= self.max_connections:
            self._refuse(writer)
            return
        self._connections.add(task)
        stream = PacketStream(reader, writer, MAX_MESSAGE_BYTES)
        peer = writer.get_extra_info("peername") or ("?", 0)
        local = writer.get_extra_info("sockname") or ("?", 0)
        peer_ip = str(peer[0])
        try:
            await self._one_command(stream, peer_ip, (str(local[0]), int(local[1])), shared_port_id)
        except UnknownCommand as unknown:
            log.warning("command not served", command=command_name(unknown.command), number=unknown.command,
                        peer=peer_ip, why="negotiatord does not implement it")
        except Refused as refusal:
            log.warning("command refused", peer=peer_ip, reason=str(refusal))
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            log.debug("client went away or stalled", peer=peer_ip)
        except (WireError, PacketError) as error:
            log.warning("malformed command", peer=peer_ip, error=str(error))
        finally:
            self._connections.discard(task)
            stream.close()
            await stream.wait_closed()

    def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """Close a connection beyond :attr:`max_connections`; said once a minute with the count."""
        self.refused_connections += 1
        writer.transport.abort()
        now = asyncio.get_running_loop().time()
        if now >= self._refusals_logged + REFUSALS_LOGGED_EVERY_S:
            self._refusals_logged = now
            log.warning("command connections beyond the limit closed", limit=self.max_connections,
                        refused=self.refused_connections)

    async def _one_command(self, stream: PacketStream, peer_ip: str, local: tuple[str, int],
                           shared_port_id: str | None) -> None:
        first = MessageReader(await asyncio.wait_for(stream.receive_message(), TIMEOUT_S))
        number = first.get_int32()
        pending: MessageReader | None = None
        if number == DC_AUTHENTICATE:
            request = get_classad(first)
            channel = Channel(stream, peer_ip, "", local)
            accepted = await asyncio.wait_for(
                accept(channel, request, self._level_of, self.security, self.sessions, local, shared_port_id),
                TIMEOUT_S)
        else:
            accepted = self._bare(number)
            pending = first
        registration = self._registrations[accepted.command]
        names = await self._peer_names(peer_ip)
        decision = self._authorized(registration.level, accepted.session, peer_ip, names)
        for alternate in registration.alternates if not decision.allowed else ():
            other = self._authorized(alternate, accepted.session, peer_ip, names)
            if other.allowed:
                decision = other
                break
        if accepted.new_session:
            code = "AUTHORIZED" if decision.allowed else "DENIED"
            writer = MessageWriter(crypto=stream.crypto)
            put_classad(writer, session_ad(accepted.session, self.valid_commands(registration.level), code))
            await stream.send_message(writer.payload())
        if not decision.allowed:
            log.warning("permission denied", command=registration.name, peer=peer_ip,
                        user=accepted.session.user or "unauthenticated", method=accepted.session.method or None,
                        needs=registration.level.value, reason=decision.reason)
            return
        if accepted.new_session:
            self.sessions.add(accepted.session)
        if accepted.requested == DC_AUTHENTICATE:
            return
        command = Command(registration, stream, accepted.session, peer_ip, pending,
                          lambda level: self._authorized(level, accepted.session, peer_ip, names))
        if accepted.requested == DC_SEC_QUERY:
            answer = classad2.ClassAd()
            answer["AuthorizationSucceeded"] = True
            await command.send_ad(answer)
            return
        await asyncio.wait_for(registration.handler(command), TIMEOUT_S)

    def _bare(self, number: int) -> Accepted:
        """A command sent without ``DC_AUTHENTICATE``: served unauthenticated, where the level's
        policy lets it (``VerifyCommand``: refused where negotiation or authentication is REQUIRED)."""
        registration = self._registrations.get(number)
        if registration is None:
            raise UnknownCommand(number)
        levels = self.security.policy(registration.level).reconciled_levels()
        for feature in ("negotiation", "authentication_new"):
            if registration.level is not Level.ALLOW and levels[feature] is Requirement.REQUIRED:
                knob = "NEGOTIATION" if feature == "negotiation" else "AUTHENTICATION"
                raise Refused(f"{registration.name} came without a security session, and "
                              f"SEC_{registration.level.value}_{knob} (or SEC_DEFAULT_{knob}) is REQUIRED")
        return Accepted(number, number, ServerSession("", None, None, ""), new_session=False)

    async def _peer_names(self, peer_ip: str) -> list[str]:
        """The peer's host names, looked up only when an ALLOW or DENY entry names a host."""
        if not self.security.authorization.needs_hostnames():
            return []
        return await asyncio.to_thread(self._names_of, peer_ip)

    def _authorized(self, level: Level, session: ServerSession, peer_ip: str, names: list[str]) -> Decision:
        if any(level in implied(grant) for grant in session.grants):
            return Decision(True, f"{session.user} holds {level.value} by its session")
        if session.limits:
            held = {step for name in session.limits if (limit := Level.named(name)) for step in implied(limit)}
            if level not in held:
                return Decision(False, f"the token of {session.user} limits it to {', '.join(session.limits)}")
        return self.security.authorization.verify(level, session.user, peer_ip, lambda: names)

    def _names_of(self, ip: str) -> list[str]:
        if ip not in self._hostnames:
            try:
                name, aliases, _ = socket.gethostbyaddr(ip)
                self._hostnames[ip] = [name, *aliases]
            except OSError:
                self._hostnames[ip] = []
        return self._hostnames[ip]
