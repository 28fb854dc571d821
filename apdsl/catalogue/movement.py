"""The movement instructions of SPEC section 11: transposes, shuffles, gathers and registers
(APK390-APK399, APK485-APK499)."""

from . import entry

ENTRIES = [
    entry("APK495", "DMA gather or scatter without software DGE", """
An access indexed per row (`.ap(vector_offset=...)`, `vector_select`) is a gather or scatter,
which only software DGE (descriptors generated on GpSimd) performs: the NKI DGE guide lists
`dge_mode` unknown (then the compiler picks swdge) or swdge for it, for `dma_copy` and
`dma_transpose` alike; hardware DGE and `none` have no indirect support.
""", """
A: f32[64, 32] @ hbm = 1.0
idx: i32[16, 1] @ sbuf = 0
t: f32[16, 32] @ sbuf
dma_copy(t, A.vector_select(0, idx), dge_mode=nisa.dge_mode.hwdge)
"""),
    entry("APK390", "operand in a buffer this movement instruction cannot use", """
Each movement instruction reads and writes particular on-chip buffers (NKI isa reference):
`nc_transpose` on the Tensor Engine reads SBUF and writes PSUM, on the Vector Engine either;
`dma_transpose` writes SBUF (from HBM or SBUF); `local_gather` runs on GpSimd, which cannot
access PSUM, so its three tiles are in SBUF; `nc_stream_shuffle` takes SBUF or PSUM. (An
operand in HBM where only on-chip buffers are allowed is APK309.)
""", """
a: f32[32, 32] @ psum = 1.0
b: f32[32, 32] @ psum
nc_transpose(b, a, engine=nisa.engine.tensor)
"""),
    entry("APK391", "nc_transpose tile too large for its engine", """
The Tensor Engine transposes a tile of up to [128, 128] (partitions, free elements) from SBUF
into PSUM; the Vector Engine one of up to [32, 32], in SBUF or PSUM. Several free axes count as
their product. Without `engine=` the NKI docs say the compiler picks by shape: apdsl takes the
Vector Engine when the tile fits it and the Tensor Engine otherwise (which needs SBUF -> PSUM).
On trn1 the Tensor Engine transpose is a float32 matrix multiply with an identity, so NaN and
Inf spread along their row as the NKI docs warn (apdsl computes it that way) and 32-bit integer
tiles are refused; from trn2 on it moves bits exactly. Left unchecked because the docs are
silent: a PSUM-bank rule for the Tensor Engine's dst (nc_matmul has one, nc_transpose states
none), start partitions beyond trn1's rule, and the trn2 guide's note that an fp8 transpose
writes 16-bit PSUM elements (the isa reference wants dst of data's dtype; apdsl writes that).
""", """
a: f32[64, 64] @ sbuf = 1.0
b: f32[64, 64] @ sbuf
nc_transpose(b, a)
"""),
    entry("APK392", "transpose destination of the wrong shape", """
`nc_transpose(dst, data)` writes `data.reshape(P, -1).T`: dst has as many partitions as data has
free elements, and data's partition count as its free size. `dma_transpose(dst, src, axes)`
needs `dst.shape == np.transpose(src, axes).shape`, rank included (NKI 0.4.0 on).
""", """
a: f32[32, 16] @ sbuf = 1.0
b: f32[32, 16] @ psum
nc_transpose(b, a)
"""),
    entry("APK393", "movement instruction between different dtypes", """
`nc_transpose`, `dma_transpose`, `nc_stream_shuffle` and `local_gather` move elements as they
are: dst must have the source's dtype (NKI isa reference). Convert before or after with
`tensor_copy` or `dma_copy`.
""", """
a: f32[16, 32] @ sbuf = 1.0
b: bf16[32, 16] @ psum
nc_transpose(b, a)
"""),
    entry("APK394", "dma_transpose before trn2", """
DMA transposes are new in NeuronCore-v3 (Trainium2 architecture guide): `dma_transpose` needs
trn2 or trn3. On trn1 transpose on chip with `nc_transpose`.
""", """
set_target("trn1")
a: f16[16, 32] @ hbm = 1.0
t: f16[32, 16] @ sbuf
dma_transpose(t, a)
"""),
    entry("APK395", "dma_transpose permutation not supported", """
`dma_transpose` supports the permutations `axes=(1, 0)` for 2-d, `(2, 1, 0)` for 3-d and
`(3, 1, 2, 0)` for 4-d tiles; without `axes` it uses the one for the source's rank (NKI isa
reference). Other ranks and permutations are not DMA transposes. Without `dge_mode=hwdge` no
shape or dtype rule applies to a direct transpose (the Trainium2 guide: 2- and 4-byte types
transpose bit-accurately), and the docs give no partition-start rule for an SBUF source, so
none is checked.
""", """
a: f16[16, 32] @ hbm = 1.0
t: f16[16, 32] @ sbuf
dma_transpose(t, a, axes=(0, 1))
"""),
    entry("APK396", "hardware-DGE transpose outside its rules", """
With `dge_mode=hwdge` a `dma_transpose` is a hardware-DGE transpose, which the NKI isa reference
restricts: a 2-d source has `src.shape[0] == 16`, a 3-d or 4-d one `src.shape[0]` in
{1, 2, 4, 8, 16} and `(src.shape[0] * src.shape[-2]) % 16 == 0`; `src.shape[-1] <= 128`; a
2-byte dtype. Without `dge_mode` (the compiler picks) these rules do not apply (SPEC 11). The
NKI DGE guide gives `src.shape[-1] % 128 == 0` instead of `<= 128`; the two sources disagree
and apdsl checks the isa reference's rule.
""", """
a: f32[16, 64] @ hbm = 1.0
t: f32[64, 16] @ sbuf
dma_transpose(t, a, dge_mode=nisa.dge_mode.hwdge)
"""),
    entry("APK397", "dma_transpose hint not valid for this transpose", """
A `dma_transpose` takes the `dge_mode`s the NKI DGE guide's table gives for its access
pattern: a static one unknown (the default), hwdge or none (the isa reference names only
unknown and hwdge; the guide, newer, adds none, and nki-library's kernels pass it); one with
`.ap(scalar_offset=...)` any mode; an indirect one (a source `.ap(vector_offset=...)`, a
gather-transpose) unknown or swdge (other modes: APK495). `oob_mode=skip` is only valid with
an indirect source.
""", """
a: f16[16, 32] @ hbm = 1.0
t: f16[32, 16] @ sbuf
dma_transpose(t, a, dge_mode=nisa.dge_mode.swdge)
"""),
    entry("APK398", "indirect dma_transpose outside its rules", """
An indirect transpose (`src` an `.ap(..., vector_offset=indices, indirect_dim=0)` of an HBM
tensor: dst = the gathered rows, transposed) runs on software DGE, which the NKI isa reference
restricts: src on HBM, a 2-byte dtype, `src.shape[-1] <= 128`, `src.shape[0] % 16 == 0`, a 4-d
src with `shape[1]` or `shape[2] == 1`; indices 2-d uint32 in SBUF with `shape[0]` in [16, 128]
and a multiple of 16, `shape[0] == 128` when `shape[1] > 1`, and at least `src.shape[0]`
indices. The rows gathered are `indices.T.flatten()[:src.shape[0]]` (column first); an index
out of range is APK402/APK403 unless `oob_mode=skip`, which leaves its row unmoved.
""", """
A: f32[64, 32] @ hbm = 1.0
idx: u32[32, 1] @ sbuf = 0
t: f32[32, 32] @ sbuf
dma_transpose(t, A.ap([[32, 32], [1, 32]], vector_offset=idx, indirect_dim=0))
"""),
    entry("APK399", "nc_stream_shuffle mask not valid", """
`shuffle_mask` is a list of 32 ints: entry i names the source partition (0-31, within the
same 32-partition quadrant) that destination partition i of every quadrant copies, or 255 to
leave that destination partition unmodified. Every partition a mask entry reads must exist in
src (a one-partition src broadcasts with an all-zero mask to one quadrant only). The docstring
restricts no dtype (dst has src's) and gives no size limit of its own; the architecture
guide's general Vector Engine free-size limit (64K elements in SBUF, 4K in PSUM) is not
checked.
""", """
a: f32[32, 8] @ sbuf = 1.0
b: f32[32, 8] @ sbuf
nc_stream_shuffle(b, a, [0] * 31)
"""),
    entry("APK485", "nc_stream_shuffle start partition not allowed", """
The NKI docs constrain where src and dst of `nc_stream_shuffle` start, by the active
partitions `ceil(max(src_P, dst_P) / 32) * 32`: 96 or 128 start at 0; 64 at 0 or 64; 32 at 0,
32, 64 or 96. src and dst may start in different quadrants. The rule is stated for this
instruction on every target.
""", """
a: f32[64, 8] @ sbuf = 1.0
b: f32[64, 8] @ sbuf
nc_stream_shuffle(b[16:48], a[0:32], list(range(32)))
"""),
    entry("APK486", "nc_stream_shuffle operands differ in elements per partition", """
`nc_stream_shuffle` moves whole partitions: dst needs as many elements per partition as src.
""", """
a: f32[32, 8] @ sbuf = 1.0
b: f32[32, 4] @ sbuf
nc_stream_shuffle(b, a, list(range(32)))
"""),
    entry("APK487", "local_gather partitions not on GpSimd cores", """
`local_gather` runs on the 8 GpSimd cores, core k connected to partitions 16k..16k+15; each
core gathers from its own partitions with indices from those partitions. So `src_buffer` and
`index` have the same partitions, a multiple of 16 (NKI docs), and apdsl also requires dst on
them and all three starting at the same multiple of 16 (a core's partitions cannot be split;
the docs show no other placement).
""", """
s: f32[8, 64] @ sbuf = 1.0
i: u16[8, 4] @ sbuf = 0
o: f32[8, 64] @ sbuf
local_gather(o, s, i)
"""),
    entry("APK489", "local_gather count out of range", """
`num_elem_per_idx` (contiguous elements per index) is 1, 2, 4, 8, 16 or 32; a core gathers at
most 4096 indices; `num_valid_indices` is at most the indices a core's 16-partition slice of
`index` holds, `16 * index elements per partition` (also its default).
""", """
s: f32[16, 64] @ sbuf = 1.0
i: u16[16, 1] @ sbuf = 0
o: f32[16, 48] @ sbuf
local_gather(o, s, i, num_elem_per_idx=3)
"""),
    entry("APK490", "local_gather destination size", """
Each partition of dst receives `num_valid_indices * num_elem_per_idx` elements (the official
NumPy model's output is [P, num_valid_indices, num_elem_per_idx]).
""", """
s: f32[16, 64] @ sbuf = 1.0
i: u16[16, 1] @ sbuf = 0
o: f32[16, 8] @ sbuf
local_gather(o, s, i, num_elem_per_idx=2)
"""),
    entry("APK491", "local_gather index out of range", """
Hardware leaves an out-of-range `local_gather` undefined, so apdsl stops instead: each index
used is an element offset into its own partition of `src_buffer` (as the official NumPy model
feeds it: `chunk * num_elem_per_idx`) and must be a multiple of `num_elem_per_idx` whose chunk
ends inside the partition. The docstring calls the indices partition offsets; its own test
gathers within each partition, which is what apdsl does.
""", """
s: f32[16, 8] @ sbuf = 1.0
i: u16[16, 1] @ sbuf = 100
o: f32[16, 16] @ sbuf
local_gather(o, s, i)
"""),
    entry("APK492", "register_store into a buffer it cannot write", """
`register_store(dst, reg)` writes the register into a one-element tensor in SBUF or HBM (NKI
isa reference). Store into SBUF and `tensor_copy` the value on if PSUM needs it.
""", """
t: i32[1, 1] @ psum
r = register_alloc(1)
register_store(t, r)
"""),
    entry("APK493", "register_store into a tensor that is not one integer", """
A register holds a 32-bit integer; `register_store` writes it into a [1] or [1, 1] tensor of an
integer dtype of at most 32 bits (a narrower one saturates, by the cast rule of SPEC 4).
""", """
t: f32[1, 1] @ sbuf
r = register_alloc(1)
register_store(t, r)
"""),
    entry("APK494", "value does not fit a register", """
The engine sequencers' registers are 32-bit (NKI: 64 x 32-bit registers each, NeuronCore-v2
to v4): `register_move` takes an immediate from -2**31 to 2**32 - 1.
""", """
r = register_alloc()
register_move(r, 2 ** 40)
"""),
]
