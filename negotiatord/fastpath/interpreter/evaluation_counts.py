"""What the fast path did in a cycle: how much it compiled, ran, and left to classad2."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from negotiatord.evaluation.protocol import EvaluatorStats


@dataclass
class FastPathStats(EvaluatorStats):
    assess_calls: int = 0
    weight_rows: int = 0                    # slots weighed by slot_weights
    pruned_pairs: int = 0                   # pairs a known consumption ruled out before the kernel (bounds.py)
    kernel_batches: int = 0                 # kernel calls running compiled leaves
    reused_assessments: int = 0             # requests answered as an alike one was on the same offer
    loading_calls: int = 0                  # requests loaded in one kernel call (loading.py)
    compiled_leaves: int = 0                # (expression, slot shape) combinations compiled
    fallback_leaves: Counter = field(default_factory=Counter)        # reason -> leaves left to classad2

    def as_dict(self) -> dict[str, object]:
        return {
            "assess_calls": self.assess_calls, "pairs": self.pairs, "pruned_pairs": self.pruned_pairs,
            "weight_rows": self.weight_rows,
            "kernel_batches": self.kernel_batches, "reused_assessments": self.reused_assessments,
            "loading_calls": self.loading_calls,
            "compiled_leaves": self.compiled_leaves,
            "fallback_leaves": dict(self.fallback_leaves), "fallback_evaluations": dict(self.fallback_evaluations),
        }
