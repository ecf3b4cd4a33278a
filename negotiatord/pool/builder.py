"""Building snapshots cycle after cycle, redoing per-ad work only for ads that changed.

A collector feed replaces an ad object when the ad is updated, so an ad object seen in the last
cycle holds the same ad: its slot or job record, the job attributes a slot's expressions read and
a job's significant-attribute values carry over. So do the autoclusters: the builder hands them the
jobs that left and joined, and only the groups those touch are reconsidered. This is what keeps a
daemon's snapshot cheap on a 45k-slot, 255k-job pool (HTCondor's schedd likewise caches each job's
autocluster id until a significant attribute changes). A settings reload drops the slot work,
which depends on the config.

A daemon's store keeps most job ads as :class:`~negotiatord.pool.job_ads.ProcAd` records (its
cluster's ad and its own identity). The jobs of one cluster ad are read once and share one
MatchmakingAd under :class:`SharedAds`' rules; where these forbid it, each job is read whole.
The rules depend on what the slots read, so jobs read under other rules are read again.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Iterator
from weakref import WeakKeyDictionary

import classad2
import numpy as np

from negotiatord.ads import RepeatedAd
from negotiatord.pool.autoclusters import (
    JOB,
    Autocluster,
    Autoclusters,
    ClusteringJob,
    Significance,
    significance,
)
from negotiatord.classad.conversion import satisfies
from negotiatord.pool.job_ads import ClusterAd, MatchmakingAd, ProcAd, SharedAds, mentions_identity, readable_ad
from negotiatord.pool.jobs import Job, prepare_job, with_identity
from negotiatord.pool.problems import LeftOut
from negotiatord.pool.significance import JobRead, slot_job_reads
from negotiatord.pool.slots import Slot, may_be_preempted, prepare_slot
from negotiatord.pool.snapshot import SlotTable, Snapshot
from negotiatord.settings import Settings

DUPLICATE = "appears more than once; the last ad is used"


@dataclass(slots=True, eq=False)
class _SlotEntry:
    """One ad of the slot ads as the last cycle read it: a slot, a problem, or not a Machine ad."""

    ad: classad2.ClassAd
    slot: Slot | None = None
    problem: LeftOut | None = None
    candidate: bool = False                  # the slot is offered to idle jobs
    reads: frozenset[JobRead] | None = None  # job attributes the cycle's expressions of it read, once asked
    preemptable: bool | None = None          # may_be_preempted, once asked


_OTHER, _IDLE, _NOT_IDLE, _PROBLEM = range(4)        # what a job ad is to a cycle


@dataclass(slots=True, eq=False)
class _JobEntry:
    """One Job ad as the last cycle read it: an idle job, a problem, or neither (not idle)."""

    ad: classad2.ClassAd | None              # None in a builder that does not remember
    position: int                            # among the Job ads of the input, from 1
    job: ClusteringJob | None = None         # the idle job, with what autoclustering learnt
    problem: LeftOut | None = None

    @property
    def kind(self) -> int:
        return _IDLE if self.job is not None else _PROBLEM if self.problem is not None else _NOT_IDLE


@dataclass(eq=False)
class _JobQueue:
    """One cycle's job ads in input order, as columns.

    The next cycle finds each of its ads here by ``id`` (``ads`` keeps them alive, so no other ad
    can have that id meanwhile) and so reuses the entries of unchanged ads. It does that, and
    finds the ads that are new or gone, with array operations: a Python step for each of 255k ads
    would cost more than the rest of the snapshot.
    """

    ads: list[classad2.ClassAd | ProcAd]
    keys: np.ndarray                  # id(ad)
    entries: np.ndarray               # its _JobEntry (object); None for an ad that is not a Job ad
    jobs: np.ndarray                  # its idle job (object), else None
    kinds: np.ndarray                 # int8: _IDLE, _NOT_IDLE, _PROBLEM, or _OTHER (not a Job ad)
    positions: np.ndarray             # among the Job ads, from 1; 0 for other ads
    job_ids: set[str] | None = None   # the idle jobs' ids, if no ad and no job id came twice

    @classmethod
    def empty(cls) -> _JobQueue:
        no_objects, no_ints = np.empty(0, dtype=object), np.empty(0, np.int64)
        return cls([], no_ints, no_objects, no_objects, np.empty(0, np.int8), no_ints, set())

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """Each key's row here, -1 for keys not here."""
        if not len(self.keys):
            return np.full(len(keys), -1, np.int64)
        order = np.argsort(self.keys)
        at = np.searchsorted(self.keys, keys, sorter=order).clip(max=len(order) - 1)
        return np.where(self.keys[order[at]] == keys, order[at], -1)

    def idle_jobs(self) -> list[ClusteringJob]:
        return list(self.jobs[self.kinds == _IDLE])

    def problems(self) -> list[LeftOut]:
        return [entry.problem for entry in self.entries[self.kinds == _PROBLEM]]

    def count(self, kind: int) -> int:
        return int(np.count_nonzero(self.kinds == kind))


@dataclass
class _IdleJobs:
    """The idle jobs of one cycle's job ads, and how they differ from the last cycle's."""

    jobs: list[ClusteringJob]            # in input order (the last ad of a job id counts)
    non_idle: int
    leaving: list[ClusteringJob]         # idle jobs of the last cycle whose ads are gone
    joining: list[ClusteringJob]         # idle jobs of new ads
    comparable: bool                     # the others are the last cycle's, in the same order, each once


class SnapshotBuilder:
    """Snapshots of the ads it is given, cycle after cycle.

    ``remember=False`` makes a builder for one-off builds, which keeps nothing for a next one: job
    ads stream through it (each read and let go), and jobs equal in all a cycle reads share one ad
    (:class:`~negotiatord.pool.job_ads.SharedAds`), so a 255k-job pool need not be held in memory.

    ``offered_again``: how many slot ads left out of a cycle keep their entries (the most recently
    offered first), for a caller that offers the very same ad object again later. A trace replay
    does: a node's own ad comes back when its jobs end. Its Slot record is then the one of before,
    and so is all a cycle keeps by record (descriptions, the match space's row, the slot weight).
    A daemon's collector sends a new ad for every change, so it keeps none.
    """

    def __init__(self, *, remember: bool = True, offered_again: int = 0) -> None:
        self._remember = remember
        self._offered_again = offered_again
        self._settings: Settings | None = None
        self._slots: dict[int, _SlotEntry] = {}
        self._left_out: OrderedDict[int, _SlotEntry] = OrderedDict()      # see offered_again
        # the last slot table and what its slots read of jobs, for a cycle of the very same slots
        self._table: tuple[SlotTable, Significance, np.ndarray] | None = None
        self._read_sets: dict[frozenset[JobRead], frozenset[JobRead]] = {}   # the slots' distinct reads
        # what the settings' expressions say, of the settings the slot entries were read under
        self._rank_exprs: list[classad2.ExprTree] = []
        self._preemption_exprs: list[classad2.ExprTree] = []
        self._queue = _JobQueue.empty()
        self._autoclusters = Autoclusters()
        # what was read of each cluster ad, under the sharing rules of the last cycle
        self._clusters: WeakKeyDictionary[ClusterAd, tuple[Job | LeftOut | None, MatchmakingAd | None]] = \
            WeakKeyDictionary()
        self._sharing_rules: tuple[bool, frozenset[JobRead]] | None = None

    def build(self, slot_ads: Iterable[classad2.ClassAd],
              job_ads: Iterable[classad2.ClassAd | RepeatedAd | ProcAd], settings: Settings) -> Snapshot:
        if settings is not self._settings:
            if self._settings is not None and settings.job_constraint != self._settings.job_constraint:
                # the jobs of the last cycle were taken or left out under another constraint
                self._queue, self._autoclusters, self._clusters = _JobQueue.empty(), Autoclusters(), WeakKeyDictionary()
                self._sharing_rules = None
            self._settings, self._slots, self._read_sets = settings, {}, {}
            self._left_out.clear()
            self._rank_exprs = _expressions(settings.pre_job_rank, settings.post_job_rank)
            self._preemption_exprs = _expressions(settings.preemption_requirements, settings.preemption_rank)
        problems: list[LeftOut] = []
        slots = self._slots_read(slot_ads, settings, problems)
        listed = [slot for slot, _ in slots]
        if self._table is not None and _same_records(listed, self._table[0].slots):
            table, significant, preemptable = self._table      # read-only: the last ones serve again
        else:
            table = SlotTable.from_slots(listed)
            # each distinct set once (the entries share equal sets: _reads)
            reads = set().union(*{self._reads(slot, entry, settings) for slot, entry in slots})
            significant = significance(reads, table.assets)
            preemptable = np.fromiter((_preemptable(slot, entry, settings) for slot, entry in slots), bool,
                                      len(slots))
            preemptable.setflags(write=False)
            if self._remember:
                self._table = (table, significant, preemptable)
        if self._remember:
            idle = self._idle_jobs(map(_kept, job_ads), problems, self._sharing(significant))
        else:
            idle = self._idle_jobs_streamed(job_ads, problems, significant)
        autoclusters, significant = self._autoclustered(idle, significant)
        return Snapshot(
            table=table,
            jobs=tuple(map(JOB, idle.jobs)),
            autoclusters=tuple(autoclusters),
            significant_attributes=significant.names,
            problems=tuple(problems),
            non_idle_jobs=idle.non_idle,
            preemptable=preemptable,
            preemptable_under=settings,
        )

    def _sharing(self, significant: Significance) -> SharedAds:
        """The sharing rules of this cycle's significance. Under rules that differ from the last
        cycle's, the jobs of cluster ads read before are read again, with all other jobs: their
        entries may share an ad the new rules forbid sharing (a slot now reads their identity)."""
        shared = SharedAds(significant.unconditional, significant.guarded, self._autoclusters.signatures)
        if shared.rules != self._sharing_rules:
            if len(self._clusters):
                self._queue, self._autoclusters, self._clusters = _JobQueue.empty(), Autoclusters(), WeakKeyDictionary()
                shared = SharedAds(significant.unconditional, significant.guarded, self._autoclusters.signatures)
            self._sharing_rules = shared.rules
        return shared

    def _autoclustered(self, idle: _IdleJobs, significant: Significance) -> tuple[list[Autocluster], Significance]:
        """The last cycle's autoclusters updated with the jobs that left and joined, if that can tell
        (see :meth:`Autoclusters.update`), else formed afresh."""
        formed = self._autoclusters.update(significant, idle.leaving, idle.joining) if idle.comparable else None
        return formed or self._autoclusters.form(idle.jobs, significant)

    def _slots_read(self, ads: Iterable[classad2.ClassAd], settings: Settings,
                    problems: list[LeftOut]) -> list[tuple[Slot, _SlotEntry]]:
        """The slots by name (the last ad of a name counts) with their entries, reading only the ads
        not seen last cycle, nor among the ads kept for being offered again: entries are filed by
        ``id(ad)`` and keep their ads alive, so no other ad has that id."""
        known, left_out = self._slots, self._left_out
        kept: dict[int, _SlotEntry] = {}
        by_name: dict[str, tuple[Slot, _SlotEntry]] = {}
        for ad in ads:
            key = id(ad)
            entry = known.get(key)
            if entry is None:
                entry = left_out.pop(key, None)
                if entry is None:
                    entry = _read_slot(ad, settings)
            kept[key] = entry
            slot = entry.slot
            if slot is not None:
                if slot.name in by_name:
                    problems.append(LeftOut("slot", slot.name, "Name", DUPLICATE))
                by_name[slot.name] = (slot, entry)
            elif entry.problem is not None:
                problems.append(entry.problem)
        if self._offered_again:
            for key, entry in known.items():
                if key not in kept:
                    left_out[key] = entry
            while len(left_out) > self._offered_again:
                left_out.popitem(last=False)
        self._slots = kept
        return list(by_name.values())

    def _idle_jobs(self, ads: Iterable[classad2.ClassAd | ProcAd], problems: list[LeftOut],
                   shared: SharedAds) -> _IdleJobs:
        """The idle jobs, how many are not idle, and which changed since the last cycle.

        When each ad and each job id comes once, as it does from a collector feed, the answers are
        array operations on the queue's columns plus a step for each new or moved ad; otherwise
        :meth:`_idle_jobs_one_by_one` works them out.
        """
        last = self._queue
        queue, rows = self._read_queue(list(ads), shared)
        self._queue = queue
        leaving, joining = _changes(last, queue, rows)
        in_order = _in_order(rows)
        # when the ads seen last cycle come in its order, they came once then, and so do now
        if last.job_ids is not None and _each_once(queue.keys[rows < 0] if in_order else queue.keys):
            queue.job_ids = _ids_after(last.job_ids, leaving, joining)
        if queue.job_ids is None:
            return _IdleJobs(*self._idle_jobs_one_by_one(queue, problems), leaving, joining, comparable=False)
        moved = np.flatnonzero((rows >= 0) & (_taken(last.positions, rows, 0) != queue.positions))
        for row in moved.tolist():          # an earlier ad left or joined
            self._renumber(queue.entries[row], int(queue.positions[row]))
        problems += queue.problems()
        return _IdleJobs(queue.idle_jobs(), queue.count(_NOT_IDLE), leaving, joining, comparable=in_order)

    def _read_queue(self, ads: list[classad2.ClassAd | ProcAd], shared: SharedAds) -> tuple[_JobQueue, np.ndarray]:
        """The queue of ``ads``, reusing the last cycle's entries (not yet renumbered) and reading
        the new ads; and each ad's row in the last cycle's queue (-1: new)."""
        last = self._queue
        keys = np.fromiter(map(id, ads), np.int64, len(ads))
        rows = last.rows_of(keys)
        new = np.flatnonzero(rows < 0).tolist()
        kinds = _taken(last.kinds, rows, _OTHER)
        for row in new:       # told apart once read
            kinds[row] = _NOT_IDLE if _is_a(readable_ad(ads[row]), "Job") and self._takes(ads[row]) else _OTHER
        positions = np.where(kinds != _OTHER, np.cumsum(kinds != _OTHER), 0)
        entries, jobs = _taken(last.entries, rows, None), _taken(last.jobs, rows, None)
        for row in new:
            if kinds[row] != _OTHER:
                entry = entries[row] = self._read_record(ads[row], int(positions[row]), shared)
                kinds[row], jobs[row] = entry.kind, entry.job
        return _JobQueue(ads, keys, entries, jobs, kinds, positions), rows

    def _idle_jobs_one_by_one(self, queue: _JobQueue, problems: list[LeftOut]) -> tuple[list[ClusteringJob], int]:
        """As HTCondor reads a queue (:func:`_by_job_id`), renumbering moved ads' jobs first. Also
        right when an ad comes twice, or after a cycle where one did."""
        entries = []
        for entry, position in zip(queue.entries.tolist(), queue.positions.tolist()):
            if entry is not None:
                if entry.position != position:
                    self._renumber(entry, position)
                entries.append(entry)
        by_id, non_idle, repeated = _by_job_id(entries, problems)
        queue.job_ids = set(by_id) if not repeated and _each_once(queue.keys) else None
        return list(by_id.values()), non_idle

    def _idle_jobs_streamed(self, ads: Iterable[classad2.ClassAd | RepeatedAd | ProcAd], problems: list[LeftOut],
                            significant: Significance) -> _IdleJobs:
        """A one-off build's idle jobs: each ad is read as it comes and only an ad the jobs that
        are equal to it share is kept."""
        shared = SharedAds(significant.unconditional, significant.guarded, self._autoclusters.signatures)
        wholes = (ad.whole() if isinstance(ad, ProcAd) else ad for ad in ads)
        by_id, non_idle, _ = _by_job_id(self._streamed_entries(wholes, shared), problems)
        return _IdleJobs(list(by_id.values()), non_idle, [], [], comparable=False)

    def _streamed_entries(self, ads: Iterable[classad2.ClassAd | RepeatedAd], shared: SharedAds) -> Iterator[_JobEntry]:
        """The entries of the Job ads among ``ads``. An ad that repeats the last ad read but for
        its identity (a RepeatedAd) is that ad's job under its own identity, with the ad it shares,
        when nothing the ad says reads its identity (:meth:`SharedAds.identity_of_repeat`); else it is read
        whole."""
        last: tuple[classad2.ClassAd, _JobEntry] | None = None     # the last ad read, and its entry
        position = 0
        for ad in ads:
            if not _is_a(ad.ad if isinstance(ad, RepeatedAd) else ad, "Job") or not self._takes(ad):
                continue
            position += 1
            if isinstance(ad, RepeatedAd):
                entry = _repeated(ad, position, last[1], shared) if last is not None and last[0] is ad.ad else None
                yield entry if entry is not None else self._read_job(ad.whole(), position, shared.of)
            else:
                entry = self._read_job(ad, position, shared.of)
                last = (ad, entry)
                yield entry

    def _takes(self, record: classad2.ClassAd | RepeatedAd | ProcAd) -> bool:
        """Whether the job meets NEGOTIATOR_JOB_CONSTRAINT (or none is set). HTCondor's negotiator
        has each schedd apply it (``NegotiatorJobConstraint`` in the negotiation ad): a job outside
        it is none of this negotiator's, as though its schedd had not offered it. Asked once per
        ad; of a job that shares its cluster's (or an earlier) ad, of that ad unless the constraint
        names the job's identity."""
        constraint = self._settings.job_constraint if self._settings is not None else None
        if constraint is None:
            return True
        if isinstance(record, classad2.ClassAd):
            return satisfies(record, constraint)
        if mentions_identity(constraint):
            return satisfies(record.whole(), constraint)
        return satisfies(readable_ad(record) if isinstance(record, ProcAd) else record.ad, constraint)

    def _read_record(self, record: classad2.ClassAd | ProcAd, position: int, shared: SharedAds) -> _JobEntry:
        """The entry of a daemon's job record: a ProcAd from its cluster ad where it may share it."""
        if isinstance(record, ProcAd):
            entry = self._read_proc(record, position, shared)
            if entry is not None:
                return entry
            record = record.whole()
        return self._read_job(record, position)

    def _read_proc(self, record: ProcAd, position: int, shared: SharedAds) -> _JobEntry | None:
        """``record``'s entry from what was read of its cluster ad, or None if it must be read whole:
        a job is not idle if its cluster's ad is not (none of its expressions reads the identity),
        and an idle one is its cluster ad's job under its own identity, clustered by the ad the
        cluster's jobs share, where :meth:`SharedAds.of_cluster` allows it."""
        known = self._clusters.get(record.cluster)
        if known is None:
            outcome = prepare_job(record.cluster.ad, position)
            matchmaking = shared.of_cluster(record.cluster) if isinstance(outcome, Job) else None
            known = self._clusters[record.cluster] = (outcome, matchmaking)
        outcome, matchmaking = known
        entry = _JobEntry(None, position)
        if outcome is None:
            return entry
        if not isinstance(outcome, Job) or matchmaking is None:
            return None
        entry.job = ClusteringJob(with_identity(outcome, record.proc, record.global_id, position), matchmaking)
        return entry

    def _read_job(self, ad: classad2.ClassAd, position: int,
                  shared: Callable[[classad2.ClassAd], MatchmakingAd] | None = None) -> _JobEntry:
        """``ad``'s entry. An idle job is clustered by the ad itself, or by the ad ``shared`` gives
        for jobs equal to it."""
        entry = _JobEntry(ad if self._remember else None, position)
        outcome = prepare_job(ad, position)
        if isinstance(outcome, Job):
            matchmaking_ad = shared(ad) if shared else MatchmakingAd(ad, self._autoclusters.signatures)
            entry.job = ClusteringJob(outcome, matchmaking_ad)
        else:
            entry.problem = outcome
        return entry

    def _renumber(self, entry: _JobEntry, position: int) -> None:
        """Move an unchanged ad's job to ``position``, keeping what autoclustering learnt from it."""
        entry.position = position
        if entry.job is not None:
            entry.job.renumber(entry.job.job.at(position))
        elif entry.problem is not None:       # a problem may name the job by its position
            problem = prepare_job(entry.ad, position)
            if isinstance(problem, LeftOut):  # the same ad gives the same problem, named at its new place
                entry.problem = problem

    def _reads(self, slot: Slot, entry: _SlotEntry, settings: Settings) -> frozenset[JobRead]:
        """The job attributes read by what the cycle asks of ``slot`` (``entry``'s): a candidate's
        Requirements, consumption and the PRE/POST_JOB_RANK; a claimed slot a job may preempt is
        also asked its Rank, PREEMPTION_REQUIREMENTS and PREEMPTION_RANK, whose job references
        HTCondor also counts as significant; other slots, nothing. Worked out once per ad (it
        depends on the ad and the settings only), as one set shared by the entries that read the
        same."""
        if entry.reads is None:
            if entry.candidate:
                exprs = self._rank_exprs
            elif _preemptable(slot, entry, settings):
                slot_rank = [slot.ad.lookup("Rank")] if "Rank" in slot.ad else []
                exprs = [*self._rank_exprs, *self._preemption_exprs, *slot_rank]
            else:
                entry.reads = frozenset()
                return entry.reads
            read = frozenset(slot_job_reads((slot.requirements, *exprs, *(slot.consumption or {}).values()), slot.ad))
            entry.reads = self._read_sets.setdefault(read, read)
        return entry.reads


def _expressions(*texts: str | None) -> list[classad2.ExprTree]:
    """The expressions of the settings' ``texts`` that are set."""
    return [classad2.ExprTree(text) for text in texts if text]


def _repeated(repeat: RepeatedAd, position: int, earlier: _JobEntry, shared: SharedAds) -> _JobEntry | None:
    """The entry of ``repeat`` from that of the ad it repeats, or None if it must be read whole: an
    idle job clustered by a shared ad is the earlier job under its own identity, clustered by the
    same ad; a job is not idle if the earlier one is not. Both hold where nothing the earlier ad
    says reads the identity (:meth:`SharedAds.identity_of_repeat`)."""
    entry = _JobEntry(None, position)
    if earlier.job is not None:
        identity = shared.identity_of_repeat(earlier.job.ad, repeat.own)
        if identity is None:
            return None
        entry.job = ClusteringJob(with_identity(earlier.job.job, *identity, position), earlier.job.ad)
        return entry
    if earlier.kind == _NOT_IDLE and shared.identity_of_repeat(repeat.ad, repeat.own) is not None:
        return entry
    return None


def _kept(ad: classad2.ClassAd | RepeatedAd | ProcAd) -> classad2.ClassAd | ProcAd:
    """What a builder that remembers keeps of a job ad: a RepeatedAd is read whole."""
    return ad.whole() if isinstance(ad, RepeatedAd) else ad


def _read_slot(ad: classad2.ClassAd, settings: Settings) -> _SlotEntry:
    """The entry of a slot ad; an ad that is no Machine ad, or that NEGOTIATOR_SLOT_CONSTRAINT
    leaves out, is none of the cycle's (HTCondor's negotiator asks the collector for the slots that
    meet it, ``obtainAdsFromCollector``, and sees no other: not for matches, usage or pool size)."""
    if not _is_a(ad, "Machine") or (settings.slot_constraint is not None
                                    and not satisfies(ad, settings.slot_constraint)):
        return _SlotEntry(ad)
    slot = prepare_slot(ad, settings)
    if isinstance(slot, LeftOut):
        return _SlotEntry(ad, problem=slot)
    return _SlotEntry(ad, slot, candidate=slot.is_candidate)


def _preemptable(slot: Slot, entry: _SlotEntry, settings: Settings) -> bool:
    """Whether an idle job could take ``slot`` from its claim (``may_be_preempted``), asked once
    per slot ad under the builder's settings: a cycle asks it of every claimed slot."""
    if entry.preemptable is None:
        entry.preemptable = may_be_preempted(slot, settings)
    return entry.preemptable


def _same_records(slots: list[Slot], last: tuple[Slot, ...]) -> bool:
    """Whether ``slots`` are the very records ``last`` holds, in its order (a daemon's cycle over
    unchanged ads: a C loop over its 45k slots, against building the table again)."""
    return len(slots) == len(last) and all(map(operator.is_, slots, last))


def _taken(column: np.ndarray, rows: np.ndarray, missing: object) -> np.ndarray:
    """``column`` at ``rows``, ``missing`` where the row is -1."""
    taken = np.full(len(rows), missing, dtype=column.dtype)
    stayed = rows >= 0
    taken[stayed] = column[rows[stayed]]
    return taken


def _changes(last: _JobQueue, queue: _JobQueue, rows: np.ndarray) -> tuple[list[ClusteringJob], list[ClusteringJob]]:
    """The idle jobs of the last cycle's ads that are gone, and of the new ads (``rows``: each of
    ``queue``'s ads' row in ``last``, -1 if new)."""
    gone = np.ones(len(last.keys), bool)
    gone[rows[rows >= 0]] = False
    return list(last.jobs[gone & (last.kinds == _IDLE)]), list(queue.jobs[(rows < 0) & (queue.kinds == _IDLE)])


def _in_order(rows: np.ndarray) -> bool:
    """Whether the ads seen last cycle come in the same order (``rows``: where they were, -1 for
    new ads)."""
    return bool(np.all(np.diff(rows[rows >= 0]) > 0))


def _each_once(keys: np.ndarray) -> bool:
    """Whether no ad (by ``id``) comes twice among ``keys``."""
    return len(np.unique(keys)) == len(keys)


def _by_job_id(entries: Iterable[_JobEntry],
               problems: list[LeftOut]) -> tuple[dict[str, ClusteringJob], int, bool]:
    """The idle jobs by id, how many jobs are not idle, and whether a job id came twice.

    As HTCondor reads a queue: a job id seen again replaces the job, keeping its place, and is
    reported; problems are reported in queue order.
    """
    by_id: dict[str, ClusteringJob] = {}
    non_idle = 0
    repeated = False
    for entry in entries:
        if entry.job is not None:
            job_id = entry.job.job.id
            if job_id in by_id:
                problems.append(LeftOut("job", job_id, "GlobalJobId", DUPLICATE))
                repeated = True
            by_id[job_id] = entry.job
        elif entry.problem is not None:
            problems.append(entry.problem)
        else:
            non_idle += 1
    return by_id, non_idle, repeated


def _ids_after(ids: set[str], leaving: list[ClusteringJob], joining: list[ClusteringJob]) -> set[str] | None:
    """The last cycle's idle job ids (``ids``, taken over) less the leaving plus the joining jobs',
    or None if a joining job's id is there already."""
    ids.difference_update(job.job.id for job in leaving)
    for job in joining:
        if job.job.id in ids:
            return None
        ids.add(job.job.id)
    return ids


def _is_a(ad: classad2.ClassAd, my_type: str) -> bool:
    """Whether ``ad`` is of ``my_type`` (or says nothing): a ``condor_status -any`` dump also carries
    Submitter, Negotiator, Collector... ads, which a cycle does not negotiate over."""
    kind = ad.get("MyType")
    return not isinstance(kind, str) or kind.lower() == my_type.lower()


def build_snapshot(slot_ads: Iterable[classad2.ClassAd], job_ads: Iterable[classad2.ClassAd | RepeatedAd | ProcAd],
                   settings: Settings) -> Snapshot:
    """A one-off snapshot (the dry run, tests, benchmarks): job ads may come from an iterator and
    are let go once read. A daemon keeps a :class:`SnapshotBuilder` to reuse per-ad work across
    cycles."""
    return SnapshotBuilder(remember=False).build(slot_ads, job_ads, settings)
