"""What a daemon started by ``condor_master`` inherits from it, as ``DaemonCore::Inherit``
(``src/condor_daemon_core.V6/daemon_core.cpp``) reads it from the environment.

``CONDOR_INHERIT`` holds, separated by spaces: the parent's pid and command address; sockets handed
down for other uses (none to a daemon), ended by ``0``; then the daemon's own command sockets as
``DaemonCore::Create_Process`` made them, ended by ``0``: ``SharedPort:<endpoint>`` when the daemon
sits behind ``condor_shared_port`` (the name of its named socket and the listening socket, by file
descriptor), and ``1 <tcp socket>`` / ``2 <udp socket>`` pairs for command ports of its own. A
socket is written as its file descriptor and its state, ``*``-separated (``Sock::serialize``);
only the descriptor matters to a child that takes the socket over.

``CONDOR_PRIVATE_INHERIT`` holds security sessions: ``FamilySessionKey:`` the session every
process of the master's family may use with the others (the one its keep-alives go over), and
``SessionKey:`` one the parent made to send commands to this child (``condor@parent``, allowed
DAEMON and ADMINISTRATOR commands: ``IpVerify::PunchHole``). Each is ``id#[info]key`` (``ClaimIdParser``):
the session's id, its exported policy (``SecMan::ExportSecSessionInfo``) and its key, a text from
which the AES-GCM key is derived by HKDF (``SecMan::CreateNonNegotiatedSecuritySession``).

Both variables are taken out of the environment once read, as DaemonCore does, so that no process
this daemon starts believes it is the master's child.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import MutableMapping
from dataclasses import dataclass

from negotiatord.cedar.keys import SESSION_KEY_BYTES, hkdf_sha256

INHERIT = "CONDOR_INHERIT"
PRIVATE_INHERIT = "CONDOR_PRIVATE_INHERIT"
FAMILY_USER = "condor@family"        # CONDOR_FAMILY_FQU
PARENT_USER = "condor@parent"        # CONDOR_PARENT_FQU
FAMILY_METHOD = "FAMILY"             # AUTH_METHOD_FAMILY


class InheritError(ValueError):
    """The inherited description is not what DaemonCore writes; the message quotes the part."""


@dataclass(frozen=True)
class InheritedSession:
    """A security session a daemon was handed, not negotiated."""

    id: str
    key_text: str
    policy: dict[str, str]         # the exported policy, attribute -> unquoted value

    @property
    def key(self) -> bytes:
        return hkdf_sha256(self.key_text.encode(), b"htcondor", b"keygen", SESSION_KEY_BYTES)

    @property
    def crypto_method(self) -> str:
        """AES when the session allows it: the export names an old protocol first for UDP's sake
        (``CryptoMethods``), and lists all in ``CryptoMethodsList``, ``.``-separated."""
        listed = self.policy.get("CryptoMethodsList", "").replace(".", ",").split(",")
        if "AES" in (method.strip().upper() for method in listed):
            return "AES"
        return self.policy.get("CryptoMethods", "AES")

    def expires(self) -> float:
        """When it expires, on the monotonic clock (never, unless its policy says)."""
        at = self.policy.get("SessionExpires", "")
        if not at.isdigit() or int(at) == 0:
            return float("inf")
        return time.monotonic() + max(0, int(at) - time.time())


@dataclass(frozen=True)
class Inheritance:
    """What the parent daemon handed down."""

    parent_pid: int
    parent_address: str
    shared_port_name: str | None       # the named socket condor_shared_port hands connections to
    shared_port_socket: int | None     # its listening descriptor
    command_sockets: tuple[int, ...]   # listening TCP descriptors
    udp_sockets: tuple[int, ...]       # UDP descriptors (negotiatord serves TCP only)
    family: InheritedSession | None
    parent_session: InheritedSession | None

    @property
    def shared_port_id(self) -> str | None:
        return os.path.basename(self.shared_port_name) if self.shared_port_name else None


def take(environ: MutableMapping[str, str]) -> Inheritance | None:
    """What ``environ`` says was inherited (None: no DaemonCore parent), taking both variables out
    of it; raises :class:`InheritError` on a description DaemonCore would not write."""
    text = environ.pop(INHERIT, None)
    private = environ.pop(PRIVATE_INHERIT, "")
    if not text or not text.strip():
        return None
    return parse(text, private)


def parse(text: str, private: str = "") -> Inheritance:
    items = text.split()
    if len(items) < 2 or not items[0].isdigit():
        raise InheritError(f"{INHERIT} does not start with the parent's pid and address: {text[:200]!r}")
    at = 2
    while at < len(items) and items[at] != "0":       # sockets handed down for other uses
        at += 2
    at += 1
    shared_name, shared_socket = None, None
    if at < len(items) and items[at].startswith("SharedPort:"):
        name, _, serialized = items[at][len("SharedPort:"):].partition("*")
        shared_name, shared_socket = name, _descriptor(serialized)
        at += 1
    tcp: list[int] = []
    udp: list[int] = []
    while at + 1 < len(items) and items[at] in ("1", "2"):
        (tcp if items[at] == "1" else udp).append(_descriptor(items[at + 1]))
        at += 2
    sessions = _sessions(private)
    return Inheritance(int(items[0]), items[1], shared_name, shared_socket, tuple(tcp), tuple(udp),
                       sessions.get("FamilySessionKey"), sessions.get("SessionKey"))


def _descriptor(serialized: str) -> int:
    """The file descriptor a serialized socket starts with (``Sock::serialize``)."""
    head = serialized.split("*", 1)[0]
    if not head.isdigit():
        raise InheritError(f"not a serialized socket: {serialized[:80]!r}")
    return int(head)


def _sessions(private: str) -> dict[str, InheritedSession]:
    sessions = {}
    for item in private.split():
        kind, colon, claim = item.partition(":")
        if colon and kind in ("FamilySessionKey", "SessionKey"):
            sessions[kind] = session(claim)
    return sessions


def session(claim: str) -> InheritedSession:
    """``id#[info]key`` (``ClaimIdParser``) as a session."""
    session_id, hash_mark, secret = claim.rpartition("#")
    if not hash_mark or not session_id:
        raise InheritError(f"an inherited session is not id#[info]key: {claim[:40]!r}...")
    policy: dict[str, str] = {}
    key = secret
    if secret.startswith("["):
        info, _, key = secret[1:].rpartition("]")
        for assignment in filter(None, info.split(";")):
            name, _, value = assignment.partition("=")
            policy[name.strip()] = re.sub(r'^"(.*)"$', r"\1", value.strip())
    return InheritedSession(session_id, key, policy)
