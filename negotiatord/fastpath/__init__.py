"""The fast path: ClassAd expressions compiled to one numba interpreter over columnar slot data.

:class:`negotiatord.fastpath.runtime.evaluator.FastEvaluator` is the cycle's default pair evaluator; it
answers exactly what the classad2 reference (:class:`negotiatord.evaluation.ClassAdEvaluator`)
answers and hands any expression it does not cover to classad2, counting each such evaluation in
its ``stats``.
"""
