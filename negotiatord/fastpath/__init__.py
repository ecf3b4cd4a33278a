"""The fast path: ClassAd expressions compiled to one numba interpreter over columnar slot data.

:class:`negotiatord.fastpath.interpreter.evaluator.FastEvaluator` is the cycle's default pair
evaluator; it answers exactly what the classad2 reference
(:class:`negotiatord.evaluation.ClassAdEvaluator`) answers and hands any expression it does not
cover to classad2, counting each such evaluation in its ``stats``.

``compiler/`` takes expressions from classad2's text (:mod:`negotiatord.classad.parser`) through
the IR to kernel plans; ``interpreter/`` runs them over the slot table. ``instructions`` is the
instruction set both share, ``strings`` the interned strings both use; ``probe`` asks the whole
fast path about plain ads, for differential tests. Nothing in ``compiler/`` imports ``interpreter/``.
"""
