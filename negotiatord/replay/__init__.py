"""Replaying a workload trace through the real negotiation cycle on a simulated clock."""

from negotiatord.replay.pool import NodeShape, PoolSpecError, SimulatedPool, default_pool, fit_to_node
from negotiatord.replay.report import write_outputs
from negotiatord.replay.simulate import ReplayResult, replay
from negotiatord.replay.trace import Cleaning, Trace, TraceError, TraceJob, read_trace

__all__ = [
    "Cleaning",
    "NodeShape",
    "PoolSpecError",
    "ReplayResult",
    "SimulatedPool",
    "Trace",
    "TraceError",
    "TraceJob",
    "default_pool",
    "fit_to_node",
    "read_trace",
    "replay",
    "write_outputs",
]
