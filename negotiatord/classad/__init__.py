"""The ClassAd language as negotiatord uses it, below everything else in the package.

``parser`` reads classad2's canonical expression text into a tuple AST and writes it back;
``values`` is a ClassAd value as a type tag and a payload, and the literal text classad2 reads
back as that value; ``conversion`` turns classad2 results into Python numbers and strings;
``semantics`` says which scoping mode (old or new ClassAd semantics) classad2 is in;
``cycle_time`` freezes ``time()`` and ``CurrentTime`` at the cycle's time for the reference
evaluator. Nothing here imports from the rest of negotiatord, so the pool snapshot, both
evaluators and the feed can all build on it.
"""
