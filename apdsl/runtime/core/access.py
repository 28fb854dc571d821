"""Accesses: a view made concrete for one execution, in the cheapest form NumPy can address.

- `Strided`: a static regular layout of a >= 8-bit dtype is one zero-copy strided array over the
  storage bytes, with the leaf shape and strides of the pattern (row-major over the leaves is the
  logical row-major order, so no per-element work is ever needed);
- `Pieces`: a layout that is not one pattern is a few strided arrays, each owning a box of the
  logical array;
- `Rows`: a per-partition runtime row index (`vector_select`, `.ap(vector_offset=)`) over a
  regular rest is a gather along the first axis of a strided row array (`np.take`);
- `Indexed`: everything else (Tensor Indirection, int4, irregular gathers) uses an array of
  storage offsets; `IndexedRows` is one whose rows come from a per-partition runtime index.

`apdsl.runtime.core.resolve` makes them; `apdsl.runtime.core.written` and `apdsl.runtime.core.move` use them.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor import budget
from ...tensor.dtypes import DType
from ...tensor.layout import Layout, is_injective, strided_offsets, terms_injective
from ...tensor.storage import Storage


def fmt_coord(coord: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(c)) for c in coord) + "]"


def oom(op: str, role: str, storage: Storage, e: MemoryError) -> ApdslRuntimeError:
    """APK431 for a NumPy MemoryError while an instruction works on `storage`."""
    return budget.out_of_memory(f"{op}: working on {role} {storage.describe()}", e,
                                tensor=storage.name)


class Access:
    """A view made concrete for one execution.  `shape` is the resolved logical shape."""

    # No reference to the Tensor itself: accesses of static views are cached per tensor (weakly
    # keyed), and a value referring to its key would keep it alive.
    __slots__ = ("name", "storage", "dtype", "shape", "size", "layout")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 layout: Layout | None) -> None:
        self.name = name
        self.storage = storage
        self.dtype = dtype
        self.shape = shape
        self.size = prod(shape)
        self.layout = layout  # the static layout, when there is one

    # Each kind implements these.
    def read(self) -> np.ndarray:
        """A new array of the logical contents (shape `self.shape`, dtype `self.dtype.np`)."""
        raise NotImplementedError

    def write(self, values: np.ndarray) -> None:
        """Store `values` (logical shape, already of `self.dtype`)."""
        raise NotImplementedError

    def offsets(self) -> np.ndarray:
        """The storage offset (in elements of `self.dtype`) of every logical element."""
        raise NotImplementedError

    def written(self) -> np.ndarray | bool:
        """True when every touched unit is written, else a logical-shaped bool array (only
        computed on the slow path)."""
        ok = mask_at(self.storage, self.dtype, self.offsets())
        return True if ok.all() else ok

    def mark(self) -> int:
        """Mark the touched units written (the storage's unit is at most this access's element,
        see `mark_written`); returns how many were new."""
        return _set_at(self.storage, self.dtype, self.offsets(), True)

    def unmark(self) -> int:
        """Mark the touched units unwritten; returns how many were written before."""
        return _set_at(self.storage, self.dtype, self.offsets(), False)

    def injective(self) -> bool:
        """True when the access provably touches no element twice (no computation of offsets
        for the common case)."""
        return False


def units_of(dtype: DType, storage: Storage, offsets: np.ndarray) -> np.ndarray:
    """Written-state units touched by view elements at `offsets`: shape `offsets.shape` when a
    view element lies within one unit (exact for reads: no narrower write ever happened, or
    the unit would be finer), else with a trailing axis of the ratio."""
    eb, ub = dtype.bits, storage.unit_bits
    if eb == ub:
        return offsets
    if eb < ub:
        return (offsets * eb) // ub
    r = eb // ub
    return offsets[..., None] * r + np.arange(r)


def mask_at(storage: Storage, dtype: DType, offsets: np.ndarray) -> np.ndarray:
    """Written yet? for the view elements of `dtype` at storage `offsets` (their shape)."""
    ok = storage.mask[units_of(dtype, storage, offsets)]
    return ok.all(axis=-1) if dtype.bits > storage.unit_bits else ok


def _set_at(storage: Storage, dtype: DType, offsets: np.ndarray, value: bool) -> int:
    """Set the units under `offsets` to `value`; returns how many changed."""
    units = np.unique(units_of(dtype, storage, offsets))
    mask = storage.mask
    before = int(np.count_nonzero(mask[units]))
    mask[units] = value
    return units.size - before if value else before






# Byte strides per (element strides, item size): a fresh tile's access makes its array once,
# and a loop's tiles share a few patterns.
_BYTE_STRIDES: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}


class Strided(Access):
    """A static regular layout: one strided array over the storage bytes."""

    __slots__ = ("offset", "lshape", "lstrides", "_arr", "_inj")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 layout: Layout | None, offset: int, lshape: tuple[int, ...],
                 lstrides: tuple[int, ...]) -> None:
        # (Access.__init__ inlined: one of these is made for every fresh view an instruction
        # uses; the leaf counts multiply to the size, count-1 leaves being dropped)
        self.name = name
        self.storage = storage
        self.dtype = dtype
        self.shape = shape
        self.size = prod(lshape)
        self.layout = layout
        self.offset = offset
        self.lshape = lshape  # leaf counts (count-1 leaves dropped), outermost first
        self.lstrides = lstrides  # in elements of `dtype`
        self._arr: np.ndarray | None = None
        self._inj: bool | None = None

    def array(self) -> np.ndarray:
        """The zero-copy strided view (leaf shape) over the storage (made once: the storage's
        bytes never move)."""
        arr = self._arr
        if arr is None:
            npd = self.dtype.np
            item = npd.itemsize
            key = (self.lstrides, item)
            strides = _BYTE_STRIDES.get(key)
            if strides is None:
                strides = tuple([s * item for s in self.lstrides])
                if len(_BYTE_STRIDES) >= 1024:  # (bounded: a loop over ever new patterns)
                    _BYTE_STRIDES.clear()
                _BYTE_STRIDES[key] = strides
            arr = self._arr = np.ndarray(self.lshape, npd, buffer=self.storage.data,
                                         offset=self.offset * item, strides=strides)
        return arr

    def read(self) -> np.ndarray:
        return self.array().copy().reshape(self.shape)

    def write(self, values: np.ndarray) -> None:
        np.copyto(self.array(), np.reshape(values, self.lshape))

    def offsets(self) -> np.ndarray:
        return strided_offsets(self.offset, self.lshape, self.lstrides).reshape(self.shape)

    def _mask_array(self) -> np.ndarray | None:
        """The written-mask seen through the same pattern (None when a view element is a
        fraction of a unit; those take the offset path)."""
        eb, ub = self.dtype.bits, self.storage.unit_bits
        if eb < ub:
            return None
        r = eb // ub
        mask = self.storage.mask
        if r == 1:
            return np.ndarray(self.lshape, np.bool_, buffer=mask, offset=self.offset,
                              strides=self.lstrides)
        return np.ndarray(self.lshape + (r,), np.bool_, buffer=mask, offset=self.offset * r,
                          strides=tuple(s * r for s in self.lstrides) + (1,))

    def written(self) -> np.ndarray | bool:
        m = self._mask_array()
        if m is None:
            return super().written()
        if m.all():
            return True
        if m.ndim > len(self.lshape):
            m = m.all(axis=-1)
        return m.reshape(self.shape)

    def mark(self) -> int:
        m = self._mask_array()
        if m is None:
            return super().mark()
        new = m.size - int(np.count_nonzero(m))
        m[...] = True
        return new

    def unmark(self) -> int:
        m = self._mask_array()
        if m is None:
            return super().unmark()
        before = int(np.count_nonzero(m))
        m[...] = False
        return before

    def injective(self) -> bool:
        inj = self._inj
        if inj is None:
            ls, lt = self.lshape, self.lstrides
            if len(ls) == 2:  # most tiles: the same test as terms_injective, unrolled
                s0, s1 = abs(lt[0]), abs(lt[1])
                if s0 < s1:
                    s0, s1, c1 = s1, s0, ls[0]
                else:
                    c1 = ls[1]
                inj = s1 > 0 and s0 > s1 * (c1 - 1) and s0 != s1
            else:
                inj = terms_injective((abs(s), abs(s) * (c - 1)) for c, s in zip(ls, lt))
            self._inj = inj
        return inj


class Pieces(Access):
    """A static layout that is several access patterns, each owning a box of the logical
    array."""

    __slots__ = ("parts", "_inj")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 layout: Layout, parts: list[tuple[tuple[slice, ...], Strided]]) -> None:
        super().__init__(name, storage, dtype, shape, layout)
        self.parts = parts
        self._inj: bool | None = None

    def read(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype.np)
        for box, part in self.parts:
            out[box] = part.read()
        return out

    def write(self, values: np.ndarray) -> None:
        for box, part in self.parts:
            part.write(values[box])

    def offsets(self) -> np.ndarray:
        out = np.empty(self.shape, np.int64)
        for box, part in self.parts:
            out[box] = part.offsets()
        return out

    def written(self) -> np.ndarray | bool:
        results = [part.written() for _, part in self.parts]
        if all(r is True for r in results):
            return True
        ok = np.ones(self.shape, bool)
        for (box, _), r in zip(self.parts, results):
            if r is not True:
                ok[box] = r
        return ok

    def mark(self) -> int:
        return sum(part.mark() for _, part in self.parts)

    def unmark(self) -> int:
        return sum(part.unmark() for _, part in self.parts)

    def injective(self) -> bool:
        if self._inj is None:
            self._inj = is_injective(self.layout)
        return self._inj


class Indexed(Access):
    """An explicit array of storage offsets (logical shape)."""

    __slots__ = ("offs", "proven")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 layout: Layout | None, offs: np.ndarray, proven: bool = False) -> None:
        super().__init__(name, storage, dtype, shape, layout)
        self.offs = offs
        self.proven = proven

    def read(self) -> np.ndarray:
        return self.storage.elements(self.dtype)[self.offs]

    def write(self, values: np.ndarray) -> None:
        if self.dtype.bits < 8:
            self.storage.store_int4(self.offs.reshape(-1), np.reshape(values, -1))
        else:
            self.storage.elements(self.dtype)[self.offs] = values

    def offsets(self) -> np.ndarray:
        return self.offs

    def injective(self) -> bool:
        return self.proven


class IndexedRows(Indexed):
    """Rows placed by a per-partition runtime index (`.ap(vector_offset=)`, `vector_select`)
    as explicit offsets (flat or logical shape), knowing for each element its row and its
    column within the row in the view of shape `view_shape`, and the index value of its row
    (`row_keys`): what tells a repeated index from a static overlap
    (`apdsl.runtime.core.scatter`)."""

    __slots__ = ("rows", "cols", "keys", "view_shape")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 offs: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                 keys: np.ndarray, view_shape: tuple[int, ...] | None = None) -> None:
        super().__init__(name, storage, dtype, shape, None, offs)
        self.rows, self.cols, self.keys = rows, cols, keys
        self.view_shape = shape if view_shape is None else view_shape

    @classmethod
    def of_rows(cls, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                offs: np.ndarray, idx: np.ndarray) -> IndexedRows:
        """Every element of `shape` (`shape[0]` rows, row p at index `idx[p]`)."""
        rows, cols, keys = row_keys(shape, idx)
        return cls(name, storage, dtype, shape, offs, rows, cols, keys)

    def row_keys(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, index value) of every element, flat in logical row-major order."""
        return self.rows, self.cols, self.keys


def row_keys(shape: tuple[int, ...], idx: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """(row, column, index value) of every element of a row-indexed access of `shape`."""
    parts = shape[0]
    per = prod(shape[1:])
    rows = np.repeat(np.arange(parts), per)
    return rows, np.tile(np.arange(per), parts), np.asarray(idx).reshape(-1)[rows]


class RowsPlan:
    """The static part of a per-partition row gather over a regular rest: cached per view.
    `rows(data)` is a strided array over the storage's bytes whose first axis steps `scale`
    elements, covering every row whose elements all lie in storage (`limit` rows).  It holds
    no reference to the Storage object (the plans of a storage are kept by it, weakly)."""

    __slots__ = ("name", "dtype", "shape", "scale", "base", "rshape", "rstrides",
                 "limit", "bound", "_rows", "_inj")

    def __init__(self, name: str, dtype: DType, shape: tuple[int, ...],
                 scale: int, base: int, rshape: tuple[int, ...], rstrides: tuple[int, ...],
                 limit: int, bound: int | None) -> None:
        self.name, self.dtype, self.shape = name, dtype, shape
        self.scale, self.base, self.rshape, self.rstrides = scale, base, rshape, rstrides
        self.limit = limit  # valid rows: [0, limit)
        self.bound = bound if bound is not None and bound < limit else limit
        self._rows: np.ndarray | None = None
        terms = [(abs(s), abs(s) * (c - 1)) for c, s in zip(rshape, rstrides)]
        self._inj = terms_injective(terms) and scale > sum(e for _, e in terms)

    def injective(self) -> bool:
        """Whether rows of different indices never meet and a row touches each element once."""
        return self._inj

    def rows(self, data: np.ndarray) -> np.ndarray:
        """The row array over `data`, the storage's bytes (made once: they never move)."""
        if self._rows is None:
            item = self.dtype.np.itemsize
            self._rows = np.ndarray((self.limit,) + self.rshape, self.dtype.np,
                                    buffer=data, offset=self.base * item,
                                    strides=tuple(s * item for s in (self.scale,) + self.rstrides))
        return self._rows


class Rows(Access):
    """Partition p reads the row `idx[p] * scale` (+ the static offset) of a regular rest."""

    __slots__ = ("idx", "plan")

    def __init__(self, plan: RowsPlan, idx: np.ndarray, storage: Storage) -> None:
        super().__init__(plan.name, storage, plan.dtype, plan.shape, None)
        self.idx = idx  # intp, checked to lie in [0, plan.bound)
        self.plan = plan

    def take_into(self, out: np.ndarray) -> None:
        # Indices were checked already; mode="clip" lets NumPy skip its own checks and buffer.
        self.plan.rows(self.storage.data).take(self.idx, axis=0, out=out, mode="clip")

    def read(self) -> np.ndarray:
        return np.take(self.plan.rows(self.storage.data), self.idx, axis=0, mode="clip").reshape(self.shape)

    def write(self, values: np.ndarray) -> None:
        self.plan.rows(self.storage.data)[self.idx] = np.reshape(values, (self.idx.size,) + self.plan.rshape)

    def offsets(self) -> np.ndarray:
        p = self.plan
        rest = strided_offsets(p.base, p.rshape, p.rstrides)
        offs = (self.idx * p.scale).reshape((-1,) + (1,) * len(p.rshape)) + rest
        return offs.reshape(self.shape)

    def written(self) -> np.ndarray | bool:
        p = self.plan
        if self.dtype.bits != self.storage.unit_bits:
            return super().written()
        mask = np.ndarray((p.limit,) + p.rshape, np.bool_, buffer=self.storage.mask,
                          offset=p.base, strides=(p.scale,) + p.rstrides)
        m = np.take(mask, self.idx, axis=0, mode="clip")
        return True if m.all() else m.reshape(self.shape)

    def injective(self) -> bool:
        return self.plan._inj and np.unique(self.idx).size == self.idx.size

    def row_keys(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, index value) of every element, flat in logical row-major order."""
        return row_keys(self.shape, self.idx)
