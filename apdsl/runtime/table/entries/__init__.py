"""The instruction table's entries by group (`apdsl.runtime.table` assembles them).

Each module declares `ENTRIES`, a tuple of `apdsl.runtime.table.spec.Instruction`: `compute`
(element-wise arithmetic and selection), `reduce` (activations, reductions, statistics, random
numbers), `movement` (transposes, gathers, shuffles, registers), `vector` (the AscendC vector
unit on UB) and `cube` (Fixpipe, LoadData 3D and atomic add on the Ascend cube path).
"""
