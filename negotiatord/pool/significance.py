"""Which job attributes a slot's expressions read, and under which job-side conditions.

Autoclusters are only as good as the significant-attribute set: one job attribute counted as
significant that is unique per job (``GlobalJobId``) turns every job into its own autocluster.
The real OSPool ``WithinResourceLimits`` reads ``GlobalJobID`` inside
``ifthenelse(RequestedCatalogs =?= undefined || catalogs =?= undefined, 0, ...GlobalJobID...)``.
HTCondor's ``compute_significant_attrs`` takes every external reference literally, and flattening
against the slot (classad2's ``flatten``) cannot help: ``catalogs`` is not a slot attribute, so only
the job can decide that branch.

So each slot expression is walked and every job attribute it can read is recorded with the
*guards* on the way there: ``ifThenElse``/``?:`` conditions, the left side of ``&&``/``||`` and of
the elvis operator ``?:``. A guard whose condition reads only the job is kept and decided per job
when autoclusters form (:meth:`JobRead.is_live_for`). A guard that reads the slot or the clock is
treated as open. A reference is dropped only when a decided guard proves its branch is never
evaluated, so the result may be coarser than necessary but never wrong.

The walk follows the slot's own expression attributes (``Requirements = START && ...``): a bare
name the slot defines is the slot's; one it lacks resolves to the job, as ClassAd scoping does.
``TARGET[expr]`` and ``eval()`` can read any job attribute: recorded as :data:`ANY_ATTRIBUTE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from collections.abc import Callable, Iterable, Iterator

import classad2

from negotiatord.classad.cycle_time import mentions_time
from negotiatord.classad.parser import Node, ParseError, parse, unparse

ANY_ATTRIBUTE = "*"
# Nodes of a guard condition kept as a guard; a larger one is taken as open (coarser, never wrong),
# so that the guards of a long && chain, each a prefix of it, stay small. The OSPool's catalog
# guard has 7 nodes.
_GUARD_NODES = 512
CLOCK_ATTRIBUTE = "currenttime"   # HTCondor resolves an undefined CurrentTime to time()


class OpenWhen(str, Enum):
    """When a guarded branch is evaluated, given its guard condition's value."""

    NOT_FALSE = "not_false"   # ifThenElse's then-branch, the right side of &&
    NOT_TRUE = "not_true"     # ifThenElse's else-branch, the right side of ||
    UNDEFINED = "undefined"   # the right side of the elvis operator ?:

    def is_open(self, value: object) -> bool:
        """Whether the branch can be evaluated when the condition is ``value``. Only a boolean
        closes an ifThenElse/&&/|| branch here (a number, string, UNDEFINED or ERROR keeps it
        open, erring on the side of significance); only a defined value closes an elvis one."""
        if self is OpenWhen.UNDEFINED:
            return value is classad2.Value.Undefined
        if not isinstance(value, bool):
            return True
        return value is not (self is OpenWhen.NOT_TRUE)


@dataclass(frozen=True)
class Guard:
    condition: str   # canonical text of a condition that reads only the job
    open_when: OpenWhen


@dataclass(frozen=True)
class JobRead:
    """A job attribute a slot expression reads, evaluated only if every guard is open."""

    attribute: str
    guards: tuple[Guard, ...] = ()

    def is_live_for(self, job: classad2.ClassAd) -> bool:
        return self.is_live(lambda condition: condition_value(condition, job))

    def is_live(self, value_of: Callable[[str], object]) -> bool:
        """Whether every guard is open, given the job's value of each guard condition (which a
        caller deciding many reads on one job can remember)."""
        return all(guard.open_when.is_open(value_of(guard.condition)) for guard in self.guards)


def condition_value(condition: str, job: classad2.ClassAd) -> object:
    """The value of a job-side guard condition (canonical text) for ``job``."""
    return _condition(condition).eval(_EMPTY, job)


def job_reads(expr: classad2.ExprTree | None, slot: classad2.ClassAd) -> set[JobRead]:
    """The job attributes ``expr``, evaluated with MY = ``slot``, can read, with their job guards."""
    return slot_job_reads((expr,), slot)


def slot_job_reads(exprs: Iterable[classad2.ExprTree | None], slot: classad2.ClassAd) -> set[JobRead]:
    """The job attributes any of ``exprs``, evaluated with MY = ``slot``, can read, with their job
    guards: :func:`job_reads` of each, asking the slot about each of its attributes once.

    An expression the parser does not accept is taken conservatively: every reference classad2's
    ``externalRefs`` reports, unguarded.
    """
    view = _SlotView(slot)
    reads: set[JobRead] = set()
    for expr in exprs:
        if expr is not None:
            try:
                reads |= _resolved(str(expr), view)
            except ParseError:
                reads.update(_shared(JobRead(name)) for name in map(_job_attribute, slot.externalRefs(expr)) if name)
    return reads


_SHARED_READS: dict[JobRead, JobRead] = {}
_SHARED_READS_MAX = 65536


def _shared(read: JobRead) -> JobRead:
    """One object for equal reads. Thousands of slots read the same attributes, and a cycle
    unions all candidate slots' reads: the same object is found by identity, while equal ones
    are compared field by field in Python."""
    if len(_SHARED_READS) >= _SHARED_READS_MAX:
        _SHARED_READS.clear()
    return _SHARED_READS.setdefault(read, read)


@lru_cache(maxsize=16384)
def own_references(text: str) -> frozenset[str]:
    """Names an expression reads in its own ad (bare names and ``MY.x``), branches included."""
    try:
        return frozenset(r.name for r in _analysis(text) if r.scope in (None, "my"))
    except ParseError:
        return frozenset(ref for ref in classad2.ClassAd().externalRefs(classad2.ExprTree(text)) if "." not in ref)


@dataclass(frozen=True)
class OwnReads:
    """What an expression reads in its own ad, followed through the attributes it reads."""

    names: frozenset[str] | None    # folded, names the ad lacks included; None: any (``eval()``)
    calls_time: bool                 # it, or an attribute it reads, calls ``time()``


def own_reads(expression: str, ad: classad2.ClassAd) -> OwnReads:
    """What ``expression`` reads in ``ad`` (its MY): the names it reads, and through each name
    the ad holds, what that attribute's expression reads, iteratively (attributes may chain
    deep). ``eval()`` may build any name from a string, so it reads any."""
    names: set[str] = set()
    calls_time = False
    pending = [expression]
    while pending:
        text = pending.pop()
        if "eval" in text.lower():
            return OwnReads(None, calls_time or mentions_time(text))
        calls_time = calls_time or mentions_time(text)
        for name in own_references(text):
            folded = name.lower()
            if folded not in names:
                names.add(folded)
                if name in ad:
                    pending.append(str(ad.lookup(name)))
    return OwnReads(frozenset(names), calls_time)


def condition_reads(condition: str) -> frozenset[str]:
    """The job attributes a guard condition (canonical text, as in :class:`Guard`) reads."""
    return frozenset(reference.name for reference in _analysis(condition))


# -- per slot: resolving the symbolic references of cached analyses --------------------------------


# What resolving asks of a slot: whether it defines a name, or the text of the expression a name
# holds (None for a literal). A name is folded as classad2 compares names: ASCII letters only.
_DEFINES, _HOLDS = 0, 1
_Question = tuple[int, str]
_Answer = bool | str | None


def _folded(name: str) -> str:
    return name.lower() if name.isascii() else name


class _SlotView:
    """One slot ad, asked what resolving asks of it. Asking classad2 ``name in ad`` or
    ``ad.get(name)`` copies the attribute's whole expression (START's included), so names are
    looked up among the ad's own, folded, and each expression's text is made once."""

    __slots__ = ("ad", "_names", "_texts")

    def __init__(self, ad: classad2.ClassAd) -> None:
        self.ad = ad
        keys = list(ad)
        # None: a name beyond ASCII, which only classad2 itself folds right
        self._names = frozenset(map(str.lower, keys)) if "".join(keys).isascii() else None
        self._texts: dict[str, str | None] = {}

    def answer(self, question: _Question) -> _Answer:
        kind, name = question
        if kind == _DEFINES:
            return name in self._names if self._names is not None and name.isascii() else name in self.ad
        if name not in self._texts:
            value = self.ad.get(name)
            self._texts[name] = str(value) if isinstance(value, classad2.ExprTree) else None
        return self._texts[name]


@dataclass(eq=False)
class _Step:
    """A node of the resolutions of one text: the question the walk asked next of the slot, with
    a branch for each answer seen; or, once nothing is left to ask, the reads it found."""

    asks: _Question | None = None
    branches: dict[_Answer, _Step] = field(default_factory=dict)
    reads: frozenset[JobRead] = frozenset()


_RESOLUTIONS: dict[str, _Step] = {}
_RESOLUTIONS_MAX = 4096


def _resolved(text: str, view: _SlotView) -> frozenset[JobRead]:
    """The job reads of ``text`` in the view's slot. :func:`_resolve` reads nothing of the slot
    but the answers to its questions, and asks each question as the answers before it lead: so
    its resolutions of a text form a tree of questions, and a slot that answers as an earlier
    one did (the slots of a pool mostly do) is given that one's reads by asking only the
    questions, without walking the text again."""
    step = _RESOLUTIONS.get(text)
    while step is not None and step.asks is not None:
        step = step.branches.get(view.answer(step.asks))
    if step is not None:
        return step.reads
    asked: dict[_Question, _Answer] = {}
    reads = frozenset(map(_shared, _resolve(text, view, asked)))
    if len(_RESOLUTIONS) >= _RESOLUTIONS_MAX:
        _RESOLUTIONS.clear()
    step = _RESOLUTIONS.setdefault(text, _Step())
    for question, answer in asked.items():
        if step.asks is None:       # a new node (the same answers before lead to the same question)
            step.asks = question
        step = step.branches.setdefault(answer, _Step())
    step.reads = reads
    return reads


def _resolve(text: str, view: _SlotView, asked: dict[_Question, _Answer]) -> Iterator[JobRead]:
    """The job reads of ``text`` in the view's slot, following the slot's expression attributes it
    reads (each once along a path, so a circular definition ends); ``asked`` gets each question
    asked of the slot with its answer, in the order first asked. Walked with a stack: a slot may
    chain as many attributes as it has."""
    def ask(kind: int, name: str) -> _Answer:
        question = (kind, _folded(name))
        if question not in asked:
            asked[question] = view.answer(question)
        return asked[question]

    stack: list[tuple[Iterator[_Reference], tuple[Guard, ...], str | None]] = [(iter(_analysis(text)), (), None)]
    following: set[str] = set()
    while stack:
        references, guards, followed = stack[-1]
        reference = next(references, None)
        if reference is None:
            stack.pop()
            following.discard(followed)
            continue
        extra = []
        for condition, when, names in reference.guards:
            if not any(ask(_DEFINES, name) for name in names):   # reads nothing of the slot: a job guard
                extra.append(Guard(condition, when))
        here = (*guards, *extra)
        if reference.scope == "target" or (reference.scope is None and not ask(_DEFINES, reference.name)):
            if reference.name.lower() != CLOCK_ATTRIBUTE or reference.scope == "target":
                yield JobRead(reference.name, here)
        elif reference.scope == "any":
            yield JobRead(ANY_ATTRIBUTE, here)
        elif ask(_DEFINES, reference.name) and reference.name.lower() not in following:
            value = ask(_HOLDS, reference.name)
            if isinstance(value, str):      # START, WithinResourceLimits, ...
                following.add(reference.name.lower())
                stack.append((iter(_analysis(value)), here, reference.name.lower()))


# -- per expression text: the symbolic analysis, cached --------------------------------------------


@dataclass(frozen=True)
class _Reference:
    scope: str | None              # "target", "my", None (a bare name), or "any"
    name: str
    guards: tuple[tuple[str, OpenWhen, frozenset[str]], ...]   # condition text, when, bare/MY names it reads


@lru_cache(maxsize=16384)
def _analysis(text: str) -> tuple[_Reference, ...]:
    return tuple(_Walk().references(parse(text)))


class _Walk:
    """One expression's walk, with a stack rather than recursion (a chain of thousands of
    operators is as deep as it is long). Facts about condition subtrees are memoised by node
    identity, so a long ``a && b && c ...`` chain (each prefix guards the next conjunct) stays
    linear; a condition larger than :data:`_GUARD_NODES` is taken as open, which keeps the texts
    of the guards of such a chain small."""

    def __init__(self) -> None:
        self._facts: dict[int, tuple[bool, frozenset[str], int]] = {}

    def references(self, root: Node) -> list[_Reference]:
        found: list[_Reference] = []
        stack: list[tuple[Node, tuple]] = [(root, ())]
        while stack:
            node, guards = stack.pop()
            kind = node[0]
            if kind == "attr":
                scope = node[1].lower() if node[1] else None
                if not (scope is None and node[2].lower() in ("target", "my")):
                    found.append(_Reference(scope, node[2], guards))
            elif kind == "sub" and _is_target(node[1]):
                found.append(_Reference("any", ANY_ATTRIBUTE, guards))
                stack.append((node[2], guards))
            elif kind == "bin" and node[1] in ("&&", "||"):
                when = OpenWhen.NOT_FALSE if node[1] == "&&" else OpenWhen.NOT_TRUE
                stack += [(node[3], self._guarded(guards, node[2], when)), (node[2], guards)]
            elif kind == "cond" or (kind == "call" and node[1].lower() == "ifthenelse" and len(node[2]) == 3):
                condition, then, otherwise = node[1:4] if kind == "cond" else node[2]
                stack += [(otherwise, self._guarded(guards, condition, OpenWhen.NOT_TRUE)),
                          (then, self._guarded(guards, condition, OpenWhen.NOT_FALSE)),
                          (condition, guards)]
            elif kind == "elvis":
                stack += [(node[2], self._guarded(guards, node[1], OpenWhen.UNDEFINED)), (node[1], guards)]
            else:
                if kind == "call" and node[1].lower() == "eval":
                    found.append(_Reference("any", ANY_ATTRIBUTE, guards))
                stack.extend((child, guards) for child in reversed(_children(node)))
        return found

    def _guarded(self, guards: tuple, condition: Node, when: OpenWhen) -> tuple:
        """``guards`` plus ``condition`` if the condition can be decided on the job alone: it reads
        no clock and no MY attribute; its bare names are checked against each slot at resolution."""
        decidable, bare, size = self._condition_facts(condition)
        return (*guards, (unparse(condition), when, bare)) if decidable and size <= _GUARD_NODES else guards

    def _condition_facts(self, root: Node) -> tuple[bool, frozenset[str], int]:
        """(reads only the job or bare names, the bare names it reads, its size in nodes)."""
        stack = [(root, False)]
        while stack:
            node, children_known = stack.pop()
            if id(node) in self._facts:
                continue
            kind = node[0]
            if kind == "attr":
                scope = node[1].lower() if node[1] else None
                decidable = scope != "my" and node[2].lower() != CLOCK_ATTRIBUTE
                facts = (decidable, frozenset([node[2]]) if scope is None else frozenset(), 1)
            elif (kind == "sub" and _is_target(node[1])) or (kind == "call" and node[1].lower() in ("eval", "time")):
                facts = (False, frozenset(), 1)
            elif not children_known:
                stack.append((node, True))
                stack.extend((child, False) for child in _children(node))
                continue
            else:
                parts = [self._facts[id(child)] for child in _children(node)]
                facts = (all(p[0] for p in parts), frozenset().union(*(p[1] for p in parts)),
                         1 + sum(p[2] for p in parts))
            self._facts[id(node)] = facts
        return self._facts[id(root)]


def _children(node: Node) -> tuple[Node, ...]:
    kind = node[0]
    if kind in ("un", "paren"):
        return (node[-1],)
    if kind == "bin":
        return (node[2], node[3])
    if kind == "cond":
        return node[1:4]
    if kind == "elvis":
        return (node[1], node[2])
    if kind == "sel":
        return (node[1],)
    if kind == "sub":
        return (node[1], node[2])
    if kind in ("call", "list"):
        return node[-1]
    if kind == "rec":
        return tuple(expr for _, expr in node[1])
    return ()


def _is_target(node: Node) -> bool:
    return node[0] == "attr" and node[1] is None and node[2].lower() == "target"


def _job_attribute(ref: str) -> str:
    scope, dot, attr = ref.partition(".")
    if not dot:
        return ref
    return attr if scope.lower() == "target" else ""


@lru_cache(maxsize=4096)
def _condition(text: str) -> classad2.ExprTree:
    return classad2.ExprTree(text)


_EMPTY = classad2.ClassAd()   # a job-side condition evaluates with MY empty: names fall to TARGET
