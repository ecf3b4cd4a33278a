"""Job-only sub-expressions, evaluated once per autocluster and shared by every slot and leaf."""

from __future__ import annotations

import numpy as np

from negotiatord.classad.values import INT, REAL, UNDEF, Value
from negotiatord.fastpath.compiler.cells import JobCells
from negotiatord.fastpath.compiler.ir import CONST, collect
from negotiatord.fastpath.compiler.lowering import Operand, Plan, lower
from negotiatord.fastpath.instructions import SINK_RAW, SOURCE_SCALAR
from negotiatord.fastpath.interpreter.execution import Frame, Triple, decode, encode, run_plan, triple
from negotiatord.fastpath.interpreter.kept_jobs import JobValues
from negotiatord.fastpath.interpreter.space import Context


class JobScalars:
    """Values of job-only nodes for one job; ``clock`` is the wall-clock second of the current
    call (old-semantics ``CurrentTime``), and values that read it are recomputed when it moves."""

    def __init__(self, context: Context, job: JobCells | None, values: JobValues | None = None) -> None:
        self._context = context
        self._job = job
        self._values: JobValues = {} if values is None else values     # a kept job's own (kept_jobs.py)
        self._input_keys: dict[int, tuple] = {}      # job or clock node -> _input_key
        self.clock = 0

    def set_clock(self, second: int) -> None:
        if second != self.clock:
            graph = self._context.graph
            for node in [node for node in self._values if graph[node].uses_clock]:
                del self._values[node]
            self._input_keys.clear()
            self.clock = second

    def triple(self, nodes: list[int]) -> Triple:
        """Values of ``nodes`` (constants, job literals or job-only operations) as kernel arrays."""
        missing = [n for n in nodes if n not in self._values]
        if missing:
            self._compute(missing)
        if not nodes:
            return triple(0)
        t, i, f = zip(*[self._values[node] for node in nodes])
        return np.array(t, dtype=np.int8), np.array(i, dtype=np.int64), np.array(f, dtype=np.float64)

    def value(self, node: int) -> Value:
        """The job's value of one job-only node."""
        if node not in self._values:
            self._compute([node])
        return decode(*self._values[node], self._context.strings)

    def _compute(self, nodes: list[int]) -> None:
        """Each node's value as a job that gave the node's own inputs the same values had it (jobs
        of one submitter share owner, project, image...: what varies between its autoclusters is
        mostly requests), and the rest from one scalar plan."""
        context = self._context
        missing: list[int] = []
        keys: list[tuple] = []
        for node in nodes:
            key = (node, *[self._input_key(n) for n in _inputs(context, node)])
            found = context.scalar_values.get(key)
            if found is None:
                missing.append(node)
                keys.append(key)
            else:
                self._values[node] = found
        if not missing:
            return
        plan, inputs = _plan(context, tuple(missing))
        scalars = encode([self._input(n) for n in inputs], context.strings)
        frame = Frame(1, np.zeros(1, dtype=np.int64), scalars, out=triple((len(missing), 1)))
        run_plan(plan, np.zeros(1, dtype=np.int64), frame, context.strings,
                 [(SINK_RAW, j) for j in range(len(missing))])
        values = zip(frame.out[0][:, 0].tolist(), frame.out[1][:, 0].tolist(), frame.out[2][:, 0].tolist())
        for node, key, value in zip(missing, keys, values):
            context.scalar_values[key] = self._values[node] = value

    def _input(self, node: int) -> Value:
        ir = self._context.graph[node]
        if ir.kind == "job":       # a literal, or a missing attribute read for its value
            assert self._job is not None        # job nodes are built only for leaves compiled with a job
            return self._context.cells.cells[self._job.cell(ir.payload)].value or (UNDEF, None)
        if ir.kind == "clock":
            return (INT, self.clock)
        return ir.payload

    def _input_key(self, node: int) -> tuple:
        """A job or clock input as a memo key: reals by their repr, so 0.0 and -0.0 stay apart.
        Kept per input: a job's nodes read the same few attributes over and over."""
        found = self._input_keys.get(node)
        if found is None:
            tag, payload = self._input(node)
            found = self._input_keys[node] = (tag, repr(payload) if tag == REAL else payload)
        return found


def forget_current_time(context: Context, values: JobValues) -> None:
    """Drop from a kept job's ``values`` those that read the job's ``CurrentTime`` (its cell
    moved with a later cycle's clock, JobCells.move_to)."""
    graph = context.graph
    for node in [node for node in values
                 if any(graph[n].kind == "job" and graph[n].payload == "currenttime" for n in _inputs(context, node))]:
        del values[node]


def _inputs(context: Context, node: int) -> tuple[int, ...]:
    """The job attributes (and the clock) a job-only node reads: what its value depends on."""
    found = context.scalar_inputs.get(node)
    if found is None:
        graph = context.graph
        reads: set[int] = set()
        collect(graph, node, lambda n: graph[n].kind in ("job", "clock"), reads)
        found = context.scalar_inputs[node] = tuple(sorted(reads))
    return found


def _plan(context: Context, nodes: tuple[int, ...]) -> tuple[Plan, list[int]]:
    """The scalar plan for ``nodes`` and its inputs, shared by every job that asks for them."""
    found = context.scalar_plans.get(nodes)
    if found is None:
        graph = context.graph
        inputs: list[int] = []

        def operand(node: int) -> Operand | None:
            ir = graph[node]
            if ir.kind in ("job", "clock") or ir.level == CONST:
                inputs.append(node)
                return (SOURCE_SCALAR, len(inputs) - 1)
            return None

        found = context.scalar_plans[nodes] = (lower(graph, list(nodes), operand), inputs)
    return found
