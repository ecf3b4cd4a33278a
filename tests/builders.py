"""Building settings, slots and jobs for cycle tests without config files or ad files.

``settings()`` starts from HTCondor's own defaults (the values ``htcondor2.param`` reports for an
empty config) so a test only states what it changes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import classad2

from negotiatord.settings import GroupSettings, PslotLoading, Settings

HTCONDOR_DEFAULT_SORT = (
    'ifThenElse(AccountingGroup=?="<none>",3.4e+38,ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))'
)

BASE = Settings(
    source=Path("<test>"),
    consumption_policy=False,
    consumption={
        "cpus": "quantize(target.RequestCpus,{1})",
        "memory": "quantize(target.RequestMemory,{128})",
        "disk": "quantize(target.RequestDisk,{1024})",
    },
    slot_weight="Cpus",
    use_slot_weights=True,
    pslot_loading=PslotLoading.DEPTH_FIRST,
    pre_job_rank=None,
    post_job_rank=None,
    groups=(),
    accept_surplus=False,
    autoregroup=False,
    allow_quota_oversubscription=True,
    group_sort_expr=HTCONDOR_DEFAULT_SORT,
    priority_halflife=86400.0,
    default_prio_factor=1000.0,
    concurrency_limit_default=2308032.0,
)


def settings(**changes: Any) -> Settings:
    return replace(BASE, **changes)


def group(name: str, *, quota: float | None = None, dynamic: float | None = None, surplus: bool = False,
          autoregroup: bool = False, prio_factor: float | None = None) -> GroupSettings:
    return GroupSettings(name, quota, dynamic, surplus, autoregroup, prio_factor)


def ad(**attrs: Any) -> classad2.ClassAd:
    """A ClassAd from keyword attributes; ``str`` values wrapped in ``expr(...)`` stay expressions."""
    result = classad2.ClassAd()
    for name, value in attrs.items():
        result[name] = value
    return result


def expr(text: str) -> classad2.ExprTree:
    return classad2.ExprTree(text)


WITHIN_LIMITS = expr(
    "TARGET.RequestCpus <= MY.Cpus && TARGET.RequestMemory <= MY.Memory && "
    "(TARGET.RequestDisk ?: 0) <= MY.Disk"
)


def pslot(name: str, cpus: float = 8, memory: float = 8192, disk: float = 100000, **attrs: Any) -> classad2.ClassAd:
    """An unclaimed partitionable slot whose Requirements check the job's requests."""
    base = dict(
        Name=name, MyType="Machine", PartitionableSlot=True, SlotType="Partitionable", State="Unclaimed",
        Activity="Idle", Cpus=cpus, Memory=memory, Disk=disk, TotalSlotCpus=cpus, TotalSlotMemory=memory,
        TotalSlotDisk=disk, MachineResources="Cpus Memory Disk Swap", Requirements=WITHIN_LIMITS,
        Start=True,
    )
    base.update(attrs)
    return ad(**base)


def static_slot(name: str, cpus: float = 1, memory: float = 1024, disk: float = 100000,
                **attrs: Any) -> classad2.ClassAd:
    base = dict(
        Name=name, MyType="Machine", SlotType="Static", State="Unclaimed", Activity="Idle",
        Cpus=cpus, Memory=memory, Disk=disk, MachineResources="Cpus Memory Disk Swap",
        Requirements=WITHIN_LIMITS, SlotWeight=expr("Cpus"),
    )
    base.update(attrs)
    return ad(**base)


def jobs(owner: str, count: int, *, cluster: int = 1, group: str | None = None, cpus: float = 1,
         memory: float = 100, disk: float = 1000, **attrs: Any) -> list[classad2.ClassAd]:
    """``count`` idle jobs of one cluster for ``owner@site`` (in ``group`` if given)."""
    made = []
    for proc in range(count):
        base = dict(
            MyType="Job", ClusterId=cluster, ProcId=proc, JobStatus=1, Owner=owner, User=f"{owner}@site",
            RequestCpus=cpus, RequestMemory=memory, RequestDisk=disk, Requirements=True, JobPrio=0,
            GlobalJobId=f"{owner}-schedd#{cluster}.{proc}#0",
        )
        if group:
            base["AccountingGroup"] = f"{group}.{owner}"
        base.update(attrs)
        made.append(ad(**base))
    return made
