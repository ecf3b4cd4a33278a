"""The fast path at run time: compiled leaves over the slot table's rows, in numba kernels.

``space`` holds a universe of slot rows, the roots compiled over it and its static store;
``tables`` lays the compiled leaves out for the kernels; ``kernels`` interprets them;
``execution`` runs plans over frames of arrays; ``evaluator`` is the cycle's
:class:`~negotiatord.evaluation.protocol.PairEvaluator`, with classad2 (``fallback``) for what
the compiler leaves to it.
"""
