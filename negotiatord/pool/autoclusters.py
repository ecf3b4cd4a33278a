"""Autoclusters: jobs whose significant attributes are identical are matched as one request.

A job attribute is significant when an expression the negotiator evaluates can read it: a
candidate slot's Requirements, Consumption<Res> or the pre/post job ranks (see
:mod:`negotiatord.pool.significance` for how branches guarded by job-side conditions are
handled), the job's own Requirements/Rank and the attributes they read, its Request<Res> and
ConcurrencyLimits, and whatever an expression-valued significant attribute reads in turn
(``RequestMemory = ifThenElse(MemoryUsage =!= undefined, ...)``).

Jobs are grouped first by the attributes read unconditionally, then each group is split by the
guarded attributes its jobs actually reach, until what a group's first job reaches is shared by all.

A daemon needs the autoclusters of every idle job (255k on an OSPool-sized pool) every cycle,
while only a few ads change in between. So what a job's ad says (its signatures, the values of its
guard conditions) is worked out once per ad in a :class:`~negotiatord.pool.job_ads.MatchmakingAd`;
signatures are interned by a :class:`~negotiatord.pool.job_ads.SignatureBook`, so grouping hashes
object identities and each distinct signature's references are read once; and
:class:`Autoclusters` keeps the grouping as a tree, which the next cycle updates with the jobs that
left and joined instead of grouping every job again.
"""

from __future__ import annotations

from bisect import insort
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from collections.abc import Iterable, Iterator

import classad2

from negotiatord.pool.job_ads import MatchmakingAd, Signature, SignatureBook, reads_identity
from negotiatord.pool.jobs import Job
from negotiatord.pool.significance import ANY_ATTRIBUTE, JobRead

JOB_SIDE_ATTRIBUTES = ("Requirements", "Rank", "ConcurrencyLimits")


@dataclass(frozen=True)
class Autocluster:
    id: int
    submitter: str
    jobs: tuple[Job, ...]           # in the submitter's job order
    representative: MatchmakingAd = field(compare=False, repr=False)   # every job here matches as it does
    schedd: str = ""                # the schedd every job here is queued at (its GlobalJobId's)

    @property
    def ad(self) -> classad2.ClassAd:
        """The representative job ad: every job here evaluates identically against every slot."""
        return self.representative.ad


@dataclass(frozen=True)
class Significance:
    unconditional: tuple[str, ...]          # read whatever the job's values
    guarded: tuple[JobRead, ...]            # read only when job-side guards are open

    @property
    def names(self) -> tuple[str, ...]:
        guarded = {r.attribute for r in self.guarded}
        return tuple(sorted({*self.unconditional, *guarded}, key=lambda name: (name.lower(), name)))


def significance(slot_reads: set[JobRead], assets: Iterable[str]) -> Significance:
    """Unconditional attributes (slot reads without guards, job-side attributes, requests) and
    the guarded reads not already among them. :meth:`Autoclusters.form` adds what
    expression-valued attributes read in turn."""
    wanted: dict[str, str] = {}
    for attribute in sorted({r.attribute for r in slot_reads if not r.guards}):
        wanted.setdefault(attribute.lower(), attribute)     # the same spelling whatever the hash seed
    for name in (*JOB_SIDE_ATTRIBUTES, *(f"Request{a}" for a in assets)):
        wanted.setdefault(name.lower(), name)
    guarded = tuple(sorted((r for r in slot_reads if r.guards and r.attribute.lower() not in wanted),
                           key=lambda r: (r.attribute.lower(), str(r.guards))))
    return Significance(tuple(sorted(wanted.values(), key=str.lower)), guarded)


# -- a job as autoclustering sees it -----------------------------------------------------------


class ClusteringJob:
    """An idle job and the :class:`MatchmakingAd` it is clustered by: its own ad, or one it shares
    with every job equal in all the attributes a cycle can read (:class:`SharedAds`).

    A daemon's builder keeps it while the job's ad object is unchanged (HTCondor's schedd likewise
    keeps a job's autocluster until a significant attribute changes) and only renumbers the job
    when its position in the queue moves.
    """

    __slots__ = ("job", "ad", "submitter", "party", "rank")

    def __init__(self, job: Job, ad: MatchmakingAd) -> None:
        self.ad = ad
        self.renumber(job)

    def renumber(self, job: Job) -> None:
        """Take ``job``, read from the same ad at another position in the queue."""
        self.job = job
        self.submitter = job.submitter
        self.party = (job.submitter, job.schedd)    # whose jobs, at which schedd, it clusters with
        self.rank = (job.submitter, job.schedd, job.order)      # the order autoclusters keep

    def signature(self, names: tuple[str, ...]) -> Signature:
        if self.ad.shared and reads_identity(names):
            return self.ad.signature_as(names, self.job)
        return self.ad.signature(names)

    def reached(self, reads: Iterable[JobRead]) -> set[str]:
        """The attributes of ``reads`` whose guards are open for this job, and what those holding
        an expression read in turn; only :data:`ANY_ATTRIBUTE` if any of them is that."""
        live = {read.attribute for read in reads if read.is_live(self.ad.condition)}
        if ANY_ATTRIBUTE in live:
            return {ANY_ATTRIBUTE}
        return live.union(*(self.ad.references_of(name) for name in live))


# -- forming autoclusters, and keeping them from cycle to cycle -------------------------------------

JOB = attrgetter("job")
_RANK = attrgetter("rank")
_PARTY = attrgetter("party")
_ALONE = (ANY_ATTRIBUTE,)       # the split of jobs that may read any attribute: each stands alone


class Autoclusters:
    """The idle jobs' autoclusters, kept from cycle to cycle.

    Forming them (:meth:`form`) is the algorithm of this module's docstring. It leaves a tree: the
    closure groups (one submitter's jobs at one schedd, equal in every unconditional attribute and
    what those read), each split as its first job decides (:class:`_Node`) down to the autoclusters. A
    daemon's next cycle mostly sees the same jobs, a few ads replaced, so :meth:`update` takes the
    jobs that left and joined into the tree and reconsiders only the nodes they touched: the
    result is what :meth:`form` would give, without touching the other 250k jobs.
    """

    def __init__(self) -> None:
        self.signatures = SignatureBook()
        self._significance: Significance | None = None
        self._passes: list[tuple[str, ...]] = []    # the closure's names, pass by pass
        self._known: frozenset[str] = frozenset()   # all of them, lower-cased
        self._groups: dict[tuple, _Node] = {}       # closure groups by submitter and pass signatures

    def form(self, jobs: Iterable[ClusteringJob],
             significant: Significance) -> tuple[list[Autocluster], Significance]:
        """Group each submitter's jobs at each schedd by their significant attributes' values (a
        schedd makes its own autoclusters, and HTCondor's negotiator negotiates each submitter
        schedd by schedd).

        Returns the autoclusters (ids follow first appearance in job order, so the same input
        gives the same ids) and the significance grown by what expression-valued attributes read.
        """
        groups = _split_by_submitter(sorted(jobs, key=_RANK))
        self._significance, self._passes = significant, []
        known: set[str] = set()
        pending = tuple(significant.unconditional)
        while pending:                  # closure: RequestMemory = f(MemoryUsage) reads MemoryUsage
            known |= {name.lower() for name in pending}
            self._passes.append(pending)
            groups = _split(groups, pending)
            pending = _new_references([group[0] for group in groups], pending, known)
        self._known = frozenset(known)
        reads = _undecided(significant.guarded, self._known)
        self._groups = {self._group_key(group[0]): _Node.grown(group, self._known, reads) for group in groups}
        return self._result(significant)

    def update(self, significant: Significance, leaving: Iterable[ClusteringJob],
               joining: Iterable[ClusteringJob]) -> tuple[list[Autocluster], Significance] | None:
        """As :meth:`form` over the jobs of the last result less ``leaving`` plus ``joining`` (the
        others keep their relative order), or None if the significance or the closure changed:
        then only :meth:`form` can tell."""
        if significant != self._significance:
            return None
        touched: set[_Node] = set()
        leavers = set(leaving)
        for job in leavers:
            self._groups[self._group_key(job)].reach(job, touched)
        for job in joining:
            key = self._group_key(job)
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = _Node(self._known, _undecided(significant.guarded, self._known))
            group.reach(job, touched, joining=True)
        for key, group in list(self._groups.items()):
            if not group.settle(touched, leavers):
                del self._groups[key]
        return self._result(significant) if self._closure_holds(significant) else None

    def _group_key(self, job: ClusteringJob) -> tuple:
        return (*job.party, *(job.signature(names) for names in self._passes))

    def _closure_holds(self, significant: Significance) -> bool:
        """Whether the closure, worked out again over the current jobs, passes as it did: every job
        of a closure group has its first job's values, so the groups' first jobs are asked."""
        firsts = sorted((group.settled_first for group in self._groups.values()), key=_RANK)
        known: set[str] = set()
        pending = significant.unconditional
        for names in self._passes:
            if pending != names:
                return False
            known |= {name.lower() for name in names}
            pending = _new_references(firsts, names, known)
        return not pending

    def _result(self, significant: Significance) -> tuple[list[Autocluster], Significance]:
        leaves = sorted((leaf for group in self._groups.values() for leaf in group.leaves()),
                        key=lambda leaf: leaf.settled_first.rank)
        autoclusters = [Autocluster(id=i, submitter=leaf.settled_first.submitter, jobs=tuple(map(JOB, leaf.members)),
                                    representative=leaf.members[0].ad, schedd=leaf.settled_first.job.schedd)
                        for i, leaf in enumerate(leaves)]
        names = [name for names in self._passes for name in names]
        return autoclusters, Significance(tuple(sorted(names, key=str.lower)), significant.guarded)


class _Node:
    """Jobs equal in every attribute of ``known``: split further by the guarded attributes its
    first job reaches (``split``), or a leaf, an autocluster, when it reaches none.

    Kept from cycle to cycle, a node is reconsidered only when jobs joined or left below it, and
    split again only when its first job changed and splits differently.
    """

    __slots__ = ("known", "reads", "first", "split", "children", "members")

    def __init__(self, known: frozenset[str], reads: tuple[JobRead, ...]) -> None:
        self.known = known
        self.reads = reads                          # the guarded reads ``known`` leaves undecided
        self.first: ClusteringJob | None = None     # its first job, as of the last settle
        self.split: tuple[str, ...] = ()            # () for a leaf; _ALONE: one leaf per job
        self.children: dict[object, _Node] = {}     # by the jobs' signature over ``split``
        self.members: list[ClusteringJob] = []      # a leaf's jobs, in job order

    @property
    def settled_first(self) -> ClusteringJob:
        """The first job of a grown or settled node, as every node of the tree is between updates."""
        assert self.first is not None
        return self.first

    @classmethod
    def grown(cls, jobs: list[ClusteringJob], known: frozenset[str], reads: tuple[JobRead, ...]) -> _Node:
        node = cls(known, reads)
        node._grow(jobs, node._split_for(jobs[0]))
        return node

    def _split_for(self, first: ClusteringJob) -> tuple[str, ...]:
        reached = first.reached(self.reads)
        if ANY_ATTRIBUTE in reached:
            return _ALONE
        return tuple(sorted((name for name in reached if name.lower() not in self.known), key=str.lower))

    def _grow(self, jobs: list[ClusteringJob], split: tuple[str, ...]) -> None:
        """Split ``jobs`` (in job order) by ``split``, then each part as its first job decides."""
        self.first, self.split, self.children, self.members = jobs[0], split, {}, []
        if not split:
            self.members = jobs
            return
        scope = self._child_scope()
        if split is _ALONE:
            self.children = {job: _Node.grown([job], *scope) for job in jobs}
        else:
            self.children = {part[0].signature(split): _Node.grown(part, *scope) for part in _split([jobs], split)}

    def _child_scope(self) -> tuple[frozenset[str], tuple[JobRead, ...]]:
        """What a child of the split knows, and the guarded reads that leaves undecided."""
        if self.split is _ALONE:
            return self.known, ()
        known = self.known | {name.lower() for name in self.split}
        return known, _undecided(self.reads, known)

    def _child_for(self, job: ClusteringJob) -> _Node:
        """The child ``job`` belongs in, a new empty one (a leaf until settled) if there is none."""
        key = job if self.split is _ALONE else job.signature(self.split)
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = _Node(*self._child_scope())
        return child

    def reach(self, job: ClusteringJob, touched: set[_Node], joining: bool = False) -> None:
        """Walk down to ``job``'s leaf, marking the way for :meth:`settle`; a joining job is put in
        its place there (a leaving one is dropped by settle)."""
        node = self
        while node.split:
            touched.add(node)
            node = node._child_for(job)
        touched.add(node)
        if joining:
            insort(node.members, job, key=_RANK)

    def settle(self, touched: set[_Node], leavers: set[ClusteringJob]) -> bool:
        """Drop ``leavers`` below, then split again where a new first job splits differently from
        the one before. False if no job is left."""
        if self not in touched:
            return True
        if not self.split:
            if leavers:
                self.members = [job for job in self.members if job not in leavers]
            first = self.members[0] if self.members else None
        else:
            for key, child in list(self.children.items()):
                if not child.settle(touched, leavers):
                    del self.children[key]
            first = min((child.first for child in self.children.values()), key=_RANK, default=None)
        if first is None:
            return False
        if first is not self.first:
            split = self._split_for(first)
            if split == self.split:
                self.first = first
            else:
                self._grow(sorted((job for leaf in self.leaves() for job in leaf.members), key=_RANK), split)
        return True

    def leaves(self) -> Iterator[_Node]:
        if not self.split:
            yield self
        else:
            for child in self.children.values():
                yield from child.leaves()


def _undecided(reads: Iterable[JobRead], known: frozenset[str]) -> tuple[JobRead, ...]:
    return tuple(read for read in reads if read.attribute.lower() not in known)


def _split_by_submitter(ordered: list[ClusteringJob]) -> list[list[ClusteringJob]]:
    return [list(jobs) for _, jobs in groupby(ordered, key=_PARTY)]    # ordered by submitter and schedd first


def _split(groups: Iterable[list[ClusteringJob]], names: tuple[str, ...]) -> list[list[ClusteringJob]]:
    """Each group split by its jobs' values of ``names``. Groups and their jobs stay in job order:
    a group's first job is the first job with its values, as forming one group at a time would
    find it."""
    parts: list[list[ClusteringJob]] = []
    for group in groups:
        by_signature: defaultdict[Signature, list[ClusteringJob]] = defaultdict(list)
        for job in group:
            by_signature[job.signature(names)].append(job)
        parts += by_signature.values()
    parts.sort(key=lambda part: part[0].rank)
    return parts


def _new_references(firsts: Iterable[ClusteringJob], names: tuple[str, ...], known: set[str]) -> tuple[str, ...]:
    """The names the values of ``names`` read and ``known`` lacks, spelled as the first job reading
    them does. ``firsts`` are the first jobs of groups whose jobs share their values of ``names``,
    in job order: the first job with some values is among them, so each group is asked once."""
    added: dict[str, str] = {}
    for job in firsts:
        for ref in job.signature(names).references:
            if ref.lower() not in known:
                added.setdefault(ref.lower(), ref)
    return tuple(added.values())
