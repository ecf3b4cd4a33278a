"""Stacks: the combinations of compiled roots jobs assess with in one kernel call.

Jobs of one shape compile every root to the same leaves, so what the one-call path derives from
those compilations (which leaf each universe row reaches per root, which leaves need classad2
steps first, where each leaf's scalars sit, which consumptions are known before the kernel) is
made once per combination and shared by every job that compiles to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.instructions import LEAF_KIND, LEAF_PYTHON
from negotiatord.fastpath.interpreter.bounds import KnownConsumption, known_consumption
from negotiatord.fastpath.interpreter.execution import Triple
from negotiatord.fastpath.interpreter.tables import ScalarLayout

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.root_families import CompiledRoot
    from negotiatord.fastpath.interpreter.space import RootSpec, Space


@dataclass
class JobStatic:
    """The job-and-slot conjuncts of the jobs giving the stack's job-static leaves the same inputs,
    [root, universe row] (true where the row's leaf has none): filled for the rows calls ask
    about, so a re-assessment, or a job like one seen before, is a lookup."""

    ok: np.ndarray
    known: np.ndarray                           # universe rows filled in every root
    inputs: dict[int, Triple]                   # leaf id -> the values of its inputs


@dataclass
class Stack:
    """One combination of compiled roots (the kernel path's), and what every job whose roots
    compiled to it shares."""

    compiled: tuple[CompiledRoot | None, ...]   # held, so the id() key cannot be reused
    leaf_of: np.ndarray                         # [root, universe row] -> leaf id (-1: outside the domain)
    python_roots: list[int]                     # roots reaching a leaf with classad2-step inputs
    python_leaves: bool                         # some leaf is left to Python (the kernel checks the rows)
    job_static: list[tuple[int, list[Leaf]]]    # roots with their leaves that have job-and-slot conjuncts
    job_static_rows: np.ndarray                 # universe rows reaching one of those leaves
    job_static_nodes: list[int]                 # the job-only inputs of those leaves
    layout: ScalarLayout
    known_consumption: KnownConsumption         # Consumption roots whose values are known before the kernel
    job_static_states: dict[tuple[bytes, ...], JobStatic] = field(default_factory=dict)  # by input values

    def made_for(self, specs: list[RootSpec | None]) -> bool:
        """Whether the stack compiles ``specs`` (a job's record keeps its stack across cycles,
        and the configuration may change a root's expression in between)."""
        return all(spec is None if compiled is None else spec is not None and compiled.made_for(spec)
                   for compiled, spec in zip(self.compiled, specs))


class Stacks:
    """The stacks of one space, by the identity of their compiled roots (the space holds them,
    so that what they learnt of a universe row can be forgotten when the row is reused)."""

    def __init__(self, assets: int) -> None:
        self._assets = assets
        self._stacks: dict[tuple[int, ...], Stack] = {}          # id() of each compiled root -> stack

    def of(self, space: Space, compiled: list[CompiledRoot | None]) -> Stack:
        """The stack of these compiled roots, made when a job first compiles to them (again in
        each epoch of the space, which clears the stacks: the roots may cover more rows)."""
        key = tuple(id(c) for c in compiled)
        found = self._stacks.get(key)
        if found is None:
            found = self._stacks[key] = self._make(space, compiled)
        return found

    def job_answer_bytes(self) -> int:
        """The memory the stacks' job-and-slot answers take."""
        return sum(state.ok.nbytes + state.known.nbytes
                   for stack in self._stacks.values() for state in stack.job_static_states.values())

    def clear(self) -> None:
        """Drop every stack (their roots' universe grew, or their answers are dropped)."""
        self._stacks.clear()

    def forget(self, universe_rows: np.ndarray) -> None:
        """Forget the job-and-slot answers of ``universe_rows``: another slot now stands there, or
        a slot value they read moved with the clock (a later call asks them again)."""
        for stack in self._stacks.values():
            for state in stack.job_static_states.values():
                state.ok[:, universe_rows] = True
                state.known[universe_rows] = ~stack.job_static_rows[universe_rows]

    def _make(self, space: Space, compiled: list[CompiledRoot | None]) -> Stack:
        leaf_of = np.stack([c.leaf_of if c is not None else np.full(len(space.rows), -1) for c in compiled])
        python = [r for r, c in enumerate(compiled)
                  if c is not None and any(space.leaves[i].python_inputs for i in c.leaf_ids)]
        reached = np.unique(leaf_of[leaf_of >= 0])
        python_leaves = bool((space.tables.leaves[reached, LEAF_KIND] == LEAF_PYTHON).any())
        job_static = []
        reaching = np.zeros(len(space.rows), dtype=bool)
        for r, c in enumerate(compiled):
            leaves = [space.leaves[i] for i in (c.leaf_ids if c is not None else ())
                      if space.leaves[i].job_static is not None]
            if leaves:
                job_static.append((r, leaves))
                reaching |= np.isin(leaf_of[r], [leaf.id for leaf in leaves])
        inputs = sorted({n for _, leaves in job_static for leaf in leaves
                         for n in leaf.job_static_nodes})
        planned = {i: space.leaves[i] for c in compiled if c is not None for i in c.leaf_ids
                   if space.leaves[i].plan is not None}
        layout = ScalarLayout(list(planned.values()), len(space.leaves))
        return Stack(tuple(compiled), leaf_of, python, python_leaves, job_static, reaching, inputs, layout,
                     known_consumption(leaf_of, space.tables, self._assets))
