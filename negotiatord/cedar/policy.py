"""This side's security policy as a client, and the ad that offers it to a daemon.

It mirrors ``SecMan::FillInSecurityPolicyAd`` for ``CLIENT_PERM``: the levels of authentication,
encryption and integrity (each ``REQUIRED``, ``PREFERRED``, ``OPTIONAL`` or ``NEVER``), the
authentication and crypto methods, and the session's duration and lease. The settings layer fills
it from the condor config (``SEC_CLIENT_*``, falling back to ``SEC_DEFAULT_*``); this module knows
no config.

Method names are HTCondor's; ``IDTOKENS``, ``IDTOKEN`` and ``TOKENS`` are ``TOKEN`` on the wire, as
``condor_ping`` reports them (``SecMan::sec_char_to_auth_method`` maps all four to one bit, and a
client naming ``IDTOKENS`` is not matched by ``ReconcileMethodLists``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import classad2

# negotiatord's protocol matches HTCondor 25.0's; the peer reads features from this version
# (``CondorVersionInfo``: resumed-session responses since 9.9, private attribute rules since 9.9).
REMOTE_VERSION = "$CondorVersion: 25.0.0 2025-01-01 negotiatord $"
IMPLEMENTED_METHODS = ("FS", "TOKEN", "SSL")
TOKEN_ALIASES = {"IDTOKENS", "IDTOKEN", "TOKENS", "TOKEN"}


class Requirement(int, Enum):
    """A security feature's level, weakest first (``SecMan::sec_req``)."""

    NEVER = 0
    OPTIONAL = 1
    PREFERRED = 2
    REQUIRED = 3

    @classmethod
    def named(cls, text: str) -> Requirement:
        """``REQUIRED`` and the like; HTCondor reads only the first letter (``sec_alpha_to_sec_req``)."""
        first = text.strip()[:1].upper()
        for level in cls:
            if level.name[0] == first:
                return level
        raise ValueError(f"{text!r} is not a security level (REQUIRED, PREFERRED, OPTIONAL or NEVER)")


def canonical_method(name: str) -> str:
    upper = name.strip().upper()
    return "TOKEN" if upper in TOKEN_ALIASES else upper


@dataclass(frozen=True)
class SslFiles:
    """``AUTH_SSL_CLIENT_*``: the CAs to check the daemon's certificate with, and this side's own.
    As in HTCondor, the system's default CAs are trusted too unless ``use_default_cas`` is false
    (``AUTH_SSL_CLIENT_USE_DEFAULT_CAS``)."""

    ca_file: Path | None = None
    ca_dir: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    use_default_cas: bool = True


@dataclass(frozen=True)
class ClientSecurity:
    """What this side asks of every daemon it sends a command to."""

    methods: tuple[str, ...] = ("FS", "TOKEN", "SSL")
    authentication: Requirement = Requirement.PREFERRED
    encryption: Requirement = Requirement.OPTIONAL
    integrity: Requirement = Requirement.OPTIONAL
    crypto_methods: tuple[str, ...] = ("AES",)
    session_duration_s: int = 86400   # a daemon's default (SEC_DEFAULT_SESSION_DURATION)
    session_lease_s: int = 3600
    trust_domain: str | None = None
    token_directory: Path | None = None   # SEC_TOKEN_DIRECTORY
    tokens: tuple[str, ...] = ()          # SEC_TOKEN: tokens given in the config or environment
    ssl: SslFiles = field(default_factory=SslFiles)
    subsystem: str = "NEGOTIATOR"

    def __post_init__(self) -> None:
        methods = tuple(dict.fromkeys(canonical_method(method) for method in self.methods))
        object.__setattr__(self, "methods", methods)

    @property
    def usable_methods(self) -> tuple[str, ...]:
        return tuple(method for method in self.methods if method in IMPLEMENTED_METHODS)

    def levels(self) -> tuple[Requirement, Requirement, Requirement, Requirement]:
        """Authentication as old peers read it, authentication as new ones do, encryption and
        integrity, reconciled as ``SecMan::ReconcileSecurityDependency`` does: encryption or
        integrity wanted raises authentication with it, and NEVER authenticating rules out both."""
        authentication, encryption, integrity = self.authentication, self.encryption, self.integrity
        for name, level in (("encryption", encryption), ("integrity", integrity)):
            if authentication is Requirement.NEVER and level is Requirement.REQUIRED:
                raise ValueError(f"{name} is REQUIRED but authentication is NEVER: a key cannot be "
                                 "exchanged without authenticating")
        if authentication is Requirement.NEVER:
            encryption = integrity = Requirement.NEVER
        old_style = max(authentication, encryption, integrity)
        if not self.usable_methods:
            if authentication is Requirement.REQUIRED:
                raise ValueError("authentication is REQUIRED but no usable method is configured "
                                 f"(negotiatord implements {', '.join(IMPLEMENTED_METHODS)})")
            authentication = Requirement.NEVER
        return old_style, authentication, encryption, integrity

    def offer(self, command: int, subcommand: int | None, connect_address: str, public_key: str) -> classad2.ClassAd:
        """The ad a new session starts with (``SecManStartCommand::sendAuthInfo_inner``)."""
        old_style, authentication, encryption, integrity = self.levels()
        ad = classad2.ClassAd()
        if self.usable_methods:
            ad["AuthMethods"] = ",".join(self.usable_methods)
        if self.trust_domain:
            ad["TrustDomain"] = self.trust_domain
        ad["CryptoMethods"] = ",".join(self.crypto_methods)
        ad["OutgoingNegotiation"] = Requirement.PREFERRED.name
        ad["Authentication"] = old_style.name
        ad["AuthenticationNew"] = authentication.name
        ad["Encryption"] = encryption.name
        ad["Integrity"] = integrity.name
        ad["Enact"] = "NO"
        ad["Subsystem"] = self.subsystem
        ad["ServerPid"] = os.getpid()
        ad["SessionDuration"] = str(self.session_duration_s)   # a string, "for historical reasons"
        ad["SessionLease"] = self.session_lease_s
        ad["ECDHPublicKey"] = public_key
        ad["NewSession"] = "YES"
        ad["NegotiatedSession"] = True
        ad["RemoteVersion"] = REMOTE_VERSION
        ad["ConnectSinful"] = connect_address
        ad["Command"] = command
        if subcommand is not None:
            ad["AuthCommand"] = subcommand
        return ad
