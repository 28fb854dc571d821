"""APK3xx: hardware rules of the target (NKI trn1/trn2/trn3, Ascend a2)."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK301", "too many partitions", """
SBUF and PSUM have 128 partitions on every NKI target. Dim 0 of an on-chip tensor is its
partition dimension, so it can be at most 128, and an `.ap` on an on-chip tensor can address at
most 128 partitions.
""", """
t: f32[256, 64] @ sbuf
"""),
    entry("APK302", "allocation beyond the buffer's capacity", """
Each buffer has a fixed size: SBUF 192 KiB a partition on trn1 (24 MiB), 224 KiB on trn2
(28 MiB), 256 KiB on trn3 (32 MiB); PSUM 16 KiB a partition (2 MiB, 8 banks of 2 KiB); on
ascend-a2 L1 512 KiB, L0A and L0B 64 KiB, L0C 128 KiB, UB 192 KiB. A declaration whose tensor
does not fit next to the live tensors of that buffer is an error at the declaration. Tensors
declared inside a block are freed when it ends. On SBUF and PSUM a tensor is live from its
first access to its last access, in the order the kernel issues its instructions, as NKI's own
allocator (`CompileConfig` with `Allocation.LINEAR`) gives a tile its address at its first
write and takes it back after its last read: a tile declared but not used yet takes no space,
and neither does one no instruction reads or writes again, even while a variable (a list, a
local) still names it. So the error can surface later, at the access that makes tiles live
together past the capacity; it still points at the declaration of the tile whose first access
overflowed, and a note names the tensor accessed and the line of the access. Tensors placed
with `address=` count while they are held. On the Ascend buffers every held tensor counts.

This is a rule of program order. The Neuron compiler's default flow allocates after tracing
and schedules the instructions itself (reordering them within their data dependencies), and its
docs say live data that overflows SBUF or PSUM is spilled to the next memory and refilled, so an
NKI kernel refused here can still compile, running with spills.
""", """
t: f32[128, 65536] @ sbuf
"""),
    entry("APK303", "partition stride rule", """
On SBUF and PSUM the first `[stride, count]` pair of an access pattern addresses partitions, and
every partition uses the same free pattern, so the partition stride must be the tensor's free
size (the number of elements per partition). An `.ap` that steps over partitions (reads every
other partition, say) is not something the hardware can do.
""", """
t: f32[16, 32] @ sbuf
u = t.ap([[64, 8], [1, 32]], offset=0)
"""),
    entry("APK304", "too many free access-pattern entries", """
An on-chip access pattern has the partition entry plus at most 4 free `[stride, count]` entries
after coalescing (adjacent entries merge when `outer_stride == inner_stride * inner_count`). A
view needing more is legal until an instruction consumes it; the error says how many entries it
needs and how many the target allows.

A legacy kernel (a file that imports `neuronxcc`) indexes tiles with grids of any rank, and the
legacy compiler legalized an operand needing more entries by issuing the instruction once per
position of its outer free dimensions (nki-samples' trilinear interpolation, checked on devices,
has operands needing six; the compiler's release notes name the legalization). In such a file
apdsl issues the same pieces, each checked, lowered and costed as an instruction of its own: the
fewest outer free dimensions that bring every operand within the limit. It does so for the
instructions that compute dst element by element (`tensor_tensor`, `tensor_scalar`,
`scalar_tensor_tensor`, `tensor_copy`, `tensor_copy_predicated`, `reciprocal`, `memset`,
`activation` without a reduction, `dma_copy`) when every tensor operand has dst's shape or one
value per partition, and dst shares no memory with a source through another view; otherwise
the error stands and a note says why.
""", """
t: f32[128, 2, 2, 2, 2, 2] @ sbuf = 0
o: f32[128, 2, 2, 2, 2, 2] @ sbuf
tensor_copy(o, t.permute((0, 5, 4, 3, 2, 1)))
"""),
    entry("APK305", "copy between accelerator families", """
A buffer's name says its family: `sbuf`, `psum`, `hbm`, `private_hbm`, `shared_hbm` are NKI
(Trainium); `gm`, `l1`, `l0a`, `l0b`, `l0c`, `ub` are Ascend. One DMA cannot move data between
the two.
""", """
a: f32[16, 16] @ gm = 0
b: f32[16, 16] @ hbm
dma_copy(b, a)
"""),
    entry("APK306", "dma_copy element counts differ", """
`dma_copy` moves elements in logical row-major order whatever the shapes, so the source and
destination may differ in shape but must hold the same number of elements.
""", """
a: f32[128, 64] @ hbm = 0
b: f32[128, 32] @ sbuf
dma_copy(b, a)
"""),
    entry("APK307", "dma_copy of a Tensor Indirection view", """
`indirect()` (Tensor Indirection, trn3) is a feature of the compute engines; DMA uses its own
dynamic addressing: `vector_select`, `select` with a runtime index, or `.ap(scalar_offset=,
vector_offset=)`. (Tensor Indirection itself needs trn3: `--target trn3` or `set_target`.)
""", """
set_target("trn3")
t: f32[128, 64] @ sbuf = 0
idx: i32[128, 1] @ sbuf = 0
o: f32[128, 1] @ hbm
dma_copy(o, t.indirect(idx))
"""),
    entry("APK308", "no such Ascend DMA path", """
On Ascend the data movers connect particular buffers: GM->L1, GM->UB, GM->L0A and GM->L0B
(Load2D), L1->L0A and L1->L0B (LoadData), L0C->GM and L0C->L1 (Fixpipe), UB->GM and UB->UB. Any
other pair needs an intermediate buffer (L1->GM goes through L0 and L0C, or UB) or is not a copy
at all (L0A and L0B are only read by the cube unit).
""", """
a: f16[16, 16] @ l1 = 0
b: f16[16, 16] @ gm
dma_copy(b, a)
"""),
    entry("APK309", "operand must be on chip", """
Compute instructions (`tensor_copy`, `iota`, `nc_matmul` inputs) read and write SBUF or PSUM;
`nc_matmul` reads its stationary and moving inputs from SBUF. HBM data is brought on chip with
`dma_copy` first.
""", """
a: f32[128, 64] @ hbm = 0
b: f32[128, 64] @ sbuf
tensor_copy(b, a)
"""),
    entry("APK310", "Tensor Indirection needs trn3", """
`indirect(index, num_elem)` is available on NeuronCore-v4 (trn3) and later. Select the target
with `--target trn3` (or `apdsl.target("trn3")`).
""", """
t: f32[128, 64] @ sbuf = 0
idx: i32[128, 1] @ sbuf = 0
u = t.indirect(idx)
"""),
    entry("APK311", "tensor_copy partitions differ", """
`tensor_copy` runs on the compute engines, which keep each partition's data in its partition:
source and destination need the same partition count and the same number of elements per
partition (their free shapes may differ). `dma_copy` can move data between partitions.
""", """
a: f32[128, 64] @ sbuf = 0
b: f32[64, 128] @ sbuf
tensor_copy(b, a)
"""),
    entry("APK312", "memset of a buffer it cannot write", """
`memset` is an engine instruction: it writes SBUF or PSUM on NKI, and UB, L1, L0A, L0B or L0C on
Ascend. Device memory (HBM, GM) is filled by memsetting an on-chip tile and copying it out.
""", """
a: f32[128, 64] @ hbm
memset(a, 0.0)
"""),
    entry("APK313", "iota pattern does not cover the partition", """
`iota(dst, pattern, offset, channel_multiplier)` writes `offset + p * channel_multiplier +
sum(i_k * step_k)` for each `[step_k, count_k]` of the pattern; the counts must multiply to the
number of elements in each partition of `dst`.
""", """
t: i32[128, 64] @ sbuf
iota(t, [[1, 32]], 0, 64)
"""),
    entry("APK314", "matmul size beyond the tensor engine", """
`nc_matmul` contracts over partitions: K <= 128, the stationary free size M <= 128 and the
moving free size N <= 512 on trn1/trn2 (N <= 4096 on trn3). Larger products are tiled, with
`accumulate=True` summing K tiles into one PSUM result.
""", """
a: bf16[128, 128] @ sbuf = 0
b: bf16[128, 1024] @ sbuf = 0
c: f32[128, 1024] @ psum
nc_matmul(c, a, b)
"""),
    entry("APK315", "matmul result must be float32 in PSUM", """
The tensor engine accumulates in float32 and writes PSUM: a float32 dst, or bfloat16 on trn3.
Declare the result `f32[M, N] @ psum` and copy it out (tensor_copy to SBUF converts the dtype).
""", """
a: f32[128, 128] @ sbuf = 0
b: f32[128, 512] @ sbuf = 0
c: f32[128, 512] @ sbuf
nc_matmul(c, a, b)
"""),
    entry("APK316", "matmul result crosses a PSUM bank", """
PSUM has 8 banks of 2 KiB per partition (512 float32). On trn1 and trn2 a matmul result must lie
within one bank of each partition; a result that starts mid-bank or is wider than 512 float32
would cross into the next.
""", """
a: f32[128, 128] @ sbuf = 0
b: f32[128, 512] @ sbuf = 0
c: f32[128, 1024] @ psum
nc_matmul(c[:, 256:768], a, b)
"""),
    entry("APK317", "float32 matmul input with a non-float32 partner", """
The tensor engine multiplies float32/tfloat32 by float32/tfloat32, or narrower floats (bfloat16,
float16, float8) by each other; a float32 or tfloat32 input needs a float32 or tfloat32 partner. Cast one side (tensor_copy into a tile of
the other dtype).
""", """
a: f32[128, 128] @ sbuf = 0
b: bf16[128, 512] @ sbuf = 0
c: f32[128, 512] @ psum
nc_matmul(c, a, b)
"""),
    entry("APK318", "matmul shapes do not fit", """
`nc_matmul(dst, stationary, moving)` computes `dst = stationary.T @ moving` with the contraction
on partitions: stationary is (K, M), moving (K, N) and dst (M, N) (free dims are flattened).
""", """
a: f32[128, 64] @ sbuf = 0
b: f32[64, 512] @ sbuf = 0
c: f32[64, 512] @ psum
nc_matmul(c, a, b)
"""),
    entry("APK320", "lower cannot cut an instruction into access-pattern pieces", """
When an operand of an instruction needs several access patterns (a slice across the blocks of a
nested dimension, an unaligned fractal tile), `apdsl lower` cuts the whole instruction into
pieces in which every operand is one access pattern. An operand whose rows come from a runtime
index tensor (`vector_select`, `.ap(vector_offset=)`, `indirect`) or whose strides or counts are
registers cannot be cut that way, so lowering it is refused rather than printed wrong. Running
the program is not affected.
""", """
# python: lowering a gather into a destination of several pieces
from apdsl.runtime.core import trace
A = apdsl.from_numpy(np.zeros((16, 6), np.float32))
idx = apdsl.ndarray((8, 1), "int32", "sbuf")
apdsl.iota(idx, [[1, 1]], 0, 2)
Y = apdsl.ndarray((4, 6, 5), "float32", "hbm")
dst = Y.rearrange("b c h -> (b h) c").slice(0, 3, 11)
with trace.tracing():
    apdsl.dma_copy(dst, A.vector_select(0, idx))
"""),
    entry("APK319", "register_load from a tensor that is not one integer", """
`register_load(reg, t)` copies one integer from a [1] or [1, 1] tensor of an integer dtype of at
most 32 bits (in SBUF or HBM) into a virtual register.
""", """
t: f32[1, 1] @ sbuf = 3
r = register_alloc()
register_load(r, t)
"""),
    entry("APK330", "nc_matmul cannot infer accumulate", """
With `accumulate=None` (the default, as in the NKI docs) a matmul overwrites dst when every
element is fresh (newly allocated, or last touched by an instruction other than a matmul) and
accumulates when every element was last written by an `nc_matmul`. A dst that is partly each has
no defined meaning: pass `accumulate=False` or `accumulate=True`, or use the earlier matmuls' dst.
""", """
a: f32[128, 128] @ sbuf = 1
b: f32[128, 512] @ sbuf = 1
c: f32[128, 512] @ psum
nc_matmul(c[:, 0:256], a, b[:, 0:256])
nc_matmul(c, a, b)
"""),
    entry("APK331", "nc_matmul accumulates onto a result no matmul started", """
`accumulate=True` adds to what an earlier `nc_matmul` left in PSUM. On an element no matmul has
written (new, memset, tensor_copy) the NKI docs call it undefined: start the group with
`accumulate=False`, or leave `accumulate=None` so the first matmul overwrites.
""", """
a: f32[128, 128] @ sbuf = 1
b: f32[128, 512] @ sbuf = 1
c: f32[128, 512] @ psum
memset(c, 0)
nc_matmul(c, a, b, accumulate=True)
"""),
    entry("APK332", "nc_matmul accumulates onto a value another instruction wrote (trn1/trn2)", """
On NeuronCore-v2 and -v3 (trn1, trn2) a matmul accumulating into PSUM that a non-matmul
instruction (memset, tensor_copy, ...) wrote after the last matmul is undefined on hardware.
Start with `accumulate=False`, or add the value in SBUF after the matmuls.
""", """
a: f32[128, 128] @ sbuf = 1
b: f32[128, 512] @ sbuf = 1
c: f32[128, 512] @ psum
nc_matmul(c, a, b)
memset(c[:, 0:8], 0)
nc_matmul(c, a, b, accumulate=True)
"""),
    entry("APK333", "nc_matmul input dtype the tensor engine cannot read", """
The tensor engine reads float8_e4m3, float8_e5m2, bfloat16, float16, tfloat32 and float32
(float8_e4m3fn too on trn3); it has no integer inputs. In `perf_mode="double_row"` both inputs
are float8. Cast with `tensor_copy` into a tile of a supported dtype.
""", """
a: int8[128, 128] @ sbuf = 1
b: int8[128, 512] @ sbuf = 1
c: f32[128, 512] @ psum
nc_matmul(c, a, b)
"""),
    entry("APK334", "nc_matmul mixes float8_e4m3 and float8_e4m3fn", """
Legacy float8_e4m3 and OCP float8_e4m3fn cannot meet in one matmul (NKI docs). Convert one side.
""", """
set_target("trn3")
a: float8_e4m3[128, 128] @ sbuf = 1
b: float8_e4m3fn[128, 512] @ sbuf = 1
c: f32[128, 512] @ psum
nc_matmul(c, a, b)
"""),
    entry("APK336", "nc_matmul transpose mode misused", """
`is_transpose=True` (trn2 and later) moves stationary's bits transposed: dst, stationary and
moving share one dtype, moving is an identity (a 0/1 matrix with at most one 1 per column), and a
transpose never accumulates. On trn1 the flag only labels the matmul for the profiler.
""", """
a: bf16[128, 128] @ sbuf = 1
b: bf16[128, 128] @ sbuf = 1
c: f32[128, 128] @ psum
nc_matmul(c, a, b, is_transpose=True)
"""),
    entry("APK337", "nc_matmul perf_mode not valid here", """
`perf_mode="double_row"` (FP8 double performance mode) needs trn2 or later, float8 inputs, no
column tiling, and operands (P, 2, ...): the contraction is split between the partitions and a
first free dim of 2. `perf_mode` is "none" or "double_row"; "double_row_gen3", the name the
SDK's own test gives it on NeuronCore-v3 (nc_version gen3, trn2), is double_row on trn2 only.
""", """
a: float8_e4m3[128, 128] @ sbuf = 1
b: float8_e4m3[128, 512] @ sbuf = 1
c: f32[128, 512] @ psum
nc_matmul(c, a, b, perf_mode="double_row")
"""),
    entry("APK338", "nc_matmul tile_position/tile_size not a tile of the array", """
Tiling mode uses a row and column tile of the 128 x 128 systolic array: `tile_size=(rows,
columns)` of 64 or 128 on trn1 (32 too from trn2), `tile_position=(row, column)` a multiple of
the tile size, both given or neither; the stationary tile must fit the chosen size.
""", """
a: f32[64, 64] @ sbuf = 1
b: f32[64, 512] @ sbuf = 1
c: f32[64, 512] @ psum
nc_matmul(c, a, b, tile_position=(32, 0), tile_size=(64, 128))
"""),
    entry("APK339", "iota outside SBUF", """
`iota` runs on the GpSimd engine, which writes SBUF only (it cannot access PSUM). Generate the
values in an SBUF tile and `tensor_copy` them where they are needed.
""", """
t: i32[128, 64] @ psum
iota(t, [[1, 64]], 0, 0)
"""),
    entry("APK340", "iota pattern with more than 4 entries", """
An iota pattern describes up to 4 dimensions of [step, count]. Merge entries whose steps chain,
or generate the tile in parts.
""", """
t: i32[128, 32] @ sbuf
iota(t, [[16, 2], [8, 2], [4, 2], [2, 2], [1, 2]], 0, 0)
"""),
    entry("APK341", "vector_offset on a tensor not in HBM", """
`.ap(vector_offset=)` gives each partition its own row index; the NKI docs allow it only on an
HBM tensor (the DMA gathers the rows), as `vector_select`. On chip use `indirect()` (trn3) or a
`scalar_offset`.
""", """
t: f32[4, 8] @ sbuf = 1
idx: i32[4, 1] @ sbuf = 0
v = t.ap(pattern=[[8, 4], [1, 8]], vector_offset=idx, indirect_dim=0)
"""),
    entry("APK342", "dma_copy to or from PSUM", """
NKI DMA moves data between SBUF and HBM; PSUM is read and written by the compute engines. Copy
a PSUM result into SBUF with `tensor_copy` and `dma_copy` it from there.
""", """
p: f32[128, 512] @ psum = 0
o: f32[128, 512] @ hbm
dma_copy(dst=o, src=p)
"""),
    entry("APK343", "operand starts on a partition the engines cannot start at (trn1)", """
The Trainium/Inferentia2 architecture guide: an SBUF/PSUM operand of more than 64 partitions
starts at partition 0, of 33..64 partitions at 0 or 64, of at most 32 at 0, 32, 64 or 96. apdsl
checks it for compute instructions on trn1 (the trn2 and trn3 guides state no such rule). Move
the data with `dma_copy` first, as the NKI library's `cross_partition_copy` does.
""", """
set_target("trn1")
t: f32[128, 64] @ sbuf = 0
u: f32[128, 64] @ sbuf
tensor_copy(u[0:16], t[8:24])
"""),
    entry("APK344", "register_load from a buffer it cannot read", """
`register_load(reg, t)` reads a scalar from SBUF or HBM. Copy a PSUM value into SBUF first.
""", """
t: i32[1, 1] @ psum = 3
r = register_alloc()
register_load(r, t)
"""),
    entry("APK345", "Tensor Indirection index on the wrong partitions", """
The NKI docstrings (trn3): the index of every `indirect()` view starts on a quadrant boundary (a
multiple of 32); an indirect source starts on the same partition as its index; an indirect dst's
index starts on the same partition as the source (tensor_copy) or stationary (nc_matmul).
""", """
set_target("trn3")
t: f32[128, 40] @ sbuf = 0
idx: i32[128, 2] @ sbuf = 0
out: f32[128, 32] @ sbuf
tensor_copy(out[16:32], t[16:32].indirect(idx[16:32], num_elem=32))
"""),
    entry("APK346", "nc_matmul operand cannot be indirect here", """
An `indirect()` nc_matmul operand must be a 16- or 8-bit Tensor Engine float (float16, bfloat16,
float8_e4m3, float8_e5m2, float8_e4m3fn); indirection cannot be combined with tiling
(`tile_position` other than (0, 0)), and in transpose mode moving is never indirect.
""", """
set_target("trn3")
a: f32[64, 16] @ sbuf = 1
b: f32[64, 16] @ sbuf = 1
idx: i32[64, 2] @ sbuf = 0
c: f32[16, 32] @ psum
nc_matmul(c, a, b.indirect(idx, 32))
"""),
    entry("APK347", "NKI hint keyword not valid here", """
The NKI hint keywords take their enums' names: `engine=nisa.engine.vector`,
`dge_mode=nisa.dge_mode.hwdge`, `oob_mode=nisa.oob_mode.skip` (or the names as strings).
A hardware-DGE copy (`dge_mode=hwdge`) moves equal dtypes; DMA `priority` is 0-3, trn3 only,
and needs a DGE mode.
""", """
t: f32[4, 8] @ sbuf = 1
h: bf16[4, 8] @ hbm
dma_copy(dst=h, src=t, dge_mode=nisa.dge_mode.hwdge)
"""),
    entry("APK348", "engine cannot run the instruction", """
The engine a hint names must be able to run the instruction (NKI isa reference): the GpSimd
engine cannot access PSUM; on trn1 `tensor_copy` does not run on the Scalar engine; memset runs
on Vector or GpSimd; a DMA `engine` only picks the hardware-DGE trigger (sync or scalar, with
`dge_mode=hwdge`), and hardware DGE needs trn2 or later.
""", """
p: f32[4, 8] @ psum
memset(p, 0.0, engine=nisa.engine.gpsimd)
"""),
]
