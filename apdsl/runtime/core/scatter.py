"""A DMA scatter whose runtime row index repeats (SPEC section 4, dynamic access).

A destination addressed per row by a runtime index (`.ap(vector_offset=)`, `vector_select`)
writes the rows of every repeated index to the same storage.  The NKI DMA overview says how
such writes are ordered: "each DMA transfer is by default parallelized up to 16 DMA engines",
and "DMA transfers within a queue on the same DMA engine are executed in order"; nothing orders
the engines among themselves, so which of two writes to one element lands last is not defined
(the reference's `dma_copy` says nothing more about repeated indices; the read-modify-write
`dma_compute` refuses them outright).  When every write of an element carries the same bytes,
every order leaves those bytes, so the result is defined and apdsl writes it: nki-library's MoE
kernels send every padding row of a block to one spare output row this way, each with the same
values.  When two writes of an element differ, the element's value would be a guess: APK405,
naming both rows and quoting the rule.

Only a repeated index is accepted, and only its whole row: two elements of one row on the same
element (a stride-0 or overlapping pattern), or rows of different indices that overlap, stay
APK405 whatever they hold, as for a static destination.
"""

from __future__ import annotations

import numpy as np

from ...tensor.dtypes import cast_array
from ...tensor.machine import current
from .access import Access, IndexedRows, Rows
from .written import mark_written, refine_for_write, repeated, twice_error

# the rule the refusal quotes (aws-neuron-sdk nki/get-started/about/nki-dma-overview.rst)
RULE = ("the NKI DMA overview: \"each DMA transfer is by default parallelized up to 16 DMA "
        "engines\" and \"DMA transfers within a queue on the same DMA engine are executed in "
        "order\"; nothing orders the engines, so which write of an element lands last is not "
        "defined")


def by_runtime_index(acc: Access) -> bool:
    """Is `acc` a destination whose rows a runtime index places?"""
    return type(acc) is Rows or type(acc) is IndexedRows


def write_repeating(dst: Rows | IndexedRows, values: np.ndarray, written: np.ndarray | None,
                    op: str) -> None:
    """Write `values` (logical order, any dtype: cast to dst's) through `dst`, whose runtime
    index may repeat, after checking that the writes landing on one element are the same row
    of a repeated index carrying the same bytes (APK405 otherwise).  `written`: which source
    elements were written (None: all), part of what a write carries."""
    refine_for_write(dst)
    values = np.ascontiguousarray(cast_array(values, dst.dtype)).reshape(dst.shape)
    agree = rows_agree(dst, values, written)
    if agree is not None:
        dst.write(values)
        mark_written(dst, repeats=agree)
        return
    a, b, dup = repeated(dst)
    if a.size:
        rows, cols, keys = dst.row_keys()
        overlap = (rows.take(a) == rows.take(b)) | (cols.take(a) != cols.take(b)) | \
            (keys.take(a) != keys.take(b))
        if overlap.any():  # not a repeated index: an overlapping pattern, or overlapping rows
            k = int(np.argmax(overlap))
            raise twice_error(dst, op, "dst", _coord(dst, a[k]), _coord(dst, b[k]),
                              int(dup[k]), a.size)
        flat = values.reshape(-1)
        differ = bits_differ(flat, a, b)
        if written is not None:
            w = np.reshape(written, -1)
            differ |= w[a] != w[b]
        if differ.any():
            k = int(np.argmax(differ))
            i, j = int(a[k]), int(b[k])
            raise twice_error(
                dst, op, "dst", _coord(dst, i), _coord(dst, j), int(dup[k]), a.size,
                notes=(f"rows {int(rows[i])} and {int(rows[j])} have the same runtime index "
                       f"{int(keys[i])} and write different values there ({flat[i]} and "
                       f"{flat[j]}): {RULE}",),
                help="give each row its own index, or make the rows that share one hold the "
                "same values (oob_mode=nisa.oob_mode.skip with an out-of-range index leaves a "
                "row unwritten)")
    dst.write(values)
    mark_written(dst, repeats=bool(a.size))


def rows_agree(dst: Rows | IndexedRows, values: np.ndarray, written: np.ndarray | None
               ) -> bool | None:
    """The check above by rows, where it can be made so: `dst` a `Rows` whose rows of
    different indices never meet and whose row touches each element once (its plan proves
    it), so two writes land on one element exactly when two rows share an index, at one
    column.  Whether some rows share an index, when the rows sharing one carry the same bits
    (and the same written state); None otherwise (not such a destination, or rows that differ:
    the element-wise check then says which, as ever).  nki-library's MoE scatters send most
    of a block's rows to one padding row: element pairs sorted by offset were most of their
    time."""
    if (type(dst) is not Rows or not values.size or not current().options.plans
            or not dst.plan.injective()):
        return None
    idx = dst.idx.reshape(-1)
    order = np.argsort(idx, kind="stable")
    ordered = idx[order]
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return False
    first, second = order[:-1][same], order[1:][same]
    bits = _as_bits(values).reshape(idx.size, -1)
    if (bits[first] != bits[second]).any():
        return None
    if written is not None:
        w = np.reshape(written, (idx.size, -1))
        if (w[first] != w[second]).any():
            return None
    return True


def bits_differ(flat: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether elements `a` and `b` of the contiguous 1-D `flat` differ in any bit: compared as
    unsigned integers of their width (a tenth of the time of comparing their bytes row by row:
    nki-library's MoE scatters send most of a block's rows to one padding row)."""
    bits = _as_bits(flat)
    if bits.ndim == 1:
        return bits.take(a) != bits.take(b)
    return (bits[a] != bits[b]).any(axis=1)


def _as_bits(values: np.ndarray) -> np.ndarray:
    """`values` (contiguous) as unsigned integers of their width, or, for widths NumPy has
    none of, as one row of bytes an element (flattened first)."""
    width = values.dtype.itemsize
    if width in (1, 2, 4, 8):
        return values.view(f"u{width}")
    flat = values.reshape(-1)
    return flat.view(np.uint8).reshape(flat.size, -1)


def _coord(dst: Rows | IndexedRows, k: int) -> tuple[int, ...]:
    """The coordinate, in the view the instruction was given, of element `k` of `dst`."""
    if type(dst) is Rows:
        return tuple(int(c) for c in np.unravel_index(int(k), dst.shape))
    shape = dst.view_shape
    per = int(np.prod(shape[1:], dtype=np.int64))
    return tuple(int(c) for c in np.unravel_index(int(dst.rows[k]) * per + int(dst.cols[k]),
                                                   shape))
