"""A replay's pool read from a file of slot ClassAds as ``condor_status -l`` writes them (plain or
gzip, any form :func:`negotiatord.ads.read_ads` reads): one simulated node per partitionable or
static slot, of that slot's real size.

What a node takes of its slot's ad, and why:

* its size when empty, since a replay starts with nothing running: a partitionable slot's
  ``TotalSlotCpus``, ``TotalSlotMemory`` (MB), ``TotalSlotDisk`` (KB) and ``TotalSlotGPUs``, a
  static slot's ``Cpus``, ``Memory``, ``Disk`` and ``GPUs``, as whole numbers (rounded down);
  GPUs only where there are some. A dynamic slot is folded away: its resources are its
  partitionable slot's ``Total*`` already (the p-slot lists it in ``ChildName``); one that no
  p-slot of the file lists is skipped, its p-slot's size unknown;
* its ``Name`` (so ``jobs.csv`` names real slots) and ``Machine``;
* ``Arch`` and ``OpSys``, the attributes that condor_submit's default Requirements name, so that
  a job ad carrying them matches as it would in the real pool.

Everything else is the replay's own, as for ``--nodes`` (:mod:`negotiatord.replay.pool`): the
START (the job's requests fit the slot's resources) and Rank 0, because a real START reads what
a trace job does not carry (the OSPool's asks for ``TARGET.ProjectName`` and compares ``time()``
with the glidein's retirement) and would refuse every trace job or change as the simulated
clock runs; the config's SLOT_WEIGHT and consumption policy rather than the ad's ``SlotWeight``
and ``Consumption*``, so that the replay measures the config; and the state: every slot starts
unclaimed and empty, whatever the ad's State and claims. Slots that differ only in Name and
Machine have one shape, which is what lets a replay stand in for the empty ones.

Every ad of the file is accounted for in the summary: the slots read, by kind, the dynamic slots
folded, and the ads skipped, by reason. An ad that cannot be read, or a slot without its size, is
an error naming the file, the line and the ad.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import classad2

from negotiatord.ads import AdFormatError, read_ads
from negotiatord.classad.conversion import evaluate_number, evaluate_string
from negotiatord.pool.slots import SlotKind, child_names, slot_kind
from negotiatord.replay.pool import Node, NodeShape, PoolSpecError, SimulatedPool

KEPT = ("Arch", "OpSys")
# The attributes of a node's size, by slot kind: Cpus, Memory, Disk, then GPUs (0 when missing).
SIZE = {SlotKind.PARTITIONABLE: ("TotalSlotCpus", "TotalSlotMemory", "TotalSlotDisk", "TotalSlotGPUs"),
        SlotKind.STATIC: ("Cpus", "Memory", "Disk", "GPUs")}
NOT_A_SLOT = "not a slot: MyType {kind}"
NO_PSLOT = "dynamic slot whose partitionable slot is not in the file"


@dataclass
class PoolFile:
    """The nodes a pool file describes, in the file's order, and what became of each of its ads."""

    path: Path
    nodes: list[Node] = field(default_factory=list)
    ads: int = 0
    slots: Counter[str] = field(default_factory=Counter)      # slots read, by kind
    folded: int = 0                                           # dynamic slots folded into their p-slot
    skipped: Counter[str] = field(default_factory=Counter)    # ads skipped, by reason

    def pool(self) -> SimulatedPool:
        """A simulated pool of the file's nodes, empty, that tells the summary of the file."""
        return SimulatedPool(self.nodes, self.document())

    def document(self) -> dict[str, object]:
        """The summary's account of the file."""
        return {"file": self.path.name, "ads": self.ads, "slots": dict(sorted(self.slots.items())),
                "dynamic_slots_folded": self.folded, "skipped": dict(sorted(self.skipped.items()))}


def read_pool(path: Path) -> PoolFile:
    """The nodes of the slot ads in the file at ``path``; :class:`PoolSpecError` naming the file,
    line and ad for an ad that cannot be read or a slot without its size."""
    path = Path(path)
    try:
        batch = read_ads(path)
    except OSError as error:
        raise PoolSpecError(f"--pool {path}: cannot read: {error.strerror or error}") from None
    except AdFormatError as error:
        raise PoolSpecError(f"--pool {error}") from None
    if batch.problems:
        raise PoolSpecError(f"--pool {batch.problems[0]}")
    pool = PoolFile(path, ads=len(batch.ads))
    seen: dict[str, int] = {}                    # slot Name -> the line of its ad
    dynamic: list[str] = []
    children: set[str] = set()                   # the dynamic slots the p-slots list
    for ad, position, line in zip(batch.ads, batch.positions, batch.lines):
        kind = evaluate_string(ad, "MyType")
        if kind != "Machine":
            pool.skipped[NOT_A_SLOT.format(kind=kind or "missing")] += 1
            continue
        where = f"{path}:{line} (ad {position})"
        name = evaluate_string(ad, "Name")
        if name is None:
            raise PoolSpecError(f"--pool {where}: a slot without a Name")
        slot = slot_kind(ad)
        if slot is SlotKind.DYNAMIC:
            dynamic.append(name)
            continue
        if name in seen:
            raise PoolSpecError(f"--pool {where}, {name}: the same Name as the slot at line {seen[name]}")
        seen[name] = line
        if slot is SlotKind.PARTITIONABLE:
            children.update(child_names(ad))
        pool.nodes.append(Node(name, _shape(ad, slot, f"{where}, {name}"), evaluate_string(ad, "Machine") or ""))
        pool.slots[slot.value] += 1
    for name in dynamic:
        if name in children:
            pool.folded += 1
        else:
            pool.skipped[NO_PSLOT] += 1
    if not pool.nodes:
        raise PoolSpecError(f"--pool {path}: no partitionable or static slot among its {pool.ads} ads")
    return pool


def _shape(ad: classad2.ClassAd, kind: SlotKind, where: str) -> NodeShape:
    cpus_attribute, memory, disk, gpus = SIZE[kind]
    cpus = _amount(ad, cpus_attribute, where)
    if cpus < 1:
        raise PoolSpecError(f"--pool {where}: {cpus_attribute} is below 1: the slot can take no job")
    kept = tuple((attribute, value) for attribute in KEPT if (value := evaluate_string(ad, attribute)) is not None)
    return NodeShape(cpus, _amount(ad, memory, where), _amount(ad, disk, where),
                     _amount(ad, gpus, where) if gpus in ad else 0, kind is SlotKind.STATIC, kept)


def _amount(ad: classad2.ClassAd, attribute: str, where: str) -> int:
    value = evaluate_number(ad, attribute)
    if value is None or not math.isfinite(value) or value < 0:
        shown = ad.lookup(attribute) if attribute in ad else "missing"
        raise PoolSpecError(f"--pool {where}: {attribute} is not a number >= 0: {shown}")
    return math.floor(value)
