"""APK4xx: errors raised while instructions execute (and the APK45x warnings)."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK401", "access pattern outside its storage", """
An access pattern addresses `offset + sum(i_k * stride_k)` of the tensor's storage, flattened
(seed 000). Every element it reaches must lie inside the storage. apdsl checks the lowest and
highest element of each pattern before any data moves and names the tensor, the offending
element and the storage size. Views made with `slice`, `select` and friends cannot leave their
tensor; this error comes from an `.ap` whose offset or strides go too far.
""", """
t: f32[16, 32] @ sbuf = 0
o: f32[16, 32] @ sbuf
tensor_copy(o, t.ap([[32, 16], [1, 32]], offset=16))
"""),
    entry("APK402", "runtime index out of range", """
A runtime index (a `select` or `vector_select` index tensor or register, a Tensor Indirection
index, an `.ap(scalar_offset=/vector_offset=)` value) must lie in its allowed range: `[0, size)`
of the selected dimension for `select`/`vector_select`/`indirect`, and non-negative for `.ap`
offsets. NKI leaves an out-of-range index undefined; apdsl stops when the instruction executes
and names the instruction, the index value, its position in the index tensor and the range.
""", """
A: f32[4, 128, 512] @ hbm = random(0)
idx: i32[1, 1] @ sbuf
memset(idx, 7)
out: f32[128, 512] @ hbm
dma_copy(out, A.select(0, idx))
"""),
    entry("APK403", "runtime offset moves the access outside its storage", """
With `.ap(..., scalar_offset=, vector_offset=, indirect_dim=)` the index is scaled by the step
of dim `indirect_dim` of the tensor `.ap` is called on (`prod(shape[indirect_dim + 1:])` for a
whole tensor or a reshape of it; a slice keeps its storage's row stride) and added to the
pattern's offset.
Every element the instruction then touches must still lie in the tensor's storage.
""", """
A: f32[512, 512] @ hbm = random(0)
idx: i32[1, 1] @ sbuf
memset(idx, 400)
out: f32[128, 256] @ hbm
dma_copy(out, A.ap([[512, 128], [1, 256]], 0, scalar_offset=idx, indirect_dim=0))
"""),
    entry("APK404", "read of memory nothing wrote", """
Memory starts unwritten, as on hardware, where it holds whatever the last kernel left. Reading
it is not itself the defect: an instruction computing on tile lanes nothing loaded leaves its
own results there unwritten too (unwritten data propagates, see APK412), and a kernel that then
stores only the lanes it loaded is correct. It is an error where it reaches an observable
point: a store to HBM/GM (a missing load, a tile loop that misses the tail), a host read
(`host(t)`, `t.numpy()`, `-o`), an index, register or predicate, a scan's carry chain, or
`mmad --strict-padding` reading fractal padding never zeroed. With `--strict-init`
(`apdsl.options(init_check="strict")`) every read of it is the error, where it is read. The
error names the tensor, the first unwritten element (its coordinate in the view and its storage
offset) and where the tensor was allocated. Written state is kept per byte (per nibble for int4,
two elements a byte): an element counts as written only when all of its bytes are, so writing
one byte of each float32 through a `uint8` view, or one bfloat16 half of it, leaves it
unwritten, and the message says how many of its bytes were written. `--no-init-check` or
`apdsl.options(init_check=False)` turns the check off; unwritten memory then reads as 0.
""", """
t: f32[128, 64] @ sbuf
o: f32[128, 64] @ hbm
dma_copy(o, t)
"""),
    entry("APK412", "data computed from unwritten memory reaches an observable point", """
Unwritten memory propagates as MemorySanitizer's uninitialised bits do: an instruction's output
element is unwritten when an input element it depends on is (element-wise by element, a
reduction or matmul by any element it sums, a copy or transpose element for element; the
instruction table says which for each instruction). That is how hardware behaves: it computes
on whatever the bytes hold. It becomes an error where such data reaches something the kernel
produces or decides by: a store to HBM/GM, the kernel's result, a host read, an index, register
or predicate, a scan's carry chain. The message names the element read there and where its
garbage came from: the tensor and element nothing wrote, where it was allocated, and the
instruction that first read it. Load the missing data, or store only the lanes you loaded (the
masked-tail pattern). `--strict-init` reports the first read instead; `--no-init-check` reads
unwritten memory as 0.
""", """
A: f32[100, 64] @ hbm = 1.0
x: f32[128, 64] @ sbuf
dma_copy(dst=x[0:100, :], src=A)
y: f32[128, 64] @ sbuf
nisa.activation(dst=y, op=nl.exp, data=x)
out: f32[128, 64] @ hbm
dma_copy(dst=out, src=y)
"""),
    entry("APK405", "destination writes an element twice", """
A destination view must touch each storage element at most once: a stride-0 (broadcast)
dimension or an `.ap` whose strides overlap would write the same element several times in an
order the hardware does not define.  A DMA scatter whose runtime row index repeats
(`.ap(vector_offset=)`, `vector_select`) is the one exception, and only while the rows that
share an index carry the same bytes (every order then leaves those bytes: a spare row that
every padding row is sent to); rows that share an index and differ are this error, since a
transfer runs on up to 16 DMA engines and nothing orders them.
""", """
t: f32[128, 1, 64] @ sbuf
memset(t.broadcast(1, 4), 0.0)
"""),
    entry("APK406", "register values make the access pattern invalid", """
Strides, counts and the offset of an `.ap` may be virtual registers; their values are read when
the instruction executes. A count must then be at least 1 and every element the pattern reaches
must lie inside the storage, as for a static pattern (APK401).
""", """
t: f32[128, 64] @ sbuf = 0
o: f32[128, 64] @ sbuf
r = register_alloc(2)
tensor_copy(o, t.ap([[64, 128], [r, 64]]))
"""),
    entry("APK407", "index tensor does not fit the indirect access", """
Vector offsets hold one row index per partition: shape `(partitions, 1)`. A Tensor Indirection
index is read as `index[i % G, i // G]` (G = 32 for nc_matmul operands, 16 otherwise), so it
needs at least `min(G, num_elem)` partitions.
""", """
A: f32[128, 512] @ hbm = random(0)
idx: i32[32, 1] @ sbuf
iota(idx, [[1, 1]], 0, 1)
out: f32[64, 512] @ sbuf
dma_copy(out, A.ap([[512, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0))
"""),
    entry("APK408", "use of a freed tensor", """
A tensor declared inside a block (a loop body, an `if`, a helper) is freed when the block ends,
and its on-chip memory is reused. A view of it that escaped the block cannot be used afterwards.
""", """
kernel k() -> f32[128, 64] @ hbm:
    out: f32[128, 64] @ hbm
    for i in range(1):
        t: f32[128, 64] @ sbuf = 0
        keep = t
    dma_copy(out, keep)
    return out
"""),
    entry("APK410", "register read before it holds a value", """
`register_alloc()` without a value makes an empty register; it must be given a value with
`register_load(reg, t)` before an instruction reads it as a stride, count, offset or index.
""", """
t: f32[128, 64] @ sbuf = 0
o: f32[128, 64] @ sbuf
r = register_alloc()
tensor_copy(o, t.ap([[64, 128], [1, r]]))
"""),
    entry("APK413", "register used as a Python value", """
A register (`register_alloc`, `register_load`, the index `nl.fori_loop` passes its body, the
condition `nl.while_loop` passes) holds a value only when the kernel runs on the device. Python
arithmetic on it (`i * 4`, `i + 1`), comparisons, `if reg:`, `while reg:`, `int(reg)`,
`range(reg)` and indexing with it have nothing to act on while the kernel is traced, so they
are refused (NKI's tracer raises `TypeError` for them). Read a register where an instruction
takes one: an access pattern's `scalar_offset`, a dynamic loop's bound, a `while_loop`
condition.
""", """
# python
from apdsl.tensor.registers import VirtualRegister
VirtualRegister(3, name="i") * 4
"""),
    entry("APK411", "value does not fit the view", """
Writing an array through a view (`load("x.npy")` into a tensor, `from_numpy`) needs exactly as
many values as the view has elements; they are taken in row-major order.
""", """
# Python API
import numpy as np
import apdsl
from apdsl.runtime.core.execute import write_view
t = apdsl.ndarray((2, 2), "float32", "hbm")
write_view(t, np.zeros(16))
"""),
    entry("APK420", "wrong kind of instruction argument", """
Instruction operands are tensors (or views), `memset` values are numbers, `iota` patterns are
lists of `[step, count]` pairs of ints with counts >= 1, register values are ints and
`register_load` takes a register made by `register_alloc`.
""", """
t: f32[128, 64] @ sbuf
memset(t, "zero")
"""),
    entry("APK421", "unknown or invalid option", """
`apdsl.options(...)` accepts `init_check=True|False|"strict"`, `strict_padding=True|False`,
`max_memory=BYTES` and `max_steps=N` (positive ints), `max_time=SECONDS` (or None),
`sync=True|False`, `plans=True|False`, `execute=True|False` and
`mx_alternative_emax=True|False` (quantize_mx's block scale). Any other name, or a value of the wrong type, is an error
so that a typo does not silently leave a check on or off.
""", """
# Python API
import apdsl
apdsl.options(init_checks=False)
"""),
    entry("APK430", "allocation past the memory budget", """
Live storage plus its written-state bookkeeping (every buffer, HBM and GM included) is bounded
by the memory budget: `--max-memory BYTES` on the command line (suffixes K, M, G, T are powers of
1024), `apdsl.options(max_memory=BYTES)` from Python, by default half of the machine's physical
memory. Each allocation (a declaration, a kernel input, `ndarray()`, `from_numpy`) reserves its
bytes plus one bookkeeping byte per unit of written state (a native element; per byte or
nibble once a narrower view writes part of one), and an allocation past the budget is this
error at the allocation, in `check` as in `run`: nothing is allocated. A tensor returns its
bytes when the block that declared it ends.
""", """
x: f32[1000000, 1000000] @ hbm = zeros
"""),
    entry("APK431", "out of memory", """
NumPy could not get the memory an allocation or an instruction needed although the memory
budget (APK430) allowed it: the budget is larger than what the machine can really give (other
processes, a ulimit, a container limit). Lower `--max-memory` / `apdsl.options(max_memory=)` so
that such allocations fail at their declaration instead, or use smaller tensors.
""", """
# Python API
import apdsl
with apdsl.options(max_memory=2**62):
    t = apdsl.ndarray((2**60,), "uint8", "hbm")
    t.numpy()
"""),
    entry("APK450", "vector_offset ignores the leading stride (warning)", """
With `.ap(pattern, vector_offset=idx, indirect_dim=0)` the hardware steps between rows by the
row size of the tensor `.ap` is called on (`prod(shape[1:])`), and ignores the stride written in the pattern's
leading pair (seed 000). apdsl does the same and warns, once per instruction, when the written
stride differs, so code stays correct if the limitation is lifted.
""", """
A: f32[128, 512] @ hbm = random(0)
idx: i32[64, 1] @ sbuf
iota(idx, [[1, 1]], 0, 2)
out: f32[64, 512] @ sbuf
dma_copy(out, A.ap([[1024, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0))
"""),
    entry("APK460", "element-wise operands differ in partitions", """
An element-wise compute instruction (`reciprocal` and the others the instruction table runs
generically) works within each partition: every operand needs the same partition count and the
same number of elements per partition as `dst` (their free shapes may differ).
""", """
a: f32[128, 64] @ sbuf = 2.0
b: f32[64, 128] @ sbuf
reciprocal(b, a)
"""),
    entry("APK461", "dtype the instruction does not take", """
The compute engines compute in float32 on the NKI tile dtypes: float32, float16, bfloat16,
float8_e4m3, float8_e5m2, the 8-, 16- and 32-bit integers, and float8_e4m3fn from trn3 on.
`tfloat32` is a Tensor Engine input format and `int4`/`int64` are not NKI tile dtypes, so an
element-wise instruction refuses them; view or copy the data as a supported dtype first.
""", """
a: i64[4, 8] @ sbuf = 1
b: f32[4, 8] @ sbuf
reciprocal(b, a)
"""),
    entry("APK462", "instruction of the other target family", """
An NKI compute instruction such as `reciprocal` has no operand in an Ascend buffer (GM, L1, L0A,
L0B, L0C, UB); a kernel targets one accelerator family.
""", """
a: f32[16, 16] @ ub = 1.0
b: f32[16, 16] @ ub
reciprocal(b, a)
"""),
    entry("APK463", "input outside the instruction's domain", """
The NKI documentation says that out-of-range inputs of `reciprocal` (and of the functions
sqrt, rsqrt, log, ...) give invalid output. apdsl does not guess what hardware returns: an
element outside the domain (for `reciprocal`, an element equal to 0) is an error naming the
first one. Keep the input inside the domain, for example by adding a small epsilon.
""", """
a: f32[4, 8] @ sbuf = 0.0
b: f32[4, 8] @ sbuf
reciprocal(b, a)
"""),
]
