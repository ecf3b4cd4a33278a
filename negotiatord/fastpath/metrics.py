"""What the fast path did in a cycle: how much it compiled, ran, and left to classad2."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class FastPathStats:
    assess_calls: int = 0
    pairs: int = 0                          # (autocluster, slot) pairs assessed
    weight_rows: int = 0                    # slots weighed by slot_weights
    kernel_batches: int = 0                 # kernel calls running compiled leaves
    compiled_leaves: int = 0                # (expression, slot shape) combinations compiled
    fallback_leaves: Counter = field(default_factory=Counter)        # reason -> leaves left to classad2
    fallback_evaluations: Counter = field(default_factory=Counter)   # root -> classad2 evaluations

    @property
    def fallbacks(self) -> int:
        return sum(self.fallback_evaluations.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "assess_calls": self.assess_calls, "pairs": self.pairs, "weight_rows": self.weight_rows,
            "kernel_batches": self.kernel_batches, "compiled_leaves": self.compiled_leaves,
            "fallback_leaves": dict(self.fallback_leaves), "fallback_evaluations": dict(self.fallback_evaluations),
        }
