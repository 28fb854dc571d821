"""TLA tiles (CATLASS, seed 004): tensors that know where they start and how much of them is valid.

A TLA tensor is an ordinary `Tensor` view whose two extra fields are set:

- `coord`: where the view starts in the logical space of the tensor it was cut from, in
  elements (metadata: the layout's offset already says where the data is);
- `origin_shape`: the valid extent.  A tail tile keeps its full `shape` (so its layout, and the
  fractal storage made for it, stay whole) while only `origin_shape` of it holds data.

Nothing here moves data: `make_tensor`, `get_tile`, `tile_view` and `make_tensor_like` only build
views.  The runtime reads `origin_shape`: copies and `mmad` move and compute the valid extent
only (`apdsl.runtime.ascend.dma`), and `t.numpy()` of a tile returns the valid extent.

Clipping follows CATLASS: a tile's valid extent is clipped against its parent *view's* own
valid extent, measured from the parent's start:
`origin[d] = min(shape[d], max(parent_origin[d] - coord[d], 0))`.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslTypeError, FormatError
from ..records import record, replace
from . import formats, targets
from .dtypes import DType
from .dtypes import dtype as to_dtype
from .layout import Layout
from .machine import current
from .view import Tensor, ndarray
from .view import cache as viewcache
from .view.cache import exact_ints
from .view.core import (  # noqa: F401 - valid extents, also asked for here by the runtime
    sub_view_fields,
    untile,
    valid_shape,
)
from .view.tiles import (  # noqa: F401 - valid extents, also asked for here by the runtime
    reach,
    region,
    root_layout,
    valid_view,
)

Shape = tuple[int, ...]


def _err(code: str, message: str, **kw: Any) -> FormatError:
    return FormatError(message, code=code, **kw)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _ints(value: Any, op: str, what: str, *, rank: int | None = None, low: int = 0,
          code: str = "APK532") -> Shape:
    """A flat tuple of ints >= `low` (and of length `rank` when given)."""
    if _is_int(value):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(_is_int(v) for v in value):
        raise ApdslTypeError(f"{op}: {what} must be a tuple of ints, got {value!r}",
                             code="APK111", help=f"for example {what}=(0, 0)")
    out = tuple(int(v) for v in value)
    if rank is not None and len(out) != rank:
        raise _err(code, f"{op}: {what} {out} has {len(out)} entries; the tensor has rank "
                   f"{rank}", help=f"give one entry per dimension ({rank})",
                   value=out, rank=rank)
    bad = [v for v in out if v < low]
    if bad:
        raise _err(code, f"{op}: {what} {out} has an entry below {low}",
                   help=f"every entry of {what} must be >= {low}", value=out)
    return out


def _tensor(x: Any, op: str, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ApdslTypeError(f"{op}: {what} must be a tensor, got {type(x).__name__}",
                             code="APK111")
    return x


def _plain_static(t: Tensor, op: str) -> None:
    if t.dynamic is not None or not t.layout.static:
        raise _err("APK539", f"{op}: {t.name} has a runtime index or register-sized pattern, "
                   "so it cannot be a TLA tensor", help="build tiles from static views; "
                   "select dynamically after tiling, not before")


# =============================================================================================
# Layouts
# =============================================================================================

@record
class TlaLayout:
    """`make_layout`'s result: per dimension a size and a stride, or (CuTe-style nested modes,
    inner first) a tuple of sizes and a tuple of strides, plus the valid extent."""

    shape: tuple[Any, ...]
    stride: tuple[Any, ...]
    origin_shape: Shape

    @property
    def logical_shape(self) -> Shape:
        return tuple(prod(n) if isinstance(n, tuple) else n for n in self.shape)

    def modes(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        out = []
        for n, s in zip(self.shape, self.stride):
            out.append(tuple(zip(n, s)) if isinstance(n, tuple) else ((n, s),))
        return tuple(out)

    def to_layout(self, base: int = 0) -> Layout:
        return Layout.from_modes(self.logical_shape, self.modes(), base)

    def __repr__(self) -> str:
        return (f"Layout(shape={self.shape}, stride={self.stride}, "
                f"origin_shape={self.origin_shape})")

    __str__ = __repr__


def _mode_entry(n: Any, s: Any, k: int) -> tuple[Any, Any]:
    if _is_int(n) and _is_int(s):
        if n < 1:
            raise _err("APK530", f"make_layout: size {n} of dim {k} must be >= 1")
        return int(n), int(s)
    if isinstance(n, (tuple, list)) and isinstance(s, (tuple, list)) and n \
            and len(n) == len(s) and all(_is_int(v) for v in (*n, *s)):
        if any(v < 1 for v in n):
            raise _err("APK530", f"make_layout: nested sizes {tuple(n)} of dim {k} must be >= 1")
        return tuple(int(v) for v in n), tuple(int(v) for v in s)
    raise _err("APK530", f"make_layout: dim {k} has size {n!r} and stride {s!r}; each dim is "
               "an int size with an int stride, or a tuple of sizes (inner first) with a tuple "
               "of strides of the same length",
               help="e.g. make_layout((8, 16), (16, 1)) or, for a zN fractal layout, "
               "make_layout(((16, 2), (16, 2)), ((16, 256), (1, 512)))")


def make_layout(shape: Any, stride: Any, origin_shape: Any = None) -> TlaLayout:
    """A layout from sizes and strides (in elements); `origin_shape` is the valid extent
    (default: the whole shape).

    >>> apdsl.make_layout((4, 8), (8, 1))
    Layout(shape=(4, 8), stride=(8, 1), origin_shape=(4, 8))
    """
    if not isinstance(shape, (tuple, list)) or not isinstance(stride, (tuple, list)) \
            or not shape or len(shape) != len(stride):
        raise _err("APK530", f"make_layout: shape {shape!r} and stride {stride!r} must be "
                   "tuples of the same length", help="one stride per dimension")
    entries = [_mode_entry(n, s, k) for k, (n, s) in enumerate(zip(shape, stride))]
    lay = TlaLayout(tuple(n for n, _ in entries), tuple(s for _, s in entries), ())
    full = lay.logical_shape
    if origin_shape is None:
        return replace(lay, origin_shape=full)
    origin = _ints(origin_shape, "make_layout", "origin_shape", code="APK531")
    if len(origin) != len(full) or any(o > n for o, n in zip(origin, full)):
        raise _err("APK531", f"make_layout: origin_shape {origin} does not fit the shape {full}",
                   help="the valid extent has one entry per dimension, each at most the size",
                   origin_shape=origin, shape=full)
    return replace(lay, origin_shape=origin)


# =============================================================================================
# Tensors and tiles
# =============================================================================================

def _shift(layout: Layout, start: Shape, shape: Shape) -> Layout:
    """The layout seen from logical coordinate `start`, with extent `shape` (which may pass the
    parent's shape: a tile's padding continues the parent's strides)."""
    for k, (a, n) in enumerate(zip(start, shape)):
        if a != 0 or n != layout.dims[k].size:
            layout = layout.slice(k, a, a + n)
    return layout


def _nested(t: Tensor) -> bool:
    return any(len(d.modes) > 1 for d in t.layout.dims) or formats.lookup(t.format).fractal


def make_tensor(t: Any, layout: Any = None, coord: Any = None) -> Tensor:
    """A TLA view of `t`'s data: through `layout` (default `t`'s own) from logical coordinate
    `coord` (default all zeros).  `coord` becomes the view's `coord`; the valid extent is the
    layout's `origin_shape` (or `t`'s valid extent).

    >>> A = apdsl.ndarray((8, 16), "float16", "gm")
    >>> p = apdsl.make_tensor(A, coord=(1, 5))
    >>> p.coord, p.origin_shape
    ((1, 5), (8, 16))
    """
    t = _tensor(t, "make_tensor", "t")
    _plain_static(t, "make_tensor")
    if layout is None:
        base, origin = t.layout, valid_shape(t)
    elif isinstance(layout, TlaLayout):
        base, origin = layout.to_layout(_int_offset(t)), layout.origin_shape
    elif isinstance(layout, Layout):
        base = Layout(layout.dims, layout.base - layout.offset + _int_offset(t))
        origin = base.shape
    else:
        raise ApdslTypeError(f"make_tensor: layout must come from make_layout, got "
                             f"{type(layout).__name__}", code="APK111")
    rank = base.ndim
    start = (0,) * rank if coord is None else _ints(coord, "make_tensor", "coord", rank=rank)
    return Tensor(t.storage, t.dtype, _shift(base, start, base.shape), label=t.label,
                  coord=start, origin_shape=tuple(origin))


def _int_offset(t: Tensor) -> int:
    """The view's first storage element (static: callers checked with `_plain_static`)."""
    return int(t.layout.offset)


# Views are immutable and a tile is a function of its parent and arguments, so a loop that cuts
# the same tile again (A's tiles for every N tile of a GEMM) gets the same object back, with
# every plan the runtime keeps on it.  The tiles are children of their parent view
# (`viewcache`: on the parent, bounded, dying with it), keyed by the arguments' exact values:
# only tuples and lists of plain ints are keys (`True` and `np.int64(1)` hash like 1 but are
# checked differently), and only a tile that was made is kept, so a bad argument raises its
# error every time.

def _kept(t: Any, key: tuple[Any, ...]) -> Any:
    """The child of `t` kept under `key`, or None."""
    kids = viewcache.kids_of(t)
    return None if kids is None else kids.get(key)


def _memoised(parent: Any, key: Any, make: Callable[[], Tensor]) -> Tensor:
    """`make()`, or the tensor it made before for the same parent and key.  A key holding None
    (an argument not vouched for), or a parent that is not a tensor, is not memoised: `make`
    checks the arguments and reports any mistake."""
    if type(parent) is not Tensor or None in key:
        return make()
    hit = _kept(parent, key)
    return hit if hit is not None else viewcache.keep(parent, key, make())


def get_tile(t: Any, coord: Any, shape: Any) -> Tensor:
    """The tile of `shape` at element coordinate `coord` of `t` (a view, no copy).  Its coord is
    `t.coord + coord`; its valid extent is clipped against `t`'s own valid extent.

    >>> A = apdsl.ndarray((8, 16), "float16", "gm")
    >>> p = apdsl.make_tensor(A, coord=(1, 5))
    >>> tile = apdsl.get_tile(p, (6, 10), (4, 8))
    >>> tile.coord, tile.origin_shape                     # clipped to the parent's extent
    ((7, 15), (2, 6))
    """
    key = ("get_tile", exact_ints(coord), exact_ints(shape))  # None parts: never kept
    if type(t) is Tensor:
        kids = viewcache.kids_of(t)
        if kids is not None:
            hit = kids.get(key)
            if hit is not None:
                return hit
    return _cut("get_tile", t, coord, shape, key, ("coord", "shape"))


def tile_view(t: Any, tile_coord: Any, tile_shape: Any) -> Tensor:
    """`get_tile(t, tile_coord * tile_shape, tile_shape)`: the tile numbered `tile_coord`.

    >>> A = apdsl.ndarray((8, 16), "float16", "gm")
    >>> tile = apdsl.tile_view(A, (1, 1), (4, 8))
    >>> tile.coord, tile.shape
    ((4, 8), (4, 8))
    """
    key = ("tile_view", exact_ints(tile_coord), exact_ints(tile_shape))
    if type(t) is Tensor:
        kids = viewcache.kids_of(t)
        if kids is not None:
            hit = kids.get(key)
            if hit is not None:
                return hit
    return _cut("tile_view", t, tile_coord, tile_shape, key, ("tile_coord", "tile_shape"))


def _cut(op: str, t: Any, coord: Any, shape: Any, key: tuple[Any, ...],
         names: tuple[str, str]) -> Tensor:
    """A tile not kept yet: every argument checked, the tile made and kept (when `key` holds
    the arguments' exact values)."""
    parent = _tensor(t, op, "t")
    _plain_static(parent, op)
    rank = parent.ndim
    _, c, s = key
    if c is None or len(c) != rank or (c and min(c) < 0):
        c = _ints(coord, op, names[0], rank=rank)
    if s is None or len(s) != rank or (s and min(s) < 1):
        s = _ints(shape, op, names[1], rank=rank, low=1)
    start = c if op == "get_tile" else tuple(a * n for a, n in zip(c, s))
    tile = _tile(parent, start, s, op)
    return tile if None in key else viewcache.keep(t, key, tile)


def _tile(t: Tensor, c: Shape, s: Shape, op: str) -> Tensor:
    if t.ndim != 2 and _nested(t):
        raise _err("APK533", f"{op}: {t.name} has a nested (fractal) layout of rank {t.ndim}; "
                   "nested layouts tile in rank 2 only", notes=[f"format {t.format}, shape "
                                                                f"{tuple(t.shape)}"],
                   help="index the batch dimensions away first (t[b, :, :]), then tile the "
                   "matrix")
    parent = valid_shape(t)
    origin = tuple(min(n, max(p - a, 0)) for n, p, a in zip(s, parent, c))
    base = t.coord if t.coord is not None else (0,) * t.ndim
    return Tensor(t.storage, t.dtype, _shift(t.layout, c, s), label=t.label,
                  coord=tuple(b + a for b, a in zip(base, c)), origin_shape=origin)


# -- make_tensor_like -------------------------------------------------------------------------

def _padded(fmt: str, origin: Shape, dt: DType, buffer: str) -> Shape:
    """`origin` rounded up to whole fractals of `fmt` (at least one element a dimension)."""
    return formats.stored(fmt, tuple(max(n, 1) for n in origin), dt, buffer).padded


def _format_layout(fmt: str, shape: Shape, dt: DType, buffer: str, offset: int) -> Layout:
    return formats.stored(fmt, shape, dt, buffer).layout(offset)


def _base_layout(layout_base: Any, fmt: str, dt: DType, buffer: str) -> Layout:
    """`layout_base` as a layout starting at offset 0: a tensor's or make_layout's layout, or a
    shape (the format's layout of that full tile, as CATLASS's MakeLayout<T, Tag>(m, k))."""
    if isinstance(layout_base, Tensor):
        lay = layout_base.layout
    elif isinstance(layout_base, TlaLayout):
        lay = layout_base.to_layout()
    elif isinstance(layout_base, Layout):
        lay = layout_base
    elif isinstance(layout_base, (tuple, list)):
        shape = _ints(layout_base, "make_tensor_like", "layout_base", low=1)
        formats.check_buffer(fmt, buffer)
        return _format_layout(fmt, shape, dt, buffer, 0)
    else:
        raise ApdslTypeError("make_tensor_like: layout_base must be a tensor, a make_layout "
                             f"layout or a shape, got {type(layout_base).__name__}",
                             code="APK111")
    if not lay.static:
        raise _err("APK539", "make_tensor_like: layout_base has register strides or counts")
    return Layout(lay.dims, lay.base - lay.offset)


def make_tensor_like(target: Any, like: Any, format: Any, dtype: Any = None,
                     layout_base: Any = None) -> Tensor:
    """A tile in another buffer for the data of `like`: same valid extent (`like.origin_shape`),
    its shape rounded up to whole fractals of `format`.

    `target` is a buffer name (new storage) or a tensor whose storage the tile binds (as CATLASS
    binds `l1ATensorList[i]`); a bound tile starts unwritten, like any new tile.  `layout_base`
    (L1 only) fixes the full tile's layout (a tensor, a make_layout layout or a full-tile shape);
    L0 layouts are fixed by the valid extent.  No data moves.

    >>> A = apdsl.ndarray((8, 16), "float16", "gm")
    >>> tile = apdsl.get_tile(A, (6, 10), (4, 8))
    >>> l1 = apdsl.make_tensor_like("l1", tile, "NZ")
    >>> l1.buffer, l1.format, l1.shape, l1.origin_shape
    ('l1', 'NZ', (16, 16), (2, 6))
    """
    if type(target) is Tensor:
        key, held = _like_key(like, format, dtype, layout_base)
        kids = viewcache.kids_of(target)
        hit = None if kids is None or key is None else kids.get(key)
        if hit is not None and hit[0] is held:
            tile = hit[1]
        else:
            tile = _bound(target, like, format, dtype, layout_base)
            if key is not None:
                viewcache.keep(target, key, (held, tile))
        current().device.forget(tile)  # bound again, it is unwritten again: every call
        return tile
    like = _like(like)
    origin = valid_shape(like)
    fmt = formats.canonical(format)
    dt = like.dtype if dtype is None else to_dtype(dtype)
    buffer = targets.buffer_name(target)
    formats.check_buffer(fmt, buffer)
    if layout_base is None:
        t = ndarray(_padded(fmt, origin, dt, buffer), dt, buffer, fmt)
        return replace(t, coord=(0,) * len(origin), origin_shape=origin)
    _l1_only(buffer)
    base = _base_layout(layout_base, fmt, dt, buffer)
    _covers(base.shape, origin)
    if isinstance(layout_base, (tuple, list)):
        t = ndarray(base.shape, dt, buffer, fmt)
    else:
        from .storage import Storage
        lo, hi = base.span()
        if lo < 0:
            raise _err("APK536", "make_tensor_like: layout_base reaches before its start "
                       f"(offset {lo})", help="use non-negative strides")
        storage = Storage(base.shape, dt, buffer, format=fmt, storage_elements=hi + 1)
        t = Tensor(storage, dt, base)
    return replace(t, coord=(0,) * len(origin), origin_shape=origin)


def _like(like: Any) -> Tensor:
    like = _tensor(like, "make_tensor_like", "like")
    if like.ndim > 2:
        raise _err("APK534", f"make_tensor_like: like {like.name} has rank {like.ndim}; "
                   "make_tensor_like supports rank <= 2", notes=[f"shape {tuple(like.shape)}"],
                   help="tile the matrix part: index the batch dimensions away first")
    return like


def _like_key(like: Any, format: Any, dtype: Any, layout_base: Any) -> tuple[Any, Any]:
    """The child key of a bound tile, found without building its value key (`_bound`): the
    tile depends on `like` only through its valid extent and dtype, and on a tensor
    `layout_base` only through its layout, keyed by identity and held by the kept entry (so
    the id stays that layout's; the tensor itself is not held).  (None, None): not kept."""
    if type(like) is not Tensor or dtype is not None or type(format) is not str:
        return None, None
    origin = like.origin_shape
    origin = exact_ints(like.layout.shape if origin is None else origin)
    if origin is None:
        return None, None
    if layout_base is None:
        return ("like", origin, like.dtype.name, format, None), None
    if type(layout_base) is not Tensor:
        return None, None
    held = layout_base.layout
    return ("like", origin, like.dtype.name, format, id(held)), held


def _bound(target: Tensor, like: Any, format: Any, dtype: Any, layout_base: Any) -> Tensor:
    """The tile of `like`'s valid extent bound to `target`'s storage, every argument checked;
    kept on `target` by value (equal arguments: the same tile)."""
    like = _like(like)
    origin = valid_shape(like)
    fmt = formats.canonical(format)
    dt = like.dtype if dtype is None else to_dtype(dtype)
    return _memoised(target, ("bind", origin, fmt, dt, _base_key(layout_base)),
                     lambda: _bind(target, origin, fmt, dt, layout_base))


def _base_key(layout_base: Any) -> Any:
    """The memo key part for `layout_base`.  Never the tensor itself: the memo is weakly keyed
    on the target, and a value-side reference to a tensor (commonly the target again, as in
    `make_tensor_like(buf, tile, fmt, layout_base=buf)`) would keep the target and its storage
    alive forever.  A tensor's layout (as `_base_layout` uses it) is what the tile depends on."""
    if layout_base is None:
        return ()
    if isinstance(layout_base, Tensor):
        lay = layout_base.layout
        return ("layout", Layout(lay.dims, lay.base - lay.offset)) if lay.static else None
    if isinstance(layout_base, TlaLayout):
        return layout_base
    return exact_ints(layout_base)


def _l1_only(buffer: str) -> None:
    if buffer != "l1":
        raise _err("APK535", f"make_tensor_like: layout_base is for L1 tiles; a {buffer} "
                   "tile's layout is fixed by its valid extent",
                   help="drop layout_base: L0 tiles are laid out from origin_shape rounded up "
                   "to whole fractals", buffer=buffer)


def _covers(full: Shape, origin: Shape) -> None:
    if len(full) != len(origin) or any(o > n for o, n in zip(origin, full)):
        raise _err("APK536", f"make_tensor_like: the full tile {full} of layout_base does not "
                   f"cover the valid extent {origin}",
                   help="give layout_base the largest tile shape of the loop", shape=full,
                   origin_shape=origin)


def _bind(target: Tensor, origin: Shape, fmt: str, dt: DType, layout_base: Any) -> Tensor:
    _plain_static(target, "make_tensor_like")
    if target.format != fmt or target.dtype != dt:
        what = (f"format {target.format}" if target.format != fmt else f"dtype {target.dtype}")
        want = fmt if target.format != fmt else dt
        raise _err("APK537", f"make_tensor_like: target {target.name} has {what}; the tile "
                   f"needs {want}", notes=[f"target {target.storage.describe()}"
                                           + (f" as {target.format}" if target.format != "ND"
                                              else "")],
                   help=f"declare the buffer `as {fmt}` with dtype {dt}, or pass that "
                   "format and dtype", format=target.format, dtype=str(target.dtype))
    offset = _int_offset(target)
    if layout_base is None:
        layout = _format_layout(fmt, _padded(fmt, origin, dt, target.buffer), dt,
                                target.buffer, offset)
    else:
        _l1_only(target.buffer)
        base = _base_layout(layout_base, fmt, dt, target.buffer)
        _covers(base.shape, origin)
        layout = Layout(base.dims, base.base + offset)
    lo, hi = layout.span()
    limit = target.storage.nbytes * 8 // dt.bits
    if lo < 0 or hi >= limit:
        raise _err("APK536", f"make_tensor_like: a {layout.shape} tile in {fmt} needs storage "
                   f"elements {lo}..{hi}; {target.name} has {limit}",
                   notes=[f"valid extent {origin}, target {target.storage.describe()}"],
                   help="declare the buffer with the largest tile shape the loop uses",
                   needed=hi + 1, capacity=limit)
    return Tensor(target.storage, dt, layout, label=target.label, coord=(0,) * len(origin),
                  origin_shape=origin)


def fractal_view(flat: Tensor, fmt: str, shape: Shape, op: str, role: str) -> Tensor:
    """The `shape` matrix laid out in fractal format `fmt` from where the one-dimensional view
    `flat` starts: how a cube instruction's parameters arrange a flat buffer's bytes (pyasc's
    LocalTensors are a start address and a length; `mmad`'s m, n and k say what the L0A, L0B
    and L0C bytes hold).  The view keeps `flat`'s storage (written state, races and reuse are
    its); APK536 when the matrix reaches past `flat`'s end."""
    _plain_static(flat, op)
    start = _int_offset(flat)
    lay = formats.stored(fmt, shape, flat.dtype, flat.buffer).layout(start)
    lo, hi = lay.span()
    end = start + int(flat.size)
    if hi >= end:
        raise _err("APK536", f"{op}: {role} {flat.name} holds {flat.size} {flat.dtype} "
                   f"elements; a {shape[0]} x {shape[1]} matrix in {fmt} reaches its element "
                   f"{hi - start}", notes=[f"{fmt} lays a matrix out in whole fractals "
                                           "(16 rows, and 32 bytes or 16 columns)"],
                   help="make the tensor large enough for the whole fractals, or lower the "
                   "sizes", needed=hi - start + 1, capacity=int(flat.size))
    return Tensor(flat.storage, flat.dtype, lay, label=flat.label)
