"""The latest ad of every slot, job and submitter, as a collector keeps them.

* An update replaces the ad filed under the same key; an invalidation removes it.
* An ad not refreshed within its lifetime is forgotten, as HTCondor's collector does
  (``CollectorEngine::cleanHashTable``): the ad's own ``ClassAdLifetime``, else ``CLASSAD_LIFETIME``.
  Ads preloaded from files never expire: they stand in for a pool that is not reporting.
* A job or slot matched by a committed cycle is *held* until its owner advertises a newer ad:
  later cycles see the stand-in filed for it (:meth:`AdTable.hold`), or every cycle would hand
  out the same matches again. An ad is newer only if it changed (:func:`ad_version`): a collector
  pulled every cycle, or a client re-posting what it sent before, re-files unchanged ads, and
  those must not end a hold.

Job ads that differ from another job's only in their identity (``ProcId``, ``GlobalJobId``: the
jobs of one cluster) are kept as :class:`~negotiatord.pool.job_ads.ProcAd` records that share
one cluster ad, as HTCondor's schedd keeps its queue (each proc ad chained to its cluster ad):
a 255k-job queue takes one classad2 ad per cluster instead of one per job. A job whose own
expressions read its identity keeps its own ad. Whoever asks for a job's ad by key gets it whole.

Not thread-safe: the daemon touches a store only from its event loop. Cycles get a
:class:`PoolView`, a copy of the current ads, and never see later changes.

Freeing a ClassAd runs its C++ destructor with the GIL held (a thousand slot ads: ~20 ms), so
replaced and removed ads are not freed here: they go to a graveyard that the caller hands to a
worker thread (:func:`release`), which frees them one at a time, letting the event loop in between.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from enum import Enum
from collections.abc import Iterable, Iterator, Mapping, ValuesView
from typing import TypeAlias, cast
from weakref import WeakKeyDictionary

import classad2

from negotiatord.classad.conversion import evaluate_number
from negotiatord.feed.kinds import AdKind
from negotiatord.pool.job_ads import (
    IDENTITY,
    ClusterAd,
    ProcAd,
    expressions_read_identity,
    identity_of,
    mentions_identity,
    readable_ad,
    text_but_identity,
    whole_ad,
)

StoredAd: TypeAlias = classad2.ClassAd | ProcAd       # a job may be kept as a ProcAd, any other ad is kept as it came

# Marks of one update of an ad: the advertising daemon counts its updates (UpdateSequenceNumber,
# sent by startds and schedds) and the collector stamps the time it heard each (LastHeardFrom).
_UPDATE_MARKS = ("UpdateSequenceNumber", "LastHeardFrom")
# Left out when ads are compared by content: a schedd stamps every query answer with ServerTime.
_NOT_CONTENT = frozenset({"servertime"})


class Source(str, Enum):
    PUSH = "push"         # posted over HTTP
    PULL = "pull"         # queried from a collector (COLLECTOR_HOST)
    PRELOAD = "preload"   # read from a file at start-up; never expires


class JobAds(Mapping[str, classad2.ClassAd]):
    """A cycle's job ads by key. An ad asked for by key comes whole; :meth:`records` gives them as
    the store keeps them, for the snapshot builder (which reads a cluster's ProcAds once)."""

    def __init__(self, records: dict[str, StoredAd]) -> None:
        self.by_key = records

    def __getitem__(self, key: str) -> classad2.ClassAd:
        return whole_ad(self.by_key[key])

    def readable(self, key: str) -> classad2.ClassAd | None:
        """Job ``key``'s ad to read anything but its identity from, without making it whole
        (:func:`readable_ad`); None if there is no such job."""
        record = self.by_key.get(key)
        return None if record is None else readable_ad(record)

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_key)

    def __len__(self) -> int:
        return len(self.by_key)

    def records(self) -> ValuesView[StoredAd]:
        return self.by_key.values()


@dataclass(frozen=True)
class PoolView:
    """What one cycle negotiates over: ads by key, holds applied."""

    slots: dict[str, classad2.ClassAd]
    jobs: JobAds
    # ad_version of the stored ad behind each held slot's stand-in in ``slots``
    held_slot_versions: dict[str, str] = field(default_factory=dict)
    # how many of ``slots`` are claimed dynamic slots standing in for matches held on partitionable
    # slots: no startd advertised them, so they are no slots of the pool
    stand_in_slots: int = 0


@dataclass(slots=True)          # one per ad: 300k of them
class _Entry:
    ad: StoredAd
    source: Source
    lifetime: float | None   # seconds; None: never expires (the queue it is in)
    deadline: float | None   # monotonic seconds; None: never expires


@dataclass(frozen=True)
class _Hold:
    basis: StoredAd                        # the stored ad the hold is about
    version: str                           # its ad_version: a newer ad ends the hold
    stand_in: classad2.ClassAd | None      # what cycles see instead; None: left out
    extras: tuple[tuple[str, classad2.ClassAd], ...]


class ClusterAds:
    """The cluster ads the ProcAds of a job table share, by the text their jobs have in common,
    each with the count of ProcAds sharing it: the last one to go takes it along."""

    def __init__(self, graveyard: list) -> None:
        self._graveyard = graveyard
        self._by_text: dict[bytes, ClusterAd] = {}
        self._shared: dict[int, tuple[bytes, int]] = {}      # by id(cluster ad): its text's digest, ProcAds

    def __len__(self) -> int:
        return len(self._by_text)

    def kept(self, key: str, ad: classad2.ClassAd) -> StoredAd:
        """What to keep of job ``ad`` filed under ``key``: a ProcAd, when its identity is plain
        and none of its expressions reads it; else ``ad`` itself."""
        text = text_but_identity(ad)
        if text is None:
            return ad
        digest = hashlib.sha256(text.encode()).digest()      # a cluster's ad text is kilobytes
        cluster = self._by_text.get(digest)
        if cluster is None:
            if mentions_identity(text) and expressions_read_identity(ad):
                return ad
            cluster = self._by_text[digest] = ClusterAd(ad)
            self._shared[id(cluster)] = (digest, 0)
        else:
            self._graveyard.append(ad)
        digest, count = self._shared[id(cluster)]
        self._shared[id(cluster)] = (digest, count + 1)
        proc, global_id = identity_of(ad)
        return ProcAd(cluster, proc, key if key == global_id else global_id)     # the key is the GlobalJobId

    def release(self, record: ProcAd) -> None:
        """One ProcAd sharing its cluster ad is gone."""
        digest, count = self._shared[id(record.cluster)]
        if count > 1:
            self._shared[id(record.cluster)] = (digest, count - 1)
            return
        del self._shared[id(record.cluster)], self._by_text[digest]
        self._graveyard.append(record.cluster.ad)


class AdTable:
    """The ads of one kind by key, with expiry in O(expired) and match holds."""

    def __init__(self, graveyard: list, clusters: ClusterAds | None = None) -> None:
        self._graveyard = graveyard
        self._clusters = clusters      # job tables: keeps the jobs of a cluster as ProcAds
        self._entries: dict[str, _Entry] = {}
        # One queue per lifetime: within a queue deadlines grow with insertion order, so expiry
        # only ever looks at the head (a full scan of 300k ads would stall the event loop).
        self._queues: dict[float, OrderedDict[str, None]] = defaultdict(OrderedDict)
        self._holds: dict[str, _Hold] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def put(self, key: str, ad: classad2.ClassAd, now: float, lifetime: float | None, source: Source) -> None:
        """File ``ad`` under ``key``, in the place of the ad it updates: ads keep the order they
        first came in, as a schedd's queue keeps its jobs' order when it updates them (a cycle's
        snapshot then renumbers no job for an update). An ad that is not newer than a held one
        only refreshes its deadline: the hold and the ad it is about stay."""
        hold = self._holds.get(key)
        old = self._entries.get(key)
        kept: StoredAd
        if hold is not None and ad_version(ad) == hold.version:
            if old is not None:
                self._unqueue(key, old)
            self._graveyard.append(ad)
            kept = hold.basis
        else:
            kept = self._clusters.kept(key, ad) if self._clusters is not None else ad
            if old is not None:
                self._let_go(key, old)
        self._entries[key] = _Entry(kept, source, lifetime, None if lifetime is None else now + lifetime)
        if lifetime is not None:
            self._queues[lifetime][key] = None

    def get(self, key: str) -> classad2.ClassAd | None:
        """The stored ad, held or not, whole."""
        entry = self._entries.get(key)
        return None if entry is None else whole_ad(entry.ad)

    def record(self, key: str) -> StoredAd | None:
        """The stored ad, held or not, as it is kept: a job's may be a ProcAd."""
        entry = self._entries.get(key)
        return None if entry is None else entry.ad

    def remove(self, key: str) -> bool:
        entry = self._entries.pop(key, None)
        if entry is None:
            return False
        self._let_go(key, entry)
        return True

    def _let_go(self, key: str, entry: _Entry) -> None:
        """What ``entry``, filed under ``key`` until now, holds goes: its place in its expiry
        queue, its ad (its share of a cluster ad), and the hold on it."""
        self._unqueue(key, entry)
        self._graveyard.append(entry.ad)
        if isinstance(entry.ad, ProcAd):
            assert self._clusters is not None      # only a job table files ProcAds
            self._clusters.release(entry.ad)
        hold = self._holds.pop(key, None)
        if hold is not None:
            self._graveyard.append(hold)

    def _unqueue(self, key: str, entry: _Entry) -> None:
        if entry.lifetime is not None:
            del self._queues[entry.lifetime][key]

    def expire(self, now: float) -> int:
        """Forget every ad whose deadline has passed; returns how many."""
        expired = 0
        for queue in self._queues.values():
            while queue:
                key = next(iter(queue))
                deadline = self._entries[key].deadline
                assert deadline is not None      # only ads with a lifetime are queued
                if deadline > now:
                    break
                self.remove(key)
                expired += 1
        return expired

    def keys_from(self, source: Source) -> set[str]:
        return {key for key, entry in self._entries.items() if entry.source is source}

    def view(self) -> dict[str, StoredAd]:
        ads: dict[str, StoredAd] = {}
        for key, entry in self._entries.items():
            hold = self._holds.get(key)
            if hold is None:
                ads[key] = entry.ad
                continue
            if hold.stand_in is not None:
                ads[key] = hold.stand_in
            ads.update(hold.extras)
        return ads

    def hold(self, key: str, seen: StoredAd, version: str, stand_in: classad2.ClassAd | None,
             extras: tuple[tuple[str, classad2.ClassAd], ...] = ()) -> bool:
        """Hold ``key`` if the cycle that matched it saw its current stand-in, or an ad of the
        current ad's ``version`` (:func:`ad_version` of the stored ad behind what it saw); a newer
        ad advertised since then speaks for itself and is not held. Extras (claimed dynamic slots)
        accumulate over the cycles that match the same partitionable slot."""
        entry = self._entries.get(key)
        if entry is None:
            return False
        current = self._holds.get(key)
        if current is not None and current.stand_in is seen:
            extras = current.extras + extras
        elif entry.ad is not seen and ad_version(entry.ad) != version:
            return False
        self._holds[key] = _Hold(entry.ad, version, stand_in, extras)
        if current is not None:
            self._graveyard.append(current)
        return True

    def held_versions(self) -> dict[str, str]:
        """ad_version of every held ad that cycles see a stand-in for."""
        return {key: hold.version for key, hold in self._holds.items() if hold.stand_in is not None}

    def held(self) -> int:
        return len(self._holds)

    def held_keys(self) -> Iterable[str]:
        """The keys held, with a stand-in or left out."""
        return self._holds.keys()

    def extras(self) -> int:
        """How many extra ads (claimed dynamic slots) :meth:`view` adds for held ads."""
        return sum(len(hold.extras) for key, hold in self._holds.items() if key in self._entries)


class AdStore:
    """Slot, job and submitter ads; see the module docstring for the rules."""

    def __init__(self, *, share_cluster_ads: bool = True) -> None:
        """``share_cluster_ads=False`` keeps every job ad whole: the reference the compact store
        is measured and tested against."""
        self._graveyard: list = []
        clusters = ClusterAds(self._graveyard) if share_cluster_ads else None
        self._tables = {kind: AdTable(self._graveyard, clusters if kind is AdKind.JOB else None) for kind in AdKind}

    def take_graveyard(self) -> list:
        """The replaced and removed ads (and stand-ins) since the last call, for :func:`release`."""
        buried, self._graveyard[:] = list(self._graveyard), []
        return buried

    def table(self, kind: AdKind) -> AdTable:
        return self._tables[kind]

    def update(self, kind: AdKind, ads: Iterable[tuple[str, classad2.ClassAd]], now: float,
               default_lifetime: float, source: Source = Source.PUSH) -> int:
        """File each (key, ad), replacing what was there; returns how many."""
        table = self._tables[kind]
        count = 0
        for key, ad in ads:
            lifetime = None if source is Source.PRELOAD else ad_lifetime(ad, default_lifetime)
            table.put(key, ad, now, lifetime, source)
            count += 1
        return count

    def replace_pulled(self, kind: AdKind, ads: list[tuple[str, classad2.ClassAd]], now: float,
                       default_lifetime: float) -> int:
        """A collector query's answer is the whole truth about what it reported before: pulled
        ads it no longer lists are removed. Returns how many were removed."""
        table = self._tables[kind]
        gone = table.keys_from(Source.PULL) - {key for key, _ in ads}
        for key in gone:
            table.remove(key)
        self.update(kind, ads, now, default_lifetime, Source.PULL)
        return len(gone)

    def invalidate(self, kind: AdKind, keys: Iterable[str]) -> tuple[int, list[str]]:
        """Remove the ads filed under ``keys``; returns (removed, keys that were unknown)."""
        table = self._tables[kind]
        removed, unknown = 0, []
        for key in keys:
            if table.remove(key):
                removed += 1
            else:
                unknown.append(key)
        return removed, unknown

    def expire(self, now: float) -> dict[AdKind, int]:
        return {kind: table.expire(now) for kind, table in self._tables.items()}

    def view(self) -> PoolView:
        slots = self._tables[AdKind.SLOT]
        slot_ads = cast(dict[str, classad2.ClassAd], slots.view())      # only job tables file ProcAds
        return PoolView(slot_ads, JobAds(self._tables[AdKind.JOB].view()), slots.held_versions(), slots.extras())

    def counts(self) -> dict[str, int]:
        return {kind.value: len(table) for kind, table in self._tables.items()}

    def held(self) -> dict[str, int]:
        return {kind.value: table.held() for kind, table in self._tables.items()}


def ad_lifetime(ad: classad2.ClassAd, default: float) -> float:
    """The ad's own ``ClassAdLifetime`` when it is a positive number, else ``default``."""
    own = evaluate_number(ad, "ClassAdLifetime")
    return own if own is not None and own > 0 else default


def ad_version(ad: StoredAd) -> str:
    """Which update of its key ``ad`` is: two ads of one key have the same version unless the later
    one is newer. Its own update marks (``UpdateSequenceNumber``, ``LastHeardFrom``) where it has
    any, else a digest of its content; re-sending or re-pulling an unchanged ad keeps its version.

    A ProcAd's version is that of the ad it stands for (:meth:`~negotiatord.pool.job_ads.ProcAd.whole`),
    read without making it whole: from its cluster ad's content, read once per cluster ad
    (:class:`_ClusterContent`), and its own identity."""
    if isinstance(ad, ProcAd):
        content = _CLUSTER_CONTENT.get(ad.cluster)
        if content is None:
            content = _CLUSTER_CONTENT[ad.cluster] = _ClusterContent(ad.cluster.ad)
        return content.version_of(ad)
    marks = _marks(ad)
    if marks is not None:
        return marks
    return _digest([json.dumps(item) for item in _content(ad)])


def _marks(ad: classad2.ClassAd) -> str | None:
    marks = [f"{name}={ad.lookup(name)}" for name in _UPDATE_MARKS if name in ad]
    return " ".join(marks) if marks else None


def _content(ad: classad2.ClassAd) -> list[tuple[str, str]]:
    """What :func:`ad_version` digests of an ad without update marks: (lower-cased name, text) of
    each attribute in name order."""
    return sorted((name.lower(), str(ad.lookup(name))) for name in ad.keys() if name.lower() not in _NOT_CONTENT)


def _digest(items: list[str]) -> str:
    """The digest of :func:`_content` whose items are ``items``, each as JSON: the JSON of the whole
    list, as ``json.dumps`` writes it (its default item separator between the items)."""
    return "sha256:" + hashlib.sha256(("[" + ", ".join(items) + "]").encode()).hexdigest()


class _ClusterContent:
    """What :func:`ad_version` reads of a cluster ad, for the version of each ProcAd sharing it.

    The ad a ProcAd stands for is its cluster ad with the job's own ``ProcId`` and ``GlobalJobId``
    (as HTCondor's schedd chains a proc ad to its cluster ad): the same update marks, and the same
    content but for the items of those two names, which keep their place in name order. A cluster
    ad is never changed once its jobs share it, so this is read once per cluster ad."""

    __slots__ = ("_marks", "_identity", "_own_version", "_items", "_places")

    def __init__(self, ad: classad2.ClassAd) -> None:
        self._marks = _marks(ad)
        self._identity = identity_of(ad)
        content = _content(ad)
        self._items = [json.dumps(item) for item in content]
        self._own_version = self._marks or _digest(self._items)
        names = [name for name, _ in content]
        self._places = tuple(names.index(name.lower()) for name in IDENTITY)

    def version_of(self, record: ProcAd) -> str:
        if self._marks is not None:
            return self._marks
        if (record.proc, record.global_id) == self._identity:
            return self._own_version       # the job whose ad is the cluster ad itself
        # the identity's text as ProcAd.whole() sets it
        own = classad2.ClassAd()
        own["ProcId"] = record.proc
        own["GlobalJobId"] = record.global_id
        items = list(self._items)
        for name, place in zip(IDENTITY, self._places):
            items[place] = json.dumps((name.lower(), str(own.lookup(name))))
        return _digest(items)


# Each cluster ad's content, for as long as the cluster ad is kept (a store's ClusterAds holds
# it while any ProcAd shares it). Read on the cycle's thread (holds) and on the event loop (ads
# filed): both may fill in the same cluster ad, with the same content.
_CLUSTER_CONTENT: WeakKeyDictionary[ClusterAd, _ClusterContent] = WeakKeyDictionary()


def release(buried: list) -> None:
    """Free ``buried`` one object at a time, and the dicts in it (a cycle's view) one entry at a
    time: dropping a whole dict would free all its ads in one stretch with the GIL held. Runs on
    a worker thread; see the module docstring."""
    while buried:
        item = buried.pop()
        if isinstance(item, JobAds):
            item = item.by_key
        if isinstance(item, dict):
            while item:
                item.popitem()
