"""The simulated pool: one slot per node, partitionable (or static, from a pool file), and what
the running jobs hold of it.

Nodes come in shapes (:class:`NodeShape`): ``--nodes N --node ...`` makes N of one shape, ``--pool``
one per slot of a real pool (:mod:`negotiatord.replay.pool_file`), of as many shapes as it has.
Each node's ads are what its startd would advertise: the p-slot less what its running jobs
consumed, beside one claimed dynamic slot per running job, made by the same code that stands in
for matched slots in the daemon (:func:`negotiatord.publish.holds.slot_after_matches`), with
what the startd adds once the job runs: the p-slot's START as the dynamic slot's Requirements
and its Rank (a dynamic slot inherits its p-slot's configuration), ``CurrentRank`` (that Rank
for the running job: 0) and ``JobStart``, which preemption reads to rank and pick its victims
(:mod:`negotiatord.cycle.preemption`, :mod:`negotiatord.cycle.claimed`). A node's
ads are rebuilt only when a job starts or ends on it, so the snapshot builder reuses its work for
the others (it recognises an unchanged ad by identity). A static node is its one slot,
claimed whole by one job at a time (``slot_after_matches`` again).

**Empty nodes beyond the idle jobs are stood in for, one stand-in per shape.** A cycle is offered
every node with work on it, but of each shape's empty nodes only the first N (in node order) when
N jobs are idle; per shape, one slot in the Owner state (never a candidate) carries the weight of
that shape's empty nodes left out, as a literal ``SlotWeight``, so the pool size that quotas are
shares of is unchanged. The matches are those over the whole pool: the empty nodes of one shape
are alike but for their Name and Machine (their ads are made from the shape alone), so each job's
candidate list ranks them alike and, slot-table order breaking ties, the first untouched one of
the shape is always reached first, whatever the loading (depth-first stays on a slot,
breadth-first moves a used one behind its equals, one match per p-slot withdraws it) and however
the shapes rank against each other. Reaching an empty node of a shape past its first N would take
a job placed on each of those N, and a job more: N + 1 jobs, of N idle (tested against replays
offering every node, on pools of one shape and of several). This keeps a cycle over a large,
lightly queued pool (24,515 one-cpu nodes for LCG) from reading every node's ads, columns and
weights. It applies to a shape when each slot's weight is its SLOT_WEIGHT
(NEGOTIATOR_USE_SLOT_WEIGHTS) and the shape's empty node weighs a whole number, so that one sum
stands exactly for many; a shape whose weight is not whole has all its empty nodes offered, and
so has a shape with one empty node past the first N: a stand-in for one node would only swap one
ad for another, and each swap costs the snapshot builder the work it saves on unchanged ads (a
real pool's slots are mostly of shapes of their own).
A config whose ranks read a slot's Name or Machine would tell the nodes of a shape apart; the
replay's jobs and slots rank every slot 0.

**Spent p-slots are left out.** A busy node's p-slot with less than one Cpu left can take no job
of a trace (each requests at least one, and the slot's START asks for ``TARGET.RequestCpus <=
MY.Cpus``); when its SLOT_WEIGHT is 0 as well, as under ``SLOT_WEIGHT = Cpus``, leaving it out
changes neither the pool size nor any match, only the slot counts, which the replay adds back.
A one-cpu node's p-slot is spent as soon as a job runs on it, so this halves the ads of a busy
pool of such nodes (LCG's 24,515). A busy static node has no p-slot: its one slot is claimed.

**Each submitter's claimed dynamic slots are stood in for by one**, when no claimed slot can
matter but for the weight it charges: no preemption of any kind can happen (:func:`may_preempt`,
fair sharing, quota preemption), admission fair sharing is off (its sample reads each slot's
assets) and slots are weighed by SLOT_WEIGHT. The stand-in is a claimed slot of the submitter
holding the sum of their assets (a claimed static slot's too), so it weighs what they weigh
together under a SLOT_WEIGHT that adds up (Cpus, Memory, a sum of assets): the cycle charges
each submitter and group the same usage. Only while every running match's cost and assets are
whole numbers, whose sums are exact in any order; a slot's weight in the cycle is SLOT_WEIGHT,
not the SlotWeight it advertises, so a SLOT_WEIGHT that does not add up (a product of assets,
say) breaks the replays' equality, which the tests check for ``SLOT_WEIGHT = Cpus``.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import classad2

from negotiatord.cycle.result import Match
from negotiatord.pool.slots import considers_priority_preemption
from negotiatord.publish.holds import claimed_dynamic_slot, slot_after_matches, what_is_left
from negotiatord.replay.trace import DEFAULT_MEMORY_MB_PER_CPU, Cleaning, Trace, TraceJob
from negotiatord.settings import Settings, SubmitterOrder

CPUS_CLAMPED = "cpus_clamped_to_node"
MEMORY_CLAMPED = "memory_clamped_to_node"
DISK_CLAMPED = "disk_clamped_to_node"
DEFAULT_DISK_KB_PER_NODE = 100 * 1024 * 1024

# A slot takes a job its unclaimed resources can hold, the usual START of an execution point.
START = "TARGET.RequestCpus <= MY.Cpus && TARGET.RequestMemory <= MY.Memory && TARGET.RequestDisk <= MY.Disk"
# A job asks for the resources it requests, as condor_submit writes its Requirements.
JOB_REQUIREMENTS = ("TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory && "
                    "TARGET.Disk >= RequestDisk")
SUBMITTER_DOMAIN = "trace"
STAND_IN = "empty-nodes-{shape}@" + SUBMITTER_DOMAIN
CLAIMS_STAND_IN = "claims-of-{customer}"
STAND_INS_KEPT = 64       # stand-ins of each kind kept for when they would be made alike again


class PoolSpecError(ValueError):
    """A ``--node`` description, pool size or ``--pool`` file that cannot be used."""


@dataclass(frozen=True)
class NodeShape:
    """All that a cycle sees of an empty node but its Name and Machine: its slot's Cpus, Memory
    (MB), Disk (KB) and GPUs, whether the slot is static (else partitionable), and the attributes
    kept of a real slot's ad (:mod:`negotiatord.replay.pool_file`) as (name, value) pairs."""

    cpus: int
    memory_mb: int
    disk_kb: int
    gpus: int = 0
    static: bool = False
    kept: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> NodeShape:
        """``"Cpus=4, Memory=8192, Disk=100000000"``; a resource left out gets the default shape's
        value for the given Cpus (1024 MB of memory per cpu, 100 GiB of disk)."""
        values: dict[str, int] = {}
        for item in text.split(","):
            key, equals, value = item.partition("=")
            key = key.strip().lower()
            if not equals or key not in ("cpus", "memory", "disk"):
                raise PoolSpecError(f"--node {text!r}: expected Cpus=N, Memory=MB, Disk=KB, got {item.strip()!r}")
            try:
                values[key] = int(value)
            except ValueError:
                raise PoolSpecError(f"--node {text!r}: {key} is not a whole number: {value.strip()!r}") from None
            if values[key] <= 0:
                raise PoolSpecError(f"--node {text!r}: {key} must be > 0")
        default = cls.with_cpus(values.get("cpus", 1))
        return cls(values.get("cpus", default.cpus), values.get("memory", default.memory_mb),
                   values.get("disk", default.disk_kb))

    @classmethod
    def with_cpus(cls, cpus: int) -> NodeShape:
        return cls(cpus, cpus * DEFAULT_MEMORY_MB_PER_CPU, DEFAULT_DISK_KB_PER_NODE)

    def holds(self, job: TraceJob) -> bool:
        """Whether an empty node of this shape can take ``job`` (the replay's START)."""
        return job.cpus <= self.cpus and job.memory_mb <= self.memory_mb and job.disk_kb <= self.disk_kb

    def assets(self) -> dict[str, int]:
        """The slot's assets as its MachineResources lists them; GPUs only on a node that has some."""
        assets = {"Cpus": self.cpus, "Memory": self.memory_mb, "Disk": self.disk_kb}
        if self.gpus:
            assets["GPUs"] = self.gpus
        return assets

    def document(self) -> dict[str, object]:
        """The shape as the replay's summary gives it."""
        document: dict[str, object] = dict(self.assets())
        if self.static:
            document["static"] = True
        document.update(self.kept)
        return document


@dataclass(frozen=True)
class Node:
    """One node of the simulated pool: its slot's Name, its shape, and its Machine ("": the part
    of the Name after its first ``@``)."""

    name: str
    shape: NodeShape
    machine: str = ""


def default_pool(trace: Trace) -> tuple[int, NodeShape]:
    """The pool an SWF header describes: ``MaxNodes`` nodes sharing ``MaxProcs`` processors
    (``MaxProcs`` one-processor nodes when the header gives no node count)."""
    nodes, procs = trace.max_nodes, trace.max_procs
    if nodes is None:
        if procs is None:
            raise PoolSpecError("the trace's header gives neither MaxNodes nor MaxProcs: give --nodes and --node")
        return procs, NodeShape.with_cpus(1)
    return nodes, NodeShape.with_cpus(max(1, (procs or nodes) // nodes))


def pool_that_fits(jobs: Sequence[TraceJob], max_procs: int | None, pool_cpus: int) -> tuple[int, NodeShape]:
    """Nodes that hold every one of ``jobs`` as it asks: for a parallel machine's trace (its
    header's ``MaxProcs``), the machine's processors as one node (a parallel machine gives a job
    processors from one pool, and HTCondor does not spread a job over machines); else nodes as wide
    as the widest job, as many as hold ``pool_cpus``. Memory and disk: the most any job asks, at
    least the default shape's."""
    widest = max(job.cpus for job in jobs)
    width = max(widest, max_procs) if max_procs else widest
    count = 1 if max_procs else max(1, round(pool_cpus / width))
    default = NodeShape.with_cpus(width)
    return count, NodeShape(width, max(default.memory_mb, *(job.memory_mb for job in jobs)),
                            max(default.disk_kb, *(job.disk_kb for job in jobs)))


def alike_nodes(count: int, shape: NodeShape) -> list[Node]:
    """``count`` nodes of ``shape``, ``slot1@node<i>.trace``."""
    if count <= 0:
        raise PoolSpecError(f"--nodes must be > 0, got {count}")
    width = len(str(count))
    return [Node(f"slot1@node{index:0{width}d}.{SUBMITTER_DOMAIN}", shape) for index in range(1, count + 1)]


def fit_to_nodes(jobs: Iterable[TraceJob], shapes: Iterable[NodeShape], cleaning: Cleaning) -> list[TraceJob]:
    """``jobs``, each that no node can hold clamped to one node, each clamp counted by resource: a
    job that fits no machine would wait for ever (HTCondor does not span a job over machines). The
    node is the one that takes the job with the fewest resources clamped, the largest (most Cpus,
    then Memory, then Disk) among those: in a pool of one shape, that shape."""
    largest_first = sorted(set(shapes), key=lambda shape: (shape.cpus, shape.memory_mb, shape.disk_kb),
                           reverse=True)
    if not largest_first:
        raise PoolSpecError("the pool has no node")
    fitted = []
    for job in jobs:
        if any(shape.holds(job) for shape in largest_first):
            fitted.append(job)
            continue
        shape = min(largest_first, key=lambda shape: _clamps(job, shape))    # the first of the fewest
        fitted.append(dataclasses.replace(
            job, cpus=_clamped(job.cpus, shape.cpus, CPUS_CLAMPED, cleaning),
            memory_mb=_clamped(job.memory_mb, shape.memory_mb, MEMORY_CLAMPED, cleaning),
            disk_kb=_clamped(job.disk_kb, shape.disk_kb, DISK_CLAMPED, cleaning)))
    return fitted


def _clamps(job: TraceJob, shape: NodeShape) -> int:
    """How many of ``job``'s requests a node of ``shape`` would clamp."""
    return (job.cpus > shape.cpus) + (job.memory_mb > shape.memory_mb) + (job.disk_kb > shape.disk_kb)


def _clamped(requested: int, limit: int, rule: str, cleaning: Cleaning) -> int:
    """``requested``, or ``limit`` when it asks for more (counted under ``rule``)."""
    if requested <= limit:
        return requested
    cleaning.adjusted[rule] += 1
    return limit


def job_ad(job: TraceJob, cluster: int, start_epoch: int) -> classad2.ClassAd:
    """The idle job's ad as a schedd would advertise it, from the trace's plain values."""
    ad = classad2.ClassAd({
        "MyType": "Job",
        "TargetType": "Machine",
        "ClusterId": cluster,
        "ProcId": 0,
        "GlobalJobId": job_key(job),
        "JobStatus": 1,
        "JobUniverse": 5,
        "Owner": job.user,
        "User": f"{job.user}@{SUBMITTER_DOMAIN}",
        "QDate": int(start_epoch + job.submit),
        "RequestCpus": job.cpus,
        "RequestMemory": job.memory_mb,
        "RequestDisk": job.disk_kb,
        "JobPrio": 0,
        "Rank": 0,
    })
    ad["Requirements"] = classad2.ExprTree(JOB_REQUIREMENTS)
    if job.group:
        ad["AccountingGroup"] = f"{job.group}.{job.user}"
    return ad


def job_key(job: TraceJob) -> str:
    return f"{SUBMITTER_DOMAIN}#{job.id}"


@dataclass(frozen=True)
class Offer:
    """The slot ads a cycle is offered, and what stands in for or leaves out the rest."""

    ads: list[classad2.ClassAd]
    empty_nodes: int = 0      # empty nodes stood in for, by one stand-in slot per shape
    spent_pslots: int = 0     # spent p-slots left out
    claims: int = 0           # claimed slots stood in for, one stand-in per submitter
    claim_stand_ins: int = 0
    empty_stand_ins: int = 0

    @property
    def slots_left_out(self) -> int:
        """Slots of the pool not among ``ads``: the empty nodes', less their stand-ins, the spent
        p-slots, and the claimed slots less their stand-ins."""
        return self.empty_nodes - self.empty_stand_ins + self.spent_pslots + self.claims - self.claim_stand_ins

    @property
    def candidates_left_out(self) -> int:
        """Unclaimed slots of the pool not offered: every empty node's slot and the spent p-slots
        (the stand-ins are in the Owner state, no candidates)."""
        return self.empty_nodes + self.spent_pslots


class SimulatedPool:
    """The nodes, in order, and the matches running on them."""

    def __init__(self, nodes: Sequence[Node], origin: dict[str, object] | None = None) -> None:
        """``origin``: where the nodes came from, for the summary (a pool file's account of its ads)."""
        if not nodes:
            raise PoolSpecError("the pool has no node")
        self.nodes, self.origin = list(nodes), origin
        self._base = {node.name: _slot_ad(node.name, node.machine, node.shape) for node in self.nodes}
        if len(self._base) != len(self.nodes):
            raise PoolSpecError("two nodes of the pool have the same name")
        numbers: dict[NodeShape, int] = {}
        self._shape_of = [numbers.setdefault(node.shape, len(numbers)) for node in self.nodes]   # node -> shape
        self.shapes = list(numbers)                                    # in order of first node
        self._static = [node.shape.static for node in self.nodes]
        self._running: dict[str, list[Match]] = {name: [] for name in self._base}
        self._jobs: dict[str, classad2.ClassAd] = {}
        self._started: dict[str, int] = {}                              # job key -> JobStart
        self._ads: dict[str, list[classad2.ClassAd]] = {name: [ad] for name, ad in self._base.items()}
        self._dynamic: dict[str, classad2.ClassAd] = {}
        self._claimed_unmade: set[str] = set()       # busy p-slots whose dynamic slots are not in _ads yet
        self._names = list(self._base)                                 # in node order
        self._index = {name: index for index, name in enumerate(self._names)}
        self._busy: list[int] = []                                     # nodes with work on them, in order
        self._busy_static = 0                                          # of which static
        self._empty: list[list[int]] = [[] for _ in self.shapes]       # the others, per shape, in order
        for index, shape in enumerate(self._shape_of):
            self._empty[shape].append(index)
        self._first_of_shape = [self._empty[shape][0] for shape in range(len(self.shapes))]
        # busy partitionable nodes whose p-slot is offered (not spent with weight 0) under the settings given
        self._open: tuple[Settings, list[int]] | None = None
        self._weights: tuple[Settings, list[int | None]] | None = None     # per settings, see offered_ads
        # the empty nodes' stand-ins last made, by (shape, nodes stood in for, weight of each)
        self._stand_ins: OrderedDict[tuple[int, int, int], classad2.ClassAd] = OrderedDict()
        self._spent: set[str] = set()                                  # nodes whose p-slot has < 1 Cpu left
        self._spent_weightless: tuple[Settings, dict[str, bool]] | None = None   # per settings and node
        self._claims: dict[str, dict[str, Match]] = {}         # customer -> job key -> its running match
        self._claim_stand_ins: dict[str, classad2.ClassAd] = {}     # customer -> its stand-in, while valid
        # the claims' stand-ins last made, by what they hold (customer, summed cost and assets)
        self._claims_held: OrderedDict[tuple, classad2.ClassAd] = OrderedDict()
        self._fractional = 0                                   # running matches with a cost or asset not whole

    @classmethod
    def alike(cls, count: int, shape: NodeShape) -> SimulatedPool:
        """A pool of :func:`alike_nodes`."""
        return cls(alike_nodes(count, shape))

    @property
    def count(self) -> int:
        return len(self.nodes)

    @property
    def cpus(self) -> int:
        return sum(node.shape.cpus for node in self.nodes)

    def document(self) -> dict[str, object]:
        """The pool as the replay's summary gives it: its nodes and cpus, its shapes with how many
        nodes have each (and ``node``, the shape, when there is one), and the pool file's account."""
        counts = Counter(self._shape_of)
        document: dict[str, object] = {"nodes": self.count, "cpus": self.cpus}
        if len(self.shapes) == 1:
            document["node"] = self.shapes[0].document()
        document["shapes"] = [{**shape.document(), "nodes": counts[number]} for number, shape in enumerate(self.shapes)]
        if self.origin is not None:
            document["slots_file"] = self.origin
        return document

    def free(self, name: str) -> tuple[float, float]:
        """The Cpus and Memory (MB) slot ``name`` has left."""
        shape = self.nodes[self._index[name]].shape
        cpus, memory = float(shape.cpus), float(shape.memory_mb)
        for match in self._running[name]:
            cpus -= match.consumed.get("Cpus", 0.0)
            memory -= match.consumed.get("Memory", 0.0)
        return cpus, memory

    def slot_ads(self) -> list[classad2.ClassAd]:
        """Every node's ads, node by node (the same objects for nodes nothing happened on)."""
        return [ad for name in self._ads for ad in self._node_ads(name)]

    def _node_ads(self, name: str) -> list[classad2.ClassAd]:
        """Node ``name``'s ads: its slot, then a p-slot's claimed dynamic slots, one per running
        job. Those are made when first asked for: a cycle that stands claims in (see the
        module's docstring) offers none of them."""
        ads = self._ads[name]
        if name in self._claimed_unmade:
            self._claimed_unmade.discard(name)
            for match in self._running[name]:
                key = f"{name}#{match.job}"
                if key not in self._dynamic:
                    ad = self._dynamic[key] = claimed_dynamic_slot(self._base[name], match,
                                                                   self._jobs.get(match.job))
                    ad["Start"] = classad2.ExprTree(START)
                    ad["Requirements"] = classad2.ExprTree("START")
                    ad["JobStart"] = self._started[match.job]
                    ad["Rank"] = 0
                    ad["CurrentRank"] = 0.0
                ads.append(self._dynamic[key])
        return ads

    def offered_ads(self, idle_jobs: int, settings: Settings) -> Offer:
        """The ads a cycle with ``idle_jobs`` idle jobs is offered: every node's, node by node, but
        for each shape's empty nodes past its first ``idle_jobs``, stood in for by one slot per
        shape carrying their weight, and the spent p-slots of weight 0 (see the module's
        docstring); with claims stood in for, see :meth:`_open_offer`. A step per busy node and
        offered empty node, not per node of the pool."""
        weights = self._empty_node_weights(settings)
        empty: list[list[int]] = []
        stand_ins: list[classad2.ClassAd] = []
        left_out = 0
        for shape, nodes in enumerate(self._empty):
            beyond, weight = len(nodes) - idle_jobs, weights[shape]
            if weight is None or beyond < 2:
                empty.append(nodes)
                continue
            empty.append(nodes[:idle_jobs])
            stand_ins.append(self._empty_nodes_stand_in(shape, beyond, weight))
            left_out += beyond
        if self._fractional == 0 and claims_stand_in_for(settings):
            return self._open_offer(settings, empty, stand_ins, left_out)
        ads: list[classad2.ClassAd] = []
        spent = 0
        for index in heapq.merge(self._busy, *empty):
            node = self._node_ads(self._names[index])
            if self._offers_slot(index, settings):
                ads.append(node[0])
            else:
                spent += 1
            ads.extend(node[1:])
        ads.extend(stand_ins)
        return Offer(ads, left_out, spent, empty_stand_ins=len(stand_ins))

    def _open_offer(self, settings: Settings, empty: list[list[int]], stand_ins: list[classad2.ClassAd],
                    left_out: int) -> Offer:
        """:meth:`offered_ads` with claims stood in: the slots of the ``empty`` nodes offered and
        the p-slots of the busy nodes not spent with weight 0, in node order, then the stand-ins
        for the empty nodes and for each submitter's claims (a busy static node's slot is one of
        those claims); a step per slot offered, not per busy node."""
        open_busy = self._open_busy(settings)
        ads = [self._ads[self._names[index]][0] for index in heapq.merge(open_busy, *empty)]
        ads.extend(stand_ins)
        ads.extend(self._claim_stand_in(customer) for customer in sorted(self._claims))
        return Offer(ads, left_out, len(self._busy) - self._busy_static - len(open_busy), len(self._jobs),
                     len(self._claims), len(stand_ins))

    def _empty_nodes_stand_in(self, shape: int, left_out: int, weight: int) -> classad2.ClassAd:
        """The one slot standing in for ``left_out`` empty nodes of shape number ``shape``, of
        weight ``weight`` each: the same ad object as the last time that many stood in (their
        number goes up and down by a few as jobs start and end), so that the snapshot builder and
        the match space know it (:data:`STAND_INS_KEPT` of them are kept)."""
        return _recent(self._stand_ins, (shape, left_out, weight),
                       lambda: _stand_in(shape, self.shapes[shape], left_out * weight))

    def _open_busy(self, settings: Settings) -> list[int]:
        """The busy nodes whose p-slot is offered under ``settings`` (kept up to date by :meth:`_rebuild`)."""
        if self._open is None or self._open[0] is not settings:
            self._open = (settings, [index for index in self._busy if self._opens(index, settings)])
        return self._open[1]

    def _opens(self, index: int, settings: Settings) -> bool:
        """Whether busy node ``index`` has a p-slot to offer under ``settings``."""
        return not self._static[index] and self._offers_slot(index, settings)

    def _offers_slot(self, index: int, settings: Settings) -> bool:
        """Whether node ``index``'s first ad (its p-slot, or its static slot) is offered."""
        name = self._names[index]
        return name not in self._spent or not self._weightless(name, settings)

    def _claim_stand_in(self, customer: str) -> classad2.ClassAd:
        """The one claimed slot standing in for ``customer``'s claims: the same ad object as the
        last time its claims held as much (a submitter's jobs end and start alike ones), so that
        the snapshot builder knows it (:data:`STAND_INS_KEPT` of them are kept)."""
        found = self._claim_stand_ins.get(customer)
        if found is None:
            cost, assets = _held(self._claims[customer].values())
            found = self._claim_stand_ins[customer] = _recent(
                self._claims_held, (customer, cost, tuple(assets.items())),
                lambda: _claims_stand_in(customer, cost, assets))
        return found

    def _weightless(self, name: str, settings: Settings) -> bool:
        """Whether spent node ``name``'s p-slot weighs 0 by SLOT_WEIGHT as classad2 evaluates it
        (with slot weights used: else every slot weighs 1)."""
        if self._spent_weightless is None or self._spent_weightless[0] is not settings:
            self._spent_weightless = (settings, {})
        known = self._spent_weightless[1]
        if name not in known:
            known[name] = settings.use_slot_weights and _slot_weight(self._ads[name][0], settings) == 0
        return known[name]

    def _empty_node_weights(self, settings: Settings) -> list[int | None]:
        """Per shape, an empty node's SLOT_WEIGHT as classad2 evaluates it, if stand-ins apply:
        slot weights are used and it is a whole number (else None)."""
        if self._weights is None or self._weights[0] is not settings:
            weights: list[int | None] = []
            for first in self._first_of_shape:
                value = _slot_weight(self._base[self._names[first]], settings) if settings.use_slot_weights else None
                weights.append(int(value) if value is not None and value.is_integer() else None)
            self._weights = (settings, weights)
        return self._weights[1]

    def start(self, match: Match, job: classad2.ClassAd, epoch: int) -> None:
        """``match``'s job starts at ``epoch``: its p-slot gives up what the match consumed, or
        its static slot is claimed."""
        self._jobs[match.job] = job
        self._started[match.job] = epoch
        self._running[match.slot].append(match)
        self._claims.setdefault(match.submitter, {})[match.job] = match
        self._claim_stand_ins.pop(match.submitter, None)
        self._fractional += not _whole(match)
        self._rebuild(match.slot)

    def release(self, match: Match) -> None:
        """``match``'s job ends: what it consumed returns to its p-slot, or its static slot is free."""
        self._running[match.slot].remove(match)
        del self._jobs[match.job]
        del self._started[match.job]
        held = self._claims[match.submitter]
        del held[match.job]
        if not held:
            del self._claims[match.submitter]
        self._claim_stand_ins.pop(match.submitter, None)
        self._fractional -= not _whole(match)
        self._dynamic.pop(f"{match.slot}#{match.job}", None)
        self._rebuild(match.slot)

    def _rebuild(self, name: str) -> None:
        running, index = self._running[name], self._index[name]
        static, empty = self._static[index], self._empty[self._shape_of[index]]
        at = bisect.bisect_left(self._busy, index)
        listed = at < len(self._busy) and self._busy[at] == index
        self._spent.discard(name)
        if self._spent_weightless is not None:
            self._spent_weightless[1].pop(name, None)
        if self._open is not None:
            kept = self._open[1]
            place = bisect.bisect_left(kept, index)
            if place < len(kept) and kept[place] == index:
                del kept[place]
        self._claimed_unmade.discard(name)
        if not running:
            self._ads[name] = [self._base[name]]
            if listed:
                del self._busy[at]
                self._busy_static -= static
                bisect.insort(empty, index)
            return
        if not listed:
            self._busy.insert(at, index)
            self._busy_static += static
            del empty[bisect.bisect_left(empty, index)]
        if static:
            # the claimed static slot, as its startd advertises it once the job runs
            left, _ = slot_after_matches(name, self._base[name], running, self._jobs.get)
            assert left is not None, "the simulated slot's assets are numbers"
            (match,) = running
            left["JobStart"] = self._started[match.job]
            left["CurrentRank"] = 0.0
        else:
            left = what_is_left(self._base[name], running)
            assert left is not None, "the simulated p-slot's assets are numbers"
            if left["Cpus"] < 1:
                self._spent.add(name)
            self._claimed_unmade.add(name)
        self._ads[name] = [left]
        if self._open is not None and self._opens(index, self._open[0]):
            bisect.insort(self._open[1], index)


def _slot_weight(slot: classad2.ClassAd, settings: Settings) -> float | None:
    """``slot``'s SLOT_WEIGHT as classad2 evaluates it, None when that is not a number."""
    value = classad2.ExprTree(settings.slot_weight).eval(slot)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def may_preempt(settings: Settings) -> bool:
    """Whether a cycle of the replay may preempt a running job for an idle one: priority
    preemption (PREEMPTION_REQUIREMENTS not the literal False, with NEGOTIATOR_CONSIDER_PREEMPTION)
    or fair sharing. The replay's slots rank every job 0 (Rank = 0 = CurrentRank), so rank
    preemption never applies."""
    return (settings.consider_preemption and considers_priority_preemption(settings)) or settings.fair_sharing


def claims_stand_in_for(settings: Settings) -> bool:
    """Whether each submitter's claimed slots can be stood in for by one (see the module's docstring)."""
    return (settings.use_slot_weights and not may_preempt(settings) and not settings.quota_preemption
            and settings.submitter_order is not SubmitterOrder.ADMISSION_FAIR_SHARING)


def _whole(match: Match) -> bool:
    return float(match.cost).is_integer() and all(float(amount).is_integer() for amount in match.consumed.values())


def _recent(kept: OrderedDict[tuple, classad2.ClassAd], key: tuple,
            make: Callable[[], classad2.ClassAd]) -> classad2.ClassAd:
    """The stand-in ``kept`` under ``key``, else the one ``make`` makes; kept as the most recent,
    :data:`STAND_INS_KEPT` at most (the oldest go first)."""
    ad = kept.pop(key, None)
    if ad is None:
        ad = make()
    kept[key] = ad
    if len(kept) > STAND_INS_KEPT:
        kept.popitem(last=False)
    return ad


def _held(matches: Iterable[Match]) -> tuple[float, dict[str, float]]:
    """What ``matches`` consumed together: their summed cost and each asset's summed amount, in
    the order the assets first appear."""
    assets: dict[str, float] = {}
    cost = 0.0
    for match in matches:
        cost += match.cost
        for asset, amount in match.consumed.items():
            assets[asset] = assets.get(asset, 0.0) + amount
    return cost, assets


def _claims_stand_in(customer: str, cost: float, assets: dict[str, float]) -> classad2.ClassAd:
    """One claimed slot of ``customer`` holding ``assets`` at a cost of ``cost`` (:func:`_held`)."""
    ad = classad2.ClassAd({
        "MyType": "Machine",
        "Name": CLAIMS_STAND_IN.format(customer=customer),
        "SlotType": "Dynamic",
        "DynamicSlot": True,
        "PartitionableSlot": False,
        "State": "Claimed",
        "Activity": "Busy",
        "RemoteUser": customer,
        "AccountingGroup": customer,
        "MachineResources": " ".join(assets),
        "SlotWeight": cost,
        "Requirements": False,
        "Rank": 0,
        "CurrentRank": 0.0,
    })
    for asset, amount in assets.items():
        ad[asset] = int(amount)
    return ad


def _stand_in(number: int, shape: NodeShape, weight: int) -> classad2.ClassAd:
    """A slot of ``shape`` that no job is offered (its state is Owner), whose weight is ``weight``."""
    ad = _slot_ad(STAND_IN.format(shape=number + 1), "", shape)
    ad["State"] = "Owner"
    ad["SlotWeight"] = weight
    return ad


def _slot_ad(name: str, machine: str, shape: NodeShape) -> classad2.ClassAd:
    """An empty node's slot: partitionable, or static, with the attributes its shape keeps."""
    assets = shape.assets()
    ad = classad2.ClassAd(dict(shape.kept))
    ad.update({
        "MyType": "Machine",
        "Name": name,
        "Machine": machine or name.partition("@")[2],
        "PartitionableSlot": not shape.static,
        "SlotType": "Static" if shape.static else "Partitionable",
        "State": "Unclaimed",
        "Activity": "Idle",
        **assets,
        **{f"TotalSlot{asset}": amount for asset, amount in assets.items()},
        "MachineResources": " ".join(assets),
        "Rank": 0,
    })
    ad["Start"] = classad2.ExprTree(START)
    ad["Requirements"] = classad2.ExprTree("START")
    return ad
