""":class:`Compilations`: what the fast path compiled, kept from one cycle to the next by a caller
that negotiates again (the daemon's cycle runner, a trace replay), so that a cycle over a pool and
queue that barely changed compiles almost nothing.

A cycle's evaluator is built for one slot table, but little of what it compiles depends on the
table. Interned cells and strings, the IR graph, the job-only values and the resolutions of each
root (compiler/groups.py: keyed by the shapes of the attributes resolution read, never by which
slot holds them) stay true for any table; what is per table (the cell columns, the static store
of slot values, the leaves lowered against that store) is made by each cycle's evaluator. The
cycle's clock is data, never compiled in: ``time()`` reads a column every slot holds alike
(cells.py, CYCLE_CLOCK), and a job's ``CurrentTime`` is an input its values are keyed by.

Everything here depends on classad2's scoping mode and on the slot table's list of assets, so the
compilations of one mode and list are kept at a time; and all of it only grows, so once any part
passes its limit the compilations start over (a daemon running for months meets ever new literal
values and expressions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from negotiatord.fastpath.compiler.cells import CellTable
from negotiatord.fastpath.compiler.groups import Resolutions
from negotiatord.fastpath.compiler.ir import IRGraph
from negotiatord.fastpath.compiler.leaves import Leaf, compile_leaf
from negotiatord.fastpath.interpreter.kept_jobs import KeptJobs
from negotiatord.fastpath.interpreter.kept_weights import KeptSlotWeights
from negotiatord.fastpath.strings import StringTable

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.kept_space import KeptMatchSpace

# Past any of these the compilations start over: each entry is a few hundred bytes, and the
# string ranks are sorted again whenever strings are added. Every space's static store holds each
# numbered row (18 bytes a slot), rows numbered for expressions no slot shows any more included:
# at 8M cells, 136 MB a space (at 45k slots, 177 rows).
MAX_CELLS = 250_000
MAX_NODES = 250_000
MAX_STRINGS = 100_000
MAX_JOB_VALUES = 1_000_000
MAX_STATIC_CELLS = 8_000_000


@dataclass
class Compiled:
    """One scoping mode's compilations for slot tables of one list of assets, shared by the
    evaluators of successive cycles.

    It numbers the rows of the static store (a slot-only node's values) and of the dynamic inputs
    (a classad2 step's values) the same for every space, so a leaf, lowered against those rows, is
    lowered once and serves every cycle (each space files it under an id of its own).
    """

    old_semantics: bool
    assets: tuple[str, ...]
    strings: StringTable = field(default_factory=StringTable)
    graph: IRGraph = field(default_factory=IRGraph)
    cells: CellTable = field(init=False)
    resolutions: dict = field(default_factory=dict)     # (root, with a job) -> Resolutions, see groups.py
    scalar_plans: dict = field(default_factory=dict)    # node tuple -> (plan, inputs), see job_scalars.py
    scalar_values: dict = field(default_factory=dict)   # (node, *input keys) -> value, see job_scalars.py
    scalar_inputs: dict = field(default_factory=dict)   # node -> the job and clock nodes it reads
    static_rows: dict[int, int] = field(default_factory=dict)   # slot-only node -> its static store row
    python_rows: dict[int, int] = field(default_factory=dict)   # classad2-step node -> its dynamic input row
    slot_weights: KeptSlotWeights = field(default_factory=KeptSlotWeights)   # by slot record, see kept_weights.py
    jobs: KeptJobs = field(default_factory=KeptJobs)             # by job ad record, see kept_jobs.py
    _leaves: dict[tuple[int | None, int, str], Leaf] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cells = CellTable(self.strings)

    def resolutions_of(self, key: object) -> Resolutions:
        found = self.resolutions.get(key)
        if found is None:
            found = self.resolutions[key] = Resolutions()
        return found

    def static_row(self, node: int) -> int:
        """The static store row of slot-only ``node`` in every space (leaves.InputRows)."""
        return self.static_rows.setdefault(node, len(self.static_rows))

    def python_row(self, node: int) -> int:
        """The row of classad2 step ``node`` among the dynamic inputs after the assets', in every
        space (leaves.InputRows)."""
        return self.python_rows.setdefault(node, len(self.python_rows))

    def leaf(self, node: int | None, sink: int, reason: str) -> Leaf:
        """IR root ``node`` lowered for ``sink`` (None: classad2 evaluates it, for ``reason``); its
        id is -1, a space files a copy under its own."""
        key = (node, sink, reason if node is None else "")
        found = self._leaves.get(key)
        if found is None:
            found = self._leaves[key] = compile_leaf(self.graph, len(self.assets), self, -1, node, sink, reason)
        return found

    def full(self, slots: int) -> bool:
        """Grown past a limit: ever more cells, nodes, strings or job values, or static store rows
        too many for a table of ``slots`` slots."""
        return (len(self.cells.cells) > MAX_CELLS or len(self.graph.nodes) > MAX_NODES
                or len(self.strings) > MAX_STRINGS or len(self.scalar_values) > MAX_JOB_VALUES
                or len(self.static_rows) * slots > MAX_STATIC_CELLS)


class Compilations:
    """The compilations a caller keeps across its cycles and hands each cycle's evaluator, with
    the match space over their slot records (``match_space``, kept_space.py: made by the first
    evaluator of each compilations, dropped with them)."""

    def __init__(self) -> None:
        self._kept: Compiled | None = None
        self.match_space: KeptMatchSpace | None = None
        self.started = 0          # times the compilations started (over): the first, a mode change, a limit

    @property
    def kept(self) -> Compiled | None:
        """The compilations kept now; None before the first cycle."""
        return self._kept

    def start_over(self) -> None:
        """Keep nothing: the next cycle compiles afresh."""
        self._kept = None
        self.match_space = None

    def for_cycle(self, old_semantics: bool, assets: tuple[str, ...], slots: int) -> Compiled:
        """The compilations for a cycle evaluated in ``old_semantics`` over a slot table of
        ``slots`` slots and ``assets``: those kept, unless made in the other mode, for other
        assets (leaves read an asset by its column) or grown past a limit."""
        kept = self._kept
        if kept is None or kept.old_semantics != old_semantics or kept.assets != assets or kept.full(slots):
            kept = self._kept = Compiled(old_semantics, assets)
            self.match_space = None
            self.started += 1
        return kept
