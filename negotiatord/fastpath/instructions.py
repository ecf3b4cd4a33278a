"""The fast path's instruction set: what the compiler emits and the kernels interpret.

An instruction is a row of eight int64: opcode, destination register, then up to three operands,
each a (source, index) pair. A plan's result is an operand too, written to an output row through
a *sink* (the conversion the reference applies to that root's classad2 value). Kernels run
*blocks* (rows of the block table: a code range over a range of positions) and, for a whole
assessment, *leaves* (rows of the leaf table: which segments run a compiled leaf). Both compiler
and kernels import these numbers from here, so neither depends on the other for them.
"""

from __future__ import annotations

# where an operand is read: registers and dynamic inputs per position, scalars once per job,
# the static store per universe row, assets as dynamic inputs from the call's asset base
SOURCE_NONE, SOURCE_REGISTER, SOURCE_SCALAR, SOURCE_STATIC, SOURCE_ASSET, SOURCE_DYNAMIC = -1, 0, 1, 2, 3, 4

# opcodes
(OP_MOVE, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_IS, OP_ISNT,
 OP_AND, OP_OR, OP_NOT, OP_NEG, OP_PLUS, OP_COND, OP_ELVIS, OP_IS_UNDEF, OP_IS_ERROR, OP_IS_STRING,
 OP_IS_INT, OP_IS_REAL, OP_IS_BOOL, OP_FLOOR, OP_CEILING, OP_ROUND, OP_INT, OP_REAL) = range(32)
CONVERSIONS = (OP_FLOOR, OP_CEILING, OP_ROUND, OP_INT, OP_REAL)   # string rows of the conversion tables

# sinks: how a block's result is written to the output row (SINK_NONE: not written; SINK_OWN: the
# root's own sink). A FILTER sink keeps, in place, only the positions whose result matches (a
# conjunct of Requirements); the next block may continue on the survivors (BLOCK_CHAINED = 1);
# FILTER_LAST also writes 1.0 for them.
SINK_NONE, SINK_OWN = -1, -2
(SINK_RAW, SINK_MATCH, SINK_NUMBER, SINK_RANK_UNRANKED, SINK_RANK_ZERO, SINK_CONSUME, SINK_FILTER,
 SINK_FILTER_LAST) = range(8)

# block table columns: code range, positions range, the result operand, its sink and output row,
# where the block's scalars and assets start, whether it runs on what the previous block kept
(BLOCK_CODE_START, BLOCK_CODE_END, BLOCK_POSITIONS_START, BLOCK_POSITIONS_END, BLOCK_RESULT_SOURCE,
 BLOCK_RESULT_INDEX, BLOCK_SINK, BLOCK_OUT_ROW, BLOCK_SCALAR_BASE, BLOCK_ASSET_BASE, BLOCK_CHAINED) = range(11)

# leaf table: kinds of leaves and the table's columns (kind, segment range, never matches)
LEAF_PLAIN, LEAF_CHAIN, LEAF_PYTHON = range(3)
(LEAF_KIND, LEAF_SEGMENTS_START, LEAF_SEGMENTS_END, LEAF_NEVER) = range(4)
LEAF_COLUMNS = 4
