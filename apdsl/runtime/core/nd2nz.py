"""Nd2Nz's row-tail zero fill: a copy from GM into a matrix fractal format (NZ, ZZ, ZN) zeroes
each written line from its last element to the end of its fractal line (the Ascend DMA's rule;
`ascend.dma` decides when a copy has tails, every copy that has them fills them here, planned or
not).  Which storage offsets a view's tails are depends on the view alone, so they are found
once per view and axis."""

from __future__ import annotations

import weakref

import numpy as np

from ...tensor.view import Tensor
from . import execute as ex

MATRIX_FRACTAL = ("NZ", "ZZ", "ZN")


def column_major(src: Tensor) -> bool:
    """A matrix view whose columns are contiguous (a COLUMN_MAJOR tensor, a transposed view).
    A single row or column is both row- and column-major; it counts as column-major, the one
    reading under which Nd2Nz produces ZN."""
    if src.ndim != 2 or not src.layout.static:
        return False
    rows, cols = src.layout.dims
    return src.format == "COLUMN_MAJOR" or rows.size == 1 or rows.stride == 1


# Per (destination view, axis): the storage offsets its tails zero-fill (None: no tails).
_tails: weakref.WeakKeyDictionary[Tensor, dict[int, np.ndarray | None]] = \
    weakref.WeakKeyDictionary()


def zero_row_tails(d: Tensor, column_major: bool) -> None:
    """Nd2Nz: after a copy from GM into a matrix fractal format, zero each written line from its
    last element to the end of its fractal line.  The lines are the source's contiguous runs
    laid along the fractal's contiguous axis: the rows of NZ and ZZ, and, from a column-major
    source, the columns of ZN (its K axis); a row-major source into ZN fills nothing."""
    offs = tail_offsets(d, column_major)
    if offs is not None:
        ex.store(ex.Indexed(d.name, d.storage, d.dtype, (offs.size,), None, offs),
                 np.zeros(offs.size, d.dtype.np))


def tail_offsets(d: Tensor, column_major: bool) -> np.ndarray | None:
    """The storage offsets `zero_row_tails` writes for view `d` (None: no tails), kept per
    view and axis."""
    fmt = d.storage.format
    if fmt == "ZN":
        if not column_major:
            return None
        axis = d.ndim - 2  # K
    else:
        axis = d.ndim - 1
    per = _tails.get(d)
    if per is None:
        per = _tails[d] = {}
    try:
        return per[axis]
    except KeyError:
        offs = per[axis] = _line_tails(d, axis)
        return offs


def _line_tails(d: Tensor, axis: int) -> np.ndarray | None:
    """The offsets `zero_row_tails` writes: only when the view's dimension `axis` runs along the
    fractal's contiguous axis (it steps through that axis's inner mode)."""
    from ...tensor import formats
    storage = d.storage
    fmt = storage.format
    if fmt not in MATRIX_FRACTAL or d.ndim < 2 or d.dtype != storage.dtype:
        return None
    # the storage's own logical axis that is contiguous inside a fractal
    own = len(storage.shape) - (2 if fmt == "ZN" else 1)
    width, inner = formats.stored(fmt, storage.shape, storage.dtype,
                                  storage.buffer).modes[own][0]
    layout = d.layout
    line = layout.dims[axis]
    n = line.size
    if n == 0 or line.step != 1 or (n > 1 and line.modes[0][1] != inner):
        return None
    # In NZ, ZZ and ZN an element's place inside its fractal line does not depend on the other
    # coordinates, so the first line says whether any line has a tail.
    first = layout.base + line.phi(line.start + n - 1) + sum(
        dim.phi(dim.start) for k, dim in enumerate(layout.dims) if k != axis)
    if (first // inner) % width == width - 1:
        return None
    ends = layout.index(axis, n - 1).offsets().reshape(-1)
    tail = width - 1 - (ends // inner) % width
    if not tail.any():
        return None
    steps = np.arange(1, width)
    return (ends[:, None] + inner * steps)[steps <= tail[:, None]]
