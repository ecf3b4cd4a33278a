"""What decides whether an idle job may take a claimed slot, answered by classad2.

HTCondor's matchmaker.cpp (``matchmakingAlgorithm``) asks three things of a claimed slot that
matches a job, all with the slot as MY and the job as TARGET:

- ``MY.Rank > MY.CurrentRank``: the startd prefers the job to the one it runs (RANK preemption,
  whatever the priorities);
- ``MY.Rank >= MY.CurrentRank`` and ``PREEMPTION_REQUIREMENTS``: priority preemption is allowed;
- ``PREEMPTION_RANK``: which of the slots such a job could preempt it takes first.

(HTCondor evaluates PREEMPTION_REQUIREMENTS only when the slot does not prefer the job and its
customer is not the submitter, and PREEMPTION_RANK only for a slot the job may preempt.)

Before that, HTCondor inserts the submitter's figures into the job ad (``SubmitterUserPrio``,
``SubmitterGroup``, ...) and the running customer's into the slot ad (``RemoteUserPrio``,
``RemoteGroup``, ...). Here they go into private ads, so the snapshot's ads are never changed:
per request, a copy of its job ad; per claimed slot, the few attributes the questions read in it
(or a whole copy, when ``eval()`` may read any). Both evaluators answer through this class:
the fast path's kernels decide whether a claimed slot matches at all, an evaluator may answer
PREEMPTION_REQUIREMENTS and PREEMPTION_RANK itself (:class:`CompiledAnswers`: the fast path
compiles them), and the rest is left to classad2 (counted as fallback evaluations).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cached_property, lru_cache
from typing import Protocol, cast

import classad2
import numpy as np

from negotiatord.classad.conversion import as_number, evaluated
from negotiatord.classad.cycle_time import frozen_expr, private_frozen_ad
from negotiatord.classad.parser import ParseError, parse
from negotiatord.evaluation.protocol import UNRANKED, PreemptionAssessment, PreemptionInserts
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.significance import ANY_ATTRIBUTE, job_reads, own_reads
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

# matchmaker.cpp's rankCondStd and rankCondPrioPreempt
RANK_ABOVE = classad2.ExprTree("MY.Rank > MY.CurrentRank")
RANK_AT_LEAST = classad2.ExprTree("MY.Rank >= MY.CurrentRank")

class PreemptionQuestions:
    """Asks the questions with classad2 for claimed slots of one slot table.

    Only what the decision needs is evaluated: the slot's Rank for the job once (both rank
    conditions come from it when it and CurrentRank are numbers); PREEMPTION_REQUIREMENTS only
    where priority preemption is still possible (the slot's customer is another, the slot does
    not prefer the job, and ranks it at least as well); PREEMPTION_RANK only where the slot can
    be preempted.

    Each question's answers are remembered by what it reads: each of the slot's attributes it
    reads, the inserted figures among them, and the values of the job attributes it can read
    with the slot as MY (:func:`~negotiatord.pool.significance.job_reads`, the analysis that
    makes those attributes significant for autoclusters). So the requests of a submitter that
    differ in other attributes are answered once, and slots alike in what a question reads
    share its answer: condor_config.annotated's PREEMPTION_RANK,
    ``(RemoteUserPrio * 1000000) - TARGET.ImageSize``, is asked once per customer and ImageSize.
    A job attribute that is an expression (it may read any of the slot's attributes) keeps the
    answer to its slot and request.
    """

    def __init__(self, table: SlotTable, settings: Settings, now: int) -> None:
        self._table = table
        self._settings = settings
        self._now = now
        self._slot_ads: dict[int, tuple[classad2.ClassAd, dict[str, object]]] = {}   # row -> copy, inserted
        # (row, names read, inserted figures read) -> those attributes alone, see _slot_view
        self._probes: dict[tuple, classad2.ClassAd] = {}
        self._own_attributes: dict[tuple[int, frozenset[str]], list[tuple[str, classad2.ExprTree]]] = {}
        self._job_ads: dict[int, classad2.ClassAd] = {}
        self._reads: dict[tuple[int, int], _Reads] = {}              # (question, row) -> what it reads there
        self._contents: dict[tuple[int, frozenset[str]], object] = {}  # (row, names) -> their texts' key
        self._known_contents: dict[tuple, int] = {}                  # those texts -> a short key
        self._answers: dict[tuple, object] = {}                      # (question, what it read) -> answer
        # the slots' Ranks that read only TARGET, frozen, and their texts (_slot_ranks)
        self._rank_texts: list[tuple[classad2.ExprTree, str]] = []
        self._rank_ids: dict[str, int] = {}
        self._rank_text_of = np.full(len(table), _NOT_READ, dtype=np.int64)   # row -> its Rank's id, -1: none
        self._claim_current = np.full(len(table), np.nan)                     # row -> its claim's CurrentRank
        # (Rank text, the job's values of what it names) -> rank_for_every_slot
        self._rank_values: dict[tuple, tuple[bool, float | None]] = {}
        self.evaluations = 0                                       # classad2 evaluations made
        self.compiled: CompiledAnswers | None = None               # tried first, where set

    # The expressions are made when first asked for: most cycles consider no claimed slot.

    @cached_property
    def _requirements(self) -> classad2.ExprTree | None:
        return _frozen(self._settings.preemption_requirements, self._now)

    @cached_property
    def _rank(self) -> classad2.ExprTree | None:
        return _frozen(self._settings.preemption_rank, self._now)

    def assess(self, autocluster: Autocluster, rows: np.ndarray, inserts: PreemptionInserts) -> PreemptionAssessment:
        n = len(rows)
        rank_above = np.zeros(n, dtype=bool)
        rank_at_least = np.zeros(n, dtype=bool)
        requirements = np.zeros(n, dtype=bool)
        preemption_rank = np.full(n, UNRANKED)
        if not n:
            return PreemptionAssessment(np.asarray(rows), rank_above, rank_at_least, requirements, preemption_rank)
        rows = np.asarray(rows, dtype=np.int64)
        call = _Call(autocluster, inserts, self._job_ad(autocluster, inserts.submitter))
        settled, rank_above[:], rank_at_least[:] = self._ranks_only(rows, inserts, call)
        for i in np.flatnonzero(~settled).tolist():
            rank_above[i], rank_at_least[i] = cast(
                tuple[bool, bool], self._asked(_CONDITIONS, int(rows[i]), inserts.remote[i], call))
        other_customer = np.asarray(inserts.other_customer, dtype=bool)
        asked = np.flatnonzero(other_customer & ~rank_above & rank_at_least)
        # matchmaker.cpp: no PREEMPTION_REQUIREMENTS (set empty) puts no condition on it
        requirements[asked] = True if self._requirements is None else self._answered(
            _REQUIREMENTS, asked, rows, inserts, call)
        if self._rank is not None:
            asked = np.flatnonzero(rank_above | requirements)
            preemption_rank[asked] = self._answered(_RANK, asked, rows, inserts, call)
        return PreemptionAssessment(rows, rank_above, rank_at_least, requirements, preemption_rank)

    def _answered(self, question: int, positions: np.ndarray, rows: np.ndarray, inserts: PreemptionInserts,
                  call: _Call) -> np.ndarray:
        """PREEMPTION_REQUIREMENTS or PREEMPTION_RANK at ``positions`` of ``rows``: compiled
        (:attr:`compiled`) where it answers, else by classad2."""
        n = len(positions)
        answers = np.zeros(n, dtype=bool) if question == _REQUIREMENTS else np.full(n, UNRANKED)
        left = np.arange(n)
        if self.compiled is not None and n:
            found = self.compiled.answers(QUESTIONS[question], call.autocluster, rows[positions], inserts)
            if found is not None:
                values, answered = found
                answers[answered] = values[answered]
                left = np.flatnonzero(~answered)
        for k in left.tolist():
            position = int(positions[k])
            answers[k] = self._asked(question, int(rows[position]), inserts.remote[position], call)
        return answers

    def _asked(self, question: int, row: int, remote: Mapping[str, object], call: _Call) -> object:
        """One question's answer for ``row``, remembered by what the question reads there."""
        reads = self._reads.get((question, row))
        if reads is None:
            expression = RANK_ABOVE if question == _CONDITIONS else self._requirements if question == _REQUIREMENTS \
                else self._rank
            assert expression is not None      # asked only of expressions set
            reads = self._reads[question, row] = _reads(expression, self._table.slots[row].ad)
        names, attributes = reads
        values, literal = call.job_values(attributes)
        if not literal:
            names = None      # a job attribute's expression may read any of the slot's, inserted ones too
        read_inserts = call.read_inserts(remote, names)
        key = (question, self._content(row, names), read_inserts, values)
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._evaluate(question, self._slot_view(row, remote, names, read_inserts),
                                                        call.job)
        return found

    def _evaluate(self, question: int, slot: classad2.ClassAd, job: classad2.ClassAd) -> object:
        if question == _CONDITIONS:
            return self._rank_conditions(slot, job)
        self.evaluations += 1
        if question == _REQUIREMENTS:
            assert self._requirements is not None
            return evaluated(self._requirements, slot, job) is True
        assert self._rank is not None
        value = evaluated(self._rank, slot, job)
        number = float(value) if isinstance(value, bool) else as_number(value)
        return UNRANKED if number is None else number

    def _content(self, row: int, names: frozenset[str] | None) -> object:
        """What a question reading ``names`` in ``row`` reads of the slot's own ad, as a key: each
        of those attributes the slot holds (:func:`_value_key`; the slot itself when ``eval()``
        may read any)."""
        if names is None:
            return ("row", row)
        found = self._contents.get((row, names))
        if found is None:
            ad = self._table.slots[row].ad
            texts = tuple((name, _value_key(ad, name)) for name in sorted(names) if name in ad)
            found = self._contents[row, names] = self._known_contents.setdefault(texts, len(self._known_contents))
        return found

    def _ranks_only(self, rows: np.ndarray, inserts: PreemptionInserts,
                    call: _Call) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The two rank conditions without the slots' ads, where a slot's ``Rank`` has one value
        for the job on every slot (:func:`rank_for_every_slot`: the OSPool's
        ``TARGET.RequestGPUs ?: 0``) and its CurrentRank (as inserted) is a number: each Rank is
        then evaluated once per text and values of the job attributes it names (remembered
        across calls), not once per slot. Whether each row is settled so, and the conditions."""
        texts, claim_currents = self._slot_ranks(rows)
        # a CurrentRank inserted (PreemptingRank) stands for the claim's; one lookup per customer
        # (the rows of one customer share its mapping of figures: InsertedFigures)
        ids = np.fromiter(map(id, inserts.remote), dtype=np.int64, count=len(rows))
        _, first, of_row = np.unique(ids, return_index=True, return_inverse=True)
        inserted = [inserts.remote[position].get("CurrentRank", _ABSENT) for position in first.tolist()]
        overrides = np.array([value is not _ABSENT for value in inserted])[of_row]
        override_values = np.array([_number(value) for value in inserted], dtype=np.float64)[of_row]
        current = np.where(overrides, override_values, claim_currents)
        decidable = np.zeros(len(self._rank_texts), dtype=bool)
        values = np.full(len(self._rank_texts), np.nan)      # NaN: the Rank is no number
        for text_id in np.unique(texts[texts >= 0]).tolist():
            decided, number = self._rank_for_job(text_id, call)
            decidable[text_id] = decided
            values[text_id] = np.nan if number is None else number
        settled = (texts >= 0) & ~np.isnan(current)
        settled[settled] = decidable[texts[settled]]
        value = np.full(len(rows), np.nan)
        value[settled] = values[texts[settled]]
        with np.errstate(invalid="ignore"):
            return settled, settled & (value > current), settled & (value >= current)

    def _rank_for_job(self, text_id: int, call: _Call) -> tuple[bool, float | None]:
        """:func:`rank_for_every_slot` of the Rank ``text_id`` for the call's job."""
        rank, text = self._rank_texts[text_id]
        decided = call.ranks.get(text)
        if decided is None:
            names = _target_names(text)
            assert names is not None      # _slot_ranks keeps only such Ranks
            key = (text, call.job_values(tuple(sorted({name.lower() for name in names})))[0])
            decided = self._rank_values.get(key)
            if decided is None:
                self.evaluations += 1
                decided = self._rank_values[key] = rank_for_every_slot(rank, call.job)
            call.ranks[text] = decided
        return decided

    def _slot_ranks(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each row, its Rank's id in ``_rank_texts`` if the Rank names only TARGET attributes
        (else -1), and its claim's CurrentRank (NaN when it is none); worked out once per row."""
        unknown = rows[self._rank_text_of[rows] == _NOT_READ]
        for row in unknown.tolist():
            ad = self._table.slots[row].ad
            rank = ad.lookup("Rank") if "Rank" in ad else None
            text_id = -1
            if rank is not None and _target_names(str(rank)) is not None:
                frozen = frozen_expr(rank, self._now)
                text_id = self._rank_ids.setdefault(str(frozen), len(self._rank_texts))
                if text_id == len(self._rank_texts):
                    self._rank_texts.append((frozen, str(frozen)))
            self._rank_text_of[row] = text_id
            claim = self._table.slots[row].claim
            self._claim_current[row] = _number(None if claim is None else claim.current_rank)
        return self._rank_text_of[rows], self._claim_current[rows]

    def _rank_conditions(self, slot: classad2.ClassAd, job: classad2.ClassAd) -> tuple[bool, bool]:
        """``MY.Rank > MY.CurrentRank`` and ``MY.Rank >= MY.CurrentRank``: compared here when
        both are numbers, else evaluated by classad2 as written."""
        self.evaluations += 2
        rank = as_number(evaluated(RANK_OF_SLOT, slot, job))
        current = as_number(evaluated(CURRENT_RANK, slot, job))
        if rank is not None and current is not None:
            return rank > current, rank >= current
        self.evaluations += 2
        return evaluated(RANK_ABOVE, slot, job) is True, evaluated(RANK_AT_LEAST, slot, job) is True

    def _job_ad(self, autocluster: Autocluster, inserted: Mapping[str, object]) -> classad2.ClassAd:
        ad = self._job_ads.get(autocluster.id)
        if ad is None:
            ad = self._job_ads[autocluster.id] = private_frozen_ad(autocluster.ad, self._now)
        ad.update(inserted)
        return ad

    def _slot_view(self, row: int, remote: Mapping[str, object], names: frozenset[str] | None,
                   read_inserts: tuple) -> classad2.ClassAd:
        """The slot as questions reading ``names`` in it see it, with ``read_inserts`` (the
        inserted figures among them) put in. When the names are known, a small ad of those
        attributes alone: an expression evaluated with it as MY reads what it would read in the
        whole ad with the figures inserted, at a fraction of the cost of copying a slot ad of a
        hundred attributes. Each attribute as :func:`frozen_ad` freezes it (``time()`` is the
        cycle's), and ``CurrentTime``, which the questions read undefined, is the cycle's time.
        With ``eval()`` any name may be read: the slot's private copy (:meth:`_slot_ad`)."""
        if names is None:
            return self._slot_ad(row, remote)
        key = (row, names, read_inserts)
        probe = self._probes.get(key)
        if probe is None:
            own = self._own_attributes.get((row, names))
            if own is None:
                ad = self._table.slots[row].ad
                own = self._own_attributes[row, names] = [(name, frozen_expr(ad.lookup(name), self._now))
                                                          for name in sorted(names) if name in ad]
            probe = self._probes[key] = classad2.ClassAd()
            for name, expression in own:
                probe[name] = expression
            probe.update(dict(read_inserts))
            if "currenttime" in names and "CurrentTime" not in probe:
                probe["CurrentTime"] = self._now
        return probe

    def _slot_ad(self, row: int, inserted: Mapping[str, object]) -> classad2.ClassAd:
        """The slot's private copy carrying ``inserted`` (assigned only when they changed; copied
        afresh when a name inserted before is not inserted now, as the ad's own value is then
        the one to read)."""
        found = self._slot_ads.get(row)
        if found is None or found[1].keys() - inserted.keys():
            found = self._slot_ads[row] = (private_frozen_ad(self._table.slots[row].ad, self._now), {})
        ad, current = found
        if current != inserted:
            ad.update(inserted)
            current.clear()
            current.update(inserted)
        return ad


# the questions: the two rank conditions (asked together), PREEMPTION_REQUIREMENTS, PREEMPTION_RANK
_CONDITIONS, _REQUIREMENTS, _RANK = range(3)
REQUIREMENTS_QUESTION, RANK_QUESTION = "preemption_requirements", "preemption_rank"   # as CompiledAnswers names them
QUESTIONS = {_REQUIREMENTS: REQUIREMENTS_QUESTION, _RANK: RANK_QUESTION}


class CompiledAnswers(Protocol):
    """An evaluator's own answers to PREEMPTION_REQUIREMENTS and PREEMPTION_RANK (the fast path
    compiles them), tried before classad2."""

    def answers(self, question: str, autocluster: Autocluster, rows: np.ndarray,
                inserts: PreemptionInserts) -> tuple[np.ndarray, np.ndarray] | None:
        """``question`` ("preemption_requirements": whether it is true; "preemption_rank": its
        number, -DBL_MAX where it is none) for table ``rows`` with ``inserts`` (parallel to them),
        and which rows it answers; None when it answers none."""
        ...


# what an expression reads with a slot as MY: the names it reads in the slot (folded, those the
# slot lacks included: an insert may supply them; None: any), and the job's attributes (None: any)
_Reads = tuple[frozenset[str] | None, tuple[str, ...] | None]


def _reads(expression: classad2.ExprTree, slot: classad2.ClassAd) -> _Reads:
    """What ``expression`` reads with ``slot`` as MY: the names it reads in the slot
    (:func:`~negotiatord.pool.significance.own_reads`), and the job attributes
    (:func:`~negotiatord.pool.significance.job_reads`)."""
    attributes = {read.attribute.lower() for read in job_reads(expression, slot)}
    return (own_reads(str(expression), slot).names,
            None if ANY_ATTRIBUTE in attributes else tuple(sorted(attributes)))


_NOT_READ = -2                # a row whose Rank _slot_ranks has not read yet
_ABSENT = object()            # no CurrentRank inserted


def _number(value: object) -> float:
    """A CurrentRank as the rank conditions compare it: a number, else NaN (booleans are none)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else np.nan


def _value_key(ad: classad2.ClassAd, name: str) -> object:
    """An attribute of ``ad`` as an answer's key: the text of its expression, and a real's exact
    value besides (its text keeps 16 digits: two reals may print alike)."""
    text = str(ad.lookup(name))
    value = ad.get(name)
    return (text, value.hex()) if type(value) is float else text


def _read_inserts(inserted: Mapping[str, object], names: frozenset[str] | None) -> tuple:
    """The inserted figures among ``names`` (None: all): all an answer depends on of what was
    inserted. The others (``RemoteUserResourcesInUse`` moves with every match) would only make
    answers miss."""
    return tuple((name, value) for name, value in inserted.items() if names is None or name.lower() in names)
# the slot's Rank for the job and its CurrentRank, whose comparisons are the two rank conditions
RANK_OF_SLOT = classad2.ExprTree("MY.Rank")
CURRENT_RANK = classad2.ExprTree("MY.CurrentRank")


class _Call:
    """One request's call: its job ad with the submitter's figures inserted, and what the rows of
    the call share, worked out once."""

    def __init__(self, autocluster: Autocluster, inserts: PreemptionInserts, job: classad2.ClassAd) -> None:
        self.autocluster = autocluster
        self._inserted = {name.lower(): value for name, value in inserts.submitter.items()}
        self.job = job
        self.ranks: dict[str, tuple[bool, float | None]] = {}     # Rank text -> rank_for_every_slot
        self._values: dict[tuple[str, ...] | None, tuple[tuple, bool]] = {}
        self._read_inserts: dict[tuple[int, frozenset[str] | None], tuple] = {}

    def job_values(self, read: tuple[str, ...] | None) -> tuple[tuple, bool]:
        """The request's values of the job attributes ``read`` (inserted ones as inserted, the
        others by :func:`_value_key`), and True; or, when any attribute may be read or
        one read is an expression (it may read the slot, and job attributes no analysis of the
        question names), the request itself with every inserted figure, and False."""
        found = self._values.get(read)
        if found is None:
            ad, inserted = self.autocluster.ad, self._inserted
            if read is not None and all(name in inserted or not isinstance(ad.get(name), classad2.ExprTree)
                                        for name in read):
                found = (tuple(inserted[name] if name in inserted else (_value_key(ad, name) if name in ad else None)
                               for name in read), True)
            else:
                found = (("autocluster", self.autocluster.id, tuple(sorted(inserted.items()))), False)
            self._values[read] = found
        return found

    def read_inserts(self, remote: Mapping[str, object], names: frozenset[str] | None) -> tuple:
        """:func:`_read_inserts`, once per customer: the rows of one customer share its mapping
        of figures (InsertedFigures), which lives as long as the call."""
        key = (id(remote), names)
        found = self._read_inserts.get(key)
        if found is None:
            found = self._read_inserts[key] = _read_inserts(remote, names)
        return found


def rank_for_every_slot(rank: classad2.ExprTree, job: classad2.ClassAd, inserted: Mapping[str, object] | None = None,
                        varying: Collection[str] = ()) -> tuple[bool, float | None]:
    """Whether a slot's ``rank`` has the same value for ``job`` (with ``inserted`` figures put in)
    on every slot, and that value (None when it is no number: ``MY.Rank > MY.CurrentRank`` then
    never holds). It has when the expression names attributes only as ``TARGET.<name>``, calls
    no function, and each job attribute it names is missing or a literal (an expression could
    read the slot) and not one of ``varying`` (lower-case names whose values may change before
    the answer is used). Evaluated against those attributes alone, not a copy of the job ad."""
    names = _target_names(str(rank))
    if names is None:
        return False, None
    given = {name.lower(): value for name, value in (inserted or {}).items()}
    probe = classad2.ClassAd()
    for name in names:
        key = name.lower()
        if key in varying:
            return False, None
        if key in given:
            probe[name] = given[key]
        elif name in job:
            value = job.get(name)
            if isinstance(value, classad2.ExprTree):
                return False, None
            probe[name] = value
    value = evaluated(rank, classad2.ClassAd(), probe)
    return True, None if isinstance(value, bool) else as_number(value)


def names_only_target(expression: classad2.ExprTree) -> bool:
    """Whether ``expression`` names attributes only as ``TARGET.<name>`` and calls no function."""
    return _target_names(str(expression)) is not None


@lru_cache(maxsize=256)
def _target_names(text: str) -> tuple[str, ...] | None:
    """The attributes the expression ``text`` names, if it names them only as ``TARGET.<name>``
    and calls no function; else None."""
    try:
        tree = parse(text)
    except ParseError:
        return None
    names: list[str] = []
    return tuple(names) if _target_only(tree, names) else None


def _target_only(node: object, names: list[str]) -> bool:
    if not isinstance(node, tuple) or not node or node[0] == "lit":
        return True
    if node[0] == "attr":
        names.append(str(node[2]))
        return isinstance(node[1], str) and node[1].lower() == "target"
    if node[0] in ("call", "sel", "sub", "rec", "inexact"):
        return False
    return all(_target_only(child, names) for child in node[1:] if isinstance(child, tuple))


def _frozen(text: str | None, now: int) -> classad2.ExprTree | None:
    return None if text is None else frozen_expr(classad2.ExprTree(text), now)
