"""Catalogue entries for Ascend data formats (APK500-APK519; APK520+ belong to TLA and mmad)."""

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
]
