"""The element-wise compute instructions and the operators as values (APK350-APK369,
APK464-APK474)."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK350", "not an operator", """
An instruction's operator argument (`op=`, `op0=`, `op1=`, `reduce_op=`, `cmp_op=`, ...) takes
one of the NKI operators as a value: `nl.add`, `nl.multiply`, `nl.maximum`, `nl.bitwise_and`,
`nl.exp`, ... (`apdsl explain --list` and SPEC section 11 list them). A string, a number or a
function is not an operator. An operator is a value, not a function: calling `nl.add(a, b)`
needs the high-level `nl` functions; with an ISA instruction pass it as `op=nl.add`.
""", """
x = add(1, 2)
"""),
    entry("APK351", "operator the instruction does not take", """
Each instruction takes the operators its NKI documentation names: `tensor_tensor` a binary
operator of the NKI math-operator table (or `nl.power`), `tensor_scalar` and
`scalar_tensor_tensor` operators of that table (`scalar_tensor_tensor` no bit-vector ones),
`activation` a function of the activation table, `select_reduce`/`range_select` reductions by
`nl.maximum` only, and so on. An activation function such as `nl.exp` is not an ALU operator,
and an ALU operator such as `nl.add` is not an activation function. The message says what the
instruction takes.
""", """
# python
from apdsl.runtime.operators import OPERATORS, operator_arg
operator_arg(OPERATORS["exp"], "tensor_tensor", "op", arity=2)
"""),
    entry("APK352", "operator the target does not have", """
Some operators exist on later NeuronCores only: `nl.abs_max` and `nl.abs_min` are
NeuronCore-v4 (trn3) operators (nki.language docs: "Available only on NeuronCore-v4 (trn3) and
newer"). Pick the target with `--target trn3`, or use another operator.
""", """
# python
from apdsl.runtime.operators import OPERATORS, operator_arg
operator_arg(OPERATORS["abs_max"], "tensor_tensor", "op", target="trn2")
"""),
]
