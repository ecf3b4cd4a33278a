"""Build the typed ``Settings`` from a condor config file, or say exactly what is wrong with it.

HTCondor's own config reader (``htcondor2``) does the reading, in a child process
(``param_dump``), so ``include``, ``use``, ``if`` and ``$(macros)`` behave as in HTCondor and a
bad file cannot take the daemon down. This module turns the child's text values into numbers,
booleans and checked ClassAd expressions, the way HTCondor's ``param_double``/``param_boolean``
do (the value is a ClassAd expression, evaluated), and rejects what HTCondor would refuse or
silently misread.
"""

from __future__ import annotations

import json
from dataclasses import replace
import os
import re
import subprocess
import sys
from pathlib import Path
from enum import Enum
from typing import Any, TypeVar
from collections.abc import Callable, Mapping

import classad2
import structlog

from negotiatord.settings.errors import ConfigError
from negotiatord.settings.groups import WEIGHT_UNIT, GroupSettings
from negotiatord.settings.high_availability import read_replica_file
from negotiatord.settings.pool import read_pool_settings
from negotiatord.settings.serving import read_command_port_settings
from negotiatord.settings.spelling import check_per_group_knobs, misspelling_warnings
from negotiatord.settings.unread import LEGACY, UNREAD, legacy_in_force, unread_warnings
from negotiatord.settings.model import (
    ADMISSION_RESOURCE_WEIGHTS,
    DEFAULT_PREEMPTION_RANK,
    FAIR_SHARING_STRATEGIES,
    PslotLoading,
    ServiceSettings,
    Settings,
    SubmitterOrder,
)

# A config HTCondor reads in well under a second; anything slower is stuck (an include of a
# FIFO, a hung network file system) and must not hang a reload forever.
CHILD_TIMEOUT_S = 30.0

# Defaults HTCondor documents but does not put in its param table, so ``htcondor2`` has no
# value for them (HTCondor manual, "Configuration Macros", condor_negotiator section).
_DOCUMENTED_DEFAULTS = {
    "NEGOTIATOR_CYCLE_DELAY": "20",
    # condor_collector section: "CLASSAD_LIFETIME ... defaults to 900 seconds".
    "CLASSAD_LIFETIME": "900",
}
# NEGOTIATION_CYCLE_STATS_LENGTH's upper bound (matchmaker.cpp MAX_NEGOTIATION_CYCLE_STATS).
_MAX_CYCLE_STATS = 100

_LIMIT_SUFFIX = "_LIMIT"
_SCOPE_PREFIX = "CONCURRENCY_LIMIT_DEFAULT_"
_CONSUMPTION_PREFIX = "CONSUMPTION_"
# Resources HTCondor has a built-in CONSUMPTION_<RES> for.
_STANDARD_RESOURCES = ("CPUS", "MEMORY", "DISK")

_Choice = TypeVar("_Choice", bound=Enum)

# NEGOTIATOR_MATCH_EXPRS: the prefix HTCondor gives each name (ATTR_NEGOTIATOR_MATCH_EXPR)
MATCH_EXPR_PREFIX = "NegotiatorMatchExpr"

log = structlog.get_logger("negotiatord.settings")


def load_settings(path: Path) -> Settings:
    """Read the condor config at ``path`` into ``Settings``; raise ``ConfigError`` if unusable."""
    path = Path(path).absolute()
    if not path.is_file():
        # HTCondor would only warn and fall back to /etc/condor/condor_config and friends.
        raise ConfigError(f"{path}: no such config file")
    dump = _read_with_htcondor(path)
    if dump["undecodable"]:
        name = dump["undecodable"][0]
        where = _where(path, name)
        byte = f" (0x{where['byte']:02x})" if where.get("byte") is not None else ""
        raise ConfigError(f"{_location(path, where)}: {name}'s value holds a byte that is not UTF-8{byte}; "
                          f"write the config in UTF-8")
    params = _Params(dump["params"], dump["defaults"], dump["assigned"])
    try:
        settings = _build(path, params)
    except ConfigError as err:
        raise ConfigError(f"{_blamed(path, params, str(err))}: {err}") from None
    for warning in settings.warnings:
        log.warning("config", config=str(path), warning=warning)
    return settings


def param_value(path: Path, name: str) -> str | None:
    """``name``'s value in the condor config at ``path`` as HTCondor reads it; None if it is unset
    or the config cannot be read."""
    try:
        params = _read_with_htcondor(path)["params"]
    except ConfigError:
        return None
    return next((value for key, value in params.items() if key.upper() == name.upper() and value), None)


def _blamed(path: Path, params: _Params, message: str) -> str:
    """Where the knob an error message starts with was set (``FILE, line N``, in an included file
    too), else the config file itself."""
    named = re.match(r"[A-Za-z_][A-Za-z0-9_]*", message)
    if named is None or params.raw(named.group()) is None:
        return str(path)
    return _location(path, _where(path, named.group()))


def _location(path: Path, where: dict[str, Any]) -> str:
    found = where.get("where")
    return f"{found[0]}, line {found[1]}" if found else str(path)


def _where(path: Path, name: str) -> dict[str, Any]:
    """Where HTCondor's reading of ``path`` set ``name`` (see param_dump's ``--where``); an empty
    answer when that cannot be told."""
    try:
        done = _param_dump(path, "--where", name)
        return dict(json.loads(done.stdout)) if done.returncode == 0 else {}
    except (subprocess.TimeoutExpired, ValueError, TypeError):
        return {}


def _param_dump(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``param_dump`` run on ``path`` in a child process."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, CONDOR_CONFIG=str(path))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "negotiatord.settings.param_dump", *args],
        env=env,
        # Deliberate deviation: HTCondor resolves a relative ``include`` against the process's
        # working directory; resolving it next to the config makes the result independent
        # of where negotiatord was started. $(CONFIG_ROOT) works either way.
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )


def _read_with_htcondor(path: Path) -> dict[str, Any]:
    """Run ``param_dump`` on ``path`` in a child process and return its JSON."""
    try:
        done = _param_dump(path)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{path}: HTCondor did not finish reading the config "
                          f"within {CHILD_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        # HTCondor's message names the file (and the included file) and the line.
        raise ConfigError(f"{path}: HTCondor rejected the config: {done.stderr.strip()}")
    try:
        dump = json.loads(done.stdout)
        return {"params": dict(dump["params"]), "defaults": dict(dump["defaults"]),
                "undecodable": list(dump["undecodable"]), "assigned": list(dump["assigned"])}
    except (ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{path}: unreadable output from the config reader ({err}): "
                          f"{done.stderr.strip()}") from None


class _Params:
    """Case-insensitive view of the dumped config (HTCondor param names are case-insensitive)."""

    def __init__(self, params: dict[str, str], defaults: dict[str, str], assigned: list[str]) -> None:
        self._values = {name.upper(): (name, text) for name, text in params.items()}
        self._assigned = set(assigned)      # upper case, as sources.assignments folds them
        builtin = {name.upper(): text for name, text in defaults.items()}
        self._defaults = {**_DOCUMENTED_DEFAULTS, **builtin}
        self.asked: set[str] = set()        # every name read, upper case

    def raw(self, name: str) -> str | None:
        """The configured text; None if unset or set to an empty value (HTCondor's ``param``)."""
        self.asked.add(name.upper())
        entry = self._values.get(name.upper())
        return entry[1] if entry else None

    def unread(self) -> list[str]:
        """Configured names (as written) that neither HTCondor defines nor anything here has read,
        nor is listed as unread (:mod:`~negotiatord.settings.unread`)."""
        ignored = self.asked | set(UNREAD) | set(LEGACY)
        return [name for upper, (name, _) in self._values.items()
                if upper not in ignored and upper not in self._defaults]

    def setting(self, name: str) -> str | None:
        """The text, else HTCondor's built-in value: an empty value means the default, as in
        HTCondor's ``param_integer``/``param_double``/``param_boolean``."""
        text = self.raw(name)
        return text if text is not None else self._defaults.get(name.upper())

    def required(self, name: str) -> str:
        """``setting(name)``, which must exist."""
        text = self.setting(name)
        if text is None:
            raise ConfigError(f"{name} is not set and HTCondor has no default for it")
        return text

    def names(self, wanted: Callable[[str], bool]) -> list[str]:
        """Configured param names (as written) for which ``wanted(UPPER_NAME)`` holds."""
        return [name for upper, (name, _) in self._values.items() if wanted(upper)]

    def default(self, name: str) -> str | None:
        """HTCondor's built-in value of ``name`` (None if it has none)."""
        return self._defaults.get(name.upper())

    def assigned(self, name: str) -> bool:
        """Whether the config's files assign ``name`` themselves (not a default a macro moved)."""
        return name.upper() in self._assigned

    def changed(self, name: str) -> bool:
        """Whether the config gives ``name`` a value other than HTCondor's built-in one."""
        text = self.raw(name)
        return text is not None and text != self.default(name)

    def is_builtin(self, name: str) -> bool:
        """Whether HTCondor itself defines ``name`` (it has a value under an empty config)."""
        return name.upper() in self._defaults

    def number(self, name: str, low: float | None = None, above: bool = False,
               fallback: float | None = None) -> float:
        """``name``'s value as a number (``fallback``, else HTCondor's default, if unset),
        evaluated as HTCondor's ``param_double`` does (the text is a ClassAd expression); at least
        ``low``, or more than ``low`` if ``above`` (HTCondor's range checks also stop the daemon)."""
        if fallback is not None and self.setting(name) is None:
            return fallback
        text = self.required(name)
        value = _evaluate(text)
        # Undefined/Error are IntEnum members and True/False are ints: rule them out first.
        if isinstance(value, (classad2.Value, bool)) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name} = {text!r}: not a number")
        if low is not None and (value < low or (above and value == low)):
            raise ConfigError(f"{name} = {text!r}: must be {'>' if above else '>='} {low:g}")
        return float(value)

    def boolean(self, name: str, fallback: bool | None = None) -> bool:
        """``name``'s value as a boolean (``fallback``, else HTCondor's default, if unset), like
        HTCondor's ``string_is_boolean_param``: true/false in any case, or an expression that
        evaluates to a boolean or a number (non-zero is true)."""
        if fallback is not None and self.setting(name) is None:
            return fallback
        text = self.required(name)
        value = _evaluate(text)
        if isinstance(value, classad2.Value) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name} = {text!r}: not a boolean (use True or False)")
        return bool(value)

    def resource_amounts(self, name: str) -> dict[str, float] | None:
        """``name`` as per-resource amounts, ``Cpus:64, Memory:262144, GPUs:4`` (resource names
        are case-insensitive, as in ClassAds, and come back lower-cased), or a plain number in
        slot-weight units (:data:`WEIGHT_UNIT`); None if unset. Each amount is a non-negative
        number; a resource named twice is refused rather than one of the two silently kept."""
        text = self.raw(name)
        if text is None:
            return None
        if ":" not in text:
            return {WEIGHT_UNIT: self.number(name, 0)}
        amounts: dict[str, float] = {}
        for entry in filter(None, (part.strip() for part in text.split(","))):
            resource, colon, amount = (part.strip() for part in entry.partition(":"))
            value = _evaluate(amount) if colon and resource else None
            if (not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", resource) or isinstance(value, (classad2.Value, bool))
                    or not isinstance(value, (int, float)) or value < 0):
                raise ConfigError(f"{name} = {text!r}: {entry!r} is not <resource>:<amount >= 0>, "
                                  f"as in Cpus:64, Memory:262144")
            if resource.lower() in amounts:
                raise ConfigError(f"{name} = {text!r}: {resource} is given twice")
            amounts[resource.lower()] = float(value)
        return amounts

    def choice(self, name: str, fallback: _Choice) -> _Choice:
        """``name``'s value as one of ``fallback``'s enumeration (case-insensitive), ``fallback``
        if unset; anything else is refused with the values it may take."""
        text = self.raw(name)
        if text is None:
            return fallback
        kind = type(fallback)
        try:
            return kind(text.strip().lower())
        except ValueError:
            choices = ", ".join(member.value for member in kind)
            raise ConfigError(f"{name} = {text!r}: must be one of {choices}") from None

    def expression(self, name: str, text: str) -> str:
        """``text`` after checking it parses as a ClassAd expression."""
        try:
            classad2.ExprTree(text)
        except classad2.ClassAdException:
            raise ConfigError(f"{name} = {text!r}: not a valid ClassAd expression") from None
        return text


def _evaluate(text: str) -> Any:
    """Evaluate a config value as a standalone ClassAd expression; ``Value.Error`` if unparsable."""
    try:
        return classad2.ExprTree(text).eval()
    except classad2.ClassAdException:
        return classad2.Value.Error


def _build(path: Path, params: _Params) -> Settings:
    def required_expression(name: str) -> str:
        return params.expression(name, params.required(name))

    def optional_expression(name: str) -> str | None:
        # Set to an empty value, HTCondor's negotiator uses no such rank at all.
        text = params.raw(name)
        return None if text is None else params.expression(name, text)

    def defaulted_expression(name: str, default: str) -> str:
        # HTCondor's param table default when unset. A value set empty reads as unset: the config
        # reader drops it (param_dump), so HTCondor's "no such expression" cannot be asked for.
        return params.expression(name, params.setting(name) or default)

    accept_surplus = params.boolean("GROUP_ACCEPT_SURPLUS")
    autoregroup = params.boolean("GROUP_AUTOREGROUP")
    warnings = unread_warnings(params.raw, params.default, params.assigned)
    settings = Settings(
        source=path,
        consumption_policy=params.boolean("CONSUMPTION_POLICY"),
        consumption=_consumption(params),
        slot_weight=required_expression("SLOT_WEIGHT"),
        use_slot_weights=params.boolean("NEGOTIATOR_USE_SLOT_WEIGHTS"),
        # Filling one p-slot before the next is negotiatord's default; HTCondor in effect spreads
        # an autocluster's jobs (see PslotLoading).
        pslot_loading=params.choice("NEGOTIATORD_PSLOT_LOADING", PslotLoading.DEPTH_FIRST),
        incremental_cycle=params.boolean("NEGOTIATORD_INCREMENTAL_CYCLE", True),
        pre_job_rank=optional_expression("NEGOTIATOR_PRE_JOB_RANK"),
        post_job_rank=optional_expression("NEGOTIATOR_POST_JOB_RANK"),
        groups=_groups(params, accept_surplus, autoregroup),
        accept_surplus=accept_surplus,
        autoregroup=autoregroup,
        allow_quota_oversubscription=params.boolean("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION"),
        group_sort_expr=required_expression("GROUP_SORT_EXPR"),
        allocation_rounds=_allocation_rounds(params),
        fair_sharing=params.boolean("NEGOTIATORD_FAIR_SHARING", False),
        fair_sharing_strategies=_fair_sharing_strategies(params),
        quota_preemption=params.boolean("NEGOTIATORD_QUOTA_PREEMPTION", False),
        consider_preemption=params.boolean("NEGOTIATOR_CONSIDER_PREEMPTION", True),
        consider_early_preemption=params.boolean("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION", False),
        allow_pslot_preemption=params.boolean("ALLOW_PSLOT_PREEMPTION", False),
        preemption_requirements=defaulted_expression("PREEMPTION_REQUIREMENTS", "False"),
        preemption_rank=defaulted_expression("PREEMPTION_RANK", DEFAULT_PREEMPTION_RANK),
        preemption_requirements_stable=params.boolean("PREEMPTION_REQUIREMENTS_STABLE", True),
        preemption_rank_stable=params.boolean("PREEMPTION_RANK_STABLE", True),
        # Usage decays by 2^(-t/halflife): a zero or negative half-life has no meaning.
        priority_halflife=params.number("PRIORITY_HALFLIFE", 0, above=True),
        default_prio_factor=params.number("DEFAULT_PRIO_FACTOR"),
        accountant_local_domain=(params.raw("ACCOUNTANT_LOCAL_DOMAIN") or "").strip() or None,
        remote_prio_factor=params.number("REMOTE_PRIO_FACTOR", fallback=Settings.remote_prio_factor),
        nice_user_prio_factor=params.number("NICE_USER_PRIO_FACTOR", fallback=Settings.nice_user_prio_factor),
        discount_suspended_resources=params.boolean("NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES", False),
        submitter_order=params.choice("NEGOTIATORD_SUBMITTER_ORDER", SubmitterOrder.PRIORITY),
        admission_resource_weights=_admission_resource_weights(params),
        admission_half_life=None if params.raw("NEGOTIATORD_AFS_HALF_LIFE") is None
        else params.number("NEGOTIATORD_AFS_HALF_LIFE", 0),
        concurrency_limit_default=params.number("CONCURRENCY_LIMIT_DEFAULT", 0),
        concurrency_limits=_concurrency_limits(params),
        concurrency_scope_defaults={
            name[len(_SCOPE_PREFIX):].lower(): params.number(name, 0)
            for name in params.names(lambda n: n.startswith(_SCOPE_PREFIX))
        },
        ignore_user_priorities=params.boolean("NEGOTIATOR_IGNORE_USER_PRIORITIES", False),
        ignore_job_ranks=params.boolean("NEGOTIATOR_IGNORE_JOB_RANKS", False),
        strict_enforce_quota=params.boolean("NEGOTIATOR_STRICT_ENFORCE_QUOTA", True),
        use_global_job_prios=params.boolean("USE_GLOBAL_JOB_PRIOS", False),
        trim_shutdown_threshold=params.number("NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD", fallback=0.0),
        slot_constraint=optional_expression("NEGOTIATOR_SLOT_CONSTRAINT"),
        submitter_constraint=optional_expression("NEGOTIATOR_SUBMITTER_CONSTRAINT"),
        job_constraint=optional_expression("NEGOTIATOR_JOB_CONSTRAINT"),
        slot_poolsize_constraint=_poolsize_constraint(params, warnings),
        match_working_cm_slots=params.boolean("MATCH_WORKING_CM_SLOTS", False),
        match_exprs=_match_exprs(params, warnings),
        negotiator_interval=params.number("NEGOTIATOR_INTERVAL", 0),
        negotiator_min_interval=params.number("NEGOTIATOR_MIN_INTERVAL", 0),
        negotiator_cycle_delay=params.number("NEGOTIATOR_CYCLE_DELAY", 0),
        service=_service(params, path.parent, warnings),
    )
    _ = settings.group_tree  # built now, so a mistake in the group tree is reported at load time
    if settings.submitter_constraint is not None and settings.service.collector_host is None:
        warnings.append("NEGOTIATOR_SUBMITTER_CONSTRAINT selects submitter ads, which only a collector gives: "
                        "without COLLECTOR_HOST every job posted over HTTP is negotiated")
    # what is left once everything is read: names nothing reads
    unread = params.unread()
    check_per_group_knobs(unread, (group.name for group in settings.groups), path)
    warnings += misspelling_warnings(unread, {*params.asked, *UNREAD, *LEGACY})
    return replace(settings, warnings=tuple(warnings))


def _service(params: _Params, config_dir: Path, warnings: list[str]) -> ServiceSettings:
    """The daemon's knobs; paths relative to the config file's directory (as ``include``)."""
    defaults = ServiceSettings()

    def path(name: str) -> Path | None:
        text = params.raw(name)
        return None if text is None else Path(os.path.normpath(config_dir / text.strip()))

    def number(name: str, default: float, low: float) -> float:
        return default if params.raw(name) is None else params.number(name, low)

    def positive(name: str, default: float) -> float:
        return default if params.raw(name) is None else params.number(name, 0, above=True)

    def whole(name: str, default: int, low: int, high: int) -> int:
        value = float(number(name, default, low))
        if not value.is_integer() or value > high:
            raise ConfigError(f"{name} = {params.raw(name)!r}: must be a whole number from {low} to {high}")
        return int(value)

    certificate, key = path("NEGOTIATORD_TLS_CERTIFICATE"), path("NEGOTIATORD_TLS_KEY")
    if (certificate is None) != (key is None):
        raise ConfigError("NEGOTIATORD_TLS_CERTIFICATE and NEGOTIATORD_TLS_KEY go together: set both "
                          "for HTTPS, or neither")
    return ServiceSettings(
        http_address=(params.raw("NEGOTIATORD_HTTP_ADDRESS") or defaults.http_address).strip(),
        http_port=whole("NEGOTIATORD_HTTP_PORT", defaults.http_port, 0, 65535),
        token_file=path("NEGOTIATORD_TOKEN_FILE"),
        tls_certificate=certificate,
        tls_key=key,
        state_dir=path("NEGOTIATORD_STATE_DIR"),
        accountant_db=path("NEGOTIATORD_ACCOUNTANT_DB"),
        replica_file=read_replica_file(params, config_dir, warnings),
        max_body_bytes=whole("NEGOTIATORD_MAX_BODY_BYTES", defaults.max_body_bytes, 1, 2**40),
        max_connections=whole("NEGOTIATORD_MAX_CONNECTIONS", defaults.max_connections, 1, 2**20),
        max_connections_per_client=whole("NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT",
                                         defaults.max_connections_per_client, 1, 2**20),
        header_timeout=positive("NEGOTIATORD_HEADER_TIMEOUT", defaults.header_timeout),
        body_timeout=positive("NEGOTIATORD_BODY_TIMEOUT", defaults.body_timeout),
        match_retention=number("NEGOTIATORD_MATCH_RETENTION", defaults.match_retention, 0),
        # A zero lifetime would expire every ad before the first cycle could see it.
        classad_lifetime=params.number("CLASSAD_LIFETIME", 0, above=True),
        collector_host=(params.raw("COLLECTOR_HOST") or "").strip() or None,
        cycle_stats_length=whole("NEGOTIATION_CYCLE_STATS_LENGTH", defaults.cycle_stats_length, 0,
                                 _MAX_CYCLE_STATS),
        cycle_worker=params.choice("NEGOTIATORD_CYCLE_WORKER", defaults.cycle_worker),
        update_interval=params.number("NEGOTIATOR_UPDATE_INTERVAL", 0, above=True, fallback=defaults.update_interval),
        advertise_accounting=params.boolean("NEGOTIATOR_ADVERTISE_ACCOUNTING", defaults.advertise_accounting),
        pool=read_pool_settings(params, config_dir, warnings),
        command_port=read_command_port_settings(params, config_dir, warnings),
    )


def _consumption(params: _Params) -> dict[str, str]:
    """CONSUMPTION_<RES> by lower-cased resource; an empty value keeps HTCondor's default."""
    names = params.names(lambda n: n.startswith(_CONSUMPTION_PREFIX) and n != "CONSUMPTION_POLICY")
    known = {n.upper() for n in names}
    standard = [_CONSUMPTION_PREFIX + resource for resource in _STANDARD_RESOURCES]
    names += [name for name in standard if name not in known]
    policy = {}
    for name in names:
        text = params.setting(name)
        if text is not None:
            policy[name[len(_CONSUMPTION_PREFIX):].lower()] = params.expression(name, text)
    return policy


def _allocation_rounds(params: _Params) -> int:
    """GROUP_QUOTA_MAX_ALLOCATION_ROUNDS, else (only when that is set empty: it has a built-in
    default) the legacy HFS_MAX_ALLOCATION_ROUNDS, default 3, as GroupEntry.cpp reads them."""
    name = "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS"
    if legacy_in_force("HFS_MAX_ALLOCATION_ROUNDS", params.raw):
        name = "HFS_MAX_ALLOCATION_ROUNDS"
        if params.raw(name) is None:
            return Settings.allocation_rounds
    value = params.number(name, 1)
    if not value.is_integer():
        raise ConfigError(f"{name} = {params.raw(name)!r}: must be a whole number of at least 1")
    return int(value)


def _poolsize_constraint(params: _Params, warnings: list[str]) -> str | None:
    """NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT, else the obsolete GROUP_DYNAMIC_MACH_CONSTRAINT, as
    ``Matchmaker::reinitialize`` reads them: HTCondor logs the one that does not parse and counts
    every slot, and so does negotiatord, with a warning."""
    for name in ("NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT", "GROUP_DYNAMIC_MACH_CONSTRAINT"):
        text = params.raw(name)
        if text is None:
            continue
        if name == "GROUP_DYNAMIC_MACH_CONSTRAINT":
            warnings.append(f"{name} is obsolete, as HTCondor says: use NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT "
                            "(it is read in its place)")
        try:
            return params.expression(name, text)
        except ConfigError:
            warnings.append(f"{name} = {text!r} is not a valid ClassAd expression: every slot counts in the "
                            "pool size, as HTCondor counts them when it cannot parse it")
            return None
    return None


def _match_exprs(params: _Params, warnings: list[str]) -> dict[str, str]:
    """NEGOTIATOR_MATCH_EXPRS as matchmaker.cpp reads it: each macro it names (comma or space
    separated), under its name prefixed ``NegotiatorMatchExpr`` unless it starts so already; a
    name with no such macro is left out with a warning, as HTCondor logs one."""
    listed = params.raw("NEGOTIATOR_MATCH_EXPRS")
    exprs: dict[str, str] = {}
    for name in re.split(r"[\s,]+", (listed or "").strip()):
        if not name:
            continue
        text = params.raw(name)
        if text is None:
            warnings.append(f"NEGOTIATOR_MATCH_EXPRS references a macro '{name}' which is not defined in the "
                            "configuration: it is left out, as HTCondor leaves it out")
            continue
        attribute = name if name.startswith(MATCH_EXPR_PREFIX) else MATCH_EXPR_PREFIX + name
        exprs[attribute] = params.expression(name, text)
    return exprs


def _admission_resource_weights(params: _Params) -> Mapping[str, float]:
    """NEGOTIATORD_AFS_RESOURCE_WEIGHTS, as ``Cpus:1, GPUs:5`` (a plain number weighs slot-weight
    units); at least one weight must be above 0, or every submitter would score alike."""
    name = "NEGOTIATORD_AFS_RESOURCE_WEIGHTS"
    weights = params.resource_amounts(name)
    if weights is None:
        return ADMISSION_RESOURCE_WEIGHTS
    if not any(weights.values()):
        raise ConfigError(f"{name} = {params.raw(name)!r}: give at least one resource a weight above 0")
    return weights


def _concurrency_limits(params: _Params) -> dict[str, float]:
    """Every ``<NAME>_LIMIT`` the config introduces, by lower-cased NAME.

    HTCondor itself never lists limits: it looks up ``<NAME>_LIMIT`` when a job names NAME. To
    list them, a ``*_LIMIT`` param counts as a concurrency limit unless HTCondor defines it
    itself (has a built-in value under an empty config, e.g. DETECTED_CPUS_LIMIT), so none of
    HTCondor's own knobs are mistaken for a limit whatever its version.
    """
    limits = {}
    for name in params.names(lambda n: n.endswith(_LIMIT_SUFFIX) and n != _LIMIT_SUFFIX):
        if not params.is_builtin(name):
            limits[name[: -len(_LIMIT_SUFFIX)].lower()] = params.number(name, 0)
    return limits


def _fair_sharing_strategies(params: _Params) -> tuple[str, ...]:
    """NEGOTIATORD_FAIR_SHARING_STRATEGIES: Kueue's fair-sharing preemption strategies, tried in
    the order given (Kueue's default: both, LessThanOrEqualToFinalShare first)."""
    name = "NEGOTIATORD_FAIR_SHARING_STRATEGIES"
    text = params.raw(name)
    if text is None:
        return FAIR_SHARING_STRATEGIES
    known = {strategy.lower(): strategy for strategy in FAIR_SHARING_STRATEGIES}
    strategies = []
    for word in re.split(r"[\s,]+", text.strip()):
        if word.lower() not in known:
            raise ConfigError(f"{name} = {text!r}: {word!r} is not one of {', '.join(FAIR_SHARING_STRATEGIES)}")
        strategies.append(known[word.lower()])
    return tuple(dict.fromkeys(strategies))


def _groups(params: _Params, accept_surplus: bool, autoregroup: bool) -> tuple[GroupSettings, ...]:
    """GROUP_NAMES (comma and/or space separated, HTCondor's StringList) and each group's knobs,
    read as written; the group tree checks them (:class:`~negotiatord.settings.groups.GroupTree`)."""
    names = re.split(r"[\s,]+", (params.raw("GROUP_NAMES") or "").strip())
    return tuple(_group(params, name, accept_surplus, autoregroup) for name in names if name)


def _group(params: _Params, name: str, accept_surplus: bool, autoregroup: bool) -> GroupSettings:
    def optional_number(param: str) -> float | None:
        return None if params.raw(param) is None else params.number(param)

    return GroupSettings(
        name=name,
        static_quota=optional_number(f"GROUP_QUOTA_{name}"),
        dynamic_quota=optional_number(f"GROUP_QUOTA_DYNAMIC_{name}"),
        # GroupEntry::hgq_construct_tree: the per-group knob, else the global one.
        accept_surplus=params.boolean(f"GROUP_ACCEPT_SURPLUS_{name}", accept_surplus),
        autoregroup=params.boolean(f"GROUP_AUTOREGROUP_{name}", autoregroup),
        prio_factor=optional_number(f"GROUP_PRIO_FACTOR_{name}"),
        resource_quota=params.resource_amounts(f"GROUP_RESOURCE_QUOTA_{name}"),
        borrowing_limit=params.resource_amounts(f"GROUP_BORROWING_LIMIT_{name}"),
        fairshare_weight=params.number(f"GROUP_FAIRSHARE_WEIGHT_{name}", 0, fallback=1.0),  # Kueue's default
        limit=params.resource_amounts(f"GROUP_LIMIT_{name}"),
        guaranteed=params.resource_amounts(f"GROUP_GUARANTEED_{name}"),
        quota_preemption_delay=params.number(f"GROUP_QUOTA_PREEMPTION_DELAY_{name}", 0, fallback=0.0),
    )
