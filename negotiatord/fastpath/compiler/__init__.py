"""The fast path at compile time: ClassAd expressions over the ads' shapes, down to kernel plans.

``cells`` reads what the ads hold, per attribute, as interned cells; ``resolution`` turns an AST
into the IR (``ir``) for a group of slots of one shape, folding constants through classad2
(``folding``); ``lowering`` turns IR into kernel plans; ``leaves`` compiles one root expression
for one group of slots. Nothing here imports the interpreter: where a leaf's inputs live is asked of
an :class:`~negotiatord.fastpath.compiler.leaves.InputRows`.
"""
