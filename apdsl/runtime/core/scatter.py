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
    a, b, dup = repeated(dst)
    if a.size:
        rows, cols, keys = dst.row_keys()
        overlap = (rows[a] == rows[b]) | (cols[a] != cols[b]) | (keys[a] != keys[b])
        if overlap.any():  # not a repeated index: an overlapping pattern, or overlapping rows
            k = int(np.argmax(overlap))
            raise twice_error(dst, op, "dst", _coord(dst, a[k]), _coord(dst, b[k]),
                              int(dup[k]), a.size)
        flat = values.reshape(-1)
        raw = flat.view(np.uint8).reshape(flat.size, -1)
        differ = (raw[a] != raw[b]).any(axis=1)
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


def _coord(dst: Rows | IndexedRows, k: int) -> tuple[int, ...]:
    """The coordinate, in the view the instruction was given, of element `k` of `dst`."""
    if type(dst) is Rows:
        return tuple(int(c) for c in np.unravel_index(int(k), dst.shape))
    shape = dst.view_shape
    per = int(np.prod(shape[1:], dtype=np.int64))
    return tuple(int(c) for c in np.unravel_index(int(dst.rows[k]) * per + int(dst.cols[k]),
                                                   shape))
