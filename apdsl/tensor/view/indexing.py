"""Indexing sugar: `t[0:16, 8:16]`, `t[3]`, `t[:, ::2]`, `t[...]`, `t[0, ...]`.

Strict, unlike NumPy: an out-of-range bound is an error.  Negative indices count from the end.
On-chip an integer index keeps the partition dimension (size 1) and at least one free dimension;
on HBM an integer index removes its dimension.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import numpy as np

from ...errors import ApdslTypeError, ViewError
from .core import with_layout


class Indexable(Protocol):
    """What indexing needs of a view (`apdsl.tensor.view.Tensor` is one): its shape, whether it
    is on chip, and the two view methods an index is spelled in."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def onchip(self) -> bool: ...
    def slice(self, dim: int, start: int, end: int, step: int = 1) -> Any: ...
    def select(self, dim: int, index: Any) -> Any: ...


V = TypeVar("V", bound=Indexable)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _expand(key: Any, ndim: int) -> list[Any]:
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise ViewError("an index can contain at most one '...'", code="APK230")
    explicit = sum(1 for k in items if k is not Ellipsis)
    if explicit > ndim:
        raise ViewError(f"too many indices: {explicit} for a {ndim}-d view", code="APK230",
                        help=f"index at most {ndim} dimensions")
    if Ellipsis in items:
        i = items.index(Ellipsis)
        items[i:i + 1] = [slice(None)] * (ndim - explicit)
    return items + [slice(None)] * (ndim - len(items))


def _bound(v: Any, n: int, what: str, d: int, *, allow_end: bool) -> int:
    if not _is_int(v):
        raise ApdslTypeError(f"index {what} must be an int, got {v!r}", code="APK111")
    i = int(v) + n if v < 0 else int(v)
    hi = n if allow_end else n - 1
    if not 0 <= i <= hi:
        raise ViewError(f"index {v} is out of range for dim {d} (size {n})", code="APK215",
                        help=f"use {-n} <= index < {n}" if not allow_end
                        else f"slice bounds must lie in {-n}..{n}", dim=d, size=n)
    return i


def index_view(t: V, key: Any) -> Any:
    if t.origin_shape is None and t.dynamic is None:  # (a plain view: no TLA tile, no index)
        view = _sliced(t, key)
        if view is not None:
            return view
    from ..grid_view import IndexedTile, is_grid_key
    if is_grid_key(key):  # the legacy NKI index grid (`t[i_p, i_f]`): a view once masked
        return IndexedTile(t, key)
    items = _expand(key, t.ndim)
    onchip = t.onchip
    # Which dims are removed by an integer index; on-chip keep partition + one free dim.
    ints = [d for d, k in enumerate(items) if _is_int(k)]
    keep = set()
    if onchip:
        keep.add(0)
        free_left = [d for d in range(1, t.ndim) if d not in ints]
        if not free_left and t.ndim > 1:
            keep.add(max(d for d in ints if d > 0))
    out = t
    for d in reversed(range(t.ndim)):
        k = items[d]
        n = t.shape[d]
        if _is_int(k):
            i = _bound(k, n, "", d, allow_end=False)
            out = out.slice(d, i, i + 1) if d in keep else out.select(d, i)
        elif isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if not _is_int(step) or step < 1:
                raise ViewError(f"slice step {step!r} must be a positive int", code="APK204")
            start = 0 if k.start is None else _bound(k.start, n, "start", d, allow_end=True)
            stop = n if k.stop is None else _bound(k.stop, n, "stop", d, allow_end=True)
            if (start, stop, step) != (0, n, 1):
                out = out.slice(d, start, stop, step)
        else:
            raise ApdslTypeError(f"unsupported index {k!r}: use ints, slices and '...'",
                                 code="APK111")
    return out


def _sliced(t: Any, key: Any) -> Any:
    """`t[key]` for a key of slices only (dimensions past them whole), each with in-range int
    bounds and a positive step (step 1 across on-chip partitions), made as one view: the layout
    sliced dimension by dimension as `Tensor.slice` would, one view at a time, in the same
    order.  None for any other key (an int, `...`, an empty slice, an index grid, anything an
    error): the general loop then makes the view or raises."""
    items = key if type(key) is tuple else (key,)
    layout = t.layout
    dims = layout.dims
    if len(items) > len(dims) or not layout.static:
        return None
    for d in range(len(items) - 1, -1, -1):
        k = items[d]
        if type(k) is not slice:
            return None
        n = dims[d].size
        a, b, c = k.start, k.stop, k.step
        if c is None:
            step = 1
        elif type(c) is int and c >= 1 and (c == 1 or d or not t.onchip):
            step = c
        else:
            return None
        start = 0 if a is None else (a + n if type(a) is int and -n <= a < 0 else a)
        stop = n if b is None else (b + n if type(b) is int and -n <= b < 0 else b)
        if type(start) is not int or type(stop) is not int or not 0 <= start < stop <= n:
            return None
        if start or stop != n or step != 1:
            layout = layout.slice(d, start, stop, step)
    return t if layout is t.layout else with_layout(t, layout)
