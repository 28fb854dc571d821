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

from ...errors import ApdslRuntimeError, TargetError
from ...tensor.layout import Dim, Layout
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.access import IndexedRows, row_keys


def indirect(t: Tensor) -> bool:
    """A view with a runtime row index or start that oob_mode=skip applies to."""
    return t.dynamic is not None and t.dynamic.kind in ("vector", "scalar")


def _rows(t: Tensor, label: str, role: str, order: str,
          strict: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The storage offsets of a per-row-indexed view (flat, logical row-major order), which
    of them belong to rows that are in range, and the index of each row.  `order` "C": one index per row, a (rows, 1)
    tensor; "F": a 2-d index flattened column-first, its first `rows` entries used (the
    gather-transpose's `indices.T.flatten()[:rows]`).  `strict`: an out-of-range row is an
    error (APK402/APK403) rather than skipped."""
    dyn = t.dynamic
    what = f"index {dyn.index_name}"
    layout = t.layout
    parts = layout.dims[0].size
    if order == "C":
        ex.check_dynamic(t, label, role)  # storage live, index in storage, index (P, 1)
    elif t.storage.freed:
        ex.check_live(t, label, role)  # APK408, or an overdraft's tensor accessed again
    values = ex.read(ex.resolve(dyn.index, label, what), label, what).astype(np.int64)
    grid = values.reshape(values.shape[0], -1)
    flat = grid.reshape(-1) if order == "C" else grid.T.reshape(-1)
    if flat.size < parts:
        raise ApdslRuntimeError(f"{label}: {what} holds {flat.size} indices; {role} {t.name} "
                                f"gathers {parts} rows", code="APK407",
                                help=f"give at least {parts} indices")
    idx = flat[:parts]
    rest = Layout(layout.dims[1:], layout.base)
    static = Layout((Dim.plain(parts, 0),) + rest.dims, rest.base).offsets()
    offs = static + (idx * dyn.scale).reshape((-1,) + (1,) * (static.ndim - 1))
    limit = t.storage.nbytes * 8 // t.dtype.bits
    in_range = idx >= 0
    if dyn.bound is not None:
        in_range &= idx < dyn.bound
    inside = ((offs >= 0) & (offs < limit)).reshape(parts, -1).all(axis=1)
    ok = in_range & inside
    if strict and not ok.all():
        k = int(np.argmin(ok))
        r = grid.shape[0]
        pos = [k, 0] if order == "C" else [k % r, k // r]
        v = int(idx[k])
        rng = f"[0, {dyn.bound})" if dyn.bound is not None else "[0, ...) inside the storage"
        raise ApdslRuntimeError(
            f"{label}: runtime index {dyn.index_name}{pos} = {v} is outside the allowed range "
            f"{rng} ({dyn.origin} on {role} {t.name})" if not in_range[k] else
            f"{label}: with its runtime index {dyn.index_name}{pos} = {v}, {role} {t.name} "
            f"leaves its storage of {limit} elements",
            code="APK402" if not in_range[k] else "APK403",
            notes=[f"{int((~ok).sum())} of {parts} rows are out of range",
                   f"{role} {t.name}: shape {tuple(t.shape)} @ {t.buffer}"],
            help="NKI raises an error for an out-of-bounds index by default; check the index, or "
            "pass oob_mode=nisa.oob_mode.skip to skip such rows", index=v, position=tuple(pos))
    return offs.reshape(-1), np.repeat(ok, offs.size // parts if parts else 0), idx


def _flat(t: Tensor, label: str, role: str, order: str = "C",
          strict: bool = False) -> tuple[np.ndarray | None, np.ndarray | None, int,
                                         np.ndarray | None]:
    """(storage offsets, valid mask or None when all are, element count, the row index of
    each row or None) of one operand."""
    dyn = t.dynamic
    if dyn is not None and dyn.kind == "vector" and t.layout.static:
        offs, ok, idx = _rows(t, label, role, order, strict)
        return offs, (None if ok.all() else ok), offs.size, idx
    try:
        acc = ex.resolve(t, label, role)
    except ApdslRuntimeError as err:
        if strict or dyn is None or dyn.kind != "scalar" or \
                err.code not in ("APK402", "APK403") or not t.layout.static:
            raise
        n = prod(t.layout.shape)  # the one start is out of range: nothing moves
        return None, np.zeros(n, bool), n, None
    return acc.offsets().reshape(-1), None, acc.size, None


def copy_skipping(dst: Tensor, src: Tensor, name: str | None, label: str,
                  hints: dict[str, Any] | None, *, op: str = "dma_copy",
                  perm: tuple[int, ...] | None = None, skip: bool = True,
                  index_order: str = "C") -> None:
    """Execute a DMA whose out-of-range indirect rows are skipped (with `skip=False`: are an
    error).  Destination element k takes source element k in logical row-major order, or,
    with `perm`, the element of `np.transpose(src, perm)` at k.  `index_order` "F": src's
    vector index is 2-d and read column-first (a gather-transpose)."""
    for role, t in (("src", src), ("dst", dst)):
        ex.warn_static(t, label, role)
    s_offs, s_ok, n_s, _ = _flat(src, label, "src", index_order, not skip)
    d_offs, d_ok, n_d, d_idx = _flat(dst, label, "dst", "C", not skip)
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
    if d_idx is None:
        d = ex.Indexed(dst.name, dst.storage, dst.dtype, (k,), None, d_offs[ok])
    else:  # the rows a runtime index places: a repeated index is told from an overlap
        rows, cols, keys = (a[ok] for a in row_keys((d_idx.size, n_d // max(d_idx.size, 1)),
                                                    d_idx))
        d = IndexedRows(dst.name, dst.storage, dst.dtype, (k,), d_offs[ok], rows, cols, keys,
                        tuple(dst.layout.shape))
    ex.copy(d, s, label)
