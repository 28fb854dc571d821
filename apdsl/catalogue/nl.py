"""The `nl` language names: the high-level functions, the removed index API, launch grids of
`.apk` kernels (APK150-APK169)."""

from . import entry

ENTRIES = [
    entry("APK150", "legacy NKI feature apdsl does not model", """
The legacy `neuronxcc.nki` API runs on apdsl (index grids, masks, instructions returning their
tiles, block dimensions), except for the pieces named here.  A tensor with block dimensions
(dimensions before `nl.par_dim` in an on-chip shape) is a set of tiles: index its blocks with
ints (`t[i, j]` is a tile) before anything else; a slice or an index expression over the
blocks, or the whole tensor as an operand, is not a tile.  The NKI block-dimension migration
guide shows the rewrite without block dimensions: `(B, par_dim(P), F)` -> `(P, B, F)`.  An
HBM tensor has no partitions, so `nl.par_dim` in an HBM shape marks nothing: its sizes are the
tensor's, row-major.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl

@nki.jit
def k(a):
    t = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    u = t[0:2]
    return a

k(np.zeros((128, 4), np.float32))
"""),
    entry("APK151", "nl function operand in the wrong memory", """
Each high-level `nl` function reads and writes the memory its reference says: `nl.load` reads
HBM into a new SBUF tile, `nl.store` writes an SBUF tile to HBM, `nl.copy` copies an SBUF or
PSUM tile into SBUF, `nl.matmul` multiplies SBUF tiles into PSUM; `nl.zeros`, `nl.ones`,
`nl.full` and `nl.zeros_like` fill an on-chip tile with `memset`, which no NKI instruction can
do in HBM. The help line says how to get the operand where the function takes it.
""", """
kernel k(a: f32[128, 64] @ sbuf):
    t = nl.load(a)
"""),
    entry("APK152", "nl function argument is not what it takes", """
A high-level `nl` function was given something other than a tile where it takes one, a fill
value that is not a number, or a tensor whose shape is not a tile (an on-chip tile has a
partition dimension of at most `nl.tile_size.pmax` = 128 and at least one free dimension):
slice a larger HBM tensor into tiles before `nl.load`.
""", """
kernel k(a: f32[256, 64] @ hbm):
    t = nl.load(a)
"""),
    entry("APK153", "nl.matmul operand shapes", """
`nl.matmul(x, y)` computes `x @ y` (with `transpose_x=True`, `x.T @ y`, where x is already
[K, M]): x's contraction dimension must equal y's first (partition) dimension, K, and both
must be 2-D tiles.
""", """
kernel k(a: f32[64, 32] @ hbm, b: f32[128, 32] @ hbm):
    r = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
"""),
]
ENTRIES += [
    entry("APK154", "nl function operands do not broadcast on chip", """
An element-wise `nl` function on two tiles broadcasts them by NumPy's rule, as the NKI reference
says ("x.shape and y.shape must be broadcastable to a common shape"): the tiles have one rank
and each dimension is equal or 1 in one of them. A one-partition tile is brought onto the
other's partitions (`nc_matmul` with a ones row, as `nl.broadcast_to` does), a size-1 free
dimension is read with stride 0. Tiles of different ranks, or of two partition counts neither
of which is 1, do not broadcast: slice or reshape one of them first.
""", """
kernel k(a: f32[8, 4] @ hbm, b: f32[4, 4] @ hbm):
    r = nl.add(nl.load(a), nl.load(b))
"""),
    entry("APK156", "nl.tile_size value not published", """
`nl.tile_size.psum_min_align` and `nl.tile_size.sbuf_min_align` exist in the NKI reference but
it gives no number for them (nor do the architecture guides), so apdsl does not make one up.
The published fields (`pmax`, `psum_bank_fmax`, `psum_num_banks`, `gemm_stationary_fmax`,
`gemm_moving_fmax`, `bn_stats_fmax`, `sbuf_fmax_bytes`, ...) have their per-target values.
""", """
x = nl.tile_size.psum_min_align
"""),
    entry("APK155", "nl.fori_loop / nl.while_loop / nl.if_else", """
`nl.fori_loop(lower, upper, body_fun, step=1)` calls `body_fun(i)` for i in
`range(lower, upper, step)`: the bounds are ints or registers (read when the loop starts, and
32-bit, as the loop's compare-and-branch is), the step a positive int, and `i` a register
holding the iteration's value. `nl.while_loop(init, body_fun)` runs while the condition
register is nonzero, checked before each iteration: `init` is a register and the body returns
the register of the next condition. `nl.if_else(cond, then_fn, else_fn=None)` calls `then_fn()`
when `cond` is nonzero, else `else_fn()`: the callbacks take no arguments and return nothing,
and `cond` is a Python bool or int (resolved when the kernel is traced) or a 32-bit
`NkiScalar` (`nisa.scalar_load`, APK178). The reference rejects a register as the condition: it
belongs to one engine's sequencer and every sequencer runs the branch. Anything else is refused here,
at the call.
""", """
nl.fori_loop(0, 8, lambda i: None, step=0)
"""),
    entry("APK157", "nl.dynamic_range bounds", """
`nl.dynamic_range(start, stop=None, step=1)` takes int bounds or bounds held in registers
(read when the loop starts, as the hardware loop instruction reads them; `apdsl check`, which
moves no data, checks the body once); the step must be a positive int (the reference requires
a positive compile-time step, never a register).  Inside a `nl.no_reorder()` block a dynamic
loop is refused too: the reference does not support one there.
""", """
for i in nl.dynamic_range(0, 8, 0):
    print(i)
"""),
]
ENTRIES += [
    entry("APK158", "nl reduction axes", """
`nl.sum`, `nl.max`, `nl.min`, `nl.prod`, `nl.mean`, `nl.var` and `nl.all` reduce free axes of
a tile with `tensor_reduce`, and `nl.softmax` and `nl.rms_norm` compute over free axes the same
way: the reference requires the axes to be free dimensions, trailing and contiguous (`axis=1` of a 2-D tile, `[1, 2]` or `2` of a 3-D one). Axis 0 is the
partition dimension: reduce across partitions with `nisa.tensor_partition_reduce` or a matmul
with a ones stationary. apdsl computes `nl.var` over every free axis only. A legacy index
expression (`t[i0, 2 * i1 + i2, 2 * i3 + i4]`) may reduce any free axes, as the legacy
AveragePool2D tutorial does: its access pattern lists the reduced axes last, so no data moves.
""", """
kernel k(a: f32[8, 4] @ hbm):
    s = nl.sum(nl.load(a), axis=0)
"""),
]
ENTRIES += [
    entry("APK159", "only a kernel launches on a grid", """
`NAME[n](...)` launches a kernel on n logical NeuronCores; a plain `def` helper is no kernel,
so it has no launch. A kernel is a `kernel NAME(...)` definition or a `def` decorated as NKI
code decorates kernels (`@nki.jit`, `@nki.baremetal`). Call a helper plainly: `helper(...)`.
""", """
def helper(x):
    return x
y = helper[2](1)
"""),
    entry("APK160", "a launch inside a launched program", """
`kernel[n](...)` starts a launch: n programs, one per logical NeuronCore, sharing the shared-HBM
outputs. A program of a launch already runs on its core, so it cannot launch another grid
(the NKI docs call sub-kernels without `nki.jit`, as plain functions). Launch kernels from the
top level of the file, and call kernels plainly from inside a kernel.
""", """
kernel inner() -> f32[1, 1] @ shared_hbm:
    out = nl.ndarray((1, 1), nl.float32, buffer=nl.shared_hbm)
    return out
kernel outer() -> f32[1, 1] @ shared_hbm:
    return inner[2]()
r = outer[2]()
"""),
]
ENTRIES += [
    entry("APK161", "address= on a buffer without one", """
`nl.ndarray(..., address=(partition_offset, free_offset))` places an on-chip tensor: a partition
lane and a byte offset within each partition of SBUF or PSUM (the NKI reference and its
migration guide, "Improved allocation API"). HBM has no partitions and the runtime places its
tensors, so the reference gives it no such address; Ascend buffers are not NKI's.
""", """
t = nl.ndarray((4, 4), nl.float32, buffer=nl.shared_hbm, address=(0, 0))
"""),
    entry("APK162", "address is not a (partition, byte) pair", """
`address=` takes two non-negative ints, `(partition_offset, free_offset)`: the first partition
the tensor occupies, and the byte offset within each partition where it starts. The free offset
counts bytes: the migration guide's prose says "element offset", but every example of the NKI
docs and the NKI library's allocator steps it in bytes (a PSUM bank k at `k * 2048`, bfloat16
tiles of n elements `n * 2` apart), and apdsl follows the examples.
""", """
t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, -4))
"""),
    entry("APK163", "placed tensor outside its buffer", """
A tensor of P partitions and S bytes a partition placed at `(p, f)` occupies partitions p to
p + P - 1 and bytes f to f + S - 1 of each: both must lie in the buffer (128 partitions; SBUF
192/224/256 KiB a partition on trn1/trn2/trn3, PSUM 16 KiB).
""", """
t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(64, 0))
"""),
    entry("APK164", "placed tensor misaligned", """
The migration guide: "The allocation for PSUM tensors must start at the beginning of each
bank" (8 banks of 2 KiB a partition, so a multiple of 2048 bytes). For SBUF the reference names
an alignment, `nl.tile_size.sbuf_min_align`, but publishes no value for it; apdsl accepts any
offset that is a whole number of the tensor's elements and refuses the rest rather than guess.
""", """
p = nl.ndarray((128, 128), nl.float32, buffer=nl.psum, address=(0, 1024))
"""),
    entry("APK165", "no room for the tensors placed without an address", """
A kernel may place some SBUF or PSUM tensors by hand (`address=`) and leave the rest to the
compiler, which puts those around the placed ones. apdsl does the same: when a placed tensor
lands on the bytes of a tensor apdsl placed itself, apdsl moves its own choice (never
observable) clear of every live tensor, so it shares no byte with another. The error means
no such room is left at that moment: the placed tensors and the live tensors without an
address need more bytes a partition than the buffer has (the message says how many more), or
the placed tensors split the free bytes into runs too short for one of them. A placed tensor
counts on every partition here. Free tensors without an address earlier, or place fewer by hand.
""", """
kernel k():
    a = nl.ndarray((128, 32768), nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((128, 32768), nl.float32, buffer=nl.sbuf, address=(0, 0))
"""),
]
ENTRIES += [
    entry("APK166", "nl.where's condition holds a value other than 1.0 and 0.0", """
`nl.where(condition, x, y, dtype=None)` takes "a condition tile with float values (1.0 for True,
0.0 for False)" (the NKI language reference); what another value selects is not defined, so
apdsl refuses it where the run reads it, naming the first such element.  The comparisons
(`nl.greater`, `nl.equal`, ...) give such a tile.  apdsl computes `nl.where` as a copy of y
(`tensor_copy`, or `memset` for a number), the condition as a uint8 predicate (`tensor_copy`),
and `tensor_copy_predicated` of x over it; `apdsl check`, which reads no values, does not see
this error.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl

@nki.jit
def k(a):
    c = nl.multiply(nl.load(a), 0.5)
    r = nl.where(c, c, c)
    return a

k(np.ones((128, 8), np.float32))
"""),
    entry("APK172", "nl.rms_norm's n or epsilon", """
`nl.rms_norm(x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None)` computes
`x / sqrt(sum(x ** 2 over axis) / n + epsilon) * w`: `n` is "the total number of values to
calculate rms" (a positive number, which may differ from the tile's count when the tile is
padded) and `epsilon` the term that keeps the root from zero (a number >= 0).
""", """
kernel k():
    x = nl.ones((128, 8), nl.float32)
    r = nl.rms_norm(x, x, axis=1, n=0)
"""),
    entry("APK167", "nl.transpose takes a 2-D tile", """
`nl.transpose(x, dtype=None)` "transposes a 2D tile between its partition and free dimension"
(the NKI language reference): x is a tensor with a partition dimension and one free dimension.
To transpose a tile with several free dimensions, use `nisa.nc_transpose`, which flattens them
first, or reshape the tile to 2-D.
""", """
kernel k():
    t = nl.ndarray((4, 2, 2), nl.float32, buffer=nl.sbuf)
    nisa.memset(t, 1.0)
    r = nl.transpose(t)
"""),
    entry("APK178", "nisa.NkiScalar: a device scalar misused", """
`nisa.scalar_load(src)` (NKI 2.33) reads the 1x1 `int32` or `int64` tensor `src` into an
`NkiScalar`, an integer computed on the device whose width is fixed: 32-bit arithmetic wraps.
The reference defines `+`, `-` (binary and unary) and `*` at both widths, with a Python int or a
scalar of the same dtype; the comparisons `< <= > >= == !=` at 32 bits only, and their result
only as the condition of `nl.if_else`. A 32-bit scalar bounds `nl.fori_loop` and conditions
`nl.if_else`; a 64-bit one does neither (the loop's compare-and-branch has no 64-bit form).
Refused here: those misuses; a scalar used as a Python value (`if s:`, `range(s)`, an index),
whose value exists only on the device; operators the reference does not list (`/`, `//`, `%`,
shifts, bitwise); and a scalar as an access pattern's `scalar_offset`, which NKI allows and
apdsl does not model yet (load the offset into a register with `nisa.register_load`).
""", """
# python
from apdsl.tensor.scalars import NkiScalar
NkiScalar(5, "int64") < 6
"""),
    entry("APK168", "nl.transpose of a tensor in HBM", """
`nl.transpose` transposes an on-chip tile (SBUF, or PSUM for the Vector Engine's small tiles)
into a new PSUM tile with `nisa.nc_transpose`; no engine transposes HBM in place. Load the
tensor first (`nl.load`), or transpose while moving it with `nisa.dma_transpose` (trn2 and
later).
""", """
kernel k(a: f32[8, 8] @ hbm):
    r = nl.transpose(a)
"""),
    entry("APK169", "nl.transpose result has too many partitions", """
The transpose of an [P, F] tile is [F, P]: its F free elements become partitions, of which a
tile has at most 128 (`nl.tile_size.pmax`), and the Tensor Engine transposes at most [128, 128]
(the Vector Engine [32, 32]). Transpose a wider tile in blocks of at most 128 columns.
""", """
kernel k():
    t = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.memset(t, 1.0)
    r = nl.transpose(t)
"""),
]
