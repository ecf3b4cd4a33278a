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
the fast path's kernels decide whether a claimed slot matches at all, and these three questions
are left to classad2 (counted as fallback evaluations).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cached_property, lru_cache

import classad2
import numpy as np

from negotiatord.classad.conversion import as_number, evaluated
from negotiatord.classad.cycle_time import frozen_expr, private_frozen_ad
from negotiatord.classad.parser import ParseError, parse
from negotiatord.evaluation.protocol import UNRANKED, PreemptionAssessment, PreemptionInserts
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.significance import ANY_ATTRIBUTE, job_reads, own_reads
from negotiatord.pool.slots import considers_priority_preemption
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

    Answers are remembered by what they depend on: the slot, the inserted figures the
    expressions read in it, and the values of the job attributes they can read with this slot as
    MY (:func:`~negotiatord.pool.significance.job_reads`, the analysis that makes those attributes
    significant for autoclusters), so the requests of a submitter that differ in other attributes
    are answered once; the rank conditions alone, by what they alone read. Like autoclusters,
    this takes a job attribute's value as the text of its expression.
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
        # row -> what every question reads, and what the rank conditions alone read (_Reads)
        self._reads: dict[int, _Reads] = {}
        self._rank_reads: dict[int, _Reads] = {}
        self._conditions: dict[tuple, tuple[bool, bool]] = {}     # the rank conditions, by what they read
        self._answers: dict[tuple, _Answer] = {}
        self._priority = considers_priority_preemption(settings)
        # row -> its Rank and the Rank's text, if it reads only TARGET
        self._job_ranks: dict[int, tuple[classad2.ExprTree, str] | None] = {}
        # (Rank text, the job's values of what it names) -> rank_for_every_slot
        self._rank_values: dict[tuple, tuple[bool, float | None]] = {}
        self.evaluations = 0                                       # classad2 evaluations made

    # The expressions are made when first asked for: most cycles consider no claimed slot.

    @cached_property
    def _requirements(self) -> classad2.ExprTree | None:
        return _frozen(self._settings.preemption_requirements, self._now)

    @cached_property
    def _rank(self) -> classad2.ExprTree | None:
        return _frozen(self._settings.preemption_rank, self._now)

    @cached_property
    def _all(self) -> classad2.ExprTree:
        """Every expression the questions evaluate, as one, for the job attributes they can read."""
        return classad2.ExprTree(" && ".join(
            f"({expr})" for expr in (RANK_ABOVE, self._requirements, self._rank) if expr is not None))

    def assess(self, autocluster: Autocluster, rows: np.ndarray, inserts: PreemptionInserts) -> PreemptionAssessment:
        job: classad2.ClassAd | None = None
        inserted = {name.lower(): value for name, value in inserts.submitter.items()}
        values_of: dict[tuple[str, ...] | None, tuple] = {}     # read attributes -> this job's values
        n = len(rows)
        rank_above = np.zeros(n, dtype=bool)
        rank_at_least = np.zeros(n, dtype=bool)
        requirements = np.zeros(n, dtype=bool)
        preemption_rank = np.full(n, UNRANKED)
        ranks_for_job: dict[str, tuple[bool, float | None]] = {}   # Rank text -> rank_for_every_slot
        inserts_read: dict[tuple[int, frozenset[str] | None], tuple] = {}   # (figures, names) -> _read_inserts
        for i, row in enumerate(np.asarray(rows).tolist()):
            remote, other_customer = inserts.remote[i], bool(inserts.other_customer[i])
            if job is None:
                job = self._job_ad(autocluster, inserts.submitter)
            settled = self._rank_only(row, remote, autocluster, inserted, job, ranks_for_job)
            if settled is not None:
                rank_above[i], rank_at_least[i] = settled
                if not settled[0] and not (self._priority and other_customer and settled[1]):
                    continue     # neither rule can preempt: nothing else is asked
            slot_names, read = self._reads[row] if row in self._reads else self._read_by(row)
            values = values_of.get(read)
            if values is None:
                values = values_of[read] = _job_values(read, autocluster, inserted)
            # the rows of one customer share its mapping of figures (InsertedFigures), alive all call
            inserts_key = (id(remote), slot_names)
            read_inserts = inserts_read.get(inserts_key)
            if read_inserts is None:
                read_inserts = inserts_read[inserts_key] = _read_inserts(remote, slot_names)
            key = (row, other_customer, read_inserts, values)
            answer = self._answers.get(key)
            if answer is None:
                conditions = settled or self._conditions_of(row, remote, autocluster, inserted, job)
                slot = self._slot_view(row, remote, slot_names, read_inserts)
                answer = self._answers[key] = self._ask(slot, job, other_customer, conditions)
            rank_above[i], rank_at_least[i], requirements[i], preemption_rank[i] = answer
        return PreemptionAssessment(np.asarray(rows), rank_above, rank_at_least, requirements, preemption_rank)

    def _conditions_of(self, row: int, remote: Mapping[str, object], autocluster: Autocluster,
                       inserted: Mapping[str, object], job: classad2.ClassAd) -> tuple[bool, bool]:
        """The two rank conditions, remembered by what they read: the slot, the inserted figures
        among the slot's names they read, and the job's values of the attributes they read. The
        requests of a cycle ask them of the same claimed slots over and over, with the figures
        the conditions rarely read (RemoteUserResourcesInUse, ...) changing as jobs match."""
        if row not in self._rank_reads:
            self._rank_reads[row] = _reads(RANK_ABOVE, self._table.slots[row].ad)
        slot_names, job_attributes = self._rank_reads[row]
        read_inserts = _read_inserts(remote, slot_names)
        key = (row, read_inserts, _job_values(job_attributes, autocluster, inserted))
        found = self._conditions.get(key)
        if found is None:
            found = self._conditions[key] = self._rank_conditions(
                self._slot_view(row, remote, slot_names, read_inserts), job)
        return found

    def _ask(self, slot: classad2.ClassAd, job: classad2.ClassAd, other_customer: bool,
             conditions: tuple[bool, bool]) -> _Answer:
        above, at_least = conditions
        holds = False
        if other_customer and not above and at_least:
            # matchmaker.cpp: no PREEMPTION_REQUIREMENTS (set empty) puts no condition on it
            self.evaluations += 1
            holds = self._requirements is None or evaluated(self._requirements, slot, job) is True
        rank = UNRANKED
        if (above or holds) and self._rank is not None:
            self.evaluations += 1
            value = evaluated(self._rank, slot, job)
            number = float(value) if isinstance(value, bool) else as_number(value)
            rank = UNRANKED if number is None else number
        return above, at_least, holds, rank

    def _rank_only(self, row: int, remote: Mapping[str, object], autocluster: Autocluster,
                   inserted: Mapping[str, object], job: classad2.ClassAd,
                   ranks_for_job: dict[str, tuple[bool, float | None]]) -> tuple[bool, bool] | None:
        """The two rank conditions without the slot's ad, when the slot's ``Rank`` has one value
        for the job on every slot (:func:`rank_for_every_slot`: the OSPool's
        ``TARGET.RequestGPUs ?: 0``) and its CurrentRank is a number: the Rank is then evaluated
        once per Rank text and values of the job attributes it names (remembered across calls),
        not once per slot. None when the slot's ad must be asked."""
        found = self._job_ranks[row] if row in self._job_ranks else self._job_rank(row)
        claim = self._table.slots[row].claim
        current = remote.get("CurrentRank", None if claim is None else claim.current_rank)
        if found is None or isinstance(current, bool) or not isinstance(current, (int, float)):
            return None
        rank, text = found
        decided = ranks_for_job.get(text)
        if decided is None:
            names = _target_names(text)
            assert names is not None      # _job_rank keeps only such Ranks
            key = (text, _job_values(tuple(sorted({name.lower() for name in names})), autocluster, inserted))
            decided = self._rank_values.get(key)
            if decided is None:
                self.evaluations += 1
                decided = self._rank_values[key] = rank_for_every_slot(rank, job)
            ranks_for_job[text] = decided
        decidable, value = decided
        if not decidable:
            return None
        return (False, False) if value is None else (value > current, value >= current)

    def _job_rank(self, row: int) -> tuple[classad2.ExprTree, str] | None:
        """``row``'s Rank, frozen, and its text, if it names only TARGET attributes (else None)."""
        ad = self._table.slots[row].ad
        rank = ad.lookup("Rank") if "Rank" in ad else None
        found = None
        if rank is not None and _target_names(str(rank)) is not None:
            frozen = frozen_expr(rank, self._now)
            found = (frozen, str(frozen))
        self._job_ranks[row] = found
        return found

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

    def _read_by(self, row: int) -> _Reads:
        """What the questions can read on ``row`` (:func:`_reads`). Read on the slot's own ad: a
        name inserted into it is then counted as a job attribute too, which only makes the
        answers' key longer."""
        found = self._reads[row] = _reads(self._all, self._table.slots[row].ad)
        return found

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


_Answer = tuple[bool, bool, bool, float]
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


def _read_inserts(inserted: Mapping[str, object], names: frozenset[str] | None) -> tuple:
    """The inserted figures among ``names`` (None: all): all an answer depends on of what was
    inserted. The others (``RemoteUserResourcesInUse`` moves with every match) would only make
    answers miss."""
    return tuple((name, value) for name, value in inserted.items() if names is None or name.lower() in names)
# the slot's Rank for the job and its CurrentRank, whose comparisons are the two rank conditions
RANK_OF_SLOT = classad2.ExprTree("MY.Rank")
CURRENT_RANK = classad2.ExprTree("MY.CurrentRank")


def _job_values(read: tuple[str, ...] | None, autocluster: Autocluster, inserted: Mapping[str, object]) -> tuple:
    """The request's values of the job attributes ``read`` (inserted ones as inserted, the
    others as the text of their expressions); the request itself when any attribute is read."""
    if read is None:
        return ("autocluster", autocluster.id)
    ad = autocluster.ad
    return tuple(inserted[name] if name in inserted else (str(ad.lookup(name)) if name in ad else None)
                 for name in read)


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
