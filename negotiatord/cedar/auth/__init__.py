"""Authentication: choosing a method, then running its handshake, on either side.

``Authentication::handshake`` (``src/condor_io/authentication.cpp``): the client sends the bitmask
of the methods it will try (the ones the daemon's reply listed, in ``AuthMethodsList``); the daemon
answers with the bit of the first of its own methods in it, or 0 when none is left. The chosen
method's handshake runs; if it fails, the client drops that method and asks again. After a method
succeeds, ``Authentication::exchangeKey`` has the daemon say whether it sends a key: with an ECDH
session key (HTCondor 9.0+) it never does.

negotiatord's daemon side (:func:`serve_authentication`) offers FS and IDTOKENS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from negotiatord.cedar.auth.channel import Channel, MethodFailed, OutOfStep
from negotiatord.cedar.auth.fs import FsSettings, authenticate_fs, serve_fs
from negotiatord.cedar.auth.ssl import authenticate_ssl
from negotiatord.cedar.auth.token_verification import TokenKeys, VerifiedToken, serve_token
from negotiatord.cedar.auth.tokens import authenticate_token
from negotiatord.cedar.errors import AuthenticationFailed, ProtocolError
from negotiatord.cedar.policy import ClientSecurity, canonical_method
from negotiatord.cedar.wire import MessageWriter

# CAUTH_* in src/condor_includes/condor_auth.h
METHOD_BITS = {"CLAIMTOBE": 2, "FS": 4, "FS_REMOTE": 8, "KERBEROS": 64, "ANONYMOUS": 128, "SSL": 256,
               "PASSWORD": 512, "MUNGE": 1024, "TOKEN": 2048, "SCITOKENS": 4096}
_HANDSHAKES = {"FS": authenticate_fs, "SSL": authenticate_ssl, "TOKEN": authenticate_token}
SERVED_METHODS = ("FS", "TOKEN")


@dataclass(frozen=True)
class Authenticated:
    method: str          # as HTCondor names it in the session (``IDTOKENS`` for TOKEN)
    peer_identity: str   # who the daemon proved to be, where the method says


async def authenticate(channel: Channel, offered: str, security: ClientSecurity,
                       server_ad_facts: dict[str, str]) -> Authenticated:
    """Authenticate over ``channel`` with the methods ``offered`` (the daemon's ``AuthMethodsList``)
    that this side is configured for; raises :class:`AuthenticationFailed` saying why each failed."""
    ours = set(security.usable_methods) & set(_HANDSHAKES)
    remaining = [method for method in dict.fromkeys(canonical_method(m) for m in offered.split(",") if m.strip())
                 if method in ours]
    if not remaining:
        raise AuthenticationFailed(
            channel.peer, f"no authentication method in common: the daemon offers {offered or 'none'}, "
            f"negotiatord is configured for {', '.join(security.usable_methods) or 'none'} "
            "(SEC_CLIENT_AUTHENTICATION_METHODS here, SEC_*_AUTHENTICATION_METHODS at the daemon)")
    failures: list[str] = []
    while remaining:
        bitmask = sum(METHOD_BITS[method] for method in remaining)
        await channel.send(MessageWriter().put_int(bitmask))
        reader = await channel.receive()
        chosen = reader.get_int32()
        method = next((name for name, bit in METHOD_BITS.items() if bit == chosen), None)
        if chosen == 0 or method not in remaining:
            break
        try:
            identity = await _HANDSHAKES[method](channel, security, server_ad_facts)
        except MethodFailed as failure:
            failures.append(f"{_named(method)}: {failure}")
            remaining.remove(method)
            continue
        await _no_key_follows(channel)
        return Authenticated(_named(method), identity)
    raise AuthenticationFailed(channel.peer, "; ".join(failures) or
                               f"the daemon accepted none of {', '.join(map(_named, ours))}")


async def _no_key_follows(channel: Channel) -> None:
    reader = await channel.receive()
    if reader.get_int32() != 0:
        raise ProtocolError(channel.peer, "the daemon sent a session key after authentication; negotiatord "
                            "derives keys by ECDH only (HTCondor 9.0 and later)")


def _named(method: str) -> str:
    return "IDTOKENS" if method == "TOKEN" else method


@dataclass(frozen=True)
class ServerCredentials:
    """What the daemon's side of each method needs."""

    tokens: TokenKeys = field(default_factory=TokenKeys)
    fs: FsSettings = field(default_factory=FsSettings)


@dataclass(frozen=True)
class Proven:
    """Who a client proved to be: ``user@domain`` by ``method``, and its token if it used one."""

    method: str
    identity: str
    token: VerifiedToken | None = None


async def serve_authentication(channel: Channel, methods: list[str], credentials: ServerCredentials,
                               local: tuple[str, int], shared_port_id: str | None) -> Proven:
    """The daemon's side: methods in the daemon's order (of ``AuthMethodsList``) until one
    succeeds; raises :class:`AuthenticationFailed` saying why each failed."""
    ours = [method for method in dict.fromkeys(canonical_method(m) for m in methods) if method in SERVED_METHODS]
    failures: list[str] = []
    while True:
        offered = (await channel.receive()).get_int32()
        chosen = next((method for method in ours if offered & METHOD_BITS[method]), None)
        await channel.send(MessageWriter().put_int(METHOD_BITS[chosen] if chosen else 0))
        if chosen is None:
            raise AuthenticationFailed(channel.peer, "; ".join(failures) or "the client offered none of "
                                       f"{', '.join(map(_named, ours)) or 'the methods negotiatord serves'}")
        try:
            if chosen == "TOKEN":
                token = await serve_token(channel, credentials.tokens)
                proven = Proven(_named(chosen), token.subject, token)
            else:
                proven = Proven(chosen, await serve_fs(channel, credentials.fs, local, shared_port_id))
        except OutOfStep as failure:
            raise AuthenticationFailed(channel.peer, f"{_named(chosen)}: {failure}") from None
        except MethodFailed as failure:
            failures.append(f"{_named(chosen)}: {failure}")
            ours.remove(chosen)
            continue
        await channel.send(MessageWriter().put_int(0))     # exchangeKey: no key follows
        return proven
