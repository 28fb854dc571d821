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

Left unchecked, because the docs are silent or disagree: which arithmetic operators each
engine takes (the math-operator table has no per-engine column; only the Scalar engine's trn2
pairs of `tensor_scalar` are listed, APK357), `tensor_scalar` on GpSimd beyond `nl.rsqrt` (its
parameter list says "only allowed for rsqrt", its body allows arithmetic), and whether
`nl.square`/`nl.relu` as `op0` need trn3 (a release note). `nl.divide` is in nki.language but
not in the math-operator table: the compiler rejects it (APK183).
""", """
a: f32[4, 8] @ sbuf = 1.0
c: f32[4, 8] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=a, op=nl.exp)
"""),
    entry("APK352", "operator the target does not have", """
Some operators exist on later NeuronCores only: `nl.abs_max` and `nl.abs_min` are
NeuronCore-v4 (trn3) operators (nki.language docs: "Available only on NeuronCore-v4 (trn3) and
newer"). Pick the target with `--target trn3`, or use another operator.
""", """
a: f32[4, 8] @ sbuf = 1.0
c: f32[4, 8] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=a, op=nl.abs_max)
"""),
    entry("APK353", "both inputs in PSUM", """
The element-wise instructions read at most one of their two tile inputs from PSUM (NKI isa
docstrings: "data1 and data2 cannot both reside in PSUM" for `tensor_tensor`, likewise `data`
and `operand1` of `scalar_tensor_tensor`, `data0`/`data1` of `tensor_tensor_scan`, `src` and
`predicate` of `tensor_copy_predicated`, `on_true` and `predicate` of `select_reduce`). Copy
one of them into SBUF first with `tensor_copy`. The docs give no such rule for
`tensor_scalar` or `range_select`, so none is checked there; nor do they give the free-size
limit of the architecture guide (64K elements a partition in SBUF, 4K in PSUM) in these
instructions' docstrings, so apdsl leaves it to the buffers' capacity.
""", """
a: f32[4, 8] @ psum = 1.0
b: f32[4, 8] @ psum = 2.0
c: f32[4, 8] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
"""),
    entry("APK354", "bit-vector operator on a non-integer tile", """
The bit-vector operators (`nl.invert`, `nl.bitwise_and`, `nl.bitwise_or`, `nl.bitwise_xor`,
`nl.left_shift`, `nl.right_shift`) treat elements as bit patterns and need integer tiles
(NKI: "the input/output data types must be integer types"). To work on the bits of float
data, view it as an integer dtype of the same width (`t.view(int32)` for float32).
""", """
a: f32[4, 8] @ sbuf = 1.0
c: f32[4, 8] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=a, op=nl.bitwise_and)
"""),
    entry("APK355", "bit-vector operands of different widths", """
A bit-vector operator combines bit patterns without any conversion. The NKI documentation
does not say how patterns of different widths (an int8 and an int32 tile) combine, so apdsl
does not guess: every operand of a bit-vector instruction has one width (int32 and uint32, or
int16 and uint16, mix freely, as bits).
""", """
a: i16[4, 8] @ sbuf = 1
b: i32[4, 8] @ sbuf = 3
c: i32[4, 8] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.bitwise_or)
"""),
    entry("APK356", "operator needs an engine that cannot run it here", """
Some operators fix the engine: `nl.power` in `tensor_tensor` runs on the GpSimd engine, which
cannot access PSUM (so no operand of it may be in PSUM, and `engine=vector` is refused); the
bit-vector operators of `tensor_scalar` run on the Vector engine only (so `engine=scalar` or
`engine=gpsimd` is refused).
""", """
a: f32[4, 8] @ sbuf = 2.0
c: f32[4, 8] @ psum
nisa.tensor_tensor(dst=c, data1=a, data2=a, op=nl.power)
"""),
    entry("APK357", "operator pair the Scalar engine does not run", """
On trn2 the Scalar engine runs `tensor_scalar` with these operator pairs only (NKI isa
docstring): `op0=nl.multiply, op1=nl.add`, `op0=nl.multiply, op1=None` and `op0=nl.add,
op1=None`. Use the Vector engine (leave `engine` unset) for the others. The docs give no such
list for trn1 or trn3, so apdsl checks it on trn2 only; nor do they list which arithmetic
operators each engine takes otherwise (that is not checked).
""", """
a: f32[4, 8] @ sbuf = 2.0
c: f32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.subtract, 1.0, engine=nisa.engine.scalar)
"""),
    entry("APK358", "exact integer result out of range", """
`tensor_tensor` on tiles that are all int32/uint32 runs on the GpSimd engine's native integer
arithmetic, which the NKI docs call exact. They do not say what an out-of-range result (an
int32 sum past 2**31 - 1) or a negative integer power becomes, so apdsl refuses it rather than
guess. Use a wider or float destination, or `engine=nisa.engine.vector` for float32 math.
""", """
a: i32[1, 1] @ sbuf = 2147483647
c: i32[1, 1] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=a, op=nl.add)
"""),
    entry("APK359", "operand is neither a number nor a tile", """
A scalar operand (`operand0`/`operand1` of `tensor_scalar` and `scalar_tensor_tensor`,
`initial` of `tensor_tensor_scan`, `on_false` of `select_reduce`, ...) is a compile-time
constant number or a tile with one element per partition (`[P, 1]`); a string, a list or None
(for a binary operator) is neither.
""", """
a: f32[4, 8] @ sbuf = 2.0
c: f32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.add, "1.0")
"""),
    entry("APK361", "arithmetic operand tile not float32", """
With arithmetic operators, the `[P, 1]` operand tiles of `tensor_scalar` must be float32 (NKI
isa docstring: "the operand0 and operand1 (if used) must be float32"); the data tile and dst
may have any dtype. Copy the operand into a float32 tile first.
""", """
a: f32[4, 8] @ sbuf = 2.0
k: bf16[4, 1] @ sbuf = 1.0
c: f32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.add, k)
"""),
    entry("APK362", "operand does not match its operator", """
`tensor_scalar` pairs each operator with its operand: a unary operator (`nl.abs`,
`nl.square`, `nl.relu`, `nl.rsqrt`, `nl.reciprocal`, `nl.invert`) takes `operand0=None` (or
0), a binary one needs an operand, and `op1`/`operand1` are both None when unused.
""", """
a: f32[4, 8] @ sbuf = 2.0
c: f32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.square, 3.0)
"""),
    entry("APK363", "bit-vector and arithmetic operators mixed", """
The two operators of a `tensor_scalar` must be of the same type: both bit-vector or both
arithmetic (NKI isa docstring). Split the computation into two instructions.
""", """
a: i32[4, 8] @ sbuf = 2
c: i32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.add, 1, op1=nl.bitwise_and, operand1=255)
"""),
    entry("APK364", "shift amount past the element width", """
`nl.left_shift` and `nl.right_shift` shift by 0 to width - 1 bits. The NKI docs do not say
what a negative shift or one past the element's width gives, so apdsl refuses it and names the
first such amount. (`nl.right_shift` is the logical shift: zeros shift in whatever the sign.)
""", """
a: i32[4, 8] @ sbuf = 1
c: i32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.left_shift, 32)
"""),
    entry("APK365", "bit-vector scalar operand not an integer of the width", """
The scalar operand of a bit-vector operator is an integer whose bits fit the elements it
combines with: from -2**(w-1) to 2**w - 1 for w-bit elements (a negative value is its two's
complement pattern). A float such as 1.5 has no bit pattern to combine.
""", """
a: i32[4, 8] @ sbuf = 1
c: i32[4, 8] @ sbuf
nisa.tensor_scalar(c, a, nl.bitwise_and, 1.5)
"""),
    entry("APK360", "predicated copy between different dtypes", """
`tensor_copy_predicated` copies elements between tiles of one dtype (NKI isa docstring: "src
and dst must share the same data type"); it does not convert. Convert `src` with
`tensor_copy` into a tile of dst's dtype first.
""", """
s: bf16[4, 8] @ sbuf = 1.0
m: u8[4, 8] @ sbuf = 1
d: f32[4, 8] @ sbuf = 0.0
nisa.tensor_copy_predicated(dst=d, src=s, predicate=m)
"""),
    entry("APK366", "affine_select pattern does not fit", """
`affine_select`'s `pattern` is a list of at most 4 `[step, count]` entries (as `iota`'s), and
its counts multiply to the elements per partition of `dst` and `on_true_tile`.
""", """
x: f32[4, 8] @ sbuf = 1.0
d: f32[4, 8] @ sbuf
nisa.affine_select(d, [[-1, 4]], 1, x, -9984.0)
"""),
    entry("APK367", "instruction not on this target", """
`range_select` exists on NeuronCore-v3 and newer only (trn2, trn3; NKI isa docstring:
"Available only on NeuronCore-v3 and newer"). On trn1, build the mask with `affine_select` or
`iota` and comparisons instead.
""", """
set_target("trn1")
x: f32[2, 4] @ sbuf = 1.0
b: f32[2, 1] @ sbuf = 1.0
d: f32[2, 4] @ sbuf
nisa.range_select(d, x, nl.less, nl.less, b, b)
"""),
    entry("APK368", "range_select fill value other than FP32_MIN", """
`range_select` fills the elements outside the range with `on_false_value`, which hardware
fixes to FP32_MIN (-3.4028235e+38; NKI isa docstring). Leave it unset. In a float16/bfloat16
dst the fill becomes -inf (the downcast), so keep `reduce_res` float32 when the result feeds an
exponential.
""", """
x: f32[2, 4] @ sbuf = 1.0
b: f32[2, 1] @ sbuf = 1.0
d: f32[2, 4] @ sbuf
nisa.range_select(d, x, nl.less, nl.less, b, b, on_false_value=0.0)
"""),
    entry("APK369", "range_select index beyond 2**24", """
`range_select` compares `range_start` plus the free index with the bounds in float32, which
holds every integer only up to 2**24; the docs say to keep the index within that range.
""", """
x: f32[2, 4] @ sbuf = 1.0
b: f32[2, 1] @ sbuf = 1.0
d: f32[2, 4] @ sbuf
nisa.range_select(d, x, nl.less, nl.less, b, b, range_start=16777216)
"""),
    entry("APK464", "reduce_cmd this instruction cannot use", """
`reduce_cmd` controls the Vector Engine's accumulators in `select_reduce` and `range_select`:
`idle`, `reset`, `reduce` or `reset_reduce` (`nisa.reduce_cmd.X`, its name or its value).
`load_reduce` loads a value the docs do not give for these instructions, and a `reduce_res`
with `reduce_cmd=idle` would receive a reduction that does not run: both are refused rather
than guessed.
""", """
x: f32[2, 4] @ sbuf = 1.0
m: u8[2, 4] @ sbuf = 1
r: f32[2, 1] @ sbuf
d: f32[2, 4] @ sbuf
nisa.select_reduce(d, m, x, 0.0, reduce_res=r)
"""),
    entry("APK465", "accumulating onto an unknown accumulator", """
`reduce_cmd=reduce` accumulates onto the Vector Engine's accumulators as earlier instructions
left them. apdsl knows them only after a `reset_reduce` (or `reset`): the NKI docs warn that
even an instruction with `reduce_cmd=idle` may modify them ("use reset_reduce after any
operations that ran with idle"), and a program run starts on a device whose accumulators hold
nothing known. Start each accumulation with `reset_reduce`.
""", """
x: f32[2, 4] @ sbuf = 1.0
m: u8[2, 4] @ sbuf = 1
r: f32[2, 1] @ sbuf
d: f32[2, 4] @ sbuf
nisa.select_reduce(d, m, x, 0.0, reduce_res=r, reduce_cmd="reduce")
"""),
]
