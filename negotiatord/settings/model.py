"""The typed settings object: the only view of the condor config the rest of the code sees.

Every value comes from HTCondor's own config system (``htcondor2.param``), so macros,
``include``, ``use``, ``if`` and HTCondor's defaults behave exactly as in HTCondor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from collections.abc import Mapping

from negotiatord.settings.groups import GroupSettings, GroupTree
from negotiatord.settings.pool import PoolSettings
from negotiatord.settings.serving import CommandPortSettings


# HTCondor's param table default for PREEMPTION_RANK: the worst user priority first, then the
# job that has run least.
DEFAULT_PREEMPTION_RANK = (
    "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)"
)


class CycleWorker(str, Enum):
    """Where the daemon runs a cycle's negotiation (NEGOTIATORD_CYCLE_WORKER).

    ``THREAD`` (the default): on a thread of the daemon, sharing the GIL with the parsing of ads.
    ``FORK``: in a child process forked for the cycle, which sees the ads copy-on-write and sends
    back the result, so parsing ads in the daemon does not share the GIL with the negotiation; it
    pays for the fork and for the pages the child copies, and needs a core of its own to gain.
    """

    FORK = "fork"
    THREAD = "thread"


class PslotLoading(str, Enum):
    """How a partitionable slot with room left is ordered for the next job of a request.

    ``DEPTH_FIRST`` keeps it first in line, so one autocluster's jobs fill a slot before the next
    is used; ``BREADTH_FIRST`` puts it behind the other candidates of equal rank. Neither is
    HTCondor's exact rule: its ``insert_candidate`` re-ranks a used p-slot, and with the default
    ``NEGOTIATOR_PRE_JOB_RANK`` the shrunken slot sinks to the end of the list, so in effect
    HTCondor spreads an autocluster's jobs across slots.

    ``ONE_PER_CYCLE`` is HTCondor's negotiator without consumption policies: a p-slot is matched
    once per cycle and leaves the offer for the rest of it (its startd carves the job's dynamic
    slot, and the leftovers are offered again in the next cycle). A replay compares it with the
    other two.
    """

    DEPTH_FIRST = "depth_first"
    BREADTH_FIRST = "breadth_first"
    ONE_PER_CYCLE = "one_per_cycle"


class SubmitterOrder(str, Enum):
    """The order a group's submitters are offered matches in (NEGOTIATORD_SUBMITTER_ORDER).

    ``PRIORITY`` is HTCondor's: pie spins by effective priority. ``ADMISSION_FAIR_SHARING`` is
    Kueue's admission fair sharing: the submitter with the least decayed, resource-weighted usage
    (times its priority factor) gets the next match (:mod:`negotiatord.accountant.admission`).
    """

    PRIORITY = "priority"
    ADMISSION_FAIR_SHARING = "admission_fair_sharing"


# NEGOTIATORD_AFS_RESOURCE_WEIGHTS when unset: cpus alone count.
ADMISSION_RESOURCE_WEIGHTS: Mapping[str, float] = MappingProxyType({"cpus": 1.0})


# Kueue's fair-sharing preemption strategies (FairSharing.preemptionStrategies), in its default order.
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@dataclass(frozen=True)
class ServiceSettings:
    """The daemon's own knobs (``negotiatord run``); the dry run reads them and ignores them.

    Paths are absolute: the loader resolves relative ones next to the config file. Unset paths
    default under the state directory (see :mod:`negotiatord.service.paths`).
    """

    http_address: str = "127.0.0.1"             # NEGOTIATORD_HTTP_ADDRESS: loopback unless configured
    http_port: int = 9680                       # NEGOTIATORD_HTTP_PORT (0: any free port)
    token_file: Path | None = None              # NEGOTIATORD_TOKEN_FILE: bearer token for writes
    tls_certificate: Path | None = None         # NEGOTIATORD_TLS_CERTIFICATE (PEM; with the key: HTTPS)
    tls_key: Path | None = None                 # NEGOTIATORD_TLS_KEY
    state_dir: Path | None = None               # NEGOTIATORD_STATE_DIR: accountant, match log, token
    accountant_db: Path | None = None           # NEGOTIATORD_ACCOUNTANT_DB
    replica_file: Path | None = None            # STATE_FILE, under HAD with replication (settings.high_availability)
    max_body_bytes: int = 64 * 1024 * 1024      # NEGOTIATORD_MAX_BODY_BYTES: larger bodies get 413
    max_connections: int = 1000                 # NEGOTIATORD_MAX_CONNECTIONS: more are refused (503)
    max_connections_per_client: int = 100       # NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT: from one address
    header_timeout: float = 20.0                # NEGOTIATORD_HEADER_TIMEOUT: seconds for a request's headers
    body_timeout: float = 60.0                  # NEGOTIATORD_BODY_TIMEOUT: seconds for a request's body (408)
    match_retention: float = 7 * 86400.0        # NEGOTIATORD_MATCH_RETENTION: seconds matches are kept
    classad_lifetime: float = 900.0             # CLASSAD_LIFETIME (the collector's, in seconds)
    collector_host: str | None = None           # COLLECTOR_HOST: pull ads from a real collector
    cycle_stats_length: int = 3                 # NEGOTIATION_CYCLE_STATS_LENGTH
    cycle_worker: CycleWorker = CycleWorker.THREAD  # NEGOTIATORD_CYCLE_WORKER
    update_interval: float = 300.0              # NEGOTIATOR_UPDATE_INTERVAL: the Negotiator ad between cycles
    advertise_accounting: bool = True           # NEGOTIATOR_ADVERTISE_ACCOUNTING: the Accounting ads
    pool: PoolSettings = field(default_factory=PoolSettings)   # credentials and NEGOTIATE knobs
    command_port: CommandPortSettings = field(default_factory=CommandPortSettings)   # HTCondor's commands in


@dataclass(frozen=True)
class Settings:
    """Everything negotiatord reads from the condor config, typed and validated."""

    source: Path

    # Slots, consumption policies and match cost
    consumption_policy: bool                    # CONSUMPTION_POLICY
    consumption: Mapping[str, str]              # lower-cased resource -> CONSUMPTION_<RES> text
    slot_weight: str                            # SLOT_WEIGHT
    use_slot_weights: bool                      # NEGOTIATOR_USE_SLOT_WEIGHTS
    pslot_loading: PslotLoading                 # NEGOTIATORD_PSLOT_LOADING (ours)

    # Candidate ordering
    pre_job_rank: str | None                    # NEGOTIATOR_PRE_JOB_RANK
    post_job_rank: str | None                   # NEGOTIATOR_POST_JOB_RANK

    # Groups
    groups: tuple[GroupSettings, ...]           # GROUP_NAMES, in config order
    accept_surplus: bool                        # GROUP_ACCEPT_SURPLUS (also the <none> group's)
    autoregroup: bool                           # GROUP_AUTOREGROUP
    allow_quota_oversubscription: bool          # NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION
    group_sort_expr: str                        # GROUP_SORT_EXPR

    # Priorities
    priority_halflife: float                    # PRIORITY_HALFLIFE, seconds
    default_prio_factor: float                  # DEFAULT_PRIO_FACTOR

    # Concurrency limits
    concurrency_limit_default: float            # CONCURRENCY_LIMIT_DEFAULT
    concurrency_limits: Mapping[str, float] = field(default_factory=dict)        # lower-cased <NAME>_LIMIT
    concurrency_scope_defaults: Mapping[str, float] = field(default_factory=dict)  # CONCURRENCY_LIMIT_DEFAULT_<SCOPE>

    allocation_rounds: int = 3                  # GROUP_QUOTA_MAX_ALLOCATION_ROUNDS
    # Not a config knob: True makes the cycle offer a request's jobs one at a time in Python (the
    # reference loop the tests hold the evaluator's whole-request loading to); the same matches.
    job_by_job: bool = False
    # NEGOTIATORD_INCREMENTAL_CYCLE: what a daemon or a replay worked out of unchanged slots in
    # earlier cycles (attributes read, compilations, slot weights) is kept; False starts each
    # cycle from scratch, the reference the kept state is tested against
    incremental_cycle: bool = True

    # Preemption between groups (ours)
    fair_sharing: bool = False                  # NEGOTIATORD_FAIR_SHARING: DRS fair sharing
    fair_sharing_strategies: tuple[str, ...] = FAIR_SHARING_STRATEGIES  # NEGOTIATORD_FAIR_SHARING_STRATEGIES
    quota_preemption: bool = False              # NEGOTIATORD_QUOTA_PREEMPTION: enforce GROUP_LIMIT_<g>

    # Priority factors by kind of submitter (Accountant::GetPriorityFactor)
    accountant_local_domain: str | None = None  # ACCOUNTANT_LOCAL_DOMAIN: unset, every submitter is local
    remote_prio_factor: float = 1e7             # REMOTE_PRIO_FACTOR: submitters of other domains
    nice_user_prio_factor: float = 1e10         # NICE_USER_PRIO_FACTOR: "nice-user" submitters
    discount_suspended_resources: bool = False  # NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES

    # Submitter order within a group (ours)
    submitter_order: SubmitterOrder = SubmitterOrder.PRIORITY   # NEGOTIATORD_SUBMITTER_ORDER
    admission_resource_weights: Mapping[str, float] = field(          # NEGOTIATORD_AFS_RESOURCE_WEIGHTS
        default_factory=lambda: ADMISSION_RESOURCE_WEIGHTS)
    admission_half_life: float | None = None    # NEGOTIATORD_AFS_HALF_LIFE, s; None: PRIORITY_HALFLIFE

    # Which slots, submitters and jobs this negotiator takes (docs/several-negotiators.md); each
    # a ClassAd expression evaluated in the ad alone, as the collector and the schedd do; None: all
    slot_constraint: str | None = None              # NEGOTIATOR_SLOT_CONSTRAINT
    submitter_constraint: str | None = None         # NEGOTIATOR_SUBMITTER_CONSTRAINT
    job_constraint: str | None = None               # NEGOTIATOR_JOB_CONSTRAINT
    # the slots that count in the pool size (else GROUP_DYNAMIC_MACH_CONSTRAINT); None: all
    slot_poolsize_constraint: str | None = None     # NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT
    # claimed partitionable slots a startd says work for another central manager are matched too
    match_working_cm_slots: bool = False            # MATCH_WORKING_CM_SLOTS

    # Preemption (HTCondor's defaults; docs/cycle.md, "Preemption")
    consider_preemption: bool = True            # NEGOTIATOR_CONSIDER_PREEMPTION
    consider_early_preemption: bool = False     # NEGOTIATOR_CONSIDER_EARLY_PREEMPTION
    allow_pslot_preemption: bool = False        # ALLOW_PSLOT_PREEMPTION: several d-slots of one p-slot
    # PREEMPTION_REQUIREMENTS and PREEMPTION_RANK; None is HTCondor's param set empty (no condition,
    # no rank), which only a Settings made in code can say: the config reader drops an empty value
    preemption_requirements: str | None = "False"
    preemption_rank: str | None = DEFAULT_PREEMPTION_RANK
    preemption_requirements_stable: bool = True     # PREEMPTION_REQUIREMENTS_STABLE
    preemption_rank_stable: bool = True             # PREEMPTION_RANK_STABLE

    # HTCondor's matchmaker.cpp and GroupEntry.cpp knobs (README, "Configuration")
    ignore_user_priorities: bool = False        # NEGOTIATOR_IGNORE_USER_PRIORITIES: no submitter limit
    ignore_job_ranks: bool = False              # NEGOTIATOR_IGNORE_JOB_RANKS: the job's Rank is not asked
    strict_enforce_quota: bool = True           # NEGOTIATOR_STRICT_ENFORCE_QUOTA
    use_global_job_prios: bool = False          # USE_GLOBAL_JOB_PRIOS: JobPrio across a submitter's schedds
    trim_shutdown_threshold: float = 0.0        # NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD, s (<= 0: no trimming)
    # NEGOTIATOR_MATCH_EXPRS: NegotiatorMatchExpr<NAME> -> the macro's text, published with each match
    match_exprs: Mapping[str, str] = field(default_factory=dict)
    # What the loader found HTCondor would read differently or not at all (logged at load)
    warnings: tuple[str, ...] = ()

    # Daemon timing (used by the service)
    negotiator_interval: float = 60.0           # NEGOTIATOR_INTERVAL
    negotiator_min_interval: float = 5.0        # NEGOTIATOR_MIN_INTERVAL
    negotiator_cycle_delay: float = 20.0        # NEGOTIATOR_CYCLE_DELAY

    service: ServiceSettings = field(default_factory=ServiceSettings)

    @property
    def admission_half_life_s(self) -> float:
        """The admission fair sharing half-life in force: NEGOTIATORD_AFS_HALF_LIFE, else
        PRIORITY_HALFLIFE, so both kinds of usage forget at the same pace unless told otherwise."""
        return self.priority_halflife if self.admission_half_life is None else self.admission_half_life

    @cached_property
    def group_tree(self) -> GroupTree:
        """``groups`` linked into the accounting-group tree, built on first use and kept with this
        object (the loader asks for it, so a bad tree is a load-time ``ConfigError``)."""
        return GroupTree(self.groups)
