"""A space's compilations of its roots, filed by what they read of the job, and kept up with the
universe as it grows.

A compilation is reused for every job that agrees with the one it was made for on what it read
of the job (resolution.probe_class, and the values of GUARD conditions), so most autoclusters
compile nothing. Compilations are filed by the attributes they read, then by what they saw there
(at most one agrees with a job: one that did would have been reused), so a job finds its own by a
lookup per set of attributes; GUARD values, which cost a scalar plan, are only computed for
compilations the job agrees with on everything else.

A space kept across cycles (kept_space.py) grows by the slots later cycles bring. A compilation
takes them in when next asked for: by their class-mates' leaves where every new row its domain
keeps has one (slots of one class in every attribute the root's resolutions asked resolve alike
for one job, groups.py), else by resolving them as it was made; if that asks the job something
it was not filed by, it serves no job any more and is made again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from negotiatord.classad.values import UNDEF, Value
from negotiatord.fastpath.compiler.cells import JobCells
from negotiatord.fastpath.compiler.groups import Grouping, resolve
from negotiatord.fastpath.compiler.resolution import GUARD, Builder, guard_key, probe_class

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.space import RootSpec, SlotRows, Space

Domain = Callable[["SlotRows", np.ndarray], np.ndarray]      # the column rows a root applies to
_NONE = object()     # no job, or no job values: no compilation that read them can have seen this


@dataclass
class CompiledRoot:
    spec: RootSpec
    leaf_of: np.ndarray                  # universe row -> leaf id (-1: not in the root's domain)

    def made_for(self, spec: RootSpec) -> bool:
        """Whether this compiles ``spec``: a configured root keeps its name when the
        configuration changes its expression."""
        return self.spec is spec or self.spec == spec

    @cached_property
    def leaf_ids(self) -> np.ndarray:
        return np.unique(self.leaf_of[self.leaf_of >= 0])


@dataclass
class _Origin:
    """What a compilation was made for, so that it can take in slots that join the universe
    later: resolving them asks the same questions of the same job."""

    spec: RootSpec
    job: JobCells | None
    domain: Domain
    scalar_value: Callable[[int], Value] | None
    probes: dict[tuple[str, str], object]


class RootFamilies:
    """The compilations of one space (which each call is handed: holding it would make a
    reference cycle)."""

    def __init__(self) -> None:
        # root -> (job attributes read, GUARD nodes) -> what the attributes showed -> [(GUARD values, compilation)]
        self._roots: dict[str, dict[tuple, dict[tuple, list[tuple[tuple, CompiledRoot]]]]] = {}
        self._last: dict[str, CompiledRoot] = {}          # root name -> its last compilation, for its spec
        self._origins: dict[int, _Origin] = {}            # id() of each compilation -> what it was made for

    def compiled(self, space: Space, spec: RootSpec, job: JobCells | None, domain: Domain,
                 scalar_value: Callable[[int], Value] | None) -> CompiledRoot:
        """``spec`` compiled in ``space`` for jobs shaped like ``job`` (Space.compiled)."""
        families = self._families(spec)
        cells = space.context.cells
        for (attributes, guards), seen in families.items():
            shown = (tuple([probe_class(cells, job.cell(probe), mode) for probe, mode in attributes])
                     if job is not None else (_NONE,) * len(attributes))
            agreeing = seen.get(shown, [])
            for index, (values, compiled) in enumerate(agreeing):
                if all(_guard(node, scalar_value) == value for node, value in zip(guards, values)):
                    if self._caught_up(space, compiled):
                        return compiled
                    del agreeing[index]          # its new slots ask what it was not filed by
                    del self._origins[id(compiled)]
                    break
        leaf_of = np.full(len(space.rows), -1, dtype=np.int64)
        probes = _resolve(space, spec, job, scalar_value, np.arange(len(space.rows)), domain, leaf_of).probes
        compiled = CompiledRoot(spec, leaf_of)
        self._origins[id(compiled)] = _Origin(spec, job, domain, scalar_value, probes)
        self._last[spec.name] = compiled
        attributes = tuple(key for key in probes if key[1] != GUARD)
        guards = tuple(probe for probe, mode in probes if mode == GUARD)
        seen = families.setdefault((attributes, guards), {})
        seen.setdefault(tuple(probes[key] for key in attributes), []).append(
            (tuple(probes[probe, GUARD] for probe in guards), compiled))
        return compiled

    def _families(self, spec: RootSpec) -> dict[tuple, dict[tuple, list[tuple[tuple, CompiledRoot]]]]:
        """The compilations of ``spec``'s root by family; none when its spec changed (a configured
        expression keeps its name when the configuration changes it)."""
        families = self._roots.get(spec.name)
        last = self._last.get(spec.name)
        if families is not None and (last is None or last.made_for(spec)):
            return families
        for seen in (families or {}).values():
            for agreeing in seen.values():
                for _, dropped in agreeing:
                    del self._origins[id(dropped)]
        families = self._roots[spec.name] = {}
        return families

    def _caught_up(self, space: Space, compiled: CompiledRoot) -> bool:
        """Whether ``compiled`` covers the universe, after taking in the rows that joined since it
        was made (see the module's docstring)."""
        width = len(compiled.leaf_of)
        if width == len(space.rows):
            return True
        origin = self._origins[id(compiled)]
        new = np.arange(width, len(space.rows))
        leaf_of = np.concatenate([compiled.leaf_of, np.full(len(new), -1, dtype=np.int64)])
        if not _taken_in_by_class(space, origin, new, leaf_of):
            grouping = _resolve(space, origin.spec, origin.job, origin.scalar_value, new, origin.domain, leaf_of)
            if any(origin.probes.get(key, _NONE) != value for key, value in grouping.probes.items()):
                return False
        compiled.leaf_of = leaf_of
        compiled.__dict__.pop("leaf_ids", None)
        return True


def _guard(probe: str, scalar_value: Callable[[int], Value] | None) -> object:
    """The job's value of a GUARD condition, as a compilation saw it."""
    return _NONE if scalar_value is None else guard_key(scalar_value(int(probe)))


def _taken_in_by_class(space: Space, origin: _Origin, new: np.ndarray, leaf_of: np.ndarray) -> bool:
    """File the leaves of universe rows ``new`` in ``leaf_of`` (which holds those of the rows
    before them) by their class-mates'. False, filing nothing, when some row the domain keeps has
    no class-mate there."""
    classes = space.classes
    classes.list(space.context.compiled.resolutions_of((origin.spec, origin.job is not None)).slot_attributes)
    of = classes.of
    old = np.flatnonzero(leaf_of[: new[0]] >= 0)
    class_leaf = np.full(len(classes.shapes), -1, dtype=np.int64)
    class_leaf[of[old]] = leaf_of[old]
    if (class_leaf[of[old]] != leaf_of[old]).any():        # a class of two leaves: resolve anew
        return False
    members = new[origin.domain(space.slot_rows, space.rows[new])]
    found = class_leaf[of[members]]
    if (found < 0).any():
        return False
    leaf_of[members] = found
    for leaf_id in np.unique(found).tolist():
        leaf = space.leaves[leaf_id]
        if leaf.plan is not None:
            space.prepare(leaf, members[found == leaf_id])
    return True


def _resolve(space: Space, spec: RootSpec, job: JobCells | None, scalar_value: Callable[[int], Value] | None,
             universe: np.ndarray, domain: Domain, leaf_of: np.ndarray) -> Grouping:
    """Resolve ``spec`` for the job over the universe rows ``universe`` its domain keeps, and
    file each group's leaf in ``leaf_of``."""
    context = space.context
    members = universe[domain(space.slot_rows, space.rows[universe])]

    def builder(group: np.ndarray) -> Builder:
        return Builder(context.graph, context.cells, context.columns, job, group, spec.mode,
                       context.old_semantics, scalar_value)

    def root(b: Builder) -> int:
        if spec.attribute is None:
            assert spec.ast is not None        # a root without an attribute is its expression
            return b.build(spec.ast, spec.side)
        found = b.attribute(spec.side, spec.attribute)      # looked up directly, as reference.py does
        return context.graph.const((UNDEF, None)) if found is None else found

    known = context.compiled.resolutions_of((spec, job is not None))
    grouping = resolve(builder, root, members, space.classes, context.columns, known)
    for group, node, reason in grouping.groups:
        leaf = space.leaf(node, spec.sink, reason)
        universe_rows = space.universe_of_columns(group)
        leaf_of[universe_rows] = leaf.id
        if leaf.plan is not None:
            space.prepare(leaf, universe_rows)
    return grouping
