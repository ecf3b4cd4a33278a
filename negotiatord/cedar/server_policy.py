"""The daemon's security policy, level by level, and how it is reconciled with a client's.

For each authorization level a command may be registered at, the daemon reads its own levels of
authentication, encryption, integrity and negotiation, its methods and its session duration and
lease (``SecMan::FillInSecurityPolicyAd``: ``SEC_<LEVEL>_<X>``, else ``SEC_DEFAULT_<X>``; the
settings layer reads them). A client's policy ad meets the daemon's policy for the command's level
in ``SecMan::ReconcileSecurityPolicyAds`` (``src/condor_io/condor_secman.cpp``):

* each feature, from the two sides' levels (``ReconcileSecurityAttribute``): REQUIRED against
  NEVER fails; REQUIRED or PREFERRED on one side and anything but NEVER on the other turns it on;
  OPTIONAL against OPTIONAL leaves it off. A client that sends ``AuthenticationNew`` is reconciled
  by it rather than by ``Authentication``;
* the methods both sides know, in the daemon's order (``ReconcileMethodLists``; the IDTOKENS
  spellings are one method); the crypto methods likewise, and with authentication and AES, AES-GCM
  encrypts and checks integrity whatever was asked;
* the shorter of the two session durations, and of the two leases.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import classad2

from negotiatord.cedar.auth import ServerCredentials
from negotiatord.cedar.authorization import AuthorizationTable, Level
from negotiatord.cedar.policy import Requirement, canonical_method


class PolicyMismatch(ValueError):
    """The client's policy and the daemon's cannot be reconciled; the message says which feature."""


@dataclass(frozen=True)
class LevelPolicy:
    """What the daemon asks of a client for the commands of one level."""

    authentication: Requirement = Requirement.OPTIONAL
    encryption: Requirement = Requirement.OPTIONAL
    integrity: Requirement = Requirement.OPTIONAL
    negotiation: Requirement = Requirement.PREFERRED
    methods: tuple[str, ...] = ("FS", "TOKEN")
    crypto_methods: tuple[str, ...] = ("AES",)
    session_duration_s: int = 86400
    session_lease_s: int = 3600

    def reconciled_levels(self) -> dict[str, Requirement]:
        """The levels after ``SecMan::ReconcileSecurityDependency`` (encryption or integrity wanted
        raises authentication for old peers; negotiation NEVER rules out the rest); raises
        ValueError for a policy HTCondor calls invalid."""
        authentication, encryption, integrity = self.authentication, self.encryption, self.integrity
        negotiation = self.negotiation
        pairs = [("authentication", "encryption"), ("authentication", "integrity"), ("negotiation", "authentication"),
                 ("negotiation", "encryption"), ("negotiation", "integrity")]
        levels = {"authentication": authentication, "encryption": encryption, "integrity": integrity,
                  "negotiation": negotiation}
        for first, second in pairs:
            if levels[first] is Requirement.NEVER:
                if levels[second] is Requirement.REQUIRED:
                    raise ValueError(f"{second} is REQUIRED but {first} is NEVER")
                levels[second] = Requirement.NEVER
            if levels[second] > levels[first]:
                levels[first] = levels[second]
        if not self.methods and authentication is Requirement.REQUIRED:
            raise ValueError("authentication is REQUIRED but no method negotiatord serves is configured")
        # AuthenticationNew, read by 23.10+ peers, is the configured level, not raised by the others
        levels["authentication_new"] = authentication if self.methods else Requirement.NEVER
        return levels


@dataclass(frozen=True)
class ServerSecurity:
    """Everything the daemon's side of the command protocol is configured with."""

    levels: Mapping[Level, LevelPolicy] = field(default_factory=dict)
    credentials: ServerCredentials = field(default_factory=ServerCredentials)
    authorization: AuthorizationTable = field(default_factory=AuthorizationTable)
    trust_domain: str | None = None

    def policy(self, level: Level) -> LevelPolicy:
        return self.levels.get(level) or self.levels.get(Level.DEFAULT) or LevelPolicy()


def _act(client: str, server: Requirement, feature: str) -> bool:
    """``ReconcileSecurityAttribute``: whether ``feature`` is on; PolicyMismatch if the sides
    cannot agree. A missing client level counts as NEVER."""
    try:
        wanted = Requirement.named(client) if client else Requirement.NEVER
    except ValueError:
        raise PolicyMismatch(f"the client's {feature} level {client!r} is not one") from None
    if Requirement.REQUIRED in (wanted, server) and Requirement.NEVER in (wanted, server):
        side = "the client requires it and negotiatord refuses it" if wanted is Requirement.REQUIRED \
            else "negotiatord requires it and the client refuses it"
        raise PolicyMismatch(f"{feature}: {side} (SEC_*_{feature.upper()})")
    if Requirement.NEVER in (wanted, server):
        return False
    return Requirement.PREFERRED in (wanted, server) or Requirement.REQUIRED in (wanted, server)


def _methods(client: str, server: tuple[str, ...]) -> list[str]:
    """``ReconcileMethodLists``: the server's methods the client also lists, in the server's order,
    as the client spells them."""
    offered = {canonical_method(word): word.strip() for word in client.split(",") if word.strip()}
    return [offered[canonical_method(method)] for method in server if canonical_method(method) in offered]


def _text(ad: classad2.ClassAd, name: str) -> str:
    value = ad.get(name, "")
    return value if isinstance(value, str) else str(value)


def reconcile(client: classad2.ClassAd, policy: LevelPolicy, trust_domain: str | None,
              issuer_keys: list[str]) -> classad2.ClassAd:
    """The policy both sides follow, as the daemon answers it; PolicyMismatch if there is none."""
    levels = policy.reconciled_levels()
    authentication_client = _text(client, "AuthenticationNew") or _text(client, "Authentication")
    server_authentication = levels["authentication_new"] if _text(client, "AuthenticationNew") \
        else levels["authentication"]
    authenticate = _act(authentication_client, server_authentication, "authentication")
    required = Requirement.REQUIRED in (server_authentication,) or authentication_client[:1].upper() == "R"
    encrypt = _act(_text(client, "Encryption"), levels["encryption"], "encryption")
    integrity = _act(_text(client, "Integrity"), levels["integrity"], "integrity")
    answer = classad2.ClassAd()
    answer["Authentication"] = "YES" if authenticate else "NO"
    if authenticate and not required:
        answer["AuthRequired"] = False
    methods = _methods(_text(client, "AuthMethods"), policy.methods)
    if _text(client, "AuthMethods") and policy.methods:
        answer["AuthMethodsList"] = ",".join(methods)
        answer["AuthMethods"] = methods[0] if methods else ""
    crypto = _methods(_text(client, "CryptoMethods"), policy.crypto_methods)
    if _text(client, "CryptoMethods") and policy.crypto_methods:
        answer["CryptoMethods"] = answer["CryptoMethodsList"] = ",".join(crypto)
        if authenticate and crypto and crypto[0].upper() == "AES":
            encrypt = integrity = True
    answer["Encryption"] = "YES" if encrypt else "NO"
    answer["Integrity"] = "YES" if integrity else "NO"
    client_duration = int(_number(_text(client, "SessionDuration")))
    answer["SessionDuration"] = str(min(client_duration, policy.session_duration_s))
    client_lease = client.get("SessionLease")
    if isinstance(client_lease, int) and not isinstance(client_lease, bool):
        leases = [lease or other for lease, other in ((client_lease, policy.session_lease_s),
                                                      (policy.session_lease_s, client_lease))]
        answer["SessionLease"] = min(leases)
    answer["Enact"] = "YES"
    if trust_domain:
        answer["TrustDomain"] = trust_domain
    if issuer_keys and "TOKEN" in {canonical_method(m) for m in policy.methods}:
        answer["IssuerKeys"] = ", ".join(issuer_keys)
    return answer


def _number(text: str) -> float:
    try:
        return float(text) if text else 0.0
    except ValueError:
        return 0.0
