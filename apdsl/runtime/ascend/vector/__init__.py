"""The AscendC vector unit on UB (pipe V), as pyasc's `asc.language.basic` names it.

- `params`: pyasc's enums (`RoundMode`, `CMPMODE`, `SelMode`, `PipeID`, `TPosition`,
  `HardEvent`, ...) and parameter objects (`BinaryRepeatParams`, `UnaryRepeatParams`, ...).
- `repeat`: the two addressing forms every vector instruction takes (the count form and the
  mask form: a mask over a 256-byte repeat, `repeat_times`, block and repeat strides) turned
  into the storage elements each operand touches, with their rules.
- `arith`: the NumPy meaning of each instruction and the Atlas A2 dtype rules of its arithmetic.
- `run`: checking, recording (pipe V, for the race checker, `lower` and `profile`) and executing
  one instruction instance from its table entry (`apdsl.runtime.entries.vector`).
- `ops`, `ops_more`, `datacopy`: the instructions with pyasc's parameter names and orders.
"""
