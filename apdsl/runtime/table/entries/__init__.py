"""The instruction table's entries by group (`apdsl.runtime.table` assembles them).

Each module declares `ENTRIES`, a tuple of `apdsl.runtime.table.spec.Instruction`: `compute`
(element-wise arithmetic and selection), `reduce` (activations, reductions, statistics, random
numbers) and `movement` (transposes, gathers, shuffles, registers).
"""
