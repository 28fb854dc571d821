"""`oob_mode=skip` on an indirect DMA (SPEC section 4; NKI `dma_copy`/`dma_transpose` docs:
"silently skips any operations involving out-of-bounds indices").

Only executing needs this (check mode reads no index).  An operand indexed per row
(`.ap(vector_offset=)`, `vector_select`) loses the rows whose index lies outside its range or
whose elements would leave the storage: the elements paired with them are neither read nor
written, so what the destination held there stays (written or not).  An operand with one
dynamic start (`.ap(scalar_offset=)`, `select` by a runtime index) out of range skips the whole
transfer.  Every other check (init of the elements read, a destination touched twice, shapes)
still applies to what does move.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, TargetError
from ..tensor.layout import Dim, Layout
from ..tensor.view import Tensor
from . import execute as ex
from . import trace


def indirect(t: Tensor) -> bool:
    """A view with a runtime row index or start that oob_mode=skip applies to."""
    return t.dynamic is not None and t.dynamic.kind in ("vector", "scalar")


def _rows(t: Tensor, label: str, role: str) -> tuple[np.ndarray, np.ndarray]:
    """The storage offsets of a per-row-indexed view (flat, logical row-major order) and which
    of them belong to rows that are in range."""
    dyn = t.dynamic
    ex.check_dynamic(t, label, role)  # storage live, index in storage, index shaped (P, 1)
    what = f"index {dyn.index_name}"
    values = ex.read(ex.resolve(dyn.index, label, what), label, what)
    idx = values.astype(np.int64).reshape(-1)
    layout = t.layout
    parts = layout.dims[0].size
    rest = Layout(layout.dims[1:], layout.base)
    static = Layout((Dim.plain(parts, 0),) + rest.dims, rest.base).offsets()
    offs = static + (idx * dyn.scale).reshape((-1,) + (1,) * (static.ndim - 1))
    limit = t.storage.nbytes * 8 // t.dtype.bits
    ok = idx >= 0
    if dyn.bound is not None:
        ok &= idx < dyn.bound
    ok &= ((offs >= 0) & (offs < limit)).reshape(parts, -1).all(axis=1)
    return offs.reshape(-1), np.repeat(ok, offs.size // parts if parts else 0)


def _flat(t: Tensor, label: str, role: str) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """(storage offsets, valid mask or None when all are, element count) of one operand."""
    dyn = t.dynamic
    if dyn is not None and dyn.kind == "vector" and t.layout.static:
        offs, ok = _rows(t, label, role)
        return offs, (None if ok.all() else ok), offs.size
    try:
        acc = ex.resolve(t, label, role)
    except ApdslRuntimeError as err:
        if dyn is None or dyn.kind != "scalar" or err.code not in ("APK402", "APK403") \
                or not t.layout.static:
            raise
        n = prod(t.layout.shape)  # the one start is out of range: nothing moves
        return None, np.zeros(n, bool), n
    return acc.offsets().reshape(-1), None, acc.size


def copy_skipping(dst: Tensor, src: Tensor, name: str | None, label: str,
                  hints: dict[str, Any] | None, *, op: str = "dma_copy",
                  perm: tuple[int, ...] | None = None) -> None:
    """Execute a DMA whose out-of-range indirect rows are skipped.  Destination element k
    takes source element k in logical row-major order, or, with `perm`, the element of
    `np.transpose(src, perm)` at k."""
    for role, t in (("src", src), ("dst", dst)):
        ex.warn_static(t, label, role)
    s_offs, s_ok, n_s = _flat(src, label, "src")
    d_offs, d_ok, n_d = _flat(dst, label, "dst")
    if n_s != n_d:
        raise TargetError(f"{label}: dst has {n_d} elements, src has {n_s}", code="APK306",
                          notes=[f"dst {dst.name} @ {dst.buffer}, src {src.name} @ "
                                 f"{src.buffer}"],
                          help="a DMA moves elements in row-major order; both sides must "
                          "hold the same number of elements")
    trace.record(op, name, {"dst": dst, "src": src}, hints=hints)
    order = np.arange(n_s)
    if perm is not None:
        order = order.reshape(tuple(src.layout.shape)).transpose(perm).reshape(-1)
    ok = np.ones(n_d, bool)
    if s_ok is not None:
        ok &= s_ok[order]
    if d_ok is not None:
        ok &= d_ok
    k = int(np.count_nonzero(ok))
    if k == 0 or s_offs is None or d_offs is None:
        return
    s = ex.Indexed(src.name, src.storage, src.dtype, (k,), None, s_offs[order[ok]])
    d = ex.Indexed(dst.name, dst.storage, dst.dtype, (k,), None, d_offs[ok])
    ex.copy(d, s, label)
