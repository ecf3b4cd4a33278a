"""How negotiatord serves HTCondor's commands: its command port, its security policy as a daemon,
its authorization table, and its life under ``condor_master``.

The security policy is read per level as ``SecMan::FillInSecurityPolicyAd`` reads it
(``src/condor_io/condor_secman.cpp``): ``SEC_<LEVEL>_<X>``, else the setting of the level it
falls back to (``SEC_DEFAULT_<X>``; the ADVERTISE levels go through DAEMON first), else HTCondor's
built-in value. The ALLOW and DENY lists likewise, each first as ``ALLOW_<LEVEL>_NEGOTIATOR``
(``SecMan::getSecSetting`` with the daemon's subsystem), then ``ALLOW_<LEVEL>``
(``IpVerify::Init``). ``NEGOTIATOR.``-prefixed names win, as the config reader folds them.

The command port: ``NEGOTIATORD_COMMAND_PORT`` (0, the default, any free port, as an HTCondor daemon
without ``-p`` takes one), bound as HTCondor binds (``BIND_ALL_INTERFACES``, else
``NETWORK_INTERFACE``) and named in the daemon's address by ``NETWORK_INTERFACE`` where that is an
address. Under ``condor_master`` the daemon serves on the sockets the master made for it instead.

What negotiatord cannot follow is said once, at load, with the config's other warnings: an
authentication method it does not serve (it serves FS and IDTOKENS), a crypto method other than AES.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import re
from dataclasses import dataclass, field
from pathlib import Path

from negotiatord.cedar.auth import SERVED_METHODS, ServerCredentials
from negotiatord.cedar.auth.fs import FsSettings
from negotiatord.cedar.auth.token_verification import TokenKeys
from negotiatord.cedar.authorization import AuthorizationTable, Level, LevelRules, config_fallback, parse_list
from negotiatord.cedar.policy import Requirement, canonical_method
from negotiatord.cedar.server_policy import LevelPolicy, ServerSecurity
from negotiatord.settings.errors import ConfigError
from negotiatord.settings.params import ConfigParams, listed

SUBSYSTEM = "NEGOTIATOR"
# levels a command can be registered at
COMMAND_LEVELS: tuple[Level, ...] = tuple(level for level in Level if level not in (Level.SOAP, Level.CLIENT))
DEFAULT_HANG_TIMEOUT_S = 3600      # NOT_RESPONDING_TIMEOUT's default


@dataclass(frozen=True)
class CommandPortSettings:
    """negotiatord's side of HTCondor's command protocol."""

    bind_address: str = "0.0.0.0"          # BIND_ALL_INTERFACES, NETWORK_INTERFACE
    port: int = 0                          # NEGOTIATORD_COMMAND_PORT (0: any free port)
    advertised_host: str | None = None     # NETWORK_INTERFACE, where it is an address
    security: ServerSecurity = field(default_factory=ServerSecurity)
    hang_timeout_s: int = DEFAULT_HANG_TIMEOUT_S   # NEGOTIATOR_NOT_RESPONDING_TIMEOUT, NOT_RESPONDING_TIMEOUT
    parent_check_first_s: float = 15.0     # PARENT_CHECK_FIRST_INTERVAL
    parent_check_interval_s: float = 120.0  # PARENT_CHECK_INTERVAL
    log_file: Path | None = None           # NEGOTIATOR_LOG: where the log goes under condor_master
    log_max_bytes: int = 10 * 1024 * 1024  # MAX_NEGOTIATOR_LOG (else MAX_DEFAULT_LOG): then it rotates
    shared_port_ad_file: Path | None = None   # SHARED_PORT_DAEMON_AD_FILE: the shared port's address
    address_file: Path | None = None       # NEGOTIATOR_ADDRESS_FILE: where the daemon's address is written


def _level_setting(params: ConfigParams, template: str, level: Level) -> tuple[str | None, str]:
    """``getSecSetting``: the value for ``level`` and the knob it came from; HTCondor's built-in
    SEC_DEFAULT value when no level sets it."""
    step: Level | None = level
    while step is not None:
        name = template.format(step.value)
        value = params.raw(name)
        if value is not None:
            return value, name
        step = config_fallback(step)
    name = template.format(Level.DEFAULT.value)
    return params.default(name), name


def _requirement(params: ConfigParams, knob: str, level: Level, default: Requirement) -> Requirement:
    value, name = _level_setting(params, "SEC_{}_" + knob, level)
    if value is None or not value.strip():
        return default
    try:
        return Requirement.named(value)
    except ValueError as error:
        raise ConfigError(f"{name}: {error}") from None


def _level_policy(params: ConfigParams, level: Level, warnings: set[str]) -> LevelPolicy:
    authentication = _requirement(params, "AUTHENTICATION", level, Requirement.OPTIONAL)
    if level is Level.ALLOW:
        authentication = Requirement.OPTIONAL   # FillInSecurityPolicyAd: ALLOW asks no authentication
    methods_text, methods_knob = _level_setting(params, "SEC_{}_AUTHENTICATION_METHODS", level)
    configured = [canonical_method(word) for word in listed(methods_text)]
    dropped = [method for method in dict.fromkeys(configured) if method not in SERVED_METHODS]
    if dropped and params.changed(methods_knob):
        served = ", ".join(_shown(m) for m in configured if m in SERVED_METHODS) or "nothing"
        warnings.add(f"{methods_knob} lists {', '.join(map(_shown, dropped))}, which negotiatord does not serve; "
                     f"its command port authenticates clients with {served}")
    crypto_text, crypto_knob = _level_setting(params, "SEC_{}_CRYPTO_METHODS", level)
    crypto = [word.upper() for word in listed(crypto_text or "AES")]
    if "AES" not in crypto:
        raise ConfigError(f"{crypto_knob} = {crypto_text!r}: negotiatord speaks only AES (AES-256-GCM)")
    duration_text = (params.raw(f"SEC_{SUBSYSTEM}_{level.value}_SESSION_DURATION")
                     or _level_setting(params, "SEC_{}_SESSION_DURATION", level)[0])
    lease_text = _level_setting(params, "SEC_{}_SESSION_LEASE", level)[0]
    policy = LevelPolicy(
        authentication=authentication,
        encryption=_requirement(params, "ENCRYPTION", level, Requirement.OPTIONAL),
        integrity=_requirement(params, "INTEGRITY", level, Requirement.OPTIONAL),
        negotiation=_requirement(params, "NEGOTIATION", level, Requirement.PREFERRED),
        methods=tuple(method for method in dict.fromkeys(configured) if method in SERVED_METHODS),
        crypto_methods=("AES",),
        session_duration_s=_seconds(duration_text, 86400),
        session_lease_s=_seconds(lease_text, 3600))
    try:
        policy.reconciled_levels()
    except ValueError as error:
        raise ConfigError(f"SEC_{level.value}_* (or SEC_DEFAULT_*): the security policy is invalid: {error}") from None
    return policy


def _shown(method: str) -> str:
    return "IDTOKENS" if method == "TOKEN" else method


def _seconds(text: str | None, default: int) -> int:
    try:
        return int(float(text)) if text else default
    except ValueError:
        return default


def _list_setting(params: ConfigParams, kind: str, level: Level) -> tuple[str | None, str]:
    """``ALLOW_<LEVEL>`` or ``DENY_<LEVEL>`` as ``IpVerify::Init`` looks it up."""
    step: Level | None = level
    while step is not None:
        for name in (f"{kind}_{step.value}_{SUBSYSTEM}", f"{kind}_{step.value}"):
            value = params.raw(name)
            if value is not None:
                return value, name
        step = config_fallback(step)
    return None, f"{kind}_{level.value}"


def _authorization(params: ConfigParams) -> AuthorizationTable:
    rules: dict[Level, LevelRules] = {}
    for level in COMMAND_LEVELS:
        allow, allow_knob = _list_setting(params, "ALLOW", level)
        deny, deny_knob = _list_setting(params, "DENY", level)
        rules[level] = LevelRules(parse_list(allow), parse_list(deny), allow_knob, deny_knob)
    return AuthorizationTable(rules)


def _condor_user(params: ConfigParams) -> str | None:
    """The name root stands for in FS (``get_condor_username``: CONDOR_IDS' uid, else ``condor``)."""
    ids = (params.raw("CONDOR_IDS") or os.environ.get("CONDOR_IDS") or "").strip()
    try:
        return pwd.getpwuid(int(ids.split(".")[0])).pw_name if ids else pwd.getpwnam("condor").pw_name
    except (KeyError, ValueError):
        return None


def _path(text: str | None, config_dir: Path) -> Path | None:
    return None if not text else Path(os.path.normpath(config_dir / text.strip()))


def _bind(params: ConfigParams) -> tuple[str, str | None]:
    interface = (params.raw("NETWORK_INTERFACE") or "").strip()
    try:
        address = str(ipaddress.ip_address(interface)) if interface and interface != "*" else None
    except ValueError:
        address = None
    if params.boolean("BIND_ALL_INTERFACES", True) or address is None:
        return ("::" if address and ":" in address else "0.0.0.0"), address
    return address, address


def read_command_port_settings(params: ConfigParams, config_dir: Path, warnings: list[str]) -> CommandPortSettings:
    """The command port's settings; adds to ``warnings`` what of them negotiatord cannot follow."""
    said: set[str] = set()
    levels: dict[Level, LevelPolicy] = {level: _level_policy(params, level, said) for level in COMMAND_LEVELS}
    warnings.extend(sorted(said))
    if params.boolean("LEGACY_ALLOW_SEMANTICS", False):
        warnings.append("LEGACY_ALLOW_SEMANTICS = True is not followed: DAEMON's ALLOW and DENY lists fall back "
                        "to DEFAULT's, not WRITE's")
    revocation = params.raw("SEC_TOKEN_REVOCATION_EXPR") or params.raw("SEC_TOKEN_BLACKLIST_EXPR")
    max_age = params.raw("SEC_TOKEN_MAX_AGE")
    tokens = TokenKeys(pool_key_file=_path(params.setting("SEC_TOKEN_POOL_SIGNING_KEY_FILE"), config_dir),
                       password_directory=_path(params.setting("SEC_PASSWORD_DIRECTORY"), config_dir),
                       max_age_s=params.number("SEC_TOKEN_MAX_AGE") if max_age else None,
                       revocation=revocation)
    fs = FsSettings(directory=_path(params.raw("FS_LOCAL_DIR"), config_dir) or Path("/tmp"),
                    uid_domain=(params.setting("UID_DOMAIN") or "").strip(),
                    root_as=_condor_user(params) if params.boolean("FS_ROOT_TO_CONDOR", True) else None)
    security = ServerSecurity(levels=levels, credentials=ServerCredentials(tokens, fs),
                              authorization=_authorization(params),
                              trust_domain=(params.setting("TRUST_DOMAIN") or "").strip() or None)
    port = float(params.number("NEGOTIATORD_COMMAND_PORT", 0, fallback=0))
    if not port.is_integer() or port > 65535:
        raise ConfigError(f"NEGOTIATORD_COMMAND_PORT = {params.raw('NEGOTIATORD_COMMAND_PORT')!r}: must be a port "
                          "number from 0 (any free port) to 65535")
    bind, advertised = _bind(params)
    hang = params.raw(f"{SUBSYSTEM}_NOT_RESPONDING_TIMEOUT") and f"{SUBSYSTEM}_NOT_RESPONDING_TIMEOUT"
    hang_timeout = params.number(hang or "NOT_RESPONDING_TIMEOUT", 1, fallback=DEFAULT_HANG_TIMEOUT_S)
    return CommandPortSettings(
        bind_address=bind, port=int(port), advertised_host=advertised, security=security,
        hang_timeout_s=int(hang_timeout),
        parent_check_first_s=params.number("PARENT_CHECK_FIRST_INTERVAL", 0, fallback=15.0),
        parent_check_interval_s=params.number("PARENT_CHECK_INTERVAL", 1, fallback=120.0),
        log_file=_path(params.setting(f"{SUBSYSTEM}_LOG"), config_dir),
        log_max_bytes=_bytes(params.setting(f"MAX_{SUBSYSTEM}_LOG") or params.setting("MAX_DEFAULT_LOG")),
        shared_port_ad_file=_path(params.setting("SHARED_PORT_DAEMON_AD_FILE"), config_dir),
        address_file=_path(params.setting(f"{SUBSYSTEM}_ADDRESS_FILE"), config_dir))


def _bytes(text: str | None) -> int:
    """A log size as HTCondor writes it, ``10 Mb``, ``100000`` (bytes), ``1 Gb``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*", text or "", re.IGNORECASE)
    if match is None:
        return CommandPortSettings.log_max_bytes
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2).lower() or " "))
