"""Moving data: reads, writes, fills and copies of resolved accesses, and the whole-view helpers
behind `Tensor.numpy()`, `from_numpy` and the language's load/save."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.dtypes import DType, cast_array, widen_float32
from . import psum, scatter, unwritten
from .access import Access, Rows, Strided, oom
from .resolve import resolve
from .written import check_init, check_unique, mark_written, refine_for_write, set_written

# A transposing copy is done in square tiles of this many elements a side: a tile of each side
# then stays in cache, where NumPy's own transposed copy walks memory a cache line per element.
TILE = 128
_TILE_MIN_ELEMENTS = 4 * TILE * TILE
_TILE_MIN_STRIDE_BYTES = 256

# The one cast of SPEC section 4 (see `apdsl.tensor.dtypes.cast_array`).
cast = cast_array


def _err(code: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(message, code=code, **kw)


# =============================================================================================
# Moving data
# =============================================================================================

def read(acc: Access, op: str, role: str, reads: np.ndarray | None = None) -> np.ndarray:
    """The logical contents of a resolved source (init-checked), as a new array.  `reads`
    (logical shape): only these elements are read (see `check_init`); the others' values in
    the array are whatever the storage holds."""
    try:
        check_init(acc, op, role, reads=reads)
        if acc.storage.buffer == "psum":
            psum.note_read(acc)
        return acc.read()
    except MemoryError as e:
        raise oom(op, role, acc.storage, e) from None


def read_float32(acc: Access, op: str, role: str) -> np.ndarray:
    """`read` converted to float32, in one pass over the storage where the view is strided
    (an engine's arithmetic input)."""
    check_init(acc, op, role)
    if acc.storage.buffer == "psum":
        psum.note_read(acc)
    src = acc.array() if type(acc) is Strided else acc.read()
    out = np.empty(src.shape, np.float32)
    widen_float32(src, out)
    return out.reshape(acc.shape)


def prepare_write(acc: Access, op: str, role: str) -> None:
    """Checks a destination must pass before anything is written (APK405)."""
    check_unique(acc, op, role)


def store(acc: Access, values: np.ndarray, wrote: np.ndarray | None = None) -> None:
    """Write `values` (any dtype; cast by the float32 rule) in logical row-major order.
    `wrote`: a masked write, whose `values` keep the elements it does not change (see
    `mark_written`)."""
    try:
        values = cast(values, acc.dtype)
        if values.shape != acc.shape:
            values = values.reshape(acc.shape)
        acc.write(values)
        mark_written(acc, wrote)
    except MemoryError as e:
        raise oom("write", "dst", acc.storage, e) from None


def store_where(acc: Access, values: np.ndarray, where: np.ndarray) -> None:
    """A masked write: `values` (any dtype, `acc`'s elements in logical order) where `where`
    holds; the other elements keep their contents and written state (unwritten ones stay so)."""
    where = np.asarray(where, bool).reshape(acc.shape)
    before = acc.written()
    store(acc, np.where(where, cast(np.asarray(values).reshape(acc.shape), acc.dtype),
                        acc.read()), where)
    if before is not True:
        set_written(acc, np.asarray(before, bool).reshape(acc.shape) | where, where)


def fill(acc: Access, value: Any) -> None:
    """Write one value (already cast to the access dtype) to every element."""
    try:
        if isinstance(acc, Strided):
            acc.array()[...] = value
        else:
            acc.write(np.full(acc.shape, value, acc.dtype.np))
        mark_written(acc)
    except MemoryError as e:
        raise oom("fill", "dst", acc.storage, e) from None


def copy(dst: Access, src: Access, op: str) -> None:
    """Move `src` into `dst` in logical row-major order (sizes already checked equal).  The
    source is init-checked and the destination duplicate-checked before anything moves (a
    runtime row index that repeats: `scatter`)."""
    try:
        check_init(src, op, "src")
        if not scatter.by_runtime_index(dst):
            check_unique(dst, op, "dst")
        elif dst.injective():
            refine_for_write(dst)
        else:  # a runtime row index that repeats
            ok = True if src.storage.all_written else src.written()
            scatter.write_repeating(dst, src.read(), None if ok is True else ok, op)
            return
        if src.storage.buffer == "psum":
            psum.note_read(src)
        if type(dst) is Strided and type(src) is Strided:
            strided_copy(dst.array(), src.array(), src.dtype != dst.dtype, dst.dtype)
        elif type(dst) is Strided and type(src) is Rows and src.dtype == dst.dtype:
            _gather_copy(dst, src)
        else:
            store(dst, src.read())
            return
        mark_written(dst)
    except MemoryError as e:
        raise oom(op, "dst", dst.storage, e) from None


def _common_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The coarsest shape that both row-major shapes split into (None when there is none)."""
    a, b = [n for n in a if n != 1], [n for n in b if n != 1]
    out: list[int] = []
    i = j = 0
    while i < len(a) and j < len(b):
        x, y = a[i], b[j]
        if x == y:
            out.append(x)
            i, j = i + 1, j + 1
        elif x % y == 0:
            out.append(y)
            a[i] = x // y
            j += 1
        elif y % x == 0:
            out.append(x)
            b[j] = y // x
            i += 1
        else:
            return None
    return tuple(out) if i == len(a) and j == len(b) else None


def plain_pair(d: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`d` and `s` as arrays of one shape (views: nothing copied), when `strided_copy` moves
    them with a single `np.copyto`; None when it gathers the source or copies in tiles."""
    if d.shape != s.shape:
        common = _common_shape(d.shape, s.shape)
        if common is None:
            return None
        d, s = np.reshape(d, common, copy=False), np.reshape(s, common, copy=False)
    if d.size >= _TILE_MIN_ELEMENTS and d.ndim >= 2 and _transpose_axes(d, s) is not None:
        return None
    return d, s


def strided_copy(d: np.ndarray, s: np.ndarray, convert: bool, dtype: DType) -> None:
    if d.shape != s.shape:
        common = _common_shape(d.shape, s.shape)
        if common is not None:  # splitting axes never copies; copy=False makes sure
            d, s = np.reshape(d, common, copy=False), np.reshape(s, common, copy=False)
        else:
            s = s.reshape(d.shape)  # no shared refinement: the source is gathered once
    if d.size >= _TILE_MIN_ELEMENTS and d.ndim >= 2:
        axes = _transpose_axes(d, s)
        if axes is not None:
            if np.may_share_memory(d, s):
                s = s.copy()  # tiles would read what earlier tiles already overwrote
            _tiled_copy(d, s, axes, convert, dtype)
            return
    np.copyto(d, cast(s, dtype) if convert else s)


def _transpose_axes(d: np.ndarray, s: np.ndarray) -> tuple[int, int] | None:
    """(dst's fastest axis, src's fastest axis) when they differ and the source is far from
    contiguous along the destination's fastest axis: the copy is a transpose."""
    def fastest(a: np.ndarray) -> int:
        best, k = None, -1
        for i, (n, st) in enumerate(zip(a.shape, a.strides)):
            if n > 1 and (best is None or abs(st) < best):
                best, k = abs(st), i
        return k
    a, b = fastest(d), fastest(s)
    if a == b or a < 0 or b < 0:
        return None
    if abs(s.strides[a]) < _TILE_MIN_STRIDE_BYTES and abs(d.strides[b]) < _TILE_MIN_STRIDE_BYTES:
        return None
    return a, b


def _tiled_copy(d: np.ndarray, s: np.ndarray, axes: tuple[int, int], convert: bool,
                dtype: DType) -> None:
    a, b = axes
    na, nb = d.shape[a], d.shape[b]
    key: list[Any] = [slice(None)] * d.ndim
    for i in range(0, na, TILE):
        key[a] = slice(i, i + TILE)
        for j in range(0, nb, TILE):
            key[b] = slice(j, j + TILE)
            k = tuple(key)
            np.copyto(d[k], cast(s[k], dtype) if convert else s[k])


def _gather_copy(dst: Strided, src: Rows) -> None:
    d = dst.array()
    shape = (src.idx.size,) + src.plan.rshape
    if dst.storage is src.storage:
        np.copyto(d, src.read().reshape(d.shape))
        return
    if d.flags.c_contiguous:
        src.take_into(d.reshape(shape))
        return
    try:
        out = np.reshape(d, shape, copy=False)
    except ValueError:
        np.copyto(d, src.read().reshape(d.shape))
        return
    src.take_into(out)



# =============================================================================================
# Whole-view helpers used by Tensor.numpy(), from_numpy and the language's load/save
# =============================================================================================

def read_view(t: Any, *, op: str = "read", role: str = "view") -> np.ndarray:
    """The logical contents of view `t` as a new array (shape `t.shape`, dtype `t.dtype.np`).
    Reading unwritten memory is APK404 (APK412 for data computed from it) unless init
    checking is off: a host read is an observable point."""
    acc = resolve(t, op, role)
    check_init(acc, op, role, observed=True)
    return acc.read()  # a host read: PSUM accumulation state is left alone


def write_view(t: Any, values: Any, *, op: str = "write", role: str = "view") -> None:
    """Write `values` through view `t` (cast to `t.dtype` by the float32 rule), marking the
    elements written.  `values` must have `t`'s number of elements (taken in row-major order)."""
    acc = resolve(t, op, role)
    arr = np.asarray(values)
    if arr.size != acc.size:
        raise _err("APK411", f"{op}: {arr.size} values {tuple(arr.shape)} do not fit {role} "
                   f"{t.name} of shape {acc.shape} ({acc.size} elements)",
                   help="the value must have as many elements as the view",
                   shape=tuple(arr.shape), view_shape=acc.shape)
    prepare_write(acc, op, role)
    unwritten.begin()  # a host write depends on no instruction's reads
    store(acc, arr)
