"""Command numbers from ``src/condor_includes/condor_commands.h`` that negotiatord sends or reads."""

from __future__ import annotations

# DaemonCore
DC_AUTHENTICATE = 60010
DC_NOP = 60011
DC_NOP_READ = 60020
DC_NOP_WRITE = 60021
DC_NOP_NEGOTIATOR = 60022
SHARED_PORT_CONNECT = 75

# the negotiator and the schedd (SCHED_VERS = 400)
NEGOTIATE = 416
SEND_JOB_INFO = 417
NO_MORE_JOBS = 418
JOB_INFO = 419
END_NEGOTIATE = 425
REJECTED = 426
PERMISSION_AND_AD = 472
REJECTED_WITH_REASON = 476
SEND_RESOURCE_REQUEST_LIST = 518

# the collector
QUERY_STARTD_ADS = 5
QUERY_STARTD_PVT_ADS = 10
QUERY_SUBMITTOR_ADS = 12
UPDATE_NEGOTIATOR_AD = 49
INVALIDATE_NEGOTIATOR_ADS = 51
UPDATE_ACCOUNTING_AD = 77
INVALIDATE_ACCOUNTING_ADS = 79

NAMES = {value: name for name, value in list(globals().items()) if isinstance(value, int) and name.isupper()}

# the authorization level each command is registered at by the daemon that serves it
# (schedd.cpp for NEGOTIATE, collector.cpp for the queries, updates and invalidations)
LEVELS = {NEGOTIATE: "NEGOTIATOR", QUERY_STARTD_PVT_ADS: "NEGOTIATOR", QUERY_STARTD_ADS: "READ",
          QUERY_SUBMITTOR_ADS: "READ", UPDATE_NEGOTIATOR_AD: "NEGOTIATOR", INVALIDATE_NEGOTIATOR_ADS: "NEGOTIATOR",
          UPDATE_ACCOUNTING_AD: "NEGOTIATOR", INVALIDATE_ACCOUNTING_ADS: "NEGOTIATOR"}


def command_name(command: int) -> str:
    return NAMES.get(command, str(command))
