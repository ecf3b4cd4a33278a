""":class:`FastEvaluator`: the cycle's :class:`~negotiatord.evaluation.protocol.PairEvaluator`,
compiled and vectorised, answering exactly what :class:`~negotiatord.evaluation.reference.ClassAdEvaluator`
answers.

An ``assess`` call is answered in one kernel call when every leaf the rows reach can run there
(one_call.py: rows a consumption known beforehand does not fit are left out first, bounds.py),
else in stages with classad2 steps and fallbacks between (stages.py); either way the stages are
HTCondor's: consumption and cp_sufficient_assets on consumption-policy slots, the slot's then the
job's Requirements, the match cost from SlotWeight, the ranks of matched rows.
"""

from __future__ import annotations

import time

import numpy as np

from negotiatord.classad.semantics import old_semantics
from negotiatord.evaluation.loading import Candidates, Loading, LoadingLimits, PoolColumns, Stop, load_plainly
from negotiatord.evaluation.preemption import PreemptionQuestions
from negotiatord.evaluation.protocol import Assessment, PreemptionAssessment, PreemptionInserts
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.fastpath.interpreter.evaluation_counts import FastPathStats
from negotiatord.fastpath.interpreter.fallback import ReferenceFallback
from negotiatord.fastpath.interpreter.jobs import JobRoots, JobState
from negotiatord.fastpath.interpreter.kept_space import KeptMatchSpace
from negotiatord.fastpath.interpreter.loading import load_in_kernel
from negotiatord.fastpath.interpreter.one_call import Offer, OneCallAssessment
from negotiatord.fastpath.interpreter.preemption_answers import CompiledPreemptionAnswers
from negotiatord.fastpath.interpreter.roots import CycleRoots
from negotiatord.fastpath.interpreter.shared_offer import LatestOffers
from negotiatord.fastpath.interpreter.stages import StagedAssessment
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings


class FastEvaluator:
    """PairEvaluator over a :class:`SlotTable` for one cycle (``now`` is the cycle's ``time()``).

    ``descriptions`` keeps what was read of each slot and job ad, by the ad's record. A daemon
    hands every cycle's evaluator the same cache, so its next cycle, over the records its snapshot
    builder kept, reads no unchanged ad again; by default the evaluator starts an empty one.
    ``compilations`` likewise keeps what was compiled (compilations.py), so a cycle compiles only
    what no earlier one did; by default the evaluator compiles everything it needs.
    """

    def __init__(self, table: SlotTable, settings: Settings, now: int,
                 descriptions: AdDescriptions | None = None, compilations: Compilations | None = None) -> None:
        self._table = table
        self._now = now
        self._descriptions = AdDescriptions() if descriptions is None else descriptions
        self._compilations = Compilations() if compilations is None else compilations
        self._keeps_weights = compilations is not None     # for the caller's next cycles
        self.stats = FastPathStats()
        self._settings = settings
        self._fallback = ReferenceFallback(table, settings, now)
        self._preemption = PreemptionQuestions(table, settings, now)
        self._specs = CycleRoots.of(table.assets, settings)
        self._clock = 0           # the wall-clock second of the current call (old-semantics CurrentTime)
        self._reset(old_semantics())

    def _reset(self, old: bool) -> None:
        """Everything compiled depends on classad2's scoping mode; start over when it changes.
        The kept match space is entered when first needed (:meth:`_enter`): a replay's cycle with
        no idle job, whose slot weights were all kept, needs none."""
        self._compiled = self._compilations.for_cycle(old, self._table.assets, len(self._table))
        self._entered = False

    def _enter(self) -> None:
        """Enter the kept match space with this cycle's table, once after each reset."""
        if self._entered:
            return
        table, compiled = self._table, self._compiled
        kept = self._compilations.match_space
        if kept is None:
            kept = self._compilations.match_space = KeptMatchSpace(len(table.assets))
        self._context, self._match_space = kept.enter(compiled, table, self._now, self._descriptions)
        self._roots = JobRoots(table, self._context, self._match_space, self._descriptions)
        self._roots.clock = self._clock
        self._one_call = OneCallAssessment(self._context, self._match_space, self._roots,
                                           self._specs.in_kernel_order, self.stats)
        self._stages = StagedAssessment(table, self._context, self._match_space, self._roots, self._specs,
                                        self._fallback, self.stats)
        self._preemption.compiled = CompiledPreemptionAnswers(table, self._match_space, compiled, self._settings,
                                                              self._now, self._descriptions, self._fallback,
                                                              self._specs)
        self._offers: LatestOffers[Offer] = LatestOffers()      # in this match space
        self._entered = True

    # -- PairEvaluator ------------------------------------------------------------------------------

    def slot_weights(self, rows: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        """Each slot's weight: kept from an earlier cycle of the caller that keeps its
        compilations (kept_weights.py), else worked out (and kept for its next cycles)."""
        rows = np.asarray(rows, dtype=np.int64)
        self._start_call()
        if not self._keeps_weights:
            self._enter()
            return self._stages.slot_weights(rows, amounts)
        kept = self._compiled.slot_weights
        weights, missing = kept.known(self._table.slots, rows, amounts)
        if len(missing):
            self._enter()
            worked_out = self._stages.slot_weights(rows[missing], amounts[missing])
            weights[missing] = worked_out
            kept.keep(self._table.slots, rows[missing], amounts[missing], worked_out)
        return weights

    def assess(self, autocluster: Autocluster, rows: np.ndarray, amounts: np.ndarray) -> Assessment:
        rows = np.asarray(rows, dtype=np.int64)
        amounts = np.ascontiguousarray(amounts, dtype=np.float64)
        self._start_call()
        self._enter()
        self.stats.assess_calls += 1
        self.stats.pairs += len(rows)
        job = self._job(autocluster)
        offer = self._offer_of(rows)
        job.enter(self._match_space)
        done = self._one_call.assess(job, offer, amounts)
        if done is not None:
            return done
        return self._stages.assess(autocluster, job, rows, amounts)

    def load(self, autocluster: Autocluster, candidates: Candidates, pool: PoolColumns,
             limits: LoadingLimits) -> Loading:
        """In one kernel call (loading.py) when the job's roots run there, one more each time
        the candidate list runs dry and is refilled; the rest of the request in Python from where
        a re-assessment needing classad2 stopped the kernel."""
        self._start_call()
        self._enter()
        job = self._job(autocluster)
        job.enter(self._match_space)
        universe_of = self._match_space.universe_index
        table = self._table
        loaded: Loading | None = None
        while True:
            evaluation = self._one_call.loading_inputs(job, universe_of[candidates.rows[candidates.head:]])
            if evaluation is None:
                rest = load_plainly(self, autocluster, candidates, pool, limits)
                return rest if loaded is None else loaded.then(rest)
            done, reassessed = load_in_kernel(candidates, pool, limits, table.amounts, table.integer_amounts,
                                              universe_of, evaluation)
            self.stats.loading_calls += 1
            self.stats.assess_calls += reassessed
            self.stats.pairs += reassessed
            loaded = done if loaded is None else loaded.then(done)
            limits.jobs -= len(done.rows)
            if done.stop is Stop.NEEDS_PYTHON:
                return loaded.then(load_plainly(self, autocluster, candidates, pool, limits))
            if done.stop is not Stop.NO_MATCH or not candidates.refill():
                return loaded

    def assess_preemption(self, autocluster: Autocluster, rows: np.ndarray,
                          inserts: PreemptionInserts) -> PreemptionAssessment:
        """PREEMPTION_REQUIREMENTS and PREEMPTION_RANK compiled over the claimed slots with
        their inserted figures (preemption_answers.py); the rank conditions, and what is not
        compiled, answered by classad2 and counted as fallback evaluations (whether a claimed
        slot matches at all is ``assess``, in the kernels)."""
        self._enter()
        before = self._preemption.evaluations
        answers = self._preemption.assess(autocluster, rows, inserts)
        self.stats.fallback_evaluations["preemption"] += self._preemption.evaluations - before
        return answers

    # -- pieces ------------------------------------------------------------------------------------

    def _start_call(self) -> None:
        """Read the wall clock for this call (old-semantics CurrentTime reads it)."""
        self._clock = int(time.time())
        if self._entered:
            self._roots.clock = self._clock

    def _job(self, autocluster: Autocluster) -> JobState:
        """The job's state; a job not seen before is first checked against classad2's scoping
        mode, which the process may have switched since this evaluator compiled anything."""
        state = self._roots.known(autocluster)
        if state is None:
            if old_semantics() != self._context.old_semantics:
                self._reset(not self._context.old_semantics)
                self._enter()
            state = self._roots.add(autocluster)
        return state

    def _offer_of(self, rows: np.ndarray) -> Offer:
        """The per-row columns of ``rows``, gathered once for a row array passed again (the cycle
        offers one read-only array to every autocluster until a match changes the pool; with
        preemption, the claimed slots' array too, in turn: shared_offer.LatestOffers)."""
        if not rows.flags.writeable:
            found = self._offers.find(lambda offer: offer.rows is rows)
            if found is not None:
                return found
        table = self._table
        offer = Offer(rows, self._match_space.universe(rows), table.consumption_policy[rows],
                      table.amounts[rows], table.integer_amounts[rows])
        if not rows.flags.writeable:      # rows gathered for one call keep the shared offers' gathers
            self._offers.add(offer)
        return offer
