"""PREEMPTION_REQUIREMENTS and PREEMPTION_RANK through the fast path, for all the claimed slots a
request asks about at once.

HTCondor's matchmaker.cpp evaluates both with a claimed slot as MY and the job as TARGET, after
inserting the running customer's figures into the slot ad (``addRemoteUserPrios``:
``RemoteUserPrio``, ``RemoteGroup``, ``CurrentRank`` from PreemptingRank, ...) and the submitter's
into the job ad (``SubmitterUserPrio``, ``SubmitterGroup``, ...). Here the claimed slots form a
space of their own whose columns hold the inserted figures in place of the ads' own values
(:class:`InsertedColumns`), and a request's job reads its submitter's figures the same way
(:class:`InsertedJobCells`): both expressions compile like any root (time() and CurrentTime at
the cycle's clock, as everywhere in the fast path), and a request's answers for the slots it
asks about come from one staged assessment instead of classad2 slot by slot.

Columns are the cycle's: only figures that hold for the whole cycle may be read from them (the
priorities, groups, quotas and PreemptingRank; :class:`PreemptionInserts` names the others). An
expression that reads usage (``RemoteUserResourcesInUse``, ... which moves with every match) is
left to classad2 for the rest of the cycle, as is every leaf the compiler does not cover.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import cached_property

import classad2
import numpy as np

from negotiatord.classad.values import BOOL, INT, REAL, NotScalar, from_python
from negotiatord.evaluation.preemption import RANK_QUESTION, REQUIREMENTS_QUESTION
from negotiatord.evaluation.protocol import UNRANKED, PreemptionInserts
from negotiatord.fastpath.compiler.cells import LITERAL, OTHER, CellTable, JobCells, SlotColumns
from negotiatord.fastpath.compiler.descriptions import AdDescriptions, Description
from negotiatord.fastpath.instructions import SINK_RAW
from negotiatord.fastpath.interpreter.compilations import Compiled
from negotiatord.fastpath.interpreter.evaluation_counts import FastPathStats
from negotiatord.fastpath.interpreter.execution import Triple
from negotiatord.fastpath.interpreter.fallback import ReferenceFallback
from negotiatord.fastpath.interpreter.job_scalars import JobScalars
from negotiatord.fastpath.interpreter.jobs import JobRoots, JobState
from negotiatord.fastpath.interpreter.roots import CycleRoots, configured_root
from negotiatord.fastpath.interpreter.space import Context, RootSpec, SlotRows, Space
from negotiatord.fastpath.interpreter.stages import StagedAssessment
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings


def inserted_description(value: object) -> Description:
    """An inserted figure as a cell's description: a scalar literal (the figures are numbers,
    strings and booleans)."""
    try:
        return (LITERAL, from_python(value))
    except NotScalar as error:
        return (OTHER, str(error))


class InsertedColumns(SlotColumns):
    """The claimed slots' columns: what ``remote_of`` inserts into each claimed slot's ad in place
    of the ad's own value, every other attribute read from ``match_space``'s columns (which
    reads the same slots: each ad is read once for both). Reading a ``varying`` name sets
    :attr:`reads_varying`: its values would not hold for the cycle."""

    def __init__(self, match_space: Space, table: SlotTable, cells: CellTable, now: int,
                 descriptions: AdDescriptions, claimed: np.ndarray,
                 remote_of: Callable[[int], Mapping[str, object]], varying: frozenset[str]) -> None:
        super().__init__(table.slots, {a.lower(): i for i, a in enumerate(table.assets)}, cells, now, descriptions)
        self._match_columns = match_space.context.columns
        self._match_rows = match_space.slot_rows.column_of      # table row -> row of the match columns
        self._claimed = claimed
        self._remote_of = remote_of
        self._varying = varying
        self._inserted: dict[str, np.ndarray] | None = None     # name -> cell per table row, -1: none
        self.reads_varying = False

    def column(self, name: str, rows: np.ndarray) -> np.ndarray:
        self.reads_varying |= name in self._varying
        found = self._match_columns.column(name, self._match_rows[rows])
        inserted = self._inserted_cells().get(name)
        if inserted is None:
            return found
        own = inserted[rows]
        return np.where(own >= 0, own, found)

    def _inserted_cells(self) -> dict[str, np.ndarray]:
        """Each inserted name's cells over the table, worked out for every claimed slot at once."""
        if self._inserted is None:
            self._inserted = {}
            size = len(self._slots)
            for row in self._claimed.tolist():
                for name, value in self._remote_of(row).items():
                    column = self._inserted.get(name.lower())
                    if column is None:
                        column = self._inserted[name.lower()] = np.full(size, -1, dtype=np.int64)
                    column[row] = self._cells.intern(inserted_description(value))
        return self._inserted


class InsertedJobCells(JobCells):
    """A job's cells with the submitter's ``inserted`` figures in place of the ad's own values;
    reading a ``varying`` name sets :attr:`reads_varying`."""

    def __init__(self, ad: classad2.ClassAd, cells: CellTable, now: int, described: dict[str, Description],
                 inserted: Mapping[str, object], varying: frozenset[str]) -> None:
        super().__init__(ad, cells, now, described)
        self._inserted = {name.lower(): value for name, value in inserted.items()}
        self._varying = varying
        self.reads_varying = False

    def _cell(self, name: str) -> int:
        self.reads_varying |= name in self._varying
        if name in self._inserted:
            return self._cells.intern(inserted_description(self._inserted[name]))
        return super()._cell(name)


class CompiledPreemptionAnswers:
    """:class:`~negotiatord.evaluation.preemption.CompiledAnswers` of one evaluator (one
    classad2 scoping mode's compilations): the claimed slots' space is made at the first
    question, with the figures of that question's inserts."""

    def __init__(self, table: SlotTable, match_space: Space, compiled: Compiled, settings: Settings, now: int,
                 descriptions: AdDescriptions, fallback: ReferenceFallback, specs: CycleRoots) -> None:
        self._table = table
        self._match_space = match_space      # whose columns read the claimed slots' ads too: each is read once
        self._compiled = compiled
        self._now = now
        self._descriptions = descriptions
        self._fallback = fallback
        self._specs = specs
        self._settings = settings
        self._space: _ClaimedSpace | None = None
        self._declined = False
        self._jobs: dict[tuple, JobState] = {}

    @cached_property
    def _questions(self) -> dict[str, RootSpec | None]:
        """The two expressions as roots, made when first asked for (most cycles ask neither);
        their values as they are (SINK_RAW): "is True" and a rank are worked out of them here."""
        settings = self._settings
        return {REQUIREMENTS_QUESTION: configured_root(REQUIREMENTS_QUESTION, settings.preemption_requirements,
                                                       SINK_RAW),
                RANK_QUESTION: configured_root(RANK_QUESTION, settings.preemption_rank, SINK_RAW)}

    def answers(self, question: str, autocluster: Autocluster, rows: np.ndarray,
                inserts: PreemptionInserts) -> tuple[np.ndarray, np.ndarray] | None:
        spec = self._questions.get(question)
        if spec is None or self._declined or inserts.remote_of is None:
            return None
        space = self._space
        if space is None:
            space = self._space = _ClaimedSpace(self._table, self._match_space, self._compiled, self._now,
                                                self._descriptions, self._fallback, self._specs, inserts)
        job = self._job(space, autocluster, inserts)
        job.enter(space.space)
        space.roots.clock = int(time.time())
        values, left = space.stages.raw(spec, job, rows, self._table.amounts[rows])
        if space.columns.reads_varying or isinstance(job.cells, InsertedJobCells) and job.cells.reads_varying:
            self._declined = True        # the figures read move within the cycle: classad2 answers
            return None
        answered = np.ones(len(rows), dtype=bool)
        answered[left] = False
        return (_is_true(values) if question == REQUIREMENTS_QUESTION else _rank(values)), answered

    def _job(self, space: _ClaimedSpace, autocluster: Autocluster, inserts: PreemptionInserts) -> JobState:
        """The request's job with its submitter's figures inserted: one per request and figures."""
        held = tuple(sorted((name.lower(), value) for name, value in inserts.submitter.items()
                            if name.lower() not in inserts.varying))
        key = (autocluster.id, held)
        found = self._jobs.get(key)
        if found is None:
            representative = autocluster.representative
            cells = InsertedJobCells(representative.ad, self._compiled.cells, self._now,
                                     self._descriptions.of(representative), dict(held), inserts.varying)
            found = self._jobs[key] = JobState(cells, JobScalars(space.context, cells))
        return found


class _ClaimedSpace:
    """The claimed slots' columns with their inserted figures, their space, jobs and stages."""

    def __init__(self, table: SlotTable, match_space: Space, compiled: Compiled, now: int,
                 descriptions: AdDescriptions, fallback: ReferenceFallback, specs: CycleRoots,
                 inserts: PreemptionInserts) -> None:
        assert inserts.remote_of is not None
        claimed = np.array([row for row, slot in enumerate(table.slots) if slot.claim is not None], dtype=np.int64)
        self.columns = InsertedColumns(match_space, table, compiled.cells, now, descriptions, claimed,
                                       inserts.remote_of, inserts.varying)
        self.context = Context(compiled, self.columns, now)
        self.space = Space(self.context, claimed, SlotRows.of_table(table))
        self.roots = JobRoots(table, self.context, self.space, descriptions)
        self.stages = StagedAssessment(table, self.context, self.space, self.roots, specs, fallback, FastPathStats())


def _is_true(values: Triple) -> np.ndarray:
    """``is True`` of each value: a boolean true (a number is no answer to PREEMPTION_REQUIREMENTS)."""
    tags, integers, _ = values
    return (tags == BOOL) & (integers != 0)


def _rank(values: Triple) -> np.ndarray:
    """Each value as a rank: a boolean as 0 or 1, a number as itself, else -DBL_MAX."""
    tags, integers, reals = values
    return np.where((tags == BOOL) | (tags == INT), integers.astype(np.float64),
                    np.where((tags == REAL) & (reals == reals), reals, UNRANKED))
