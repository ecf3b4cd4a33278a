"""What a condor config sets that negotiatord does not read, said once at load.

HTCondor's negotiator reads knobs negotiatord does not honour (README, "Negotiator and accountant
parameters negotiatord does not read"). A config that sets one of them to anything but HTCondor's
own default would behave differently under ``condor_negotiator``, so each gets one warning naming
the knob and saying what negotiatord does instead. The knobs of the protocol with the schedds that
negotiatord reads (``NEGOTIATOR_TIMEOUT``, ``NEGOTIATOR_PREFETCH_REQUESTS*``, ``SEC_*``, ...) are
read, and what of them it cannot follow is said by :mod:`negotiatord.settings.pool`.

The legacy ``HFS_MAX_ALLOCATION_ROUNDS`` and ``HFS_ROUND_ROBIN_RATE`` are read as HTCondor's
``GroupEntry::hgq_negotiate_with_all_groups`` reads them: only when their ``GROUP_QUOTA_*`` name is
not defined (``param_defined``). HTCondor 25's param table gives both ``GROUP_QUOTA_*`` names a
default, so that happens only when the config sets them to an empty value; otherwise the legacy
spelling is ignored by HTCondor too, which is worth a warning of its own.
"""

from __future__ import annotations

from collections.abc import Callable

# knob -> what negotiatord does instead
UNREAD: dict[str, str] = {
    "NEGOTIATOR_UPDATE_AFTER_CYCLE": "the Negotiator ad is sent to the collector after every cycle, whatever it says",
    "NEGOTIATOR_INFORM_STARTD": "no startd is told of a match; the daemon holds matched slots itself",
    "NEGOTIATOR_SOCKET_CACHE_SIZE": "one connection is kept to each schedd, however many schedds there are",
    "USE_RESOURCE_REQUEST_COUNTS": "a request always stands for as many jobs as its _condor_RESOURCE_COUNT",
    "NEGOTIATOR_NUM_THREADS": "matchmaking runs in compiled kernels on one thread",
    "NEGOTIATOR_MAX_TIME_PER_SUBMITTER": "no time budget: a cycle negotiates with every submitter",
    "NEGOTIATOR_MAX_TIME_PER_SCHEDD": "no time budget: a cycle negotiates with every schedd",
    "NEGOTIATOR_MAX_TIME_PER_CYCLE": "no time budget: a cycle runs to its end",
    "NEGOTIATOR_MAX_TIME_PER_PIESPIN": "no time budget: a pie spin runs to its end",
    "NEGOTIATOR_MATCHLIST_CACHING": "match lists are always cached per autocluster",
    "NEGOTIATOR_DEPTH_FIRST": "p-slot loading is NEGOTIATORD_PSLOT_LOADING (depth_first by default)",
    "STARTD_AD_REEVAL_EXPR": "the feed keeps the newest ad of each slot",
    "NEGOTIATOR_READ_CONFIG_BEFORE_CYCLE": "the daemon reads the config again on reload (SIGHUP) only",
    "STRICT_CLASSAD_EVALUATION": "ClassAds are evaluated under HTCondor's default, the old semantics",
    "GROUP_QUOTA_ROUND_ROBIN_RATE": "pie spins and remainder rounds share a group's allocation exactly",
    "FORCE_NEGOTIATOR_SLOT_WEIGHT": "a slot's own SlotWeight is used; SLOT_WEIGHT only where the ad has none",
    "NEGOTIATOR_USE_WEIGHTED_DEMAND": "a group's demand is computed from the jobs that can start",
    "NEGOTIATOR_CROSS_SLOT_PRIOS": "Slot<N>_RemoteUserPrio is not inserted into slot ads",
    "NICE_USER_ACCOUNTING_GROUP_NAME": "a submit-side knob: nice users are recognised by the nice-user prefix",
    "ACCOUNTANT_DATABASE_FILE": "the accountant is the SQLite file NEGOTIATORD_ACCOUNTANT_DB",
    "MAX_ACCOUNTANT_DATABASE_SIZE": "the accountant is an SQLite file, which is not compacted by size",
    "NEGOTIATOR_DEBUG": "negotiatord logs with structlog (its level is --log-level) to its standard error, "
                        "or under condor_master to NEGOTIATOR_LOG",
    "REMOVE_SIGNIFICANT_ATTRIBUTES": "every job attribute a slot's expressions can reach is significant",
    "REMOVE_SIGNIFICANT_ATTRIBUTES_REGEX": "every job attribute a slot's expressions can reach is significant",
}

# the legacy spelling -> the name HTCondor reads first
LEGACY = {
    "HFS_MAX_ALLOCATION_ROUNDS": "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS",
    "HFS_ROUND_ROBIN_RATE": "GROUP_QUOTA_ROUND_ROBIN_RATE",
}

Lookup = Callable[[str], "str | None"]


def legacy_in_force(name: str, raw: Lookup) -> bool:
    """Whether HTCondor reads the legacy ``name`` (HFS_...) instead of its GROUP_QUOTA_ name: only
    when that one is not defined, which, given its built-in default, means set to an empty value
    (``raw`` gives the config's value, HTCondor's default included, None when set empty)."""
    return raw(LEGACY[name]) is None


def unread_warnings(raw: Lookup, default: Lookup, assigned: Callable[[str], bool]) -> list[str]:
    """One warning for each knob of :data:`UNREAD` the config sets to anything but HTCondor's
    default, and for each legacy spelling HTCondor would ignore (or read in place of an unread
    knob). ``assigned`` tells whether the config's files set a knob themselves: a default that
    differs only through the macros it expands (``ACCOUNTANT_DATABASE_FILE``'s ``$(SPOOL)``) is
    no setting of the admin's."""
    warnings = []
    for name, instead in UNREAD.items():
        value = raw(name)
        if value is not None and value != default(name) and assigned(name):
            warnings.append(f"{name} = {value!r} is not read: {instead}")
    for name, modern in LEGACY.items():
        value = raw(name)
        if value is None:
            continue
        if not legacy_in_force(name, raw):
            warnings.append(f"{name} = {value!r} is ignored, as HTCondor ignores it: {modern} is defined "
                            f"(HTCondor's default is {default(modern)}) and takes precedence")
        elif modern in UNREAD:
            warnings.append(f"{name} = {value!r} (read by HTCondor in place of {modern}, which is set empty) "
                            f"is not read: {UNREAD[modern]}")
    return warnings
