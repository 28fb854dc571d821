"""The `nl` language names: the high-level functions, the removed index API, launch grids of
`.apk` kernels (APK150-APK169)."""

from . import entry

ENTRIES = [
    entry("APK150", "legacy NKI index API", """
`nl.mgrid`, index expressions built with `nl.arange`, and `nl.par_dim` belong to the older
`neuronxcc.nki` API; the current NKI reference removed them (its migration guide: "arange has
been removed, use slicing or APs"; block dimensions and `nl.par_dim` removed). Index a tile with
slices (`t[0:128, 0:512]`), `nl.ds(start, size)` or an access pattern (`t.ap(...)`), and write a
tile's shape plainly: its first dimension is the partition dimension.
""", """
kernel k():
    t = nl.ndarray((nl.par_dim(128), 512), nl.float32, nl.sbuf)
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
An element-wise `nl` function on two tiles issues `tensor_tensor` when they have one shape, or
`tensor_scalar` with a per-partition operand when one of them is a `[P, 1]` column of the
other's partitions. Any other broadcast (a `[1, F]` row across partitions, different partition
counts) moves data across partitions, which neither instruction does: broadcast the row first
(the architecture guide does it with `nc_matmul` and a ones stationary).
""", """
kernel k(a: f32[8, 4] @ hbm, b: f32[1, 4] @ hbm):
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
    entry("APK157", "nl.dynamic_range bounds", """
`nl.dynamic_range(start, stop=None, step=1)` runs over int bounds here, as the other range
functions; the step must be a positive int (the reference requires a positive compile-time
step). On hardware its bounds may be held in registers; apdsl does not model register loop
bounds, so a register bound is refused rather than guessed.
""", """
for i in nl.dynamic_range(0, 8, 0):
    print(i)
"""),
]
ENTRIES += [
    entry("APK158", "nl reduction axes", """
`nl.sum`, `nl.max`, `nl.min`, `nl.prod`, `nl.mean`, `nl.var` and `nl.all` reduce free axes of
a tile with `tensor_reduce`: the reference requires the axes to be free dimensions, trailing
and contiguous (`axis=1` of a 2-D tile, `[1, 2]` or `2` of a 3-D one). Axis 0 is the
partition dimension: reduce across partitions with `nisa.tensor_partition_reduce` or a matmul
with a ones stationary. apdsl computes `nl.var` over every free axis only.
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
