"""Catalogue entries for Ascend data formats (APK500-APK519), the Ascend DMA and mmad rules
(APK520-APK529), TLA tiles (APK530-APK539) and the Ascend copy and memset rules of Load2D,
LoadData, Fixpipe, InitConstValue and Duplicate (APK540-APK549)."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK501", "unknown format",
          """
A format name is not one apdsl knows.  The formats are ND, NCHW, NHWC, HWCN, NDHWC, NCDHW,
ND_ALIGN, COLUMN_MAJOR, NZ, ZZ, ZN, NC1HWC0, FRACTAL_Z, NDC1HWC0 and FRACTAL_Z_3D, with the
aliases ROW_MAJOR (ND), FRACTAL_NZ and zN (NZ), FRACTAL_ZZ and zZ (ZZ), FRACTAL_ZN and nZ (ZN).
The help names the closest formats.
""",
          """
x: f16[20, 28] @ gm as NQ
"""),
    entry("APK502", "ambiguous format name",
          """
Names are matched case-insensitively only when that picks a single format.  The CATLASS tags
differ only in case from the canonical names: `zN` is NZ (FRACTAL_NZ) but `ZN` and `nZ` are ZN
(FRACTAL_ZN), so `zn` or `nz` could mean either.  Write the canonical name (NZ or ZN) or the tag
with its exact case.
""",
          """
x: f16[32, 32] @ l1 as nz
"""),
    entry("APK503", "formats do not share logical axes",
          """
`formats.convert` moves data between formats that describe the same logical tensor: the matrix
formats (ND, ND_ALIGN, COLUMN_MAJOR, NZ, ZZ, ZN, all (..., M, N)), the 4-D convolution formats
(NCHW, NHWC, HWCN, NC1HWC0, FRACTAL_Z) or the 5-D ones (NDHWC, NCDHW, NDC1HWC0, FRACTAL_Z_3D).
Across families the axes mean different things, so there is no conversion; ND in particular has
no named axes, so call 4-D data NCHW, NHWC or HWCN instead.
""",
          """
# python
import numpy as np
from apdsl.tensor import formats
formats.convert(np.zeros((2, 16, 4, 4), np.float16), "ND", "NC1HWC0")
"""),
    entry("APK504", "wrong rank for the format",
          """
Each format has fixed logical axes: the matrix formats need at least 2 dimensions (M and N, with
any leading batch dimensions), NCHW/NHWC/HWCN/NC1HWC0/FRACTAL_Z exactly 4 and
NDHWC/NCDHW/NDC1HWC0/FRACTAL_Z_3D exactly 5.  Give a missing axis as size 1.
""",
          """
# python
from apdsl.tensor import formats
formats.storage_shape("NC1HWC0", (16, 4, 4), "float16")
"""),
    entry("APK505", "invalid logical shape",
          """
A logical shape must be a sequence of non-negative integers.
""",
          """
# python
from apdsl.tensor import formats
formats.storage_shape("NZ", (20, -4), "float16")
"""),
    entry("APK506", "invalid c0",
          """
C0, the fractal side along the contiguous axis, is 32 bytes of the element type (int4 64, int8 32,
16-bit types 16, float32 8).  An explicit `c0=` overrides it (16 for L0C fractals or graph-level
float32) and must be a positive integer.
""",
          """
# python
import numpy as np
from apdsl.tensor import formats
formats.convert(np.zeros((32, 32), np.float32), "ND", "NZ", c0=0)
"""),
    entry("APK507", "array is not a storage of the source format",
          """
Converting without `shape=` reads the logical shape from the source array, which must then have
the format's storage axes: the right rank, fractal blocks of 16 and C0 where the format has them
(C0 from the dtype, or from `c0=`), and ND_ALIGN rows a multiple of C0.  A float32 NZ array made
with 16 x 16 fractals (L0C) needs `c0=16`.
""",
          """
# python
import numpy as np
from apdsl.tensor import formats
formats.convert(np.zeros((2, 2, 16, 16), np.float32), "NZ", "ND")
"""),
    entry("APK508", "shape does not fit the source array",
          """
`shape=` is the unpadded logical shape of the source (in the source format's logical axes, as
given to `storage_shape`).  Its storage shape must equal the array's shape; otherwise the array
was not made from that shape.  The message shows the storage shape that `shape=` implies.
""",
          """
# python
import numpy as np
from apdsl.tensor import formats
formats.convert(np.zeros((2, 2, 16, 16), np.float16), "NZ", "ND", shape=(40, 28))
"""),
    entry("APK509", "source storage does not record its logical shape",
          """
FRACTAL_Z and FRACTAL_Z_3D flatten C1, H and W (and D) into their first storage axis, so a
weight array in those formats cannot tell its H, W or D.  Pass `shape=`, the logical NCHW
(FRACTAL_Z) or NDHWC (FRACTAL_Z_3D) shape it was made from.
""",
          """
# python
import numpy as np
from apdsl.tensor import formats
formats.convert(np.zeros((8, 2, 16, 16), np.float16), "FRACTAL_Z", "NCHW")
"""),
    entry("APK510", "format not accepted in this buffer",
          """
Each Ascend buffer holds only the formats its hardware path reads: L0A takes ZZ (the Mmad A
operand), L0B ZN or FRACTAL_Z (B), L0C NZ (the result); NZ, ND_ALIGN, COLUMN_MAJOR, NC1HWC0 and
NDC1HWC0 live in GM, UB and L1.  The NKI buffers hold ND only.  Declare the tensor in one of the
listed buffers or move it there with `dma_copy`.
""",
          """
x: f16[32, 32] @ l0a as NZ
"""),
    # -- mmad and the Ascend DMA (apdsl.runtime.ascend.dma) ---------------------------------------
    entry("APK520", "mmad operand in the wrong buffer or format",
          """
The cube unit reads its operands in fixed places and formats: `a` (M, K) in L0A as ZZ, `b`
(K, N) in L0B as ZN, and it writes `dst` (M, N) in L0C as NZ.  Each must be a matrix (rank 2).
Move the data there with `dma_copy` (GM -> L1 -> L0A/L0B), typically into tiles made with
`make_tensor_like(l0a, tile, "ZZ")` and `make_tensor_like(l0b, tile, "ZN")`.
""",
          """
# python
import apdsl
a = apdsl.ndarray((16, 16), "float16", "l1", "NZ")
b = apdsl.ndarray((16, 16), "float16", "l0b", "ZN")
c = apdsl.ndarray((16, 16), "float32", "l0c", "NZ")
apdsl.mmad(c, a, b)
"""),
    entry("APK521", "mmad dtypes",
          """
`a` and `b` have the same dtype, and `dst` is its accumulator: float16, bfloat16 and float32
accumulate in float32, int8 in int32.  Other input types (int16, float8, ...) have no cube
path on ascend-a2.
""",
          """
# python
import apdsl
a = apdsl.ndarray((16, 16), "float16", "l0a", "ZZ")
b = apdsl.ndarray((16, 16), "float16", "l0b", "ZN")
c = apdsl.ndarray((16, 16), "float16", "l0c", "NZ")
apdsl.mmad(c, a, b)
"""),
    entry("APK522", "mmad shapes do not fit",
          """
`dst (M, N) = a (M, K) @ b (K, N)`, counted over the valid extents: a TLA tile's
`origin_shape`, or the whole shape of a plain tensor.  Tiles made with `make_tensor_like` from
one GM tiling (`tile_view(A, (m, k), ...)`, `tile_view(B, (k, n), ...)`, `tile_view(C, (m,
n), ...)`) agree by construction, tails included.
""",
          """
# python
import apdsl
a = apdsl.ndarray((32, 16), "float16", "l0a", "ZZ")
b = apdsl.ndarray((32, 16), "float16", "l0b", "ZN")
c = apdsl.ndarray((32, 16), "float32", "l0c", "NZ")
apdsl.mmad(c, a, b)
"""),
    entry("APK523", "L0 operand not on a fractal boundary",
          """
L0A, L0B and L0C hold fractals (16 x C0 elements, 512 bytes; 16 x 16 in L0C), and both the
loads into L0 and the cube unit move whole fractals.  A view of a fractal tensor there must
start where a fractal starts: tile L0 buffers in rows of 16 and columns of the fractal width.
""",
          """
# python
import numpy as np
import apdsl
a1 = apdsl.ndarray((32, 32), "float16", "l1", "NZ")
apdsl.memset(a1, 1.0)
a0 = apdsl.ndarray((32, 32), "float16", "l0a", "ZZ")
apdsl.dma_copy(a0[8:24, 0:16], a1[8:24, 0:16])
"""),
    entry("APK524", "on-chip operand not 32-byte aligned",
          """
Transfers to and from L1 and UB move 32-byte blocks, and AscendC buffer addresses are 32-byte
aligned; apdsl allocates storage aligned, so a view must start on a multiple of 32 bytes of
it.  For a fractal format that means starting on a column that is a multiple of C0 (16
float16 elements); for ND, on an element whose byte offset is a multiple of 32.
""",
          """
# python
import numpy as np
import apdsl
x = apdsl.from_numpy(np.ones((16, 32), np.float16), "gm")
l1 = apdsl.ndarray((16, 32), "float16", "l1", "NZ")
apdsl.dma_copy(l1[:, 8:24], x[:, 0:16])
"""),
    entry("APK525", "tile copy with different valid extents",
          """
When either side of `dma_copy` is a TLA tile, the copy moves its valid extent (`origin_shape`;
all of a plain tensor) coordinate by coordinate, so both valid extents must have the same
shape.  Make the destination with `make_tensor_like(buffer, src, format)`: it inherits the
source's valid extent, tails included.
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.ones((40, 40), np.float16), "gm")
tail = apdsl.tile_view(A, (1, 1), (32, 32))     # valid extent (8, 8)
l1 = apdsl.ndarray((32, 32), "float16", "l1", "NZ")
apdsl.dma_copy(l1, tail)
"""),
    entry("APK526", "fractal padding out of the view's reach",
          """
With `strict_padding` mmad reads K in whole fractals, beyond the valid extent into the
padding, as the hardware does.  A view that is one element wide in a dimension has lost its
stride there, so apdsl cannot tell where that padding lies.  Make the operand with
`make_tensor_like`, whose tile covers whole fractals, or declare it with its padded shape.
""",
          """
# python
import numpy as np
import apdsl
a = apdsl.ndarray((16, 32), "float16", "l0a", "ZZ")[:, 0:1]
b = apdsl.ndarray((32, 16), "float16", "l0b", "ZN")[0:1, :]
c = apdsl.ndarray((16, 16), "float32", "l0c", "NZ")
apdsl.memset(a, 1.0)
apdsl.memset(b, 1.0)
with apdsl.options(strict_padding=True):
    apdsl.mmad(c, a, b)
"""),
    # -- TLA tiles (apdsl.tensor.tla) ---------------------------------------------------------
    entry("APK530", "malformed make_layout",
          """
`make_layout(shape, stride, origin_shape=None)` takes one stride per dimension: an int size
with an int stride, or (CuTe-style nested modes, inner first) a tuple of sizes with a tuple of
strides of the same length, e.g. the zN layout of a 32 x 32 float16 matrix is
`make_layout(((16, 2), (16, 2)), ((16, 256), (1, 512)))`.  Sizes are at least 1.
""",
          """
# python
import apdsl
apdsl.make_layout((8, 16), (16,))
"""),
    entry("APK531", "origin_shape does not fit the layout",
          """
The valid extent has one entry per dimension, each between 0 and the layout's size there.
""",
          """
# python
import apdsl
apdsl.make_layout((8, 16), (16, 1), origin_shape=(8, 20))
"""),
    entry("APK532", "bad tile coordinate or shape",
          """
`get_tile(t, coord, shape)`, `tile_view(t, tile_coord, tile_shape)` and `make_tensor(t,
coord=...)` take one entry per dimension of the tensor; coordinates are >= 0 (in elements for
`get_tile` and `make_tensor`, in tiles for `tile_view`) and tile sizes >= 1.  A tile may reach
past its parent: its valid extent is clipped (`origin_shape`).
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.zeros((8, 16), np.float32), "gm")
apdsl.get_tile(A, (2, 4, 0), (4, 8))
"""),
    entry("APK533", "nested layouts tile in rank 2 only",
          """
As in CATLASS, a tensor with a nested (fractal) layout can be tiled only as a matrix: a batched
NZ tensor (B, M, N) must first lose its batch dimension (`t[b, :, :]`).  Plain (ND) layouts
tile in any rank.
""",
          """
# python
import apdsl
t = apdsl.ndarray((2, 32, 32), "float16", "l1", "NZ")
apdsl.get_tile(t, (0, 0, 0), (1, 16, 16))
"""),
    entry("APK534", "make_tensor_like of a tensor of rank > 2",
          """
`make_tensor_like` builds a tile for the data of a tile of rank 1 or 2 (CATLASS supports
likeTensor.rank <= 2).  Index batch dimensions away first.
""",
          """
# python
import apdsl
t = apdsl.ndarray((2, 32, 32), "float16", "gm")
apdsl.make_tensor_like("l1", t, "NZ")
"""),
    entry("APK535", "layout_base outside L1",
          """
`layout_base` fixes the full tile's layout, which CATLASS allows for L1 tiles only: an L0 tile's
layout is determined by its valid extent (rounded up to whole fractals), so customising it is
not a layout the cube unit expects.
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.zeros((40, 40), np.float16), "gm")
tail = apdsl.tile_view(A, (1, 1), (32, 32))
apdsl.make_tensor_like("l0a", tail, "ZZ", layout_base=(32, 32))
"""),
    entry("APK536", "tile does not fit its storage",
          """
A tile bound to an existing tensor (`make_tensor_like(l1_buffer, tile, "NZ")`) must fit in that
tensor's storage, and a `layout_base` must cover the tile's valid extent.  Declare the buffer
with the largest tile shape the loop uses.
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.zeros((64, 64), np.float16), "gm")
buf = apdsl.ndarray((32, 32), "float16", "l1", "NZ")
apdsl.make_tensor_like(buf, apdsl.tile_view(A, (0, 0), (64, 64)), "NZ")
"""),
    entry("APK537", "bound tensor of another format or dtype",
          """
`make_tensor_like(target, like, format, dtype)` with a tensor as target binds a tile in the
given format and dtype to that tensor's storage; the target must be declared with them (for
example `l1_a = ndarray((128, 256), f16, l1, "NZ")`), so its format and dtype say what it holds.
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.zeros((32, 32), np.float16), "gm")
buf = apdsl.ndarray((32, 32), "float16", "l1", "ND")
apdsl.make_tensor_like(buf, A, "NZ")
"""),
    entry("APK538", "view method cannot keep a tail tile's valid extent",
          """
Indexing, slicing and permuting a TLA tile keep track of its valid extent (indexing `t[i, :]`
gives a sub-view whose coord restarts at 0).  Other view methods (reshape, rearrange, broadcast,
view with another dtype size, ...) cannot say where a tail tile's valid data is, and its
padding holds none, so they are refused on a tail tile.  Take the valid part first:
`get_tile(t, (0, 0), t.origin_shape)`.
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.zeros((40, 40), np.float32), "gm")
tail = apdsl.tile_view(A, (1, 1), (32, 32))
tail.expand_dim(0)
"""),
    entry("APK539", "TLA tile of a dynamic view",
          """
TLA tiles are static views: a view with a runtime index (select with a tensor or register,
`vector_select`, `.ap(scalar_offset=...)`) or with register strides cannot be tiled or bound.
Tile first, then select dynamically.
""",
          """
# python
import numpy as np
import apdsl
A = apdsl.from_numpy(np.zeros((8, 16), np.float32), "hbm")
r = apdsl.register_alloc(0)
apdsl.make_tensor(A.select(0, r))
"""),
    # -- Ascend copies and memset (apdsl.runtime.ascend.dma) -------------------------------------
    entry("APK540", "Ascend copy converts dtypes",
          """
On Ascend only Fixpipe (L0C -> GM, L0C -> L1) converts dtypes.  Every other path (GM -> L1,
GM -> UB, Load2D GM -> L0A/L0B, LoadData L1 -> L0A/L0B, UB -> GM, UB -> UB) moves bytes, so
both operands have one dtype.  Convert in UB with a vector instruction, on the host, or through
the cube unit's accumulator and Fixpipe.
""",
          """
# python
import numpy as np
import apdsl
a = apdsl.from_numpy(np.ones((16, 16), np.float32), "gm")
b = apdsl.ndarray((16, 16), "float16", "l1")
apdsl.dma_copy(b, a)
"""),
    entry("APK541", "Fixpipe conversion not supported",
          """
Fixpipe (L0C -> GM, L0C -> L1) converts float32 to float16 or bfloat16 (rounding to nearest
even) and moves float32 and int32 as they are.  Other pairs (int32 to int8 or float16, float32
to int8, ...) are quantisations that need scale parameters, which apdsl does not model.
""",
          """
# python
import apdsl
c = apdsl.ndarray((16, 16), "int32", "l0c", "NZ")
out = apdsl.ndarray((16, 16), "int8", "gm")
apdsl.dma_copy(out, c)
"""),
    entry("APK542", "Load2D source not in the destination's format",
          """
GM -> L0A and GM -> L0B (Load2D) move 512-byte fractals as they are: the GM data must already
be in the destination's fractal format (ZZ for L0A, ZN for L0B; arrange host data with
`formats.convert`).  There is no ND -> fractal conversion on this path; copy GM -> L1 first
(Nd2Nz into NZ) and load L1 -> L0 (LoadData).
""",
          """
# python
import apdsl
a = apdsl.ndarray((16, 16), "float16", "gm", "NZ")
b = apdsl.ndarray((16, 16), "float16", "l0a", "ZZ")
apdsl.dma_copy(b, a)
"""),
    entry("APK543", "Load2D of int4 data",
          """
Load2D from GM moves 8-bit and wider data.  int4 operands reach L0A/L0B through L1: GM -> L1,
then LoadData.
""",
          """
# python
import apdsl
a = apdsl.ndarray((16, 64), "int4", "gm", "ZZ")
b = apdsl.ndarray((16, 64), "int4", "l0a", "ZZ")
apdsl.dma_copy(b, a)
"""),
    entry("APK544", "LoadData operand not in a fractal format",
          """
Load2D (GM -> L0A/L0B) and LoadData (L1 -> L0A/L0B) move whole 512-byte fractals, so both
operands are in a fractal format: NZ, ZZ or ZN in L1 (FRACTAL_Z for weights), ZZ in L0A, ZN in
L0B.  Declare the L1 tile `as NZ` (the GM -> L1 copy arranges ND data as Nd2Nz does).
""",
          """
# python
import apdsl
a = apdsl.ndarray((16, 16), "float16", "l1")
b = apdsl.ndarray((16, 16), "float16", "l0a", "ZZ")
apdsl.dma_copy(b, a)
"""),
    entry("APK545", "LoadData source not on a fractal boundary",
          """
LoadData and Load2D copy whole fractals starting at fractal boundaries; a source view that
starts inside a fractal (a row that is not a multiple of 16, or a column that is not a multiple
of the fractal width) cannot be loaded.  Tile the L1 buffer in whole fractals.
""",
          """
# python
import apdsl
a1 = apdsl.ndarray((32, 32), "float16", "l1", "NZ")
apdsl.memset(a1, 1.0)
a0 = apdsl.ndarray((16, 16), "float16", "l0a", "ZZ")
apdsl.dma_copy(a0, a1[8:24, 0:16])
"""),
    entry("APK546", "memset of L0C",
          """
AscendC has no memset of L0C: L1, L0A and L0B are set with InitConstValue and UB with
Duplicate, while L0C is written by the cube unit.  To start an accumulation, give the first
`mmad` `accumulate=False`: it overwrites the accumulator instead of adding to it.
""",
          """
# python
import apdsl
c = apdsl.ndarray((16, 16), "float32", "l0c", "NZ")
apdsl.memset(c, 0)
"""),
    entry("APK547", "memset dtype not supported on Ascend",
          """
InitConstValue (L1, L0A, L0B) and Duplicate (UB) set 16- and 32-bit data: half, bfloat16,
int16, uint16, float, int32 and uint32.  For 8-bit or int4 data, memset a view of the same
bytes as 16-bit words (`t.ap([[1, n // 2]], dtype=int16)` of n bytes; a zero word is two zero
bytes), or copy a prepared tile in.
""",
          """
# python
import apdsl
t = apdsl.ndarray((32, 32), "int8", "l1", "NZ")
apdsl.memset(t, 0)
"""),
]
