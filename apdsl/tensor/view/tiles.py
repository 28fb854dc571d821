"""A TLA tile's valid extent: what of a view holds data, the region around it, and what a view
method keeps of it.  Below `tla` (which makes tiles) so that `Tensor`'s own view methods and
`Tensor.numpy` can ask without importing the tile constructors."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ...errors import FormatError
from ...records import replace
from .. import formats
from ..layout import Layout

if TYPE_CHECKING:
    from . import Tensor

Shape = tuple[int, ...]


def _err(code: str, message: str, **kw: Any) -> FormatError:
    return FormatError(message, code=code, **kw)


def valid_shape(t: Tensor) -> Shape:
    """The extent that holds data: a tile's `origin_shape`, else the whole shape."""
    return tuple(t.shape) if t.origin_shape is None else tuple(t.origin_shape)


def root_layout(t: Tensor, padded: bool) -> Layout:
    """The layout a whole declared tensor of this storage has (padded: over its whole fractals)."""
    s = t.storage
    if s.format == "ND":
        return Layout.row_major(s.shape)
    whole = formats.stored(s.format, s.shape, s.dtype, s.buffer, s.c0)
    if not padded:
        return whole.layout()
    return formats.stored(s.format, whole.padded, s.dtype, s.buffer, s.c0).layout()


# Per view: its reach (loops ask again for the same tiles).
_reaches: weakref.WeakKeyDictionary[Tensor, Shape] = weakref.WeakKeyDictionary()


def reach(t: Tensor) -> Shape:
    """Per dimension, how far `region` can extend view `t`: a whole declared fractal tensor
    reaches its padded shape (its layout says where the padding lies), any other view its
    shape (a tile's shape already covers whole fractals)."""
    out = _reaches.get(t)
    if out is None:
        out = tuple(t.shape)
        if t.storage.format != "ND" and t.dtype == t.storage.dtype \
                and t.layout == root_layout(t, padded=False):
            out = tuple(root_layout(t, padded=True).shape)
        _reaches[t] = out
    return out


def region(t: Tensor, sizes: Shape, *, op: str = "read", role: str = "view") -> Tensor:
    """A plain view of `t` from its first element with extent `sizes` per dimension.  A size may
    pass the view's shape into the fractal padding behind it (mmad reading K in whole
    fractals); that is refused (APK526) where the view's layout cannot say where it lies."""
    sizes = tuple(int(n) for n in sizes)
    if sizes == t.shape:
        return t  # the runtime ignores coord and origin_shape; the same object keeps its plan
    layout = t.layout
    if any(n > m for n, m in zip(sizes, t.shape)):
        if t.dtype == t.storage.dtype and layout == root_layout(t, padded=False):
            layout = root_layout(t, padded=True)
        for k, (n, m) in enumerate(zip(sizes, t.shape)):
            if n > m and m == 1 and layout.dims[k].size == 1:
                raise _err("APK526", f"{op}: {role} {t.name} is one element wide in dim {k}, so "
                           f"its layout does not say where elements {m}..{n - 1} (the fractal "
                           "padding) lie", notes=[f"view shape {tuple(t.shape)}, needed "
                                                  f"{sizes}"],
                           help="make the operand with make_tensor_like, whose tile covers "
                           "whole fractals, or declare it with its padded shape")
    for k, n in enumerate(sizes):
        if n != layout.dims[k].size:
            layout = layout.slice(k, 0, n)
    return replace(t, layout=layout, coord=None, origin_shape=None)


def valid_view(t: Tensor) -> Tensor:
    """The valid extent of `t` as a view for the runtime (which ignores coord and
    origin_shape): the tensor itself when all of it is valid."""
    if t.origin_shape is None or t.origin_shape == t.shape:
        return t
    return region(t, t.origin_shape)


def sub_view_fields(t: Tensor, op: str, *args: Any) -> dict[str, Any]:
    """`coord` and `origin_shape` of a sub-view of tile `t`: an index (`select`) projects the
    valid extent and restarts the coord at 0, a slice clips the valid extent to the elements it
    keeps and restarts the coord, a permute reorders both."""
    origin = list(valid_shape(t))
    if op == "select":
        (d,) = args
        del origin[d]
        return {"coord": (0,) * len(origin), "origin_shape": tuple(origin)}
    if op == "slice":
        d, start, end, step = args
        o = origin[d]
        origin[d] = 0 if start >= o else -(-(min(end, o) - start) // step)
        return {"coord": (0,) * len(origin), "origin_shape": tuple(origin)}
    if op == "permute":
        (order,) = args
        coord = t.coord if t.coord is not None else (0,) * len(origin)
        return {"coord": tuple(coord[i] for i in order),
                "origin_shape": tuple(origin[i] for i in order)}
    return untile(t, op)


def untile(t: Tensor, op: str = "this view method") -> dict[str, Any]:
    """A view method that cannot carry a valid extent: fine for a whole tile (it becomes a plain
    view), refused for a tail tile, whose padding would silently become data."""
    if t.origin_shape is not None and tuple(t.origin_shape) != tuple(t.shape):
        raise _err("APK538", f"{op} cannot keep the valid extent {tuple(t.origin_shape)} of "
                   f"tile {t.name} (shape {tuple(t.shape)})",
                   notes=["a tail tile's padding holds no data; a reshaped view would read it "
                          "as if it did"],
                   help="index or slice the tile (t[i, :], t[0:4, :]) or take the valid part "
                   "first with get_tile(t, (0, 0), t.origin_shape)")
    return {"coord": None, "origin_shape": None}
