"""How negotiatord reaches a real pool: its credentials and the knobs of the ``NEGOTIATE`` protocol.

The credentials are the real negotiator's, read as a daemon reads them for the commands it sends
(``SecMan::FillInSecurityPolicyAd`` for ``CLIENT_PERM``): each ``SEC_CLIENT_<X>``, else
``SEC_DEFAULT_<X>``, else HTCondor's built-in value; ``NEGOTIATOR.``-prefixed names win, as the
config reader folds them. Tokens come from ``SEC_TOKEN_DIRECTORY``, else ``~/.condor/tokens.d``
when it exists, else ``SEC_TOKEN_SYSTEM_DIRECTORY`` (``findTokens`` in ``condor_auth_passwd.cpp``).

Whatever negotiatord cannot do as configured is said once, at load, with the config's other
warnings: an authentication method it does not implement, a crypto method other than AES, requests
not prefetched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from negotiatord.cedar.policy import IMPLEMENTED_METHODS, ClientSecurity, Requirement, SslFiles, canonical_method
from negotiatord.classad.user_maps import UserMap
from negotiatord.settings.errors import ConfigError
from negotiatord.settings.params import ConfigParams, listed


@dataclass(frozen=True)
class PoolSettings:
    """The real pool's side of negotiatord's config."""

    security: ClientSecurity = field(default_factory=ClientSecurity)
    negotiator_name: str = "negotiatord"     # NEGOTIATOR_NAME, as the schedds are told
    timeout_s: float = 30.0                  # NEGOTIATOR_TIMEOUT
    prefetch_timeout_s: float = 30.0         # NEGOTIATOR_PREFETCH_REQUESTS_TIMEOUT
    prefetch_max_time_s: float = 60.0        # NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME (0: no limit)
    request_list_size: int = 200             # NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE
    user_maps: tuple[UserMap, ...] = ()       # NEGOTIATOR_CLASSAD_USER_MAP_NAMES

    def has_user_map(self, name: str) -> bool:
        """Whether the map ``name`` (``GROUP_PREFIX``, ``PRIORITY_FACTOR_AUTHORIZATION``) is loaded."""
        return any(user_map.name == name for user_map in self.user_maps)


def _security_setting(params: ConfigParams, knob: str) -> str | None:
    for name in (f"SEC_CLIENT_{knob}", f"SEC_DEFAULT_{knob}"):
        text = params.raw(name)
        if text is not None:
            return text
    return params.setting(f"SEC_DEFAULT_{knob}")


def _level(params: ConfigParams, knob: str) -> Requirement:
    text = _security_setting(params, knob)
    if text is None:
        return Requirement.OPTIONAL
    try:
        return Requirement.named(text)
    except ValueError as error:
        raise ConfigError(f"SEC_CLIENT_{knob} (or SEC_DEFAULT_{knob}): {error}") from None


def _path(params: ConfigParams, name: str, config_dir: Path) -> Path | None:
    text = params.raw(name)
    return None if text is None else Path(os.path.normpath(config_dir / os.path.expanduser(text.strip())))


def _token_directory(params: ConfigParams, config_dir: Path) -> Path | None:
    configured = _path(params, "SEC_TOKEN_DIRECTORY", config_dir)
    if configured is not None:
        return configured
    personal = Path.home() / ".condor" / "tokens.d"
    if personal.is_dir():
        return personal
    system = params.setting("SEC_TOKEN_SYSTEM_DIRECTORY")
    return Path(system) if system else None


def read_pool_settings(params: ConfigParams, config_dir: Path, warnings: list[str]) -> PoolSettings:
    """The pool settings of a config, adding to ``warnings`` what of it negotiatord cannot follow;
    raises :class:`ConfigError` on a value HTCondor would refuse."""
    configured = [canonical_method(m) for m in listed(_security_setting(params, "AUTHENTICATION_METHODS"))]
    missing = [m for m in dict.fromkeys(configured) if m not in IMPLEMENTED_METHODS]
    explicit = any(params.changed(f"SEC_{scope}_AUTHENTICATION_METHODS") for scope in ("CLIENT", "DEFAULT"))
    if not explicit:
        # HTCondor's own default lists every method it can be built with; like a build without
        # some of them, negotiatord offers those it has (SecMan::filterAuthenticationMethods)
        configured = [m for m in configured if m in IMPLEMENTED_METHODS]
    elif missing:
        warnings.append(f"SEC_CLIENT_AUTHENTICATION_METHODS lists {', '.join(missing)}, which negotiatord "
                        f"does not implement; it authenticates with "
                        f"{', '.join(m for m in configured if m in IMPLEMENTED_METHODS) or 'nothing'}")
    crypto = [m.upper() for m in listed(_security_setting(params, "CRYPTO_METHODS") or "AES")]
    if "AES" not in crypto:
        raise ConfigError(f"SEC_CLIENT_CRYPTO_METHODS = {', '.join(crypto)}: negotiatord speaks only AES "
                          "(AES-256-GCM, every HTCondor since 9.0 does)")
    if crypto != ["AES"]:
        warnings.append(f"SEC_CLIENT_CRYPTO_METHODS lists {', '.join(c for c in crypto if c != 'AES')}: "
                        "negotiatord offers AES only")
    timeout = params.number("NEGOTIATOR_TIMEOUT", 0, above=True)
    if not params.boolean("NEGOTIATOR_PREFETCH_REQUESTS", True):
        warnings.append("NEGOTIATOR_PREFETCH_REQUESTS = False is ignored: negotiatord fetches every submitter's "
                        "requests before the cycle, which is one pure function of the pool")
    ssl = SslFiles(ca_file=_path(params, "AUTH_SSL_CLIENT_CAFILE", config_dir),
                   ca_dir=_path(params, "AUTH_SSL_CLIENT_CADIR", config_dir),
                   cert_file=_path(params, "AUTH_SSL_CLIENT_CERTFILE", config_dir),
                   key_file=_path(params, "AUTH_SSL_CLIENT_KEYFILE", config_dir),
                   use_default_cas=params.boolean("AUTH_SSL_CLIENT_USE_DEFAULT_CAS", True))
    token = params.raw("SEC_TOKEN")
    try:
        security = ClientSecurity(
            methods=tuple(configured), authentication=_level(params, "AUTHENTICATION"),
            encryption=_level(params, "ENCRYPTION"), integrity=_level(params, "INTEGRITY"),
            session_duration_s=int(_seconds(params, "SESSION_DURATION", 86400)),
            session_lease_s=int(_seconds(params, "SESSION_LEASE", 3600)),
            trust_domain=(params.raw("TRUST_DOMAIN") or "").strip() or None,
            token_directory=_token_directory(params, config_dir), tokens=(token.strip(),) if token else (),
            ssl=ssl)
        security.levels()
    except ValueError as error:
        raise ConfigError(f"the client security policy (SEC_CLIENT_*, SEC_DEFAULT_*): {error}") from None
    return PoolSettings(
        security=security,
        negotiator_name=daemon_name(params.raw("NEGOTIATOR_NAME")),
        timeout_s=timeout,
        prefetch_timeout_s=params.number("NEGOTIATOR_PREFETCH_REQUESTS_TIMEOUT", 0, above=True, fallback=timeout),
        prefetch_max_time_s=params.number("NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME", 0, fallback=60.0),
        request_list_size=int(params.number("NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE", 1, fallback=200)),
        user_maps=_user_maps(params, config_dir, warnings),
    )


def _user_maps(params: ConfigParams, config_dir: Path, warnings: list[str]) -> tuple[UserMap, ...]:
    """The maps ``NEGOTIATOR_CLASSAD_USER_MAP_NAMES`` names, each from ``CLASSAD_USER_MAPFILE_<name>``
    or else ``CLASSAD_USER_MAPDATA_<name>`` (``reconfig_user_maps``). HTCondor skips a name with
    neither without a word; negotiatord says so. Of the maps, the negotiator itself applies
    ``GROUP_PREFIX`` and ``PRIORITY_FACTOR_AUTHORIZATION``; the others serve ``userMap`` calls."""
    maps = []
    for name in dict.fromkeys(listed(params.raw("NEGOTIATOR_CLASSAD_USER_MAP_NAMES"))):
        file = _path(params, f"CLASSAD_USER_MAPFILE_{name}", config_dir)
        data = params.raw(f"CLASSAD_USER_MAPDATA_{name}")
        if file is not None:
            if not file.is_file():
                raise ConfigError(f"CLASSAD_USER_MAPFILE_{name} = {file}: no such file "
                                  f"(NEGOTIATOR_CLASSAD_USER_MAP_NAMES names the map {name})")
            maps.append(UserMap(name, file=file))
        elif data is not None:
            maps.append(UserMap(name, data=data))
        else:
            warnings.append(f"NEGOTIATOR_CLASSAD_USER_MAP_NAMES names {name}, but neither "
                            f"CLASSAD_USER_MAPFILE_{name} nor CLASSAD_USER_MAPDATA_{name} is set: the map is empty")
    return tuple(maps)


def daemon_name(configured: str | None) -> str:
    """The name negotiatord goes by (``NEGOTIATOR_NAME``), as ``build_valid_daemon_name`` makes
    one: a name with an ``@`` as it is, the host's own name as it is, any other name ``@`` the
    host's. Unset, ``negotiatord@`` the host, so that it never takes the name of a
    ``condor_negotiator`` on the same host (HTCondor's default is the host's name)."""
    name = (configured or "").strip() or "negotiatord"
    host = os.uname().nodename
    if "@" in name or name.lower() == host.lower():
        return name
    return f"{name}@{host}"


def _seconds(params: ConfigParams, knob: str, default: float) -> float:
    for name in (f"SEC_CLIENT_{knob}", f"SEC_DEFAULT_{knob}"):
        if params.raw(name) is not None:
            return params.number(name, 0, above=True)
    return default
