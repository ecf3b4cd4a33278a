"""A root expression resolved for groups of slots, and resolutions remembered from one cycle to
the next.

Resolving (resolution.py) splits the slots wherever they differ in the shape of an attribute the
expression reads. A :class:`~.resolution.Builder` depends on nothing but the answers to the
questions it asks, in the order it asks them: the shape of an attribute in the group's slots, the
probe class of a job attribute, the value of a GUARD condition (its IR graph is hash-consed, so
the same answers give the same node; the clock ``time()`` reads is a slot column, cells.py's
CYCLE_CLOCK, so a resolution holds for every cycle). The resolutions of a root
therefore form a tree of questions (:class:`Resolutions`): a group of slots follows it, split by
its slots' answers to each slot question, down to the outcome its answers lead to, and only a
group whose answers lead somewhere not yet known is resolved (and its questions filed).

The tree holds shape ids of one :class:`~.cells.CellTable` and nodes of one
:class:`~.ir.IRGraph`: it is kept with them, across as many cycles as they are. It does not
depend on which slots a table holds, nor in which order, nor on their literal values: those are
data the kernels read (the static store), never folded in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from negotiatord.fastpath.compiler.cells import SlotColumns, distinct_rows
from negotiatord.fastpath.compiler.resolution import SLOT, Builder, Question, Split, Unsupported

Outcome = tuple[int | None, str]      # (IR node, "") or (None, why classad2 evaluates it)


@dataclass
class Resolutions:
    """What resolving one root (for one kind of job) asked and came to: the next question, each
    answer's branch, or, where the questions end, the outcome. The tree's root also lists every
    slot attribute asked anywhere in it."""

    question: Question | None = None
    answers: dict[object, Resolutions] = field(default_factory=dict)
    outcome: Outcome | None = None
    slot_attributes: list[str] = field(default_factory=list)

    def file(self, asked: list[tuple[Question, object]], outcome: Outcome) -> None:
        """File a resolution that asked ``asked`` (from the root's first question) and came to
        ``outcome``. A path that disagrees with the tree (a builder asking something else after
        the same answers) is not filed: that resolution is then made again when next needed."""
        branch = self
        for question, answer in asked:
            if branch.outcome is not None:
                return
            if branch.question is None:
                branch.question = question
            elif branch.question != question:
                return
            if question[0] == SLOT and question[1] not in self.slot_attributes:
                self.slot_attributes.append(question[1])
            found = branch.answers.get(answer)
            if found is None:
                found = branch.answers[answer] = Resolutions()
            branch = found
        if branch.question is None:
            branch.outcome = outcome

    def follow(self, shapes: dict[str, int], asking: Builder) -> Resolutions:
        """The branch where slots of ``shapes`` and the job ``asking`` answers for lead: one with
        an outcome, or the last one known on their way."""
        branch = self
        while branch.question is not None:
            question = branch.question
            answer = shapes[question[1]] if question[0] == SLOT else asking.answer(question)
            found = branch.answers.get(answer)
            if found is None:
                return branch
            branch = found
        return branch


class SlotClasses:
    """The slots of a universe (rows of its columns) in classes of equal shape in each attribute
    listed so far: resolution reads nothing else of a slot, so slots of one class resolve alike."""

    def __init__(self, rows: np.ndarray, columns: SlotColumns) -> None:
        self._columns = columns
        self.rows = rows                                     # universe row -> column row
        self.of = np.zeros(len(rows), dtype=np.int64)       # universe row -> class
        self.shapes: list[dict[str, int]] = [{}]             # class -> attribute -> shape
        self._listed: list[str] = []

    def list(self, attributes: list[str]) -> None:
        """Tell the classes apart by ``attributes`` too."""
        for attribute in attributes:
            if attribute not in self._listed:
                self._listed.append(attribute)
                self._split(attribute, self._columns.shapes(attribute, self.rows))

    def grow(self, rows: np.ndarray, classes: np.ndarray | None = None) -> None:
        """Column ``rows`` join the universe (as its last rows); ``classes``: theirs, if known."""
        joined = self.classify(rows) if classes is None else classes
        self.rows = np.concatenate([self.rows, rows])
        self.of = np.concatenate([self.of, joined])

    def classify(self, rows: np.ndarray) -> np.ndarray:
        """The class of each of column ``rows`` (a class of its own where no row has its shapes)."""
        listed = self._listed
        index = {tuple(shapes[a] for a in listed): c for c, shapes in enumerate(self.shapes)}
        columns = [self._columns.shapes(a, rows).tolist() for a in listed]
        joined = []
        for key in zip(*columns) if listed else [()] * len(rows):
            found = index.get(key)
            if found is None:
                found = index[key] = len(self.shapes)
                self.shapes.append(dict(zip(listed, key)))
            joined.append(found)
        return np.array(joined, dtype=np.int64)

    def replace(self, universe_rows: np.ndarray, rows: np.ndarray) -> None:
        """Column ``rows`` stand at ``universe_rows`` in place of the slots there, of their class."""
        self.rows[universe_rows] = rows

    def _split(self, attribute: str, shapes: np.ndarray) -> None:
        if not len(shapes) or (shapes == shapes[0]).all():      # most attributes: one shape in every slot
            shape = int(shapes[0]) if len(shapes) else -1
            for known in self.shapes:
                known[attribute] = shape
            return
        width = int(shapes.max(initial=0)) + 1
        pairs, inverse = np.unique(self.of * width + shapes, return_inverse=True)
        self.shapes = [{**self.shapes[pair // width], attribute: pair % width} for pair in pairs.tolist()]
        self.of = inverse.astype(np.int64).reshape(-1)


@dataclass
class Grouping:
    """The outcome of resolving one root expression over some slots: groups and their IR roots."""

    groups: list[tuple[np.ndarray, int | None, str]]   # (column rows, IR node or None, fallback reason)
    probes: dict[tuple[str, str], object]


def resolve(make_builder: Callable[[np.ndarray], Builder], root: Callable[[Builder], int], universe_rows: np.ndarray,
            slots: SlotClasses, columns: SlotColumns, known: Resolutions) -> Grouping:
    """Resolve ``root`` for the slots of ``universe_rows``, splitting groups whose slots differ in
    an attribute's shape: each class of slots by the resolutions ``known`` already, the others
    anew (filing them there)."""
    groups: list[tuple[np.ndarray, int | None, str]] = []
    probes: dict[tuple[str, str], object] = {}
    if not len(universe_rows):
        return Grouping(groups, probes)
    slots.list(known.slot_attributes)
    rows, classes = slots.rows[universe_rows], slots.of[universe_rows]
    asking = make_builder(rows[:1])
    reached: dict[Outcome, list[int]] = {}
    pending: list[np.ndarray] = []
    present = distinct_rows(classes, len(slots.shapes)).tolist()
    for found in present:
        branch = known.follow(slots.shapes[found], asking)
        if branch.outcome is not None:
            reached.setdefault(branch.outcome, []).append(found)
        else:
            pending.append(rows[classes == found])
    probes.update(asking.probes)
    for reaching, members in reached.items():
        if len(members) == len(present):
            groups.append((rows, *reaching))
        else:
            chosen = np.zeros(len(slots.shapes), dtype=bool)
            chosen[members] = True
            groups.append((rows[chosen[classes]], *reaching))
    while pending:
        group = pending.pop()
        builder = make_builder(group)
        try:
            outcome: Outcome = (root(builder), "")
        except Split as split:
            shapes = columns.shapes(split.name, group)
            pending.extend(group[shapes == shape] for shape in np.unique(shapes))
            probes.update(builder.probes)
            continue
        except Unsupported as why:
            outcome = (None, str(why))
        except RecursionError:          # deeper than the stack left to this call: classad2's then
            outcome = (None, "nested too deep for the fast path")
        known.file(builder.asked, outcome)
        groups.append((group, *outcome))
        probes.update(builder.probes)
    return Grouping(groups, probes)
