"""The fast path at run time: compiled leaves over the slot table's rows, in numba kernels.

``evaluator`` is the cycle's :class:`~negotiatord.evaluation.protocol.PairEvaluator`; it answers
through ``one_call`` (a whole assessment in one ``kernels`` call, for the jobs whose leaves allow
it) or ``stages`` (stage by stage, with classad2 steps and the ``fallback`` between). ``roots``
names the expressions a cycle asks; ``jobs`` keeps each job's compiled roots and job-side values;
``stacks`` what jobs compiled alike share; ``space`` a universe of slot rows with its compiled
roots and static store; ``tables`` the leaves laid out for the kernels; ``execution`` runs plans
over frames of arrays; ``job_scalars``, ``python_inputs`` and ``bounds`` compute job-only values,
classad2 steps and known consumptions before the kernels run; ``evaluation_counts`` counts it all.
"""
