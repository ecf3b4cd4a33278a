"""Evaluating jobs against slots: the one place the cycle asks ClassAd questions.

``protocol`` defines what the cycle asks (:class:`PairEvaluator`, :class:`Assessment`);
``loading`` holds what loading one request's jobs onto its candidates is made of, and that loop
in Python; ``reference`` answers with classad2, pair by pair, and is the semantic reference the
fast path is checked against.
"""

from negotiatord.evaluation.protocol import Assessment, EvaluatorStats, PairEvaluator
from negotiatord.evaluation.reference import ClassAdEvaluator

__all__ = ["Assessment", "ClassAdEvaluator", "EvaluatorStats", "PairEvaluator"]
