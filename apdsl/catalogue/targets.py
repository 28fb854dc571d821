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
declared inside a block are freed when it ends.
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
On Ascend the data movers connect particular buffers: GM->L1, GM->UB, L1->L0A, L1->L0B, L0C->GM,
L0C->L1, UB->GM and UB->UB. Any other pair needs an intermediate buffer (GM->L0A goes through L1)
or is not a copy at all (L0A and L0B are only read by the cube unit).
""", """
a: f16[16, 16] @ gm = 0
b: f16[16, 16] @ l0a
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
The tensor engine accumulates in float32 and writes PSUM. Declare the result `f32[M, N] @ psum`
and copy it out (tensor_copy to SBUF converts the dtype).
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
The tensor engine multiplies float32 by float32, or narrower floats (bfloat16, float16, float8)
by each other; a float32 input needs a float32 partner. Cast one side (tensor_copy into a tile of
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
from apdsl.runtime import trace
A = apdsl.from_numpy(np.zeros((16, 6), np.float32))
idx = apdsl.ndarray((8, 1), "int32", "sbuf")
apdsl.iota(idx, [[1, 1]], 0, 2)
Y = apdsl.ndarray((4, 6, 5), "float32", "hbm")
dst = Y.rearrange("b c h -> (b h) c").slice(0, 3, 11)
with trace.tracing():
    apdsl.dma_copy(dst, A.vector_select(0, idx))
"""),
    entry("APK319", "register_load from a tensor that is not one integer", """
`register_load(reg, t)` copies one integer from a (1, 1) tensor of an integer dtype into a
virtual register.
""", """
t: f32[1, 1] @ sbuf = 3
r = register_alloc()
register_load(r, t)
"""),
]
