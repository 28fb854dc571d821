"""Catalogue entries of the legacy NKI API: index grids, masks, tile writes (APK940-APK949)."""

from . import entry

_KERNEL = """# python
import apdsl.nki as nki
import apdsl.nki.language as nl
import apdsl.nki.isa as nisa

@nki.jit
def k(a):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(4)[None, :]
{body}
    return out

k(np.zeros((128, 8), np.float32))
"""


def _kernel(body: str) -> str:
    return _KERNEL.format(body="\n".join("    " + line for line in body.splitlines()))


ENTRIES = [
    entry("APK940", "index expression that is not affine", """
An index built with `nl.arange` or `nl.mgrid` stands for a whole grid of indices, and an
instruction's operand must be an access pattern over it: `const + sum(int * index)`.  Adding,
subtracting and multiplying by ints keeps that form; dividing, taking a remainder or
multiplying two indices does not.  Reshape or rearrange the tensor instead of dividing an
index, or index it with slices.
""", _kernel("t = nl.load(a[i_p // 2, i_f])")),
    entry("APK941", "index grid shapes", """
Index expressions combine as NumPy broadcasts arrays: each pair of sizes must be equal or 1,
an index keeps one axis of the grid, and a range needs start < stop and a positive step.
""", _kernel("t = nl.load(a[i_p + nl.arange(64)[:, None], i_f])")),
    entry("APK942", "truth value of an index or a mask", """
An index expression or a mask stands for a whole grid: it has no single truth value, and it is
not an int.  Python's `and`/`or`/`not` ask for one and would keep only one side of a mask:
combine masks with `&` (`mask=(i_p < n) & (i_f < m)`), and use an index to index a tensor.
""", _kernel("t = nl.load(a[i_p, i_f], mask=(i_p < 64 and i_f < 2))")),
    entry("APK943", "a mask that is not a box", """
apdsl takes masks that bound each index on its own (`i_p < 64`, `i_f >= 8`) combined with `&`:
they narrow every operand to a box.  A bound relating two indices (`i_p >= i_f`), `|` or `~`
is not a box; for a triangular or banded selection use `nisa.affine_select`.
""", _kernel("t = nl.load(a[i_p, i_f], mask=(i_p >= i_f))")),
    entry("APK944", "index grid outside the tensor", """
An index expression reaches outside the tensor's dimension (checked over the positions the
mask keeps).  Narrow the index with a mask, e.g. `mask=(i_p < n)`, or index a smaller range.
""", _kernel("t = nl.load(a[i_p, i_f + 6])")),
    entry("APK945", "an on-chip tile indexed without its partitions first", """
On SBUF and PSUM the first dimension of every access is the partition dimension: the first
index of an on-chip tile must select partitions (`t[i_p, i_f]`), never step across them.
""", _kernel("t = nl.load(a)\nu = nl.copy(t[nl.arange(4)[None, :], nl.arange(8)[:, None]])")),
    entry("APK946", "a tile write the model cannot make", """
`t[k] = value` and `t += value` on a tensor are the legacy NKI API's tile writes: inside an NKI
Python kernel `t[k] = tile` copies (tensor_copy on chip, dma_copy to or from HBM), a number is
a memset, and `t += x` computes in place.  Outside a kernel a view moves no data, so issue the
instruction yourself; a value that is neither a tile nor a number cannot be written, and `/=`
divides, which no NKI instruction does (multiply by the reciprocal).
""", """# python
t = apdsl.ndarray((4, 4), "float32", "sbuf")
t[0:2, :] = 1.0
"""),
    entry("APK947", "a mask the call cannot use", """
`mask=` takes a predicate of `nl.arange`/`nl.mgrid` indices.  It narrows each operand indexed
by those indices, and a plain tile on the axes the mask bounds: the tile must have the mask's
rank, and on each bounded axis the index's size (or 1).
""", _kernel("t = nl.load(a[i_p, i_f])\nu = nl.exp(t, mask=(nl.arange(64)[None, :] < 2))")),
    entry("APK948", "arguments of neither NKI form", """
Each NKI instruction has two forms: the current one writes `dst` (`nisa.tensor_copy(dst=d,
src=s)`) and the legacy one returns a new tile (`t = nisa.tensor_copy(s)`).  These arguments
bind to neither; the message names what is missing or extra.
""", _kernel("t = nisa.tensor_copy()")),
]
