"""The simulated pool: one partitionable slot per node, and what the running jobs hold of it.

Each node's ads are what its startd would advertise: the p-slot less what its running jobs
consumed, beside one claimed dynamic slot per running job, made by the same code that stands in
for matched slots in the daemon (:func:`negotiatord.publish.holds.slot_after_matches`), with
what the startd adds once the job runs: the p-slot's START as the dynamic slot's Requirements
and its Rank (a dynamic slot inherits its p-slot's configuration), ``CurrentRank`` (that Rank
for the running job: 0) and ``JobStart``, which preemption reads to rank and pick its victims
(:mod:`negotiatord.cycle.preemption`, :mod:`negotiatord.cycle.claimed`). A node's
ads are rebuilt only when a job starts or ends on it, so the snapshot builder reuses its work for
the others (it recognises an unchanged ad by identity).

**Empty nodes beyond the idle jobs are stood in for.** A cycle is offered every node with work
on it, but only the first N empty nodes (in node order) when N jobs are idle; one slot in the
Owner state (never a candidate) carries the weight of the empty nodes left out, as a literal
``SlotWeight``, so the pool size that quotas are shares of is unchanged. The matches are those
over the whole pool: empty nodes are alike but for their names, so each job's candidate list
ranks them alike and, slot-table order breaking ties, the first untouched one is always reached
first, whatever the loading (depth-first stays on a slot, breadth-first moves a used one behind
its equals, one match per p-slot withdraws it). Reaching an empty node past the first N would
take a job placed on each of those N, and a job more: N + 1 jobs, of N idle (tested against
replays offering every node). This keeps a cycle over a large, lightly queued pool (24,515
one-cpu nodes for LCG) from reading every node's ads, columns and weights. It applies when each
slot's weight is its SLOT_WEIGHT (NEGOTIATOR_USE_SLOT_WEIGHTS) and an empty node's is a whole
number, so that one sum stands exactly for many.

**Spent p-slots are left out.** A busy node's p-slot with less than one Cpu left can take no job
of a trace (each requests at least one, and the slot's START asks for ``TARGET.RequestCpus <=
MY.Cpus``); when its SLOT_WEIGHT is 0 as well, as under ``SLOT_WEIGHT = Cpus``, leaving it out
changes neither the pool size nor any match, only the slot counts, which the replay adds back.
A one-cpu node's p-slot is spent as soon as a job runs on it, so this halves the ads of a busy
pool of such nodes (LCG's 24,515).

**Each submitter's claimed dynamic slots are stood in for by one**, when no claimed slot can
matter but for the weight it charges: no preemption of any kind can happen (:func:`may_preempt`,
fair sharing, quota preemption), admission fair sharing is off (its sample reads each slot's
assets) and slots are weighed by SLOT_WEIGHT. The stand-in is a claimed slot of the submitter
holding the sum of their assets, so it weighs what they weigh together under a SLOT_WEIGHT that
adds up (Cpus, Memory, a sum of assets): the cycle charges each submitter and group the same
usage. Only while every running match's cost and assets are whole numbers, whose sums are exact
in any order; a slot's weight in the cycle is SLOT_WEIGHT, not the SlotWeight it advertises, so
a SLOT_WEIGHT that does not add up (a product of assets, say) breaks the replays' equality, which
the tests check for ``SLOT_WEIGHT = Cpus``.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
from collections.abc import Iterable
from dataclasses import dataclass

import classad2

from negotiatord.cycle.result import Match
from negotiatord.pool.slots import considers_priority_preemption
from negotiatord.publish.holds import slot_after_matches
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
STAND_IN = f"empty-nodes@{SUBMITTER_DOMAIN}"
CLAIMS_STAND_IN = "claims-of-{customer}"


class PoolSpecError(ValueError):
    """A ``--node`` description or pool size that cannot be used."""


@dataclass(frozen=True)
class NodeShape:
    """The resources of each node: its p-slot's Cpus, Memory (MB) and Disk (KB)."""

    cpus: int
    memory_mb: int
    disk_kb: int

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


def default_pool(trace: Trace) -> tuple[int, NodeShape]:
    """The pool an SWF header describes: ``MaxNodes`` nodes sharing ``MaxProcs`` processors
    (``MaxProcs`` one-processor nodes when the header gives no node count)."""
    nodes, procs = trace.max_nodes, trace.max_procs
    if nodes is None:
        if procs is None:
            raise PoolSpecError("the trace's header gives neither MaxNodes nor MaxProcs: give --nodes and --node")
        return procs, NodeShape.with_cpus(1)
    return nodes, NodeShape.with_cpus(max(1, (procs or nodes) // nodes))


def fit_to_node(jobs: Iterable[TraceJob], shape: NodeShape, cleaning: Cleaning) -> list[TraceJob]:
    """``jobs`` with requests larger than a node clamped to the node, each clamp counted: a job
    that no slot can hold would wait for ever (HTCondor does not span a job over nodes)."""
    fitted = []
    for job in jobs:
        cpus, memory_mb, disk_kb = (_clamped(job.cpus, shape.cpus, CPUS_CLAMPED, cleaning),
                                    _clamped(job.memory_mb, shape.memory_mb, MEMORY_CLAMPED, cleaning),
                                    _clamped(job.disk_kb, shape.disk_kb, DISK_CLAMPED, cleaning))
        unchanged = (cpus, memory_mb, disk_kb) == (job.cpus, job.memory_mb, job.disk_kb)
        fitted.append(job if unchanged else dataclasses.replace(job, cpus=cpus, memory_mb=memory_mb, disk_kb=disk_kb))
    return fitted


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
    empty_nodes: int = 0      # empty nodes one stand-in slot stands for (0: none, and no stand-in)
    spent_pslots: int = 0     # spent p-slots left out
    claims: int = 0           # claimed dynamic slots stood in for, one stand-in per submitter
    claim_stand_ins: int = 0

    @property
    def slots_left_out(self) -> int:
        """Slots of the pool not among ``ads``: the empty nodes', less the one stand-in, the spent
        p-slots, and the claimed dynamic slots less their stand-ins."""
        return max(0, self.empty_nodes - 1) + self.spent_pslots + self.claims - self.claim_stand_ins

    @property
    def candidates_left_out(self) -> int:
        """Unclaimed slots of the pool not offered: every empty node's p-slot and the spent p-slots
        (the stand-in is in the Owner state, no candidate)."""
        return self.empty_nodes + self.spent_pslots


class SimulatedPool:
    """``count`` nodes of ``shape``, and the matches running on them."""

    def __init__(self, count: int, shape: NodeShape) -> None:
        if count <= 0:
            raise PoolSpecError(f"--nodes must be > 0, got {count}")
        self.count, self.shape = count, shape
        width = len(str(count))
        self._base = {}
        for index in range(1, count + 1):
            name = f"slot1@node{index:0{width}d}.{SUBMITTER_DOMAIN}"
            self._base[name] = _pslot(name, shape)
        self._running: dict[str, list[Match]] = {name: [] for name in self._base}
        self._jobs: dict[str, classad2.ClassAd] = {}
        self._started: dict[str, int] = {}                              # job key -> JobStart
        self._ads: dict[str, list[classad2.ClassAd]] = {name: [ad] for name, ad in self._base.items()}
        self._dynamic: dict[str, classad2.ClassAd] = {}
        self._names = list(self._base)                                 # in node order
        self._index = {name: index for index, name in enumerate(self._names)}
        self._busy: list[int] = []                                     # nodes with work on them, in order
        self._empty: list[int] = list(range(count))                    # the others, in order
        # busy nodes whose p-slot is offered (not spent with weight 0) under the settings given, in order
        self._open: tuple[Settings, list[int]] | None = None
        self._weight: tuple[Settings, int | None] | None = None         # per settings, see offered_ads
        self._last_stand_in: tuple[int, classad2.ClassAd] | None = None      # the last one, by nodes stood in for
        self._spent: set[str] = set()                                  # nodes whose p-slot has < 1 Cpu left
        self._spent_weightless: tuple[Settings, dict[str, bool]] | None = None   # per settings and node
        self._claims: dict[str, dict[str, Match]] = {}         # customer -> job key -> its running match
        self._claim_stand_ins: dict[str, classad2.ClassAd] = {}     # customer -> its stand-in, while valid
        self._fractional = 0                                   # running matches with a cost or asset not whole

    @property
    def cpus(self) -> int:
        return self.count * self.shape.cpus

    def free(self, name: str) -> tuple[float, float]:
        """The Cpus and Memory (MB) p-slot ``name`` has left."""
        cpus, memory = float(self.shape.cpus), float(self.shape.memory_mb)
        for match in self._running[name]:
            cpus -= match.consumed.get("Cpus", 0.0)
            memory -= match.consumed.get("Memory", 0.0)
        return cpus, memory

    def slot_ads(self) -> list[classad2.ClassAd]:
        """Every node's ads, node by node (the same objects for nodes nothing happened on)."""
        return [ad for ads in self._ads.values() for ad in ads]

    def offered_ads(self, idle_jobs: int, settings: Settings) -> Offer:
        """The ads a cycle with ``idle_jobs`` idle jobs is offered: every node's, node by node, but
        for the empty nodes past the first ``idle_jobs``, stood in for by one slot carrying their
        weight, and the spent p-slots of weight 0 (see the module's docstring)."""
        weight = self._empty_node_weight(settings)
        left_out = self.count - len(self._busy) - idle_jobs
        if self._fractional == 0 and claims_stand_in_for(settings):
            return self._open_offer(idle_jobs, settings, weight, left_out)
        ads: list[classad2.ClassAd] = []
        spent = 0

        def offer(name: str) -> None:
            nonlocal spent
            node = self._ads[name]
            if self._offers_pslot(self._index[name], settings):
                ads.append(node[0])
            else:
                spent += 1
            ads.extend(node[1:])

        if weight is None or left_out <= 0:
            for name in self._names:
                offer(name)
            return Offer(ads, 0, spent)
        # the nodes up to the last empty one offered, then the busy nodes after it: a step per
        # busy node and offered empty node, not per node of the pool
        index, offered = 0, 0
        while offered < idle_jobs:
            name = self._names[index]
            offer(name)
            offered += not self._running[name]
            index += 1
        for busy in self._busy[bisect.bisect_left(self._busy, index):]:
            offer(self._names[busy])
        ads.append(self._empty_nodes_stand_in(left_out, weight))
        return Offer(ads, left_out, spent)

    def _open_offer(self, idle_jobs: int, settings: Settings, weight: int | None, left_out: int) -> Offer:
        """:meth:`offered_ads` with claims stood in: the p-slots of the first ``idle_jobs`` empty
        nodes (of every empty node, without a stand-in for the rest) and of the busy nodes not
        spent with weight 0, in node order, then the stand-ins; a step per slot offered, not per
        busy node."""
        open_busy = self._open_busy(settings)
        standing_in = weight is not None and left_out > 0
        empty = self._empty[:idle_jobs] if standing_in else self._empty
        ads = [self._ads[self._names[index]][0] for index in heapq.merge(empty, open_busy)]
        if standing_in:
            assert weight is not None
            ads.append(self._empty_nodes_stand_in(left_out, weight))
        ads.extend(self._claim_stand_in(customer) for customer in sorted(self._claims))
        return Offer(ads, left_out if standing_in else 0, len(self._busy) - len(open_busy), len(self._jobs),
                     len(self._claims))

    def _empty_nodes_stand_in(self, left_out: int, weight: int) -> classad2.ClassAd:
        """The one slot standing in for ``left_out`` empty nodes of weight ``weight`` each, made
        again only when their number changes."""
        if self._last_stand_in is None or self._last_stand_in[0] != left_out:
            self._last_stand_in = (left_out, _stand_in(self.shape, left_out * weight))
        return self._last_stand_in[1]

    def _open_busy(self, settings: Settings) -> list[int]:
        """The busy nodes whose p-slot is offered under ``settings`` (kept up to date by :meth:`_rebuild`)."""
        if self._open is None or self._open[0] is not settings:
            self._open = (settings, [index for index in self._busy if self._offers_pslot(index, settings)])
        return self._open[1]

    def _offers_pslot(self, index: int, settings: Settings) -> bool:
        name = self._names[index]
        return name not in self._spent or not self._weightless(name, settings)

    def _claim_stand_in(self, customer: str) -> classad2.ClassAd:
        found = self._claim_stand_ins.get(customer)
        if found is None:
            found = self._claim_stand_ins[customer] = _claims_stand_in(customer, self._claims[customer].values())
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

    def _empty_node_weight(self, settings: Settings) -> int | None:
        """An empty node's SLOT_WEIGHT as classad2 evaluates it, if stand-ins apply: slot weights
        are used and it is a whole number."""
        if self._weight is None or self._weight[0] is not settings:
            weight = None
            if settings.use_slot_weights:
                value = _slot_weight(next(iter(self._base.values())), settings)
                if value is not None and value.is_integer():
                    weight = int(value)
            self._weight = (settings, weight)
        return self._weight[1]

    def start(self, match: Match, job: classad2.ClassAd, epoch: int) -> None:
        """``match``'s job starts at ``epoch``: its p-slot gives up what the match consumed."""
        self._jobs[match.job] = job
        self._started[match.job] = epoch
        self._running[match.slot].append(match)
        self._claims.setdefault(match.submitter, {})[match.job] = match
        self._claim_stand_ins.pop(match.submitter, None)
        self._fractional += not _whole(match)
        self._rebuild(match.slot)

    def release(self, match: Match) -> None:
        """``match``'s job ends: what it consumed returns to its p-slot."""
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
        if not running:
            self._ads[name] = [self._base[name]]
            if listed:
                del self._busy[at]
                bisect.insort(self._empty, index)
            return
        if not listed:
            self._busy.insert(at, index)
            del self._empty[bisect.bisect_left(self._empty, index)]
        left, dynamic = slot_after_matches(name, self._base[name], running, self._jobs.get)
        assert left is not None, "the simulated p-slot's assets are numbers"
        if left["Cpus"] < 1:
            self._spent.add(name)
        ads = [left]
        for (key, ad), match in zip(dynamic, running):
            if key not in self._dynamic:
                ad["Start"] = classad2.ExprTree(START)
                ad["Requirements"] = classad2.ExprTree("START")
                ad["JobStart"] = self._started[match.job]
                ad["Rank"] = 0
                ad["CurrentRank"] = 0.0
                self._dynamic[key] = ad
            ads.append(self._dynamic[key])
        self._ads[name] = ads
        if self._open is not None and self._offers_pslot(index, self._open[0]):
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


def _claims_stand_in(customer: str, matches: Iterable[Match]) -> classad2.ClassAd:
    """One claimed slot of ``customer`` holding what ``matches`` consumed together, at their summed cost."""
    assets: dict[str, float] = {}
    cost = 0.0
    for match in matches:
        cost += match.cost
        for asset, amount in match.consumed.items():
            assets[asset] = assets.get(asset, 0.0) + amount
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


def _stand_in(shape: NodeShape, weight: int) -> classad2.ClassAd:
    """A node's p-slot that no job is offered (its state is Owner), whose weight is ``weight``."""
    ad = _pslot(STAND_IN, shape)
    ad["State"] = "Owner"
    ad["SlotWeight"] = weight
    return ad


def _pslot(name: str, shape: NodeShape) -> classad2.ClassAd:
    ad = classad2.ClassAd({
        "MyType": "Machine",
        "Name": name,
        "Machine": name.partition("@")[2],
        "PartitionableSlot": True,
        "SlotType": "Partitionable",
        "State": "Unclaimed",
        "Activity": "Idle",
        "Cpus": shape.cpus,
        "Memory": shape.memory_mb,
        "Disk": shape.disk_kb,
        "TotalSlotCpus": shape.cpus,
        "TotalSlotMemory": shape.memory_mb,
        "TotalSlotDisk": shape.disk_kb,
        "MachineResources": "Cpus Memory Disk",
        "Rank": 0,
    })
    ad["Start"] = classad2.ExprTree(START)
    ad["Requirements"] = classad2.ExprTree("START")
    return ad
