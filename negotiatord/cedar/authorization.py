"""HTCondor's authorization levels and its ``ALLOW_<LEVEL>`` / ``DENY_<LEVEL>`` lists, as a daemon
checks a command against them (``IpVerify``, ``src/condor_io/condor_ipverify.cpp``).

**Levels** (``src/condor_includes/condor_perms.h``). A command is registered at one level. A level
is also granted by the levels that imply it (``DCpermissionHierarchy``, ``condor_perms.cpp``):
ADMINISTRATOR and DAEMON imply WRITE; WRITE, NEGOTIATOR, CONFIG and the ADVERTISE levels imply
READ. ALLOW lets anyone in.

**Entries.** Each list is split on commas and spaces; an entry names a user, a host, or both
(``IpVerify::split_entry``): ``user@domain`` (any host), ``host`` (any user), ``user@domain/host``,
``*/host``, ``user/net/mask``. A user or host pattern may hold one ``*`` wildcard, at the start,
the end or in the middle (``matches_withwildcard``, case-insensitive); a host is an IP address, a
network (``128.105.0.0/16``, ``128.105.0.0/255.255.0.0``, ``128.105.*``) or a host name pattern
matched against the peer's names. ``condor@...`` and ``condor_pool@...`` stand for each other
(``USE_POOL_USERNAME_EQUIVALENT``).

**A decision** (``IpVerify::Verify``). An unset ALLOW list denies every level but READ and WRITE;
``*`` allows anyone, unless a DENY list names them. Otherwise a DENY entry that matches denies; an
ALLOW entry that matches allows; with neither, the level is granted if a level that implies it is
(WRITE because of ADMINISTRATOR, ...). A peer that did not authenticate is matched as
``unauthenticated@unmapped``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

UNAUTHENTICATED = "unauthenticated@unmapped"
_POOL_USER_EQUIVALENTS = ("condor@", "condor_pool@")


class Level(str, Enum):
    """``DCpermission``, in its order."""

    ALLOW = "ALLOW"
    READ = "READ"
    WRITE = "WRITE"
    NEGOTIATOR = "NEGOTIATOR"
    ADMINISTRATOR = "ADMINISTRATOR"
    CONFIG = "CONFIG"
    DAEMON = "DAEMON"
    SOAP = "SOAP"
    DEFAULT = "DEFAULT"
    CLIENT = "CLIENT"
    ADVERTISE_STARTD = "ADVERTISE_STARTD"
    ADVERTISE_SCHEDD = "ADVERTISE_SCHEDD"
    ADVERTISE_MASTER = "ADVERTISE_MASTER"

    @classmethod
    def named(cls, name: str) -> Level | None:
        return cls.__members__.get(name.strip().upper())


# DCpermissionHierarchy::aImpliedNext: the level each level implies
IMPLIES: Mapping[Level, Level] = {
    Level.WRITE: Level.READ, Level.NEGOTIATOR: Level.READ, Level.ADMINISTRATOR: Level.WRITE,
    Level.CONFIG: Level.READ, Level.DAEMON: Level.WRITE, Level.ADVERTISE_STARTD: Level.READ,
    Level.ADVERTISE_SCHEDD: Level.READ, Level.ADVERTISE_MASTER: Level.READ,
}


def implied(level: Level) -> list[Level]:
    """``level`` and every level it implies, ``level`` first."""
    chain = [level]
    while chain[-1] in IMPLIES:
        chain.append(IMPLIES[chain[-1]])
    return chain


def implying(level: Level) -> list[Level]:
    """The levels that directly imply ``level`` (``DCpermissionHierarchy::DirectlyImpliedBy``)."""
    return [other for other, target in IMPLIES.items() if target is level]


def config_fallback(level: Level) -> Level | None:
    """The level whose setting stands in for ``level``'s when it is unset (``aConfigNext``)."""
    if level is Level.DEFAULT:
        return None
    if level.name.startswith("ADVERTISE_"):
        return Level.DAEMON
    return Level.DEFAULT


def wildcard_match(pattern: str, text: str) -> bool:
    """``matches_anycase_withwildcard``: one ``*`` anywhere (and maybe one more at the end)."""
    regex = "^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$"
    return re.match(regex, text, re.IGNORECASE | re.DOTALL) is not None


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """``condor_netaddr::from_net_string``: an address, a network with bits or a dotted mask, or
    an IPv4 address ending in ``*`` octets; None if ``text`` is none of these."""
    if text in ("*", "*/*"):
        return ipaddress.ip_network("0.0.0.0/0")
    if "*" in text and ":" not in text:
        octets = text.split(".")
        fixed = [octet for octet in octets if octet != "*"]
        if octets[len(fixed):] != ["*"] * (len(octets) - len(fixed)) or not 0 < len(octets) <= 4:
            return None
        text = ".".join(fixed + ["0"] * (4 - len(fixed))) + f"/{8 * len(fixed)}"
    elif text.endswith(":*"):
        text = text[:-1] + ":/" + str(16 * (text.count(":") - 1))
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


@dataclass(frozen=True)
class Entry:
    """One entry of an ALLOW or DENY list: a user pattern and a host pattern."""

    user: str
    host: str

    @classmethod
    def parse(cls, text: str) -> Entry:
        """``IpVerify::split_entry``."""
        first, slash, rest = text.partition("/")
        if not slash:
            return cls(text, "*") if "@" in text else cls("*", text)
        if "/" in rest:                         # user/net/mask
            return cls(first, rest)
        if "@" in first or first.startswith("*"):
            return cls(first, rest)             # user/host, */host
        if _network(text) is not None:
            return cls("*", text)               # net/mask
        return cls(first, rest)

    def users(self) -> list[str]:
        """The user pattern and, for the pool identity, its equivalent."""
        lowered = self.user.lower()
        for this, other in (_POOL_USER_EQUIVALENTS, _POOL_USER_EQUIVALENTS[::-1]):
            if lowered.startswith(this):
                return [self.user, other + self.user[len(this):]]
        return [self.user]

    def matches(self, user: str, ip: str, hostnames: Callable[[], list[str]]) -> bool:
        if not any(wildcard_match(pattern, user) for pattern in self.users()):
            return False
        network = _network(self.host)
        if network is not None:
            try:
                return ipaddress.ip_address(ip) in network
            except ValueError:
                return False
        return any(wildcard_match(self.host, name) for name in hostnames())

    def needs_hostnames(self) -> bool:
        return _network(self.host) is None


def parse_list(text: str | None) -> tuple[Entry, ...] | None:
    """An ALLOW or DENY list's entries (None: the list is unset)."""
    if text is None:
        return None
    return tuple(Entry.parse(word) for word in re.split(r"[\s,]+", text.strip()) if word)


@dataclass(frozen=True)
class LevelRules:
    """One level's ALLOW and DENY lists (None: unset), and the knobs they were read from."""

    allow: tuple[Entry, ...] | None = None
    deny: tuple[Entry, ...] | None = None
    allow_knob: str = ""
    deny_knob: str = ""

    @property
    def allows_all(self) -> bool:
        return self.allow is not None and len(self.allow) == 1 and self.allow[0] == Entry("*", "*")

    @property
    def denies_all(self) -> bool:
        return self.deny is not None and len(self.deny) == 1 and self.deny[0] == Entry("*", "*")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


@dataclass(frozen=True)
class AuthorizationTable:
    """Every level's ALLOW and DENY rules."""

    rules: Mapping[Level, LevelRules] = field(default_factory=dict)

    def needs_hostnames(self) -> bool:
        """Whether some entry names a host by name: the peer's address must then be looked up."""
        return any(entry.needs_hostnames() for rules in self.rules.values()
                   for entries in (rules.allow or (), rules.deny or ()) for entry in entries)

    def verify(self, level: Level, user: str | None, ip: str, hostnames: Callable[[], list[str]]) -> Decision:
        """Whether ``user`` (None: unauthenticated) at ``ip`` holds ``level``, and why."""
        who = user or UNAUTHENTICATED
        if level is Level.ALLOW:
            return Decision(True, "ALLOW commands are open to everyone")
        rules = self.rules.get(level, LevelRules())
        if rules.denies_all or (rules.allow is None and level not in (Level.READ, Level.WRITE)):
            knob = rules.deny_knob if rules.denies_all else f"ALLOW_{level.value}"
            unset = "" if rules.denies_all else " is not set, which"
            return Decision(False, f"{knob}{unset} denies everyone the {level.value} level")
        if rules.allows_all and not rules.deny:
            return Decision(True, f"{rules.allow_knob} allows anyone")
        for entry in rules.deny or ():
            if entry.matches(who, ip, hostnames):
                return Decision(False, f"{rules.deny_knob} denies {who} at {ip} (entry {_shown(entry)})")
        if rules.allows_all:
            return Decision(True, f"{rules.allow_knob} allows anyone {rules.deny_knob} does not deny")
        for entry in rules.allow or ():
            if entry.matches(who, ip, hostnames):
                return Decision(True, f"{rules.allow_knob} allows {who} (entry {_shown(entry)})")
        for parent in implying(level):
            decision = self.verify(parent, user, ip, hostnames)
            if decision.allowed:
                return Decision(True, f"{level.value} is implied by {parent.value}: {decision.reason}")
        knob = rules.allow_knob or f"ALLOW_{level.value}"
        return Decision(False, f"{knob} does not name {who} at {ip}, nor does the setting of any level "
                        f"that implies {level.value}")


def _shown(entry: Entry) -> str:
    if entry.host == "*":
        return entry.user
    return entry.host if entry.user == "*" else f"{entry.user}/{entry.host}"


def table_from(settings: Iterable[tuple[Level, str | None, str, str | None, str]]) -> AuthorizationTable:
    """A table from (level, allow text, its knob, deny text, its knob) rows."""
    return AuthorizationTable({level: LevelRules(parse_list(allow), parse_list(deny), allow_knob, deny_knob)
                               for level, allow, allow_knob, deny, deny_knob in settings})
