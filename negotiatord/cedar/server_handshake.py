"""DaemonCore's command protocol on the daemon's side: ``DC_AUTHENTICATE`` as
``DaemonCommandProtocol`` runs it (``src/condor_daemon_core.V6/daemon_command.cpp``).

**A new session.** The client's first message is ``DC_AUTHENTICATE`` and its policy ad, naming the
command it wants to run. The daemon reconciles that ad with its own policy for the level the
command is registered at (:mod:`~negotiatord.cedar.server_policy`) and, as the client asks
(``Enact = "NO"``), answers with the result and its half of the ECDH exchange. It authenticates
the client if the result says so (:func:`~negotiatord.cedar.auth.serve_authentication`), derives
the session key and turns encryption on. The caller then checks the command against the
authorization table and answers with the post-authentication ad (:func:`session_ad`): the
verdict, the session id, the identity and the commands the session may be reused for.

**A reused session.** The client names a session (``UseSession``, ``Sid``). The daemon looks it
up: unknown (a restart, an expired session), it answers ``SID_NOT_FOUND`` to a client that asked
for an answer (``ResumeResponse``, HTCondor 9.9+) and closes; known, it answers ``AUTHORIZED`` with
a nonce, and both sides encrypt with the session's key at once. No post-authentication ad follows.

Sessions live in :class:`ServerSessions` until their duration (plus 20 s of slop,
``SEC_SESSION_DURATION_SLOP``) ends, or until they are unused for their lease.
"""

from __future__ import annotations

import base64
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

import classad2

from negotiatord.cedar.auth import Proven, serve_authentication
from negotiatord.cedar.auth.channel import Channel
from negotiatord.cedar.authorization import Level
from negotiatord.cedar.classads import put_classad
from negotiatord.cedar.commands import DC_AUTHENTICATE, DC_SEC_QUERY
from negotiatord.cedar.errors import AuthenticationFailed
from negotiatord.cedar.keys import KeyExchange
from negotiatord.cedar.policy import REMOTE_VERSION
from negotiatord.cedar.server_policy import PolicyMismatch, ServerSecurity, reconcile
from negotiatord.cedar.wire import MessageWriter

SLOP_S = 20                     # SEC_SESSION_DURATION_SLOP
MAX_SESSIONS = 10_000           # sessions kept at once (ServerSessions)
NONCE_BYTES = 33
_SESSION_NUMBERS = count(1)


class Refused(Exception):
    """The command cannot go on; the message says why, for the daemon's log."""


class UnknownCommand(Refused):
    """The client asked for a command the daemon does not serve."""

    def __init__(self, command: int) -> None:
        super().__init__(f"command {command} is not one negotiatord serves")
        self.command = command


@dataclass
class ServerSession:
    """A security session a client set up with the daemon, reusable for its valid commands."""

    id: str
    key: bytes | None
    user: str | None               # who the client proved to be; None: not authenticated
    method: str
    limits: tuple[str, ...] = ()   # the levels a token limits the identity to (LimitAuthorization)
    expires: float = float("inf")  # time.monotonic()
    lease_s: float = 0.0           # 0: no lease
    last_used: float = field(default_factory=time.monotonic)
    grants: frozenset[Level] = frozenset()   # levels held whatever the tables say (the parent's session)

    def usable(self, now: float) -> bool:
        return now < self.expires and (self.lease_s <= 0 or now < self.last_used + self.lease_s)


class ServerSessions:
    """The sessions clients set up with this daemon, by id, at most ``capacity`` of them.

    HTCondor's session cache keeps every session until it expires; a client that keeps setting up
    sessions without using them would grow it for a day (``SEC_DEFAULT_SESSION_DURATION``). Here,
    once the cache is full, the expired sessions go, then the least recently used ones down to nine
    tenths of it (never one the parent daemon handed down): their clients set up a new session at
    their next command, as they do after a daemon's restart.
    """

    def __init__(self, capacity: int = MAX_SESSIONS) -> None:
        self._sessions: dict[str, ServerSession] = {}
        self.capacity = capacity

    def add(self, session: ServerSession) -> None:
        if len(self._sessions) >= self.capacity:
            now = time.monotonic()
            for stale in [sid for sid, known in self._sessions.items() if not known.usable(now)]:
                del self._sessions[stale]
            evictable = sorted((known for known in self._sessions.values() if not known.grants),
                               key=lambda known: known.last_used)
            for evicted in evictable[:len(self._sessions) - self.capacity * 9 // 10]:
                del self._sessions[evicted.id]
        self._sessions[session.id] = session

    def get(self, session_id: str) -> ServerSession | None:
        session = self._sessions.get(session_id)
        if session is None or not session.usable(time.monotonic()):
            self._sessions.pop(session_id, None)
            return None
        session.last_used = time.monotonic()
        return session

    def __len__(self) -> int:
        return len(self._sessions)


@dataclass(frozen=True)
class Accepted:
    """The handshake's outcome: the command to authorize and run, and the session it runs in."""

    command: int              # the command to authorize: DC_SEC_QUERY's subject for DC_SEC_QUERY
    requested: int            # what the client runs: DC_AUTHENTICATE (a session only), DC_SEC_QUERY, ...
    session: ServerSession
    new_session: bool


def _text(ad: classad2.ClassAd, name: str) -> str:
    value = ad.get(name, "")
    return value if isinstance(value, str) else str(value)


def _yes(ad: classad2.ClassAd, name: str) -> bool:
    return _text(ad, name).upper().startswith("Y")


def _integer(ad: classad2.ClassAd, name: str) -> int | None:
    value = ad.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def _send_ad(channel: Channel, ad: classad2.ClassAd) -> None:
    writer = MessageWriter(crypto=channel.stream.crypto)
    put_classad(writer, ad)
    await channel.send(writer)


async def accept(channel: Channel, request: classad2.ClassAd, level_of: Callable[[int], Level | None],
                 security: ServerSecurity, sessions: ServerSessions, local: tuple[str, int],
                 shared_port_id: str | None) -> Accepted:
    """The daemon's side of ``DC_AUTHENTICATE``, whose policy ad is ``request``; ``level_of`` gives a
    command's level (None: not served). Raises :class:`Refused` or :class:`UnknownCommand`."""
    requested = _integer(request, "Command") or 0
    command = (_integer(request, "AuthCommand") or 0) if requested in (DC_AUTHENTICATE, DC_SEC_QUERY) else requested
    level = level_of(command)
    if level is None:
        raise UnknownCommand(command)
    if _yes(request, "UseSession"):
        session = await _resume(channel, request, sessions)
        return Accepted(command, requested, session, new_session=False)
    return Accepted(command, requested, await _new_session(channel, request, level, security, local, shared_port_id),
                    new_session=True)


async def _resume(channel: Channel, request: classad2.ClassAd, sessions: ServerSessions) -> ServerSession:
    session_id = _text(request, "Sid")
    session = sessions.get(session_id)
    wants_answer = request.get("ResumeResponse") is True
    if session is None:
        if wants_answer:
            answer = classad2.ClassAd()
            answer["ReturnCode"] = "SID_NOT_FOUND"
            await _send_ad(channel, answer)
        family = " (a family session: SEC_USE_FAMILY_SESSION?)" if session_id.startswith("family:") else ""
        raise Refused(f"the client resumed session {session_id!r}, which negotiatord does not know{family}")
    if wants_answer:
        answer = classad2.ClassAd()
        answer["ReturnCode"] = "AUTHORIZED"
        answer["RemoteVersion"] = REMOTE_VERSION
        answer["Nonce"] = base64.b64encode(os.urandom(NONCE_BYTES)).decode()
        await _send_ad(channel, answer)
    if session.key is not None:
        channel.stream.set_session_key(session.key)
    return session


async def _new_session(channel: Channel, request: classad2.ClassAd, level: Level, security: ServerSecurity,
                       local: tuple[str, int], shared_port_id: str | None) -> ServerSession:
    credentials = security.credentials
    try:
        answer = reconcile(request, security.policy(level), security.trust_domain, credentials.tokens.key_names())
    except PolicyMismatch as mismatch:
        raise Refused(f"the client's security policy does not meet negotiatord's for {level.value}: {mismatch}") \
            from None
    except ValueError as error:
        raise Refused(f"negotiatord's security policy for {level.value} is invalid: {error}") from None
    if not _yes(request, "NewSession"):
        raise Refused("the client asked for no session; negotiatord serves commands in sessions only")
    answer["NegotiatedSession"] = True
    answer["RemoteVersion"] = REMOTE_VERSION
    peer_key = _text(request, "ECDHPublicKey")
    authenticate, encrypt = _yes(answer, "Authentication"), _yes(answer, "Encryption")
    exchange = None
    if peer_key:
        exchange = KeyExchange()
        answer["ECDHPublicKey"] = exchange.public_key
        answer["CryptoMethods"] = _text(answer, "CryptoMethods").split(",")[0]
    elif authenticate or encrypt:
        raise Refused("the client sent no ECDH key; negotiatord derives session keys by ECDH only (HTCondor 9.0 "
                      "and later)")
    if not _yes(request, "Enact"):
        await _send_ad(channel, answer)

    proven: Proven | None = None
    if authenticate:
        try:
            proven = await serve_authentication(channel, _text(answer, "AuthMethodsList").split(","),
                                                credentials, local, shared_port_id)
        except AuthenticationFailed as failure:
            if answer.get("AuthRequired") is not False:
                raise Refused(f"authentication failed: {failure.detail}") from None
    key = None
    if exchange is not None:
        if _text(answer, "CryptoMethods").upper() != "AES":
            raise Refused(f"the client offers crypto methods {_text(request, 'CryptoMethods')!r}; negotiatord "
                          "speaks AES only")
        try:
            key = exchange.session_key(peer_key)
        except ValueError as error:
            raise Refused(f"the client's ECDH key is unusable: {error}") from None
        channel.stream.set_session_key(key)
    duration = float(_text(answer, "SessionDuration") or 0) + SLOP_S
    lease = _integer(answer, "SessionLease") or 0
    now = time.monotonic()
    return ServerSession(
        id=f"{socket.gethostname()}:{os.getpid()}:{int(time.time())}:{next(_SESSION_NUMBERS)}", key=key,
        user=proven.identity if proven else None, method=proven.method if proven else "",
        limits=proven.token.limits if proven and proven.token else (), expires=now + duration,
        lease_s=lease + SLOP_S if lease else 0.0, last_used=now)


def session_ad(session: ServerSession, valid_commands: list[int], return_code: str) -> classad2.ClassAd:
    """The post-authentication ad of a new session (``DaemonCommandProtocol::SendResponse``)."""
    ad = classad2.ClassAd()
    if session.user:
        ad["User"] = session.user
        ad["TriedAuthentication"] = True
    ad["Sid"] = session.id
    ad["ValidCommands"] = ",".join(map(str, valid_commands))
    ad["ReturnCode"] = return_code
    return ad
