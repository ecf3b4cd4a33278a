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
