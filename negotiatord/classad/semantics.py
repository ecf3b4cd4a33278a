"""Which ClassAd semantics classad2 is using in this process.

classad2 starts with the strict ("new") ClassAd semantics and switches, for good, to HTCondor's
old semantics the first time anything parses an old-syntax ad (``ParserType.Old``: the long form
``negotiatord`` reads from files). Under old semantics (ClassAd::LookupInScope with
SetOldClassAdSemantics) an unscoped name the ad lacks is looked up in the other ad of the match,
and ``CurrentTime`` is an alias of the wall clock. The reference evaluator follows whatever mode
the process is in, so the fast path asks, and compiles accordingly.
"""

from __future__ import annotations

import classad2


def old_semantics() -> bool:
    """True once classad2 resolves an unscoped name in the target ad (old ClassAd semantics)."""
    target = classad2.ClassAd()
    target["probe"] = 1
    return classad2.ExprTree("probe").eval(classad2.ClassAd(), target) == 1


def adopt_old_semantics() -> None:
    """Switch classad2 to HTCondor's old semantics for the rest of the process, as HTCondor's
    daemons run them (``STRICT_CLASSAD_EVALUATION`` defaults to False): an unscoped name the ad
    lacks is then found in the other ad of the match, whatever form the ads arrived in. Without
    this, a process that has read only new-form or JSON ads, or built its ads itself (a trace
    replay), would find ``SubmitterUserPrio`` in ``PREEMPTION_REQUIREMENTS`` nowhere. classad2
    has no call for it: parsing an old-syntax ad is what switches it, for good."""
    classad2.parseOne('MyType = "Negotiator"', classad2.ParserType.Old)
