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
