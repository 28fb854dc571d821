"""A TLA tile's valid extent as views: the region around a view and its valid part (what a
view method keeps of a tile's valid extent is in `core`).  Below `tla` (which makes tiles) so
that `Tensor.numpy` and the runtime can ask without importing the tile constructors."""

from __future__ import annotations

from typing import Any, TypeVar

from ...errors import FormatError
from ...records import replace
from .. import formats
from ..layout import Layout
from .core import TensorCore

Shape = tuple[int, ...]
V = TypeVar("V", bound=TensorCore)  # a view in, the same kind of view out


def _err(code: str, message: str, **kw: Any) -> FormatError:
    return FormatError(message, code=code, **kw)


def root_layout(t: TensorCore, padded: bool) -> Layout:
    """The layout a whole declared tensor of this storage has (padded: over its whole fractals)."""
    s = t.storage
    if s.format == "ND":
        return Layout.row_major(s.shape)
    whole = formats.stored(s.format, s.shape, s.dtype, s.buffer, s.c0)
    if not padded:
        return whole.layout()
    return formats.stored(s.format, whole.padded, s.dtype, s.buffer, s.c0).layout()


def reach(t: TensorCore) -> Shape:
    """Per dimension, how far `region` can extend view `t`: a whole declared fractal tensor
    reaches its padded shape (its layout says where the padding lies), any other view its
    shape (a tile's shape already covers whole fractals)."""
    if t.storage.format != "ND" and t.dtype == t.storage.dtype \
            and t.layout == root_layout(t, padded=False):
        return tuple(root_layout(t, padded=True).shape)
    return tuple(t.shape)


def region(t: V, sizes: Shape, *, op: str = "read", role: str = "view") -> V:
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


def valid_view(t: V) -> V:
    """The valid extent of `t` as a view for the runtime (which ignores coord and
    origin_shape): the tensor itself when all of it is valid."""
    if t.origin_shape is None or t.origin_shape == t.shape:
        return t
    return region(t, t.origin_shape)


