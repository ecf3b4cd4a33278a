"""DaemonCore's command protocol on the client side: ``DC_AUTHENTICATE`` and its security
negotiation, as ``SecManStartCommand`` runs it (``src/condor_io/condor_secman.cpp``).

**A new session.** The client sends ``DC_AUTHENTICATE`` and its policy ad (:meth:`ClientSecurity.offer`,
with the command it wants to run and its ECDH public key). The daemon answers with the reconciled
policy (``ReconcileSecurityPolicyAds``: whether to authenticate, encrypt and check integrity, the
methods in its order, its ECDH key, its trust domain and issuer keys). The client authenticates if
told to, derives the session key, turns encryption on, and reads the post-authentication ad: the
daemon's verdict on the command (``ReturnCode``), the session id, who it mapped us to (``User``)
and the commands the session may be reused for (``ValidCommands``).

**A reused session.** The session is cached under the daemon's address and each valid command.
The next command to that address names the session (``UseSession``, ``Sid``) with a fresh nonce;
the daemon answers (``ResumeResponse``, HTCondor 9.9+) and both sides encrypt with the session's
key at once. A daemon that forgot the session (a restart) answers ``SID_NOT_FOUND``; the session is
dropped and the command is retried on a new connection (:mod:`~negotiatord.cedar.client`).

Either way the command's own messages follow on the now encrypted stream.
"""

from __future__ import annotations

import base64
import os
import time
from dataclasses import dataclass, field

import classad2

from negotiatord.cedar.auth import authenticate
from negotiatord.cedar.auth.channel import Channel
from negotiatord.cedar.classads import get_classad, put_classad
from negotiatord.cedar.commands import DC_AUTHENTICATE, LEVELS, command_name
from negotiatord.cedar.errors import NotAuthorized, ProtocolError
from negotiatord.cedar.keys import KeyExchange
from negotiatord.cedar.policy import REMOTE_VERSION, ClientSecurity
from negotiatord.cedar.wire import MessageWriter, WireError

NONCE_BYTES = 33
# what the client keeps of the daemon's answer (SecManStartCommand::receiveAuthInfo_inner)
_ANSWER_ATTRIBUTES = ("Enact", "AuthMethodsList", "AuthMethods", "CryptoMethods", "CryptoMethodsList",
                      "Authentication", "AuthRequired", "Encryption", "Integrity", "SessionDuration",
                      "SessionLease", "IssuerKeys", "TrustDomain", "RemoteVersion")


class SessionNotFound(Exception):
    """The daemon no longer knows a session this side cached; retry with a new one."""


@dataclass
class Session:
    """A security session with one daemon, reusable for its valid commands until it expires."""

    id: str
    key: bytes | None
    crypto_method: str
    user: str                      # who the daemon mapped us to
    method: str                    # how we authenticated
    peer_identity: str
    expires: float                 # time.monotonic()
    lease_s: float                 # 0: no lease
    last_used: float = field(default_factory=time.monotonic)

    def usable(self, now: float) -> bool:
        return now < self.expires and (self.lease_s <= 0 or now < self.last_used + self.lease_s)


class SessionCache:
    """Sessions by id, and which session serves each (address, command)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._by_command: dict[tuple[str, int], str] = {}

    def lookup(self, address: str, command: int) -> Session | None:
        session_id = self._by_command.get((address, command))
        session = self._sessions.get(session_id) if session_id is not None else None
        if session is None or not session.usable(time.monotonic()):
            if session_id is not None:
                self.forget(session_id)
            return None
        return session

    def store(self, address: str, commands: list[int], session: Session) -> None:
        self._sessions[session.id] = session
        for command in commands:
            self._by_command[(address, command)] = session.id

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        for key in [key for key, sid in self._by_command.items() if sid == session_id]:
            del self._by_command[key]

    def __len__(self) -> int:
        return len(self._sessions)


@dataclass(frozen=True)
class Started:
    """The outcome of the handshake for one command."""

    session: Session
    resumed: bool


def _message(*ads: classad2.ClassAd, command: int | None = None) -> MessageWriter:
    writer = MessageWriter()
    if command is not None:
        writer.put_int(command)
    for ad in ads:
        put_classad(writer, ad)
    return writer


def _string(ad: classad2.ClassAd, name: str, default: str = "") -> str:
    value = ad.get(name, default)
    return value if isinstance(value, str) else str(value)


def _yes(ad: classad2.ClassAd, name: str) -> bool:
    return _string(ad, name).upper().startswith("Y")


async def start_command(channel: Channel, command: int, security: ClientSecurity, sessions: SessionCache,
                        subcommand: int | None = None) -> Started:
    """Run the handshake for ``command`` on ``channel``'s fresh connection."""
    session = sessions.lookup(channel.connect_address, command)
    if session is not None:
        await _resume(channel, command, subcommand, session, sessions)
        return Started(session, resumed=True)
    return Started(await _new_session(channel, command, subcommand, security, sessions), resumed=False)


async def _new_session(channel: Channel, command: int, subcommand: int | None, security: ClientSecurity,
                       sessions: SessionCache) -> Session:
    exchange = KeyExchange()
    offer = security.offer(command, subcommand, channel.connect_address, exchange.public_key)
    await channel.send(_message(offer, command=DC_AUTHENTICATE))
    answer = await _read_ad(channel, "security negotiation")
    if _string(answer, "ReturnCode") not in ("", "AUTHORIZED"):
        raise NotAuthorized(channel.peer, f"the daemon refused the security negotiation: "
                            f"{_string(answer, 'ReturnCode')} {_string(answer, 'ErrorString')}".strip())
    policy = {name: _string(answer, name) for name in _ANSWER_ATTRIBUTES if name in answer}
    if policy.get("Enact", "").upper() != "YES":
        raise ProtocolError(channel.peer, "the daemon did not settle the security policy (Enact is not YES)")

    method, identity = "", ""
    if policy.get("Authentication", "").upper() == "YES":
        done = await authenticate(channel, policy.get("AuthMethodsList") or policy.get("AuthMethods", ""),
                                  security, policy)
        method, identity = done.method, done.peer_identity

    crypto_method = policy.get("CryptoMethods", "").split(",")[0].strip()
    encrypt = policy.get("Encryption", "").upper() == "YES"
    key = None
    server_key = _string(answer, "ECDHPublicKey")
    if server_key:
        if crypto_method != "AES":
            raise ProtocolError(channel.peer, f"the daemon chose crypto method {crypto_method or 'none'}; "
                                "negotiatord speaks AES (AES-256-GCM) only (SEC_*_CRYPTO_METHODS)")
        try:
            key = exchange.session_key(server_key)
        except ValueError as error:
            raise ProtocolError(channel.peer, f"the daemon's ECDH key is unusable: {error}") from None
        channel.stream.set_session_key(key)
    elif encrypt:
        raise ProtocolError(channel.peer, "the daemon requires encryption but sent no ECDH key")

    verdict = await _read_ad(channel, "the daemon's verdict on the command")
    return_code = _string(verdict, "ReturnCode")
    user = _string(verdict, "User")
    if return_code not in ("", "AUTHORIZED"):
        how = f"authenticated by {method} as {user}" if method else f"unauthenticated (user {user or 'unknown'})"
        level = LEVELS.get(command)
        allow = (f"the daemon's ALLOW_{level} does not name this identity ({command_name(command)} takes the "
                 f"{level} level)") if level else "the daemon's ALLOW_* settings do not let this identity run it"
        raise NotAuthorized(channel.peer, f"{return_code}: {how}; {allow}")
    session_id = _string(verdict, "Sid")
    valid = [int(part) for part in _string(verdict, "ValidCommands").replace(",", " ").split() if part.isdigit()]
    if not session_id or not valid:
        raise ProtocolError(channel.peer, "the daemon's verdict names no session or no valid commands")
    duration = _seconds(policy.get("SessionDuration"), security.session_duration_s)
    session = Session(id=session_id, key=key, crypto_method=crypto_method, user=user,
                      method=method, peer_identity=identity, expires=time.monotonic() + duration,
                      lease_s=_seconds(policy.get("SessionLease"), 0))
    sessions.store(channel.connect_address, valid, session)
    return session


async def _resume(channel: Channel, command: int, subcommand: int | None, session: Session,
                  sessions: SessionCache) -> None:
    ad = classad2.ClassAd()
    ad["UseSession"] = "YES"
    ad["Sid"] = session.id
    ad["Command"] = command
    if subcommand is not None:
        ad["AuthCommand"] = subcommand
    ad["ConnectSinful"] = channel.connect_address
    if session.key is not None:
        ad["CryptoMethods"] = session.crypto_method
    ad["Nonce"] = base64.b64encode(os.urandom(NONCE_BYTES)).decode()
    ad["ResumeResponse"] = True
    ad["RemoteVersion"] = REMOTE_VERSION
    await channel.send(_message(ad, command=DC_AUTHENTICATE))
    answer = await _read_ad(channel, "resuming a session")
    return_code = _string(answer, "ReturnCode")
    if return_code == "SID_NOT_FOUND":
        sessions.forget(session.id)
        raise SessionNotFound(session.id)
    if return_code not in ("", "AUTHORIZED"):
        sessions.forget(session.id)
        raise NotAuthorized(channel.peer, f"{return_code} when resuming session {session.id}")
    session.last_used = time.monotonic()
    if session.key is not None:
        channel.stream.set_session_key(session.key)


async def _read_ad(channel: Channel, step: str) -> classad2.ClassAd:
    reader = await channel.receive()
    try:
        ad = get_classad(reader)
    except WireError as error:
        raise ProtocolError(channel.peer, f"{step}: {error}") from None
    return ad


def _seconds(text: str | None, default: float) -> float:
    try:
        return float(text) if text not in (None, "") else default
    except ValueError:
        return default
