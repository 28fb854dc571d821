"""Views and layouts (APK2xx) and the name errors of the tensor model (APK104-APK112)."""

from . import entry

ENTRIES = [
    entry("APK104", "unknown dtype", """
A dtype name is not one apdsl knows. Names are NumPy / ml_dtypes names (float32, bfloat16,
float8_e4m3, int4, ...) or the short aliases f32, f16, bf16, i32. `nl.` prefixes are accepted.
""", """
t: f33[128, 64] @ sbuf
"""),
    entry("APK105", "unknown buffer", """
A buffer name is not one apdsl knows. NKI buffers: sbuf, psum, hbm, private_hbm, shared_hbm;
Ascend buffers: gm, l1, l0a, l0b, l0c, ub.
""", """
t: f32[128, 64] @ sbuff
"""),
    entry("APK106", "unknown target", """
`--target` (or `set_target`) names a target apdsl does not model. Targets: trn1, trn2, trn3,
ascend-a2.
""", """
# apdsl run kernel.apk --target trn9
t: f32[128, 64] @ sbuf
set_target("trn9")
"""),
    entry("APK111", "wrong argument type", """
A view method or instruction got an argument of the wrong type: a dim that is not an int, a
shape that is not a tuple of ints, an index that is neither an int nor an index tensor.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(1, 0.5, 8)
"""),
    entry("APK112", "unsupported NumPy dtype", """
`from_numpy` or `-i NAME=FILE.npy` got an array whose dtype has no apdsl counterpart (float64,
complex, object). Pass `dtype=` to convert it, or save the array as float32.
""", """
# python
import numpy as np
import apdsl
apdsl.from_numpy(np.zeros(4, dtype=np.float64))
"""),
    entry("APK201", "dimension out of range", """
A dim argument names a dimension the view does not have. Dims count from 0; negative dims count
from the end.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(2, 0, 8)
"""),
    entry("APK202", "partition dimension rule", """
On SBUF and PSUM, dim 0 is the partition dimension: the hardware reads the same free pattern in
every partition, so a view cannot step over partitions, move dim 0, merge it with free dims,
broadcast or squeeze it. The same holds for the indirect partition dim made by vector_select.
""", """
t: f32[128, 4, 8] @ sbuf
u = t.permute((1, 0, 2))
"""),
    entry("APK203", "slice bounds", """
`slice(dim, start, end)` needs 0 <= start < end <= shape[dim]. apdsl is strict where NumPy
clips: an out-of-range bound is almost always a tiling bug.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(1, 8, 80)
"""),
    entry("APK204", "slice step", """
The step of a slice must be a positive int: access patterns cannot walk backwards.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(1, 0, 64, 0)
"""),
    entry("APK205", "broadcast of a dimension that is not 1", """
`broadcast(dim, size)` repeats a size-1 dimension with stride 0; the dimension must have size 1.
Use expand_dim to insert one first.
""", """
t: f32[128, 2, 64] @ sbuf
u = t.broadcast(1, 8)
"""),
    entry("APK206", "squeeze of a dimension that is not 1", """
`squeeze_dim(dim)` removes a size-1 dimension only.
""", """
t: f32[128, 2, 64] @ sbuf
u = t.squeeze_dim(1)
"""),
    entry("APK207", "not a permutation", """
`permute(dims)` needs every dimension exactly once.
""", """
t: f32[128, 4, 8] @ sbuf
u = t.permute((0, 1, 1))
"""),
    entry("APK208", "reshape changes the element count", """
The new shape must have as many elements as the view.
""", """
t: f32[128, 4, 6] @ sbuf
u = t.reshape((128, 25))
"""),
    entry("APK209", "reshape needs a copy", """
A reshape succeeds exactly when NumPy could do it without copying: the dimensions it merges must
be contiguous with each other. After a permute or a stepped slice that is no longer true.
`rearrange` can still merge such dimensions: the merged dimension becomes a nested mode and the
lowered access pattern has one entry per mode.
""", """
t: f32[128, 4, 8] @ sbuf
u = t.permute((0, 2, 1)).reshape((128, 32))
"""),
    entry("APK210", "flatten_dims over non-contiguous dimensions", """
`flatten_dims(a, b)` merges dims a..b into one stride, which needs them contiguous in memory.
`rearrange` with a group merges any dimensions as a nested view instead.
""", """
t: f32[128, 4, 8] @ sbuf
u = t.permute((0, 2, 1)).flatten_dims(1, 2)
"""),
    entry("APK211", "view(dtype) needs a contiguous last dimension", """
Reinterpreting to a dtype of another size rescales the last dimension, which must have stride 1.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(1, 0, 64, 2).view(bf16)
"""),
    entry("APK212", "reinterpretation is not whole", """
After reinterpreting, the last dimension's size, every stride and the offset must be whole
numbers of the new element size.
""", """
t: u8[128, 6] @ sbuf
u = t.view(f32)
"""),
    entry("APK213", "not supported on this kind of view", """
Some view primitives cannot follow a dynamic select or a register-valued `.ap`: the layout is
not known until the instruction runs.
""", """
A: f32[4, 128, 64] @ hbm
idx: i32[1, 1] @ sbuf = 0
u = A.select(0, idx).view(bf16)
"""),
    entry("APK214", "splitting or merging a dimension sliced across its blocks", """
A nested dimension that was sliced across its blocks no longer covers its modes exactly once.
It can still be split where its offsets allow and merged as the outer dimension of a group, but
when the result of a rearrange, reshape or flatten would be no layout (no function from a
coordinate to an offset with nested modes), this is the error. Merge or split before slicing, or
slice whole blocks.
""", """
t: f32[4, 6, 8] @ hbm
m = t.rearrange("a b c -> (b a) c").slice(0, 1, 6)
u = m.rearrange("x c -> (c x)")
"""),
    entry("APK231", "too many dimensions", """
A view has at most 64 dimensions, NumPy's limit (NumPy executes every instruction). A rearrange
that writes many `1` or `()` entries on the output side, a reshape or an `.ap` pattern with more
entries would make one with more. Inside a group, `1` and `()` add no dimension.
""", """
t: f32[4] @ hbm
u = t.reshape([1] * 64 + [4])
"""),
    entry("APK215", "index out of range", """
A static index must lie in [0, shape[dim]) (negative indices in the sugar count from the end).
""", """
t: f32[128, 8, 64] @ sbuf
u = t.select(1, 8)
"""),
    entry("APK216", "second dynamic select", """
A view carries at most one runtime index (select with a tensor/register, vector_select, or
`.ap(scalar_offset=/vector_offset=)`). Check `is_indirect()` first.
""", """
A: f32[4, 8, 64] @ hbm
i: i32[1, 1] @ sbuf = 0
u = A.select(0, i).select(0, i)
"""),
    entry("APK217", "vector_select / indirect preconditions", """
`vector_select` needs dim 0 of an HBM tensor; `indirect` needs a 2-d SBUF/PSUM view.
""", """
t: f32[128, 64] @ sbuf
o: i32[128, 1] @ sbuf = 0
u = t.vector_select(0, o)
"""),
    entry("APK218", "slicing an indirect dimension", """
The dimension driven by a runtime index (dim 0 after vector_select) cannot be sliced or selected
further: slice before the dynamic select.
""", """
A: f32[128, 64] @ hbm
o: i32[32, 1] @ sbuf = 0
u = A.vector_select(0, o).slice(0, 0, 8)
"""),
    entry("APK219", "malformed access pattern", """
`.ap(pattern)` takes one list of [stride, count] pairs, outermost first; counts are >= 1 and
strides/counts are ints or registers.
""", """
t: f32[16, 32] @ sbuf
u = t.ap([[32, 16], [1, 0]])
"""),
    entry("APK221", "offset is not an int", """
`.ap(pattern, offset)`: the offset counts elements from the start of the storage. A list here
usually means the pattern pairs were passed as separate arguments, as in
`src.ap([32, 16], [1, 32])`; write `src.ap([[32, 16], [1, 32]])`.
""", """
t: f32[16, 32] @ sbuf
u = t.ap([[32, 16], [1, 32]], 1.5)
"""),
    entry("APK222", "dynamic .ap arguments", """
At most one of scalar_offset and vector_offset; vector_offset supports indirect_dim=0 only;
indirect_dim is a dim of the tensor `.ap` is called on, whose step the NKI docs define
(a whole tensor, a reshape or a slice of one; not a stepped slice or a permuted view);
registers in the pattern exclude dynamic offsets.
""", """
A: f32[128, 512] @ hbm
o: i32[64, 1] @ sbuf = 0
u = A.ap([[512, 64], [1, 512]], 0, vector_offset=o, indirect_dim=1)
"""),
    entry("APK223", "view is several access patterns", """
A slice or tile that is not aligned to the blocks of a nested dimension (a fractal format, a
rearranged merge) is not one access pattern; `get_pattern()` refuses it and `apdsl lower` shows
every piece.
""", """
t: f32[2, 3, 4] @ hbm
m = t.rearrange("a b c -> (c a) b").slice(0, 1, 6)
p = m.get_pattern()
"""),
    entry("APK225", "bad sizes", """
Sizes must be positive ints, at most one -1 (inferred), and multiply to the dimension's size.
""", """
t: f32[128, 24] @ sbuf
u = t.reshape_dim(1, (5, -1))
"""),
    entry("APK227", "bad index tensor", """
Runtime indices live in SBUF as integers: a (1, 1) tensor for select/scalar_offset, a
(partitions, 1) tensor for vector_select, a (P, K) tensor for indirect.
""", """
A: f32[4, 128] @ hbm
i: f32[1, 1] @ sbuf = 0
u = A.select(0, i)
"""),
    entry("APK228", "select on the partition dimension", """
On SBUF/PSUM, `select(0, i)` would remove the partition dimension; keep it with
`slice(0, i, i + 1)`. A runtime index cannot pick partitions at all.
""", """
t: f32[128, 64] @ sbuf
u = t.select(0, 3)
"""),
    entry("APK229", "reshape of the partition dimension", """
On SBUF/PSUM (and after vector_select) reshape must keep shape[0] unchanged.
""", """
t: f32[128, 64] @ sbuf
u = t.reshape((64, 128))
"""),
    entry("APK230", "too many indices", """
Indexing sugar takes at most one index per dimension and at most one `...`.
""", """
t: f32[128, 64] @ sbuf
u = t[0, 1, 2]
"""),
]
