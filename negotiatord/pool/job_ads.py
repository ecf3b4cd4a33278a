"""What autoclustering and matchmaking read of a job's ad, and one ad for jobs equal in all of it.

A :class:`MatchmakingAd` is the ad a job is clustered and matched by, with what was read of it:
signatures over attribute names (interned by a :class:`SignatureBook`, so equal values are one
object) and guard condition values. Its identity stands for the ad: it can be referenced weakly,
so what an evaluator reads of the ad may be filed under it for as long as the pool keeps it.

A one-off build (``Snapshot.build``: the dry run, benchmarks) reads every job ad once and needs
no ad for a next cycle. Holding all of them would cost ~1.1 GiB of classad2 ads on a 255k-job
pool, while the jobs of a cluster mostly differ only in ``ProcId`` and ``GlobalJobId``, which
the cycle rarely reads. :class:`SharedAds` gives such jobs one :class:`MatchmakingAd`, the first
one's, and lets the other ads go; what autoclustering asks of their identity is answered from
each job's own record. HTCondor's negotiator likewise sees one job ad per autocluster, the one
its schedd sends.

A daemon keeps its job ads from cycle to cycle, so its store files such jobs compactly: a
:class:`ProcAd` is its cluster's shared :class:`ClusterAd` and the job's own identity, as
HTCondor's schedd keeps its job queue (each proc ad chained to its cluster ad, holding only
what differs). Its builder gives the jobs of a cluster ad one MatchmakingAd under the same rules
as :class:`SharedAds`, and reads a job whole (:meth:`ProcAd.whole`) where they forbid sharing.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from collections.abc import Callable, Iterable
from weakref import WeakValueDictionary

import classad2

from negotiatord.pool.jobs import Job
from negotiatord.pool.significance import ANY_ATTRIBUTE, JobRead, condition_reads, condition_value, own_references


@dataclass(frozen=True, eq=False)
class Signature:
    """The values of some attributes of a job, as hashable stand-ins: each literal with its ClassAd
    type (1, 1.0 and true differ), each expression as its canonical text.

    Interned by a :class:`SignatureBook`: equal values are one object, so signatures compare and
    hash by identity.
    """

    values: tuple

    @cached_property
    def references(self) -> tuple[str, ...]:
        """The names its expressions read in their own ad, in value order. Asked of the closure's
        signatures only (as forming autoclusters always did: not every value need parse)."""
        return tuple(dict.fromkeys(ref for value in self.values if isinstance(value, str)
                                   for ref in own_references(value)))


class SignatureBook:
    """The interned signatures of the jobs a builder knows. Held weakly: a signature no job holds
    any more (its ads were replaced or left the queue) is forgotten."""

    def __init__(self) -> None:
        self._interned: WeakValueDictionary[tuple, Signature] = WeakValueDictionary()

    def signature(self, ad: classad2.ClassAd, names: tuple[str, ...],
                  own: dict[str, object] | None = None) -> Signature:
        """The signature of ``ad`` over ``names``, with the values of ``own`` (by lower-cased
        name) in place of the ad's."""
        read = _reader(ad)
        if own:
            read = _overlaid(own, read)
        values = tuple(map(_stand_in, map(read, names)))
        signature = self._interned.get(values)
        if signature is None:
            signature = self._interned[values] = Signature(values)
        return signature


class MatchmakingAd:
    """A job ad and what was read of it. All of it depends on the ad alone, so a daemon's builder
    keeps it while the job's ad object is unchanged, and jobs given one ``shared`` ad by
    :class:`SharedAds` share what was read too."""

    __slots__ = ("ad", "shared", "_book", "_signatures", "_conditions", "__weakref__")

    def __init__(self, ad: classad2.ClassAd, book: SignatureBook, *, shared: bool = False) -> None:
        self.ad = ad
        self.shared = shared
        self._book = book
        self._signatures: dict[tuple[str, ...], Signature] = {}
        self._conditions: dict[str, object] | None = None     # only a group's first job is asked

    def signature(self, names: tuple[str, ...]) -> Signature:
        signature = self._signatures.get(names)
        if signature is None:
            signature = self._signatures[names] = self._book.signature(self.ad, names)
        return signature

    def signature_as(self, names: tuple[str, ...], job: Job) -> Signature:
        """The signature over ``names`` of ``job``'s own ad, which differs from this shared one
        only in the identity its record keeps (:func:`_plain_identity`)."""
        return self._book.signature(self.ad, names, {"procid": job.queue_order[1], "globaljobid": job.id})

    def condition(self, condition: str) -> object:
        """A guard condition's value for this ad, remembered: the ad may be the first of a group
        and of its first part, asked about the same guards."""
        if self._conditions is None:
            self._conditions = {}
        if condition not in self._conditions:
            self._conditions[condition] = condition_value(condition, self.ad)
        return self._conditions[condition]

    def references_of(self, name: str) -> frozenset[str]:
        """The names the value of ``name`` reads in this ad, if it is an expression."""
        value = self.ad.get(name)
        return own_references(str(value)) if isinstance(value, classad2.ExprTree) else frozenset()


IDENTITY = ("ProcId", "GlobalJobId")      # what the jobs of one cluster differ in
_IDENTITY = frozenset(name.lower() for name in IDENTITY)
_WATCHED = _IDENTITY | {ANY_ATTRIBUTE}


def _any_case(name: str) -> str:
    """A pattern for ``name`` in any case, letter by letter: five times faster than re.IGNORECASE."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in name)


# an identity attribute's line in printJson's output: top-level attributes are indented by two
# spaces, nested ones deeper, and strings escape their newlines, so no other line starts so
_IDENTITY_NAMES = "|".join(map(_any_case, IDENTITY))
_IDENTITY_LINES = re.compile(rf'\n  "(?:{_IDENTITY_NAMES})": [^\n]*')


class ClusterAd:
    """The ad the jobs of one cluster share: any of them but for its identity, in which none of
    its expressions reads. Referenced weakly by a builder that keeps what it read of it."""

    __slots__ = ("ad", "__weakref__")

    def __init__(self, ad: classad2.ClassAd) -> None:
        self.ad = ad


@dataclass(frozen=True, slots=True, eq=False)      # one per job of a 255k-job queue
class ProcAd:
    """A job's ad kept as its cluster's ad and its own plain identity (see the module docstring)."""

    cluster: ClusterAd
    proc: int                 # ProcId
    global_id: str            # GlobalJobId

    def whole(self) -> classad2.ClassAd:
        """The job's ad itself: its cluster's ad with its own identity in place; the cluster's ad
        when that is the job's own (not to be changed: other jobs share it)."""
        if identity_of(self.cluster.ad) == (self.proc, self.global_id):
            return self.cluster.ad
        ad = copy.deepcopy(self.cluster.ad)
        ad["ProcId"] = self.proc
        ad["GlobalJobId"] = self.global_id
        return ad


def whole_ad(record: classad2.ClassAd | ProcAd) -> classad2.ClassAd:
    """The ad a stored job record stands for."""
    return record.whole() if isinstance(record, ProcAd) else record


def readable_ad(record: classad2.ClassAd | ProcAd) -> classad2.ClassAd:
    """An ad that reads as the stored job's own in everything but its identity, without a copy: a
    ProcAd's cluster ad, none of whose expressions reads the identity (else the job would have
    been kept whole), or the ad itself."""
    return record.cluster.ad if isinstance(record, ProcAd) else record


def text_but_identity(ad: classad2.ClassAd) -> str | None:
    """The text of ``ad`` without its identity lines, the same for all jobs of its cluster that
    differ only in their identity; None if its identity is not plain (:func:`_plain_identity`)."""
    if not _plain_identity(ad):
        return None
    return _IDENTITY_LINES.sub("", ad.printJson())     # about the cheapest full reading of an ad


def identity_of(ad: classad2.ClassAd) -> tuple[int, str]:
    """The plain identity (ProcId, GlobalJobId) of an ad :func:`text_but_identity` took."""
    return ad["ProcId"], ad["GlobalJobId"]


class SharedAds:
    """One :class:`MatchmakingAd` for all job ads equal in everything but their :data:`IDENTITY`,
    where nothing the cycle evaluates for them reads it.

    Nothing does unless a significant attribute is read unconditionally, a guard condition reads
    it, a guarded read of it (or of any attribute) is open for the job (the OSPool catalog clause
    reads ``GlobalJobID`` for cataloged jobs only), or one of the job's expressions reads it: such
    jobs keep their own ads. Forming autoclusters may still split shared jobs by their identity,
    when another job's expression makes it significant: :class:`ClusteringJob` reads it from the
    job's own record then. Valid for one significance only: a one-off build's, or one daemon cycle's.
    """

    def __init__(self, unconditional: Iterable[str], guarded: Iterable[JobRead], book: SignatureBook) -> None:
        guarded = tuple(guarded)
        conditions = {guard.condition for read in guarded for guard in read.guards}
        read_always = _lower(unconditional).union(*(_lower(condition_reads(c)) for c in conditions))
        self._shares = read_always.isdisjoint(_WATCHED)
        self._watched = tuple(read for read in guarded if read.attribute.lower() in _WATCHED)
        self._book = book
        self._by_text: dict[str, MatchmakingAd | None] = {}     # None: ads of that text keep their own
        self._reads_identity: dict[int, bool] = {}     # the last ad asked about in repeats(), by id

    @property
    def rules(self) -> tuple[bool, frozenset[JobRead]]:
        """What decides which ads are shared; equal rules share the same ads."""
        return self._shares, frozenset(self._watched)

    def of_cluster(self, cluster: ClusterAd) -> MatchmakingAd | None:
        """The MatchmakingAd the jobs of ``cluster`` share, or None if each must be read whole."""
        if self._shares and self._shareable(cluster.ad):
            return MatchmakingAd(cluster.ad, self._book, shared=True)
        return None

    def of(self, ad: classad2.ClassAd) -> MatchmakingAd:
        text = text_but_identity(ad) if self._shares else None
        if text is not None:
            shared = self._by_text.get(text)
            if shared is None and text not in self._by_text:
                shareable = self._shareable(ad, text)
                shared = self._by_text[text] = MatchmakingAd(ad, self._book, shared=True) if shareable else None
            if shared is not None:
                return shared
        return MatchmakingAd(ad, self._book)

    def identity_of_repeat(self, ad: MatchmakingAd | classad2.ClassAd, own: classad2.ClassAd) -> tuple[int, str] | None:
        """The identity (ProcId, GlobalJobId) of an ad that is ``ad`` but for the values in
        ``own``, if that ad is ``ad``'s job under another identity: ``own`` holds just a plain
        identity (see :func:`_plain_identity`) and none of ``ad``'s expressions reads it, so all
        else reads the same in both. A shared MatchmakingAd was asked that already."""
        if len(own) != len(IDENTITY) or not _plain_identity(own):
            return None
        proc, global_id = identity_of(own)
        if isinstance(ad, MatchmakingAd):
            return (proc, global_id) if ad.shared else None
        key = id(ad)
        if key not in self._reads_identity:
            self._reads_identity = {key: expressions_read_identity(ad)}     # the ads repeating one come together
        return None if self._reads_identity[key] else (proc, global_id)

    def _shareable(self, ad: classad2.ClassAd, text: str | None = None) -> bool:
        """Whether nothing evaluated for ``ad`` reads its identity: no guarded read of it is open
        and none of its expressions reads it (ads of the same text answer the same). Given the
        ad's ``text`` (:func:`text_but_identity`), an ad whose text never names its identity is
        not asked expression by expression (each of its values parsed, literals included)."""
        if any(read.is_live_for(ad) for read in self._watched):
            return False
        return (text is not None and not mentions_identity(text)) or not expressions_read_identity(ad)


def mentions_identity(text: str) -> bool:
    """Whether ``text`` (an ad's, less its identity lines) names an identity attribute anywhere: an
    ad that does not has no expression that reads it, and need not be asked."""
    return re.search(_IDENTITY_NAMES, text) is not None


def expressions_read_identity(ad: classad2.ClassAd) -> bool:
    return any(_IDENTITY & _lower(own_references(str(ad.lookup(name)))) for name in ad.keys())


@lru_cache(maxsize=1024)        # asked for every shared job and each few names autoclustering reads
def reads_identity(names: tuple[str, ...]) -> bool:
    return not _IDENTITY.isdisjoint(map(str.lower, names))


def _plain_identity(ad: classad2.ClassAd) -> bool:
    """Whether ``ad``'s identity is an integer ProcId and a GlobalJobId string, as its
    :class:`~negotiatord.pool.jobs.Job` record keeps them."""
    proc, global_id = ad.get("ProcId"), ad.get("GlobalJobId")
    return type(proc) is int and isinstance(global_id, str) and bool(global_id)


def _lower(names: Iterable[str]) -> frozenset[str]:
    return frozenset(name.lower() for name in names)


def _overlaid(own: dict[str, object], read: Callable[[str], object]) -> Callable[[str], object]:
    def get(name: str) -> object:
        key = name.lower()
        return own[key] if key in own else read(name)
    return get


def _reader(ad: classad2.ClassAd) -> Callable[[str], object]:
    """``ad.get``, at half the cost of a missing attribute (ClassAd's is the Mapping default, a
    second Python frame around the lookup): most significant attributes are missing from a job."""
    lookup = ad.__getitem__

    def get(name: str) -> object:
        try:
            return lookup(name)
        except KeyError:
            return None
    return get


_LITERAL_KINDS = {type(None): "NoneType", bool: "bool", int: "int", float: "float", classad2.Value: "Value",
                  str: "string"}


def _stand_in(value: object) -> object:
    kind = _LITERAL_KINDS.get(type(value))     # the common types at the cost of one lookup
    if kind is not None:
        return (kind, value)
    if isinstance(value, (bool, int, float, classad2.Value)):
        return (type(value).__name__, value)
    if isinstance(value, str):
        return ("string", value)
    return str(value)
