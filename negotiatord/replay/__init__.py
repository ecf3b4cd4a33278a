"""Replaying a workload trace through the real negotiation cycle on a simulated clock."""

from negotiatord.replay.pool import (
    Node,
    NodeShape,
    PoolSpecError,
    SimulatedPool,
    alike_nodes,
    default_pool,
    fit_to_nodes,
)
from negotiatord.replay.pool_file import PoolFile, read_pool
from negotiatord.replay.report import write_outputs
from negotiatord.replay.simulate import ReplayResult, replay
from negotiatord.replay.trace import Cleaning, Trace, TraceError, TraceJob, read_trace

__all__ = [
    "Cleaning",
    "Node",
    "NodeShape",
    "PoolFile",
    "PoolSpecError",
    "ReplayResult",
    "SimulatedPool",
    "Trace",
    "TraceError",
    "TraceJob",
    "alike_nodes",
    "default_pool",
    "fit_to_nodes",
    "read_pool",
    "read_trace",
    "replay",
    "write_outputs",
]
