"""Synthetic OSPool-shaped pools for benchmarks, built from the real ads in ``../shared/data``.

Every shape comes from real ads, so the cycle is benchmarked on the expressions, sizes and
occupancy of a real pool rather than on toy ads:

* slots: the 143 Machine ads of the OSPool sample (``ospool/pool_sample.ads.gz``, 2026). Static
  slots keep the sample's share (11 of 143; a tenth of them idle). Each partitionable slot
  copies one real p-slot: its START / Requirements / WithinResourceLimits / Rank and attributes,
  its TotalSlot* sizes and its real children (ChildCpus/ChildMemory/...), so its free resources
  are a real occupancy state. Children become claimed dynamic slots (built from the real dynamic
  ads with the same START) running the generated submitters' work. Names, sites
  (GLIDEIN_Site/GLIDEIN_ResourceName) and glidein lifetimes (GLIDEIN_ToRetire/ToDie) are drawn
  per slot from the sample's.
* jobs: idle jobs shaped like the real job ads (``htcondor/job_ads/test.old.ad``,
  ``htcondor/history/sandyHistory.hist``, ``htcondor/history/test_adstash_job_history_input``),
  keeping their Requirements and Rank; requests are drawn from the sizes of the sample's dynamic
  slots and p-slot children (what running OSPool jobs asked for), submitters are named and
  grouped like the OSPool's, jobs per submitter and per cluster are heavy-tailed.
* time: every timestamp is placed relative to ``now`` the way it sat relative to the sample's
  own clock (``MyCurrentTime``), so ``time() < GLIDEIN_ToRetire`` holds for the slots it held
  for in the real pool. A cycle must run with the returned ``now`` (as its ``time()`` and its
  implicit ``CurrentTime``, which several real START expressions read). ``now`` defaults to the
  wall clock, so the pool is also live for a daemon on the real clock.

``detail="matchmaking"`` (default) keeps, of each real ad, the attributes some matchmaking
expression of the pool can read (the reference closure of the slot's and the jobs' expressions,
plus what the cycle and the accountant read); ``detail="full"`` keeps the whole real attribute
set (about 100 KiB per slot ad in classad2: a 45k-slot pool then needs ~4 GiB for the ads alone).

CLI: ``python benchmarks/pool_generator.py --slots N --jobs M --out DIR`` writes DIR/slots.ads,
DIR/jobs.ads (old long form) and DIR/now (the cycle's ``time()``) for ``negotiatord negotiate``.
"""

from __future__ import annotations

import argparse
import gzip
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator, Sequence

import classad2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
POOL_SAMPLE = DATA / "ospool" / "pool_sample.ads.gz"
CONFIG_PATH = Path(__file__).resolve().parent / "ospool_like.conf"
DETAILS = ("matchmaking", "full")
# What state the pool is in: "steady" (p-slots with their real children: the OSPool as sampled),
# "fill" (every p-slot empty at its real TotalSlot* size: whole glideins that just arrived, or a
# pool after a mass completion), "mixed" (the steady state with a tenth of the pool's ads arriving
# as empty p-slots).
SCENARIOS = ("steady", "fill", "mixed")
ARRIVING_SHARE = 0.1           # "mixed": share of the pool's ads that are empty p-slots

# Accounting groups of ospool_like.conf.
OPPORTUNISTIC, ICECUBE, CMS = "group_opportunistic", "group_icecube", "group_cms"

# Attributes the negotiator, the accountant and a pool administrator's queries read besides what
# the expressions reference (pool/slots.py, pool/jobs.py; HTCondor's default
# NEGOTIATOR_PRE_JOB_RANK and NEGOTIATOR_POST_JOB_RANK read Rank, RemoteOwner, Cpus, Memory,
# KFlops, SlotID and Offline).
SLOT_READS = (
    "MyType", "TargetType", "Name", "Machine", "SlotType", "PartitionableSlot", "DynamicSlot", "State",
    "Activity", "MachineResources", "Cpus", "Memory", "Disk", "GPUs", "TotalSlotCpus", "TotalSlotMemory",
    "TotalSlotDisk", "TotalSlotGPUs", "NumDynamicSlots", "SlotWeight", "ConsumptionPolicy", "RemoteUser",
    "RemoteOwner", "AccountingGroup", "ConcurrencyLimits", "RemoteScheddName", "JobId", "GlobalJobId",
    "ProjectName", "JobStart", "EnteredCurrentState", "CurrentRank", "MyAddress", "SlotID", "KFlops",
    "Offline", "Rank", "GLIDEIN_Site", "GLIDEIN_ResourceName", "GLIDEIN_ToRetire", "GLIDEIN_ToDie",
    "MyCurrentTime", "DaemonStartTime", "LastHeardFrom",
)
JOB_READS = (
    "MyType", "TargetType", "ClusterId", "ProcId", "GlobalJobId", "JobStatus", "JobUniverse", "User", "Owner",
    "AccountingGroup", "JobPrio", "ConcurrencyLimits", "QDate", "EnteredCurrentStatus", "ProjectName",
    "Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk", "RequestGPUs",
)
# Attributes of a finished job that an idle job cannot have yet (dropped from the job templates).
_AFTER_START = re.compile(
    r"Remote|Completion|Exit|MachineAttr|Activation|JobCurrent|JobStart|Starts|Shadow|Cumulative|Committed|"
    r"Startd|ClaimId|LastMatch|FirstJobMatch|NumJobMatches|RunCount|LastJobStatus|Termination|Mtime|"
    r"ScratchDir|Provisioned|TransferIn|TransferOut|Transfer.*Stats|Transfer.*Counts|Block|Bytes|CpusUsage|"
    r"RecentStats|StatsLifetime|LastSuspension|ResidentSetSize|JOBGLIDEIN|MATCH_EXP|FinishedHook|InitialWait|"
    r"NumJobCompletions|OrigMaxHosts|LastHold|HoldReason|ReleaseReason|StageIn|LastJobLeaseRenewal",
    re.IGNORECASE,
)
# Integers within this many seconds of an ad's clock are timestamps (names rule out sizes).
_TIMESTAMP_WINDOW = 400 * 86400
_SIZE_WORDS = re.compile(r"disk|memory|mips|flops|size|bytes|swap", re.IGNORECASE)
# The slot attributes that describe the job running in a claimed slot; set per slot.
_RUNNING_JOB = ("RemoteUser", "RemoteOwner", "AccountingGroup", "ProjectName", "RemoteScheddName", "JobId",
                "GlobalJobId", "JobStart", "EnteredCurrentState")
# Share of static slots left idle. The sample's 11 are all claimed; a few idle ones keep the
# one-match-per-slot (legacy) path in every generated pool.
STATIC_IDLE_SHARE = 0.1


# --- what the generator returns --------------------------------------------------------------------


@dataclass
class GeneratedPool:
    """A generated pool: Machine ads (p-slots each followed by their claimed children, then static
    slots), idle job ads in schedd order (made as they are read: :class:`JobAds`), and the ``now``
    they were generated for."""

    slot_ads: list[classad2.ClassAd]
    job_ads: JobAds
    now: int                       # the cycle's time(): run the cycle with this value
    seed: int
    submitters: tuple[str, ...]    # accounting customers with idle jobs or running work
    config_path: Path = CONFIG_PATH
    generation_s: float = 0.0

    def write(self, directory: Path) -> tuple[Path, Path]:
        """Write ``slots.ads`` and ``jobs.ads`` (old long form) and ``now`` into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        slots, jobs = directory / "slots.ads", directory / "jobs.ads"
        _write_long_form(slots, self.slot_ads)
        _write_long_form(jobs, self.job_ads)
        (directory / "now").write_text(f"{self.now}\n")
        return slots, jobs


@dataclass(frozen=True)
class _Cluster:
    """One submitted cluster: its jobs' ads differ only in ProcId and GlobalJobId."""

    values: dict[str, object]
    size: int
    global_id_prefix: str          # "<schedd>#<cluster>."
    queued: int

    def ad(self, proc: int) -> classad2.ClassAd:
        ad = classad2.ClassAd(self.values)
        ad["ProcId"] = proc
        ad["GlobalJobId"] = f"{self.global_id_prefix}{proc}#{self.queued}"
        return ad


class JobAds(Sequence[classad2.ClassAd]):
    """The idle job ads in schedd order, each made when it is read (a new object every time).

    A negotiator gets its job ads from outside (a schedd or a collector feed) rather than holding
    them from the start: 255k job ads held as classad2 objects would be 1.1 GiB of the
    benchmark's own memory, which a one-off cycle reading them as they come need not hold.
    """

    def __init__(self, clusters: list[_Cluster]) -> None:
        self._clusters = clusters
        self._starts = np.cumsum([0] + [c.size for c in clusters])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: int | slice) -> classad2.ClassAd | list[classad2.ClassAd]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        at = int(np.searchsorted(self._starts, index, side="right")) - 1
        return self._clusters[at].ad(index - int(self._starts[at]))

    def __iter__(self) -> Iterator[classad2.ClassAd]:
        for cluster in self._clusters:
            for proc in range(cluster.size):
                yield cluster.ad(proc)


def _write_long_form(path: Path, ads: Iterable[classad2.ClassAd]) -> None:
    with path.open("w") as out:
        for ad in ads:
            out.write(ad.printOld())
            out.write("\n")


# --- the real shapes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SlotTemplate:
    """One real Machine ad, ready to be copied: kept attributes, timestamps as offsets from its clock."""

    ad: classad2.ClassAd
    start: str                                   # START text: children copy a dynamic ad with the same
    exprs: dict[str, dict[str, classad2.ExprTree]]   # detail -> attribute -> expression (no timestamps)
    times: dict[str, dict[str, int]]             # detail -> timestamp attribute -> seconds after the clock

    def base(self, detail: str, now: int) -> dict[str, object]:
        values: dict[str, object] = dict(self.exprs[detail])
        values.update({name: now + offset for name, offset in self.times[detail].items()})
        return values


@dataclass(frozen=True)
class _JobTemplate:
    name: str
    ad: classad2.ClassAd
    exprs: dict[str, dict[str, classad2.ExprTree]]   # detail -> attribute -> expression


@dataclass(frozen=True)
class _Shapes:
    partitionable: tuple[_SlotTemplate, ...]
    dynamic: tuple[_SlotTemplate, ...]
    static: tuple[_SlotTemplate, ...]
    sites: tuple[tuple[str, str], ...]           # (GLIDEIN_Site, GLIDEIN_ResourceName), one per real slot
    lifetimes: tuple[tuple[int, int], ...]       # (GLIDEIN_ToRetire, GLIDEIN_ToDie) - clock, per real slot
    requests: tuple[tuple[int, int, int, int], ...]  # (Cpus, Memory, Disk, GPUs) of running jobs
    projects: tuple[str, ...]                    # OSPool projects seen in group_opportunistic.<Project>.<user>
    jobs: dict[str, _JobTemplate]

    @property
    def static_share(self) -> float:
        """Static slots' share of all Machine ads in the sample."""
        return len(self.static) / (len(self.partitionable) + len(self.dynamic) + len(self.static))


@lru_cache(maxsize=1)
def real_shapes() -> _Shapes:
    """Read the shared data set once per process."""
    ads = list(classad2.parseAds(gzip.open(POOL_SAMPLE, "rt").read(), classad2.ParserType.Old))
    machines = [ad for ad in ads if ad.get("MyType") == "Machine"]
    jobs = _job_templates()
    slot_reads = set(SLOT_READS) | _target_references(t.ad for t in jobs.values())
    templates: dict[str, list[_SlotTemplate]] = {"Partitionable": [], "Dynamic": [], "Static": []}
    for ad in machines:
        templates[ad["SlotType"]].append(_slot_template(ad, slot_reads))
    # Each side's trimmed ads keep what the other side's expressions read, so the job templates'
    # matchmaking attributes are only known once the Machine ads are read.
    job_reads = set(JOB_READS) | _target_references(machines)
    for template in jobs.values():
        template.exprs["matchmaking"] = _closure(template.ad, job_reads)
    requests = [(ad["Cpus"], ad["Memory"], ad["Disk"], ad.get("GPUs", 0))
                for ad in machines if ad["SlotType"] == "Dynamic"]
    for ad in machines:
        if ad["SlotType"] == "Partitionable":
            requests += _children(ad)
    clock = [ad["MyCurrentTime"] for ad in machines]
    return _Shapes(
        partitionable=tuple(templates["Partitionable"]),
        dynamic=tuple(templates["Dynamic"]),
        static=tuple(templates["Static"]),
        sites=tuple((ad["GLIDEIN_Site"], ad.get("GLIDEIN_ResourceName", ad["GLIDEIN_Site"])) for ad in machines),
        lifetimes=tuple((ad["GLIDEIN_ToRetire"] - now, ad["GLIDEIN_ToDie"] - now)
                        for ad, now in zip(machines, clock) if "GLIDEIN_ToRetire" in ad),
        requests=tuple((int(c), int(m), int(d), int(g)) for c, m, d, g in requests),
        projects=tuple(sorted({_project(group) for group in (ad.get("AccountingGroup") for ad in ads)
                               if isinstance(group, str) and group.startswith(OPPORTUNISTIC + ".")})),
        jobs=jobs,
    )


def _job_templates() -> dict[str, _JobTemplate]:
    """The real job ads the generated jobs copy, by the kind of submitter that submits like them."""
    chtc = _history_ads(DATA / "htcondor" / "history" / "sandyHistory.hist")[0]     # CHTC AP, 2025
    osg = classad2.parseOne((DATA / "htcondor" / "job_ads" / "test.old.ad").read_text(), classad2.ParserType.Old)
    adstash = _history_ads(DATA / "htcondor" / "history" / "test_adstash_job_history_input")[0]
    templates = {}
    for name, ad in (("osg", osg), ("chtc", chtc), ("plain", adstash)):
        kept = {k: ad.lookup(k) for k in ad.keys() if not _AFTER_START.search(k)}
        templates[name] = _JobTemplate(name, ad, {"full": kept})
    # CHTC jobs that flock to the OSPool: the same Requirements without the CHTC-only
    # `TARGET.PoolName == "CHTC"` conjunct (its other branch already accepts OSPool RHEL 9 slots).
    flocking = classad2.ClassAd(templates["chtc"].exprs["full"])
    flocking["Requirements"] = _drop_conjunct(chtc.lookup("Requirements"), '(TARGET.PoolName == "CHTC")')
    templates["chtc_flocking"] = _JobTemplate("chtc_flocking", flocking,
                                              {"full": {k: flocking.lookup(k) for k in flocking.keys()}})
    return templates


def _history_ads(path: Path) -> list[classad2.ClassAd]:
    """condor_history ads, each ended by a ``***`` banner; only complete job ads (with Requirements)."""
    chunks = re.split(r"^\*\*\*.*$", path.read_text(), flags=re.MULTILINE)
    ads = [classad2.parseOne(chunk, classad2.ParserType.Old) for chunk in chunks if chunk.strip()]
    return [ad for ad in ads if "Requirements" in ad]


def _drop_conjunct(expr: classad2.ExprTree, conjunct: str) -> classad2.ExprTree:
    text = str(expr)
    if not text.startswith(conjunct + " && "):
        raise ValueError(f"job template Requirements no longer starts with {conjunct}: {text}")
    return classad2.ExprTree(text[len(conjunct) + 4:])


def _slot_template(ad: classad2.ClassAd, reads: set[str]) -> _SlotTemplate:
    clock = ad["MyCurrentTime"]
    exprs = {"full": {k: ad.lookup(k) for k in ad.keys()}, "matchmaking": _closure(ad, reads)}
    times = {}
    for detail, kept in exprs.items():
        stamps = {k: ad[k] - clock for k in kept if _is_timestamp(k, ad.get(k), clock)}
        times[detail] = stamps
        for name in stamps:
            del kept[name]
    return _SlotTemplate(ad, str(ad.lookup("START")), exprs, times)


def _is_timestamp(name: str, value: object, clock: int) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) and abs(value - clock) < _TIMESTAMP_WINDOW
            and not _SIZE_WORDS.search(name))


def _closure(ad: classad2.ClassAd, roots: set[str]) -> dict[str, classad2.ExprTree]:
    """``roots`` the ad defines, and every attribute of the ad their expressions reach."""
    defined = {k.lower(): k for k in ad.keys()}
    wanted = {defined[r.lower()] for r in roots if r.lower() in defined}
    for root in ("Requirements", "START", "WithinResourceLimits", "Rank", "SlotWeight"):
        if root.lower() in defined:
            wanted.add(defined[root.lower()])
    frontier = list(wanted)
    while frontier:
        name = frontier.pop()
        for ref in ad.internalRefs(ad.lookup(name)):
            ref = defined.get(ref.rpartition(".")[2].lower())
            if ref is not None and ref not in wanted:
                wanted.add(ref)
                frontier.append(ref)
    return {k: ad.lookup(k) for k in ad.keys() if k in wanted}


def _target_references(ads: Iterable[classad2.ClassAd]) -> set[str]:
    """Attributes of the other ad that the ads' matchmaking expressions read."""
    names: set[str] = set()
    for ad in ads:
        for attr in ("Requirements", "START", "Rank", "WithinResourceLimits", "RoomForCPUOnlyJobs",
                     "SINGULARITY_START_CLAUSE", "START_EXTRA"):
            if attr in ad:
                names.update(ref.rpartition(".")[2] for ref in ad.externalRefs(ad.lookup(attr)) if ref)
    return names


def _children(pslot: classad2.ClassAd) -> list[tuple[float, float, float, float]]:
    """The p-slot's dynamic children as (Cpus, Memory, Disk, GPUs), from its Child* lists."""
    cpus = list(pslot.get("ChildCpus") or [])
    gpus = list(pslot.get("ChildGPUs") or [0] * len(cpus))
    return list(zip(cpus, pslot.get("ChildMemory") or [], pslot.get("ChildDisk") or [], gpus))


def _project(accounting_group: str) -> str:
    return accounting_group.split("@")[0].split(".")[1]


# --- submitters -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _AccessPoint:
    """Where a submitter's jobs come from, as seen in the sample's RemoteUser/AccountingGroup/GlobalJobId."""

    schedd: str
    uid_domain: str
    group: str | None        # accounting group prefix; None: the <none> group
    project: str | None      # fixed ProjectName; None: an OSPool project per submitter
    share: float             # share of submitters (estimated from the sample and the negotiator's
                             # SubmittersShareLimit lists in negotiator_cycle_stats.txt)
    template: str            # job template
    gpu_share: float         # share of the submitter's clusters that request a GPU


ACCESS_POINTS = (
    _AccessPoint("ap40.uw.osg-htc.org", "ap40.uw.osg-htc.org", OPPORTUNISTIC, None, 0.19, "osg", 0.03),
    _AccessPoint("ap41.uw.osg-htc.org", "ap41.uw.osg-htc.org", OPPORTUNISTIC, None, 0.35, "osg", 0.03),
    _AccessPoint("scott.grid.uchicago.edu", "scott.grid.uchicago.edu", OPPORTUNISTIC, "spt", 0.03, "osg", 0.0),
    # IceCube and CMS submitters carry no AccountingGroup in the sample; here they get one each so
    # the pool has several top-level groups (a deliberate deviation, see ospool_like.conf).
    _AccessPoint("grid-submitter.icecube.wisc.edu", "grid-submitter.icecube.wisc.edu", ICECUBE, "IceCube", 0.17,
                 "osg", 0.4),
    _AccessPoint("submit06.mit.edu", "cms", CMS, "MIT_submit", 0.08, "plain", 0.0),
    _AccessPoint("scosg2202.jlab.org", "scosg2202.jlab.org", None, "CLAS12", 0.03, "plain", 0.0),
    _AccessPoint("gluex.phys.uconn.edu", "gluex.phys.uconn.edu", None, "GLUEX", 0.03, "plain", 0.0),
    _AccessPoint("ap2002.chtc.wisc.edu", "chtc.wisc.edu", None, None, 0.12, "chtc", 0.0),
)


@dataclass
class _Submitter:
    user: str
    access_point: _AccessPoint
    project: str
    template: str                  # job template of their submit files
    literal_requests: bool         # request_memory/request_disk given, not the template's expressions
    weight: float                  # share of the pool's idle jobs
    next_cluster: list[int]        # the schedd's last ClusterId (shared by its submitters)

    @property
    def accounting_group(self) -> str | None:
        ap = self.access_point
        if ap.group is None:
            return None
        return f"{ap.group}.{self.project}.{self.user}" if ap.group == OPPORTUNISTIC else f"{ap.group}.{self.user}"

    @property
    def name(self) -> str:
        """The accounting customer (HTCondor's submitter name): AccountingGroup@domain, else User."""
        group = self.accounting_group
        return f"{group}@{self.access_point.uid_domain}" if group else self.user_at_domain

    @property
    def user_at_domain(self) -> str:
        return f"{self.user}@{self.access_point.uid_domain}"

    def take_cluster_id(self) -> int:
        self.next_cluster[0] += 1
        return self.next_cluster[0]


PickRunning = Callable[[], _Submitter]


def _submitters(rng: np.random.Generator, count: int, projects: tuple[str, ...]) -> list[_Submitter]:
    shares = np.array([ap.share for ap in ACCESS_POINTS])
    points = rng.choice(len(ACCESS_POINTS), size=count, p=shares / shares.sum())
    # Idle jobs per submitter are heavy-tailed: a few submitters hold most of the queue.
    weights = rng.pareto(1.1, size=count) + 0.05
    cluster_counters = {ap.schedd: [int(rng.integers(10_000, 30_000_000))] for ap in ACCESS_POINTS}
    chtc_projects = ("UWMadison_CHTCFellowship_2025", *projects)
    made = []
    for index, (point, weight) in enumerate(zip(points, weights)):
        ap = ACCESS_POINTS[point]
        user = f"user{index:03d}" if index % 4 else f"user.{index:03d}"
        project = ap.project or str(rng.choice(chtc_projects if ap.template == "chtc" else projects))
        template = ap.template
        if template == "chtc" and rng.random() < 0.75:
            # Most CHTC submitters flock to the OSPool; the rest keep CHTC-only Requirements no
            # OSPool slot satisfies (idle work the negotiator must reject, as the real one
            # rejects thousands per cycle).
            template = "chtc_flocking"
        # The 2013 OSG ad computes its requests from ImageSize/DiskUsage; most users now set them.
        literal = template != "osg" or rng.random() < 0.7
        made.append(_Submitter(user, ap, project, template, literal, float(weight), cluster_counters[ap.schedd]))
    total = sum(s.weight for s in made)
    for submitter in made:
        submitter.weight /= total
    return made


# --- slots ------------------------------------------------------------------------------------------


@dataclass
class _PSlotPlan:
    template: _SlotTemplate
    children: list[tuple[float, float, float, float]]   # kept children (claimed dynamic slots)
    free: list[float]                                   # Cpus, Memory, Disk, GPUs left


def _slot_ads(shapes: _Shapes, rng: np.random.Generator, count: int, now: int, detail: str,
              submitters: list[_Submitter], scenario: str = "steady") -> list[classad2.ClassAd]:
    """Static slots in the sample's proportion; the rest p-slots, each followed by its children.

    In the "fill" scenario every p-slot is empty (no children, every TotalSlot* resource free);
    in "mixed" the last :data:`ARRIVING_SHARE` of the ads are such empty p-slots, after a steady
    pool of the rest.

    P-slots keep their real children, so their free resources are a real occupancy state (on
    average 22% of their cores, mostly fragments). That makes p-slots ~7% of the ads rather than
    the sample's 11%, and gives ~3,300 candidate slots at 45k ads, as the real negotiator's
    LastNegotiationCycleCandidateSlots (3,475-3,536). The last p-slot's children are cut to fit
    ``count``; a cut child's job has finished and its resources are back on the p-slot.
    """
    arriving = round(count * ARRIVING_SHARE) if scenario == "mixed" else 0
    settled = count - arriving
    n_static = round(settled * shapes.static_share) if settled > 1 else 0
    running = _running_picker(rng, submitters)
    ads: list[classad2.ClassAd] = []
    budget = settled - n_static
    while budget > 0:
        plan = _plan_pslot(shapes, rng, room=0 if scenario == "fill" else budget - 1)
        if scenario == "fill":
            plan = _empty(plan)
        ads += _pslot_and_children(plan, shapes, rng, now, detail, running, machine_index=len(ads))
        budget -= 1 + len(plan.children)
    for _ in range(n_static):
        ads.append(_static_slot(shapes, rng, now, detail, running, machine_index=len(ads)))
    for _ in range(arriving):
        plan = _empty(_plan_pslot(shapes, rng, room=0))
        ads += _pslot_and_children(plan, shapes, rng, now, detail, running, machine_index=len(ads))
    return ads


def _empty(plan: _PSlotPlan) -> _PSlotPlan:
    """The p-slot as a glidein that just arrived: no children, its whole TotalSlot* size free."""
    ad = plan.template.ad
    total = [float(ad.get(f"TotalSlot{r}", ad.get(r, 0))) for r in ("Cpus", "Memory", "Disk", "GPUs")]
    return _PSlotPlan(plan.template, [], total)


def _plan_pslot(shapes: _Shapes, rng: np.random.Generator, room: int) -> _PSlotPlan:
    template = shapes.partitionable[rng.integers(len(shapes.partitionable))]
    ad = template.ad
    free = [float(ad.get(r, 0)) for r in ("Cpus", "Memory", "Disk", "GPUs")]
    children = _children(ad)
    for finished in children[room:]:
        free = [f + c for f, c in zip(free, finished)]
    return _PSlotPlan(template, children[:room], free)


def _running_picker(rng: np.random.Generator, submitters: list[_Submitter]) -> PickRunning:
    """Who runs on claimed slots: every submitter, the heavy ones more (weight ** 0.5)."""
    weights = np.array([s.weight for s in submitters]) ** 0.5
    weights /= weights.sum()

    def pick() -> _Submitter:
        return submitters[rng.choice(len(submitters), p=weights)]
    return pick


def _host(template: _SlotTemplate, rng: np.random.Generator, index: int) -> tuple[str, str]:
    """(Name suffix after ``slotN@``, Machine): the real naming scheme, with new numbers."""
    machine = f"{template.ad['Machine']}-{index:06d}"
    name = template.ad["Name"].split("@", 1)[1]
    if name.startswith("glidein_"):
        return f"glidein_{rng.integers(1, 5_000_000)}_{rng.integers(1, 999_999_999)}@{machine}", machine
    return machine, machine


def _site_and_lifetime(shapes: _Shapes, rng: np.random.Generator, now: int) -> dict[str, object]:
    site, resource = shapes.sites[rng.integers(len(shapes.sites))]
    retire, die = shapes.lifetimes[rng.integers(len(shapes.lifetimes))]
    stretch = rng.uniform(0.9, 1.1)
    return {"GLIDEIN_Site": site, "GLIDEIN_ResourceName": resource,
            "GLIDEIN_ToRetire": now + int(retire * stretch), "GLIDEIN_ToDie": now + int(die * stretch)}


def _sizes(prefix: str, cpus: float, memory: float, disk: float, gpus: float) -> dict[str, object]:
    return {f"{prefix}Cpus": _plain(cpus), f"{prefix}Memory": _plain(memory), f"{prefix}Disk": _plain(disk),
            f"{prefix}GPUs": _plain(gpus)}


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _pslot_and_children(plan: _PSlotPlan, shapes: _Shapes, rng: np.random.Generator, now: int, detail: str,
                        running: PickRunning, machine_index: int) -> list[classad2.ClassAd]:
    template = plan.template
    suffix, machine = _host(template, rng, machine_index)
    where = _site_and_lifetime(shapes, rng, now)
    values = template.base(detail, now)
    values.update(where)
    values.update(_sizes("", *plan.free))
    values.update({"Name": f"slot1@{suffix}", "Machine": machine, "NumDynamicSlots": len(plan.children)})
    children = []
    siblings = [t for t in shapes.dynamic if t.start == template.start] or list(shapes.dynamic)
    for number, child in enumerate(plan.children, start=1):
        child_template = siblings[rng.integers(len(siblings))]
        child_values = child_template.base(detail, now)
        for name in _RUNNING_JOB:
            child_values.pop(name, None)
        child_values.update(where)
        child_values.update(_sizes("", *child))
        child_values.update(_sizes("TotalSlot", *child))
        child_values.update({"Name": f"slot1_{number}@{suffix}", "Machine": machine})
        child_values.update(_running_job(running(), rng, now))
        children.append(child_values)
    if detail == "full":
        values.update(_child_lists(template.ad, children))
    return [classad2.ClassAd(values)] + [classad2.ClassAd(c) for c in children]


def _child_lists(pslot: classad2.ClassAd, children: list[dict[str, object]]) -> dict[str, object]:
    """The p-slot's Child<Attr> lists for its generated children (HTCondor's STARTD_PARTITIONABLE_SLOT_ATTRS
    rollup); lists of attributes the children do not carry repeat the real p-slot's values."""
    lists: dict[str, object] = {}
    for name in pslot.keys():
        value = pslot.get(name)
        if not name.startswith("Child") or not isinstance(value, list):
            continue
        attr = name[len("Child"):]
        if children and attr in children[0]:
            lists[name] = [c.get(attr) for c in children]
        else:
            lists[name] = [value[i % len(value)] for i in range(len(children))] if value else []
    return lists


def _running_job(submitter: _Submitter, rng: np.random.Generator, now: int) -> dict[str, object]:
    """The slot attributes describing the job a claimed slot runs (RemoteUser, AccountingGroup, ...)."""
    cluster = submitter.next_cluster[0] - int(rng.integers(1, 5000))
    proc = int(rng.integers(0, 1000))
    started = now - int(rng.integers(60, 36_000))
    values: dict[str, object] = {
        "RemoteUser": submitter.user_at_domain, "RemoteOwner": submitter.user_at_domain,
        "ProjectName": submitter.project, "RemoteScheddName": submitter.access_point.schedd,
        "JobId": f"{cluster}.{proc}",
        "GlobalJobId": f"{submitter.access_point.schedd}#{cluster}.{proc}#{started - 600}",
        "JobStart": started, "EnteredCurrentState": started - 1,
    }
    if submitter.accounting_group:
        values["AccountingGroup"] = submitter.name
    return values


def _static_slot(shapes: _Shapes, rng: np.random.Generator, now: int, detail: str, running: PickRunning,
                 machine_index: int) -> classad2.ClassAd:
    template = shapes.static[rng.integers(len(shapes.static))]
    suffix, machine = _host(template, rng, machine_index)
    values = template.base(detail, now)
    values.update(_site_and_lifetime(shapes, rng, now))
    values.update({"Name": f"slot1@{suffix}", "Machine": machine})
    for name in _RUNNING_JOB:
        values.pop(name, None)
    if rng.random() < STATIC_IDLE_SHARE:
        values.update({"State": "Unclaimed", "Activity": "Idle"})
    else:
        values.update(_running_job(running(), rng, now))
    return classad2.ClassAd(values)


# --- jobs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    cpus: int
    memory: int
    disk: int
    gpus: int
    image: str | None              # SingularityImage
    duration: str | None           # JobDurationCategory
    desired_sites: str | None      # DESIRED_Sites (read by the OSPool START)


def _job_ads(shapes: _Shapes, rng: np.random.Generator, count: int, now: int, detail: str,
             submitters: list[_Submitter]) -> JobAds:
    per_submitter = rng.multinomial(count, [s.weight for s in submitters])
    clusters: list[_Cluster] = []
    for submitter, jobs in zip(submitters, per_submitter):
        if jobs:
            clusters += _submitter_clusters(shapes, rng, submitter, int(jobs), now, detail)
    return JobAds(clusters)


def _cluster_sizes(rng: np.random.Generator, jobs: int) -> list[int]:
    """Heavy-tailed cluster sizes (median ~20 procs, some of thousands) adding up to ``jobs``."""
    sizes = []
    while jobs > 0:
        size = min(jobs, 1 + int(rng.lognormal(3.0, 1.5)))
        sizes.append(size)
        jobs -= size
    return sizes


def _repertoire(shapes: _Shapes, rng: np.random.Generator, submitter: _Submitter, clusters: int) -> list[_Request]:
    """The request shapes a submitter uses: about four new shapes every five clusters, which gives
    about one autocluster per hundred idle jobs, as the real negotiator's ~2,500 rejected
    requests for ~255,000 idle jobs suggest.

    (Cpus, Memory, GPUs) come together from one running job of the sample (Memory rescaled by
    0.5-2x half the time), Disk from another;
    OSPool-style submitters sometimes run in a container image, mark a job "Long" or restrict it
    to a few sites, all of which the OSPool START expressions read.
    """
    cpu_only = [r for r in shapes.requests if r[3] == 0]
    gpu = [r for r in shapes.requests if r[3] > 0]
    osg = submitter.access_point.template == "osg"
    images = (None, "/cvmfs/singularity.opensciencegrid.org/htc/rocky:9",
              f"osdf:///ospool/{submitter.access_point.schedd.split('.')[0]}/data/{submitter.user}/image.sif")
    made = []
    for _ in range(1 + int(rng.poisson(0.8 * clusters))):
        pool = gpu if gpu and rng.random() < submitter.access_point.gpu_share else cpu_only
        cpus, memory, _, gpus = pool[rng.integers(len(pool))]
        if rng.random() < 0.5:   # a request_memory of the user's own, near a running job's
            memory = max(128, int(round(memory * rng.uniform(0.5, 2.0) / 128)) * 128)
        sites = None
        if rng.random() < 0.05:
            sites = ",".join(sorted({shapes.sites[i][0] for i in rng.integers(len(shapes.sites), size=3)}))
        made.append(_Request(
            cpus=cpus, memory=memory, disk=cpu_only[rng.integers(len(cpu_only))][2], gpus=gpus,
            image=images[rng.choice(3, p=(0.75, 0.15, 0.1))] if osg else None,
            duration=str(rng.choice(("Medium", "Long"), p=(0.95, 0.05))) if osg else None,
            desired_sites=sites,
        ))
    return made


def _submitter_clusters(shapes: _Shapes, rng: np.random.Generator, submitter: _Submitter, jobs: int, now: int,
                        detail: str) -> list[_Cluster]:
    sizes = _cluster_sizes(rng, jobs)
    repertoire = _repertoire(shapes, rng, submitter, len(sizes))
    template = shapes.jobs[submitter.template]
    schedd = submitter.access_point.schedd
    clusters = []
    for size in sizes:
        request = repertoire[rng.integers(len(repertoire))]
        cluster = submitter.take_cluster_id()
        queued = now - int(rng.integers(60, 14 * 86400))
        values = _cluster_values(template, detail, submitter, request, rng, cluster, queued)
        clusters.append(_Cluster(values, size, f"{schedd}#{cluster}.", queued))
    return clusters


def _cluster_values(template: _JobTemplate, detail: str, submitter: _Submitter, request: _Request,
                    rng: np.random.Generator, cluster: int, queued: int) -> dict[str, object]:
    values: dict[str, object] = dict(template.exprs[detail])
    for name in ("AccountingGroup", "RequestGPUs", "SingularityImage", "JobDurationCategory", "DESIRED_Sites"):
        values.pop(name, None)
    values.update({
        "MyType": "Job", "TargetType": "Machine", "JobStatus": 1, "JobUniverse": 5,
        "ClusterId": cluster, "QDate": queued, "EnteredCurrentStatus": queued,
        "Owner": submitter.user, "User": submitter.user_at_domain, "ProjectName": submitter.project,
        "JobPrio": int(rng.choice((0, 0, 0, 0, 0, 0, 0, 0, 5, 10, -5))),
        "RequestCpus": request.cpus,
    })
    if submitter.literal_requests:
        values.update({"RequestMemory": request.memory, "RequestDisk": request.disk})
    else:
        # The real `RequestMemory = ifthenelse(MemoryUsage isnt undefined, MemoryUsage,
        # (ImageSize + 1023) / 1024)` and `RequestDisk = DiskUsage` stay expressions, which the
        # job's ImageSize (KiB) and DiskUsage make evaluate to the drawn request.
        values.update({"ImageSize": request.memory * 1024 - 1023, "DiskUsage": request.disk})
    if submitter.accounting_group:
        values["AccountingGroup"] = submitter.accounting_group
    if request.gpus:
        # condor_submit adds `(TARGET.GPUs >= RequestGPUs)` to a job that requests GPUs.
        values["RequestGPUs"] = request.gpus
        requirements = template.ad.lookup("Requirements")
        values["Requirements"] = classad2.ExprTree(f"{requirements} && (TARGET.GPUs >= RequestGPUs)")
    for name, value in (("SingularityImage", request.image), ("JobDurationCategory", request.duration),
                        ("DESIRED_Sites", request.desired_sites)):
        if value is not None:
            values[name] = value
    return values


# --- the whole pool ---------------------------------------------------------------------------------


def generate_pool(slots: int, jobs: int, seed: int = 0, *, now: int | None = None, detail: str = "matchmaking",
                  submitters: int | None = None, scenario: str = "steady") -> GeneratedPool:
    """An OSPool-shaped pool of ``slots`` Machine ads and ``jobs`` idle job ads, in ``scenario``
    (:data:`SCENARIOS`).

    The same ``seed`` and ``now`` give the same ads. ``now`` defaults to the wall clock;
    ``submitters`` defaults to 130 (fewer for pools with under 3,250 jobs: one per 25 jobs).
    """
    if slots < 1 or jobs < 0:
        raise ValueError(f"need at least one slot and no negative job count (slots={slots}, jobs={jobs})")
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {DETAILS}, not {detail!r}")
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, not {scenario!r}")
    started = time.perf_counter()
    now = int(time.time()) if now is None else int(now)
    shapes = real_shapes()
    rng = np.random.default_rng(seed)
    people = _submitters(rng, submitters or max(1, min(130, -(-jobs // 25))), shapes.projects)
    slot_ads = _slot_ads(shapes, rng, slots, now, detail, people, scenario)
    job_ads = _job_ads(shapes, rng, jobs, now, detail, people)
    return GeneratedPool(
        slot_ads=slot_ads, job_ads=job_ads, now=now, seed=seed,
        submitters=tuple(s.name for s in people), generation_s=time.perf_counter() - started,
    )


def count_arg(text: str) -> int:
    """``"45k"`` -> 45000, ``"255000"`` -> 255000 (argparse type for pool sizes)."""
    text = text.strip().lower()
    return int(float(text[:-1]) * 1000) if text.endswith("k") else int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=count_arg, required=True, help="Machine ads (e.g. 5000 or 5k)")
    parser.add_argument("--jobs", type=count_arg, required=True, help="idle job ads (e.g. 25000 or 25k)")
    parser.add_argument("--out", type=Path, required=True, help="directory for slots.ads, jobs.ads and now")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--now", type=int, help="the cycle's time() as epoch seconds (default: now)")
    parser.add_argument("--detail", choices=DETAILS, default="matchmaking")
    parser.add_argument("--scenario", choices=SCENARIOS, default="steady",
                        help="steady: p-slots as sampled; fill: every p-slot empty; mixed: steady + 10%% empty")
    args = parser.parse_args(argv)
    pool = generate_pool(args.slots, args.jobs, args.seed, now=args.now, detail=args.detail, scenario=args.scenario)
    slots, jobs = pool.write(args.out)
    print(f"{len(pool.slot_ads)} slots -> {slots}\n{len(pool.job_ads)} jobs -> {jobs}\n"
          f"now = {pool.now} (generated in {pool.generation_s:.1f} s)\n"
          f"negotiatord negotiate --config {pool.config_path} --slots {slots} --jobs {jobs} --now {pool.now}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
