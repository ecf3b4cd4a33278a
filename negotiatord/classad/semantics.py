"""Which ClassAd semantics classad2 is using in this process.

The scoping mode is process-wide and set when HTCondor's library is configured, from
``STRICT_CLASSAD_EVALUATION``: importing negotiatord configures it with HTCondor's default, the
old semantics (:mod:`negotiatord.classad.library`), while a process that configured HTCondor
itself beforehand keeps the mode its config chose. Under old semantics (ClassAd::LookupInScope
with SetOldClassAdSemantics) an unscoped name the ad lacks is looked up in the other ad of the
match, and ``CurrentTime`` is an alias of the wall clock. The reference evaluator follows whatever
mode the process is in, so the fast path asks, and compiles accordingly.
"""

from __future__ import annotations

from functools import cache

import classad2


def old_semantics() -> bool:
    """True when classad2 resolves an unscoped name in the target ad (old ClassAd semantics).
    Asked anew each time (a process may configure HTCondor again), of a probe made once: the
    evaluator asks for every request."""
    probe, own, target = _probe()
    return probe.eval(own, target) == 1


@cache
def _probe() -> tuple[classad2.ExprTree, classad2.ClassAd, classad2.ClassAd]:
    """The name ``probe``, an ad without it and a target ad with it; made at the first question,
    once HTCondor's library is configured (:mod:`negotiatord.classad.library`). Nothing changes
    them after: an evaluation only reads them."""
    target = classad2.ClassAd()
    target["probe"] = 1
    return classad2.ExprTree("probe"), classad2.ClassAd(), target
