"""The root expressions the negotiator asks of a (job, slot) pair, as the fast path compiles them.

Each is a :class:`~negotiatord.fastpath.interpreter.space.RootSpec`: which ad is MY, which attribute
(or which parsed expression), how job attributes resolve, and the sink converting its value the
way the reference evaluator converts classad2's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import classad2

from negotiatord.classad.parser import ParseError, parse
from negotiatord.classad.values import REAL
from negotiatord.fastpath.compiler.cells import CONSUMPTION_PREFIX, SLOT_WEIGHT
from negotiatord.fastpath.compiler.resolution import JOB, SLOT, Mode
from negotiatord.fastpath.instructions import (
    SINK_CONSUME, SINK_MATCH, SINK_NUMBER, SINK_RANK_UNRANKED, SINK_RANK_ZERO,
)
from negotiatord.evaluation.protocol import IGNORED_RANK
from negotiatord.fastpath.interpreter.space import RootSpec
from negotiatord.settings import Settings

WEIGHT = RootSpec("weight", SLOT, SLOT_WEIGHT, None, Mode(no_target=True), SINK_NUMBER)
REQUIREMENTS = {       # (side, on consumption-policy slots) -> that Requirements root
    (side, override): RootSpec(f"{side}_requirements{'_cp' if override else ''}", side, "requirements", None,
                               Mode(override=override), SINK_MATCH)
    for side in (SLOT, JOB) for override in (False, True)
}
JOB_RANK = RootSpec("job_rank", JOB, "rank", None, Mode(), SINK_RANK_ZERO)
# NEGOTIATOR_IGNORE_JOB_RANKS: matchmaker.cpp's calculateRanks takes every job's Rank as 1.0
IGNORED_JOB_RANK = RootSpec("ignored_job_rank", JOB, None, ("lit", (REAL, IGNORED_RANK)), Mode(), SINK_RANK_ZERO)


@dataclass(frozen=True)
class CycleRoots:
    """The roots of one cycle: a Consumption<asset> per asset of the slot table, and the
    three ranks (the configured pre and post job ranks are None when unset)."""

    consumption: tuple[RootSpec, ...]
    ranks: tuple[RootSpec | None, RootSpec, RootSpec | None]

    @classmethod
    def of(cls, assets: tuple[str, ...], settings: Settings) -> CycleRoots:
        return _cycle_roots(assets, settings.pre_job_rank, settings.post_job_rank, settings.ignore_job_ranks)

    @property
    def in_kernel_order(self) -> list[RootSpec | None]:
        """Every root, in the order kernels.assess_rows reads them."""
        return [*self.consumption, REQUIREMENTS[SLOT, False], REQUIREMENTS[SLOT, True], REQUIREMENTS[JOB, False],
                REQUIREMENTS[JOB, True], WEIGHT, *self.ranks]


@lru_cache(maxsize=16)
def _cycle_roots(assets: tuple[str, ...], pre_job_rank: str | None, post_job_rank: str | None,
                 ignore_job_ranks: bool) -> CycleRoots:
    """The roots of every cycle with these assets and ranks, made (and the ranks parsed) once."""
    consumption = tuple(RootSpec(f"consumption_{a.lower()}", SLOT, CONSUMPTION_PREFIX + a.lower(), None,
                                 Mode(consume=a.lower()), SINK_CONSUME) for a in assets)
    job_rank = IGNORED_JOB_RANK if ignore_job_ranks else JOB_RANK
    return CycleRoots(consumption, (_rank("pre_rank", pre_job_rank), job_rank, _rank("post_rank", post_job_rank)))


def _rank(name: str, text: str | None) -> RootSpec | None:
    """NEGOTIATOR_PRE_JOB_RANK or NEGOTIATOR_POST_JOB_RANK, evaluated with the slot as MY."""
    return configured_root(name, text, SINK_RANK_UNRANKED)


def configured_root(name: str, text: str | None, sink: int) -> RootSpec | None:
    """An expression of the configuration (None when unset) as a root with the slot as MY."""
    if not text:
        return None
    try:
        ast = parse(str(classad2.ExprTree(text)))
    except ParseError:
        ast = ("call", "eval", ())       # resolves as unsupported: classad2 evaluates it
    return RootSpec(name, SLOT, None, ast, Mode(), sink)
