"""Executing views on NumPy: turning a view into something NumPy can address, and moving data.

`resolve(t)` produces an `Access`, the view made concrete for one execution: registers and
runtime indices read, every bound checked (before any data moves), and the view in the cheapest
form NumPy can address:

- `Strided`: a static regular layout of a >= 8-bit dtype is one zero-copy strided array over the
  storage bytes, with the leaf shape and strides of the pattern (row-major over the leaves is the
  logical row-major order, so no per-element work is ever needed);
- `Pieces`: a layout that is not one pattern is a few strided arrays, each owning a box of the
  logical array;
- `Rows`: a per-partition runtime row index (`vector_select`, `.ap(vector_offset=)`) over a
  regular rest is a gather along the first axis of a strided row array (`np.take`);
- `Indexed`: everything else (Tensor Indirection, int4, irregular gathers) uses an array of
  storage offsets.

Memory starts unwritten: `Storage.mask` records written units (a unit is a native element until
a narrower view writes, then that view's element: per byte, per nibble; see `Storage.refine`)
until a write covers the whole storage (`note_written_all`), after which checks cost nothing.
A view element is written when all of its units are.  Reads check the mask when
`options.init_check` is on; writes mark it always, so the option can change at any time.
"""

from __future__ import annotations

import weakref
from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, TargetError, Warning_
from ..tensor import budget, registers, targets
from ..tensor.dtypes import DType, cast_array
from ..tensor.layout import Dim, Layout, is_static
from ..tensor.machine import current
from ..tensor.registers import VirtualRegister
from ..tensor.storage import Storage
from . import psum, trace

TI_GROUP = 16  # Tensor Indirection group size of the vector/scalar/gpsimd engines
TI_GROUP_MATMUL = 32  # ... and of the tensor engine (nc_matmul operands)

# A transposing copy is done in square tiles of this many elements a side: a tile of each side
# then stays in cache, where NumPy's own transposed copy walks memory a cache line per element.
TILE = 128
_TILE_MIN_ELEMENTS = 4 * TILE * TILE
_TILE_MIN_STRIDE_BYTES = 256
_INTP_MAX = int(np.iinfo(np.intp).max)

# Units newly marked written per partly written storage (see `_mark_written`).
_written_count: weakref.WeakKeyDictionary[Storage, int] = weakref.WeakKeyDictionary()


# The one cast of SPEC section 4 (see `apdsl.tensor.dtypes.cast_array`).
cast = cast_array


def _err(code: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(message, code=code, **kw)


def _fmt_coord(coord: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(c)) for c in coord) + "]"


# =============================================================================================
# Accesses
# =============================================================================================

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
        ok = _mask_at(self.storage, self.dtype, self.offsets())
        return True if ok.all() else ok

    def mark(self) -> int:
        """Mark the touched units written (the storage's unit is at most this access's element,
        see `_mark_written`); returns how many were new."""
        return _set_at(self.storage, self.dtype, self.offsets(), True)

    def unmark(self) -> int:
        """Mark the touched units unwritten; returns how many were written before."""
        return _set_at(self.storage, self.dtype, self.offsets(), False)

    def injective(self) -> bool:
        """True when the access provably touches no element twice (no computation of offsets
        for the common case)."""
        return False


def _units(dtype: DType, storage: Storage, offsets: np.ndarray) -> np.ndarray:
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


def _mask_at(storage: Storage, dtype: DType, offsets: np.ndarray) -> np.ndarray:
    ok = storage.mask[_units(dtype, storage, offsets)]
    return ok.all(axis=-1) if dtype.bits > storage.unit_bits else ok


def _set_at(storage: Storage, dtype: DType, offsets: np.ndarray, value: bool) -> int:
    """Set the units under `offsets` to `value`; returns how many changed."""
    units = np.unique(_units(dtype, storage, offsets))
    mask = storage.mask
    before = int(np.count_nonzero(mask[units]))
    mask[units] = value
    return units.size - before if value else before


def _pattern_bounds(offset: int, shape: tuple[int, ...], strides: tuple[int, ...]
                    ) -> tuple[int, int]:
    lo = hi = offset
    for c, s in zip(shape, strides):
        ext = s * (c - 1)
        if ext < 0:
            lo += ext
        else:
            hi += ext
    return lo, hi


def _strided_offsets(offset: int, shape: tuple[int, ...], strides: tuple[int, ...]
                     ) -> np.ndarray:
    out = np.full((), offset, dtype=np.int64)
    n = len(shape)
    for k, (c, s) in enumerate(zip(shape, strides)):
        out = out + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    return np.broadcast_to(out, shape)


class Strided(Access):
    """A static regular layout: one strided array over the storage bytes."""

    __slots__ = ("offset", "lshape", "lstrides", "_arr", "_inj")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 layout: Layout | None, offset: int, lshape: tuple[int, ...],
                 lstrides: tuple[int, ...]) -> None:
        super().__init__(name, storage, dtype, shape, layout)
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
            item = self.dtype.np.itemsize
            arr = self._arr = np.ndarray(self.lshape, self.dtype.np, buffer=self.storage.data,
                                         offset=self.offset * item,
                                         strides=tuple(s * item for s in self.lstrides))
        return arr

    def read(self) -> np.ndarray:
        return self.array().copy().reshape(self.shape)

    def write(self, values: np.ndarray) -> None:
        np.copyto(self.array(), np.reshape(values, self.lshape))

    def offsets(self) -> np.ndarray:
        return _strided_offsets(self.offset, self.lshape, self.lstrides).reshape(self.shape)

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
            inj = self._inj = _terms_injective((abs(s), abs(s) * (c - 1))
                                               for c, s in zip(self.lshape, self.lstrides))
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
            self._inj = _layout_injective(self.layout)
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


class RowsPlan:
    """The static part of a per-partition row gather over a regular rest: cached per view.
    `rows` is a strided array whose first axis steps `scale` elements, covering every row whose
    elements all lie in storage (`limit` rows)."""

    __slots__ = ("name", "storage", "dtype", "shape", "scale", "base", "rshape", "rstrides",
                 "limit", "bound", "_rows", "_inj")

    def __init__(self, name: str, storage: Storage, dtype: DType, shape: tuple[int, ...],
                 scale: int, base: int, rshape: tuple[int, ...], rstrides: tuple[int, ...],
                 limit: int, bound: int | None) -> None:
        self.name, self.storage, self.dtype, self.shape = name, storage, dtype, shape
        self.scale, self.base, self.rshape, self.rstrides = scale, base, rshape, rstrides
        self.limit = limit  # valid rows: [0, limit)
        self.bound = bound if bound is not None and bound < limit else limit
        self._rows: np.ndarray | None = None
        terms = [(abs(s), abs(s) * (c - 1)) for c, s in zip(rshape, rstrides)]
        self._inj = _terms_injective(terms) and scale > sum(e for _, e in terms)

    def rows(self) -> np.ndarray:
        if self._rows is None:
            item = self.dtype.np.itemsize
            self._rows = np.ndarray((self.limit,) + self.rshape, self.dtype.np,
                                    buffer=self.storage.data, offset=self.base * item,
                                    strides=tuple(s * item for s in (self.scale,) + self.rstrides))
        return self._rows


class Rows(Access):
    """Partition p reads the row `idx[p] * scale` (+ the static offset) of a regular rest."""

    __slots__ = ("idx", "plan")

    def __init__(self, plan: RowsPlan, idx: np.ndarray) -> None:
        super().__init__(plan.name, plan.storage, plan.dtype, plan.shape, None)
        self.idx = idx  # intp, checked to lie in [0, plan.bound)
        self.plan = plan

    def take_into(self, out: np.ndarray) -> None:
        # Indices were checked already; mode="clip" lets NumPy skip its own checks and buffer.
        self.plan.rows().take(self.idx, axis=0, out=out, mode="clip")

    def read(self) -> np.ndarray:
        return np.take(self.plan.rows(), self.idx, axis=0, mode="clip").reshape(self.shape)

    def write(self, values: np.ndarray) -> None:
        self.plan.rows()[self.idx] = np.reshape(values, (self.idx.size,) + self.plan.rshape)

    def offsets(self) -> np.ndarray:
        p = self.plan
        rest = _strided_offsets(p.base, p.rshape, p.rstrides)
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


# -- injectivity ------------------------------------------------------------------------------

def _terms_injective(terms: Any) -> bool:
    """Digits, each taking at least two values, with (|stride|, extent) pairs map injectively
    when, sorted by stride, each stride exceeds the total extent of the smaller ones (a
    sufficient condition; a zero stride always fails it)."""
    acc = 0
    for s, ext in sorted(terms):
        if s <= acc:
            return False
        acc += ext
    return True


def _layout_injective(layout: Layout) -> bool:
    """A sufficient condition for a static layout to touch no element twice: the mode digits of
    all dimensions, over the ranges the indices reach, pass `_terms_injective`."""
    terms = []
    for d in layout.dims:
        if d.size == 1:
            continue
        if d.is_regular:
            terms.extend((abs(s), abs(s) * (c - 1)) for s, c in d.leaves() if c > 1)
            continue
        x_lo, x_hi = d.start, d.start + (d.size - 1) * d.step
        inner = 1
        for k, (c, s) in enumerate(d.modes):
            if k == len(d.modes) - 1:
                span = x_hi // inner - x_lo // inner
                if span > 0:
                    terms.append((abs(s), abs(s) * span))
            else:
                if c > 1:
                    terms.append((abs(s), abs(s) * (c - 1)))
                inner *= c
    return _terms_injective(terms)


# =============================================================================================
# Resolution
# =============================================================================================

# Per view: its Access (a static view) or RowsPlan (a row gather), which depend only on the
# view's immutable layout, dtype and storage.  Weak keys: a plan dies with its view.
_plans: weakref.WeakKeyDictionary[Any, Access | RowsPlan] = weakref.WeakKeyDictionary()


def resolve(t: Any, op: str = "read", role: str = "src", *, group: int = TI_GROUP) -> Access:
    """Make view `t` concrete for one execution.  Reads runtime indices and registers, checks
    every bound (APK401/402/403/406) and returns the cheapest `Access`.  No data moves."""
    try:
        return _resolve(t, op, role, group)
    except MemoryError as e:
        raise _oom(op, role, t.storage, e) from None


def _oom(op: str, role: str, storage: Storage, e: MemoryError) -> ApdslRuntimeError:
    """APK431 for a NumPy MemoryError while an instruction works on `storage`."""
    return budget.out_of_memory(f"{op}: working on {role} {storage.describe()}", e,
                                tensor=storage.name)


def _resolve(t: Any, op: str, role: str, group: int) -> Access:
    storage = t.storage
    _check_live(t, op, role)
    plan = _plans.get(t)
    if plan is not None:
        if type(plan) is RowsPlan:
            return _bind_rows(t, plan, op, role)
        return plan  # type: ignore[return-value]
    layout = t.layout
    dyn = t.dynamic
    if dyn is None and t.dtype.bits >= 8:
        leaves = _plain_leaves(layout)
        if leaves is not None:  # the common case, without the general checks below
            ls, lt = leaves
            lo, hi = _pattern_bounds(layout.base, ls, lt)
            limit = storage.nbytes * 8 // t.dtype.bits
            if lo < 0 or hi >= limit:
                raise _bounds_error(t, layout.base, ls, lt, lo, hi, limit, op, role, "APK401",
                                    None)
            acc = _plans[t] = Strided(t.name, storage, t.dtype, layout.shape, layout, layout.base,
                                      ls, lt)
            return acc
    if not layout.static:
        layout = _resolve_registers(t, layout, op, role)
        if dyn is None:
            return _static_access(t, layout, op, role, "APK406")
    elif dyn is None:
        acc = _plans[t] = _static_access(t, layout, op, role, "APK401")
        return acc
    if dyn.kind == "scalar":
        v = _scalar_index(dyn, op, role, t)
        layout = Layout(layout.dims, layout.base + v * dyn.scale)
        return _static_access(t, layout, op, role, "APK403",
                              dynamic=f"{dyn.index_name} = {v} (x {dyn.scale})")
    if dyn.kind == "vector":
        plan = _rows_plan(t, layout)
        if plan is not None:
            _plans[t] = plan
            return _bind_rows(t, plan, op, role)
        return _vector_access(t, layout, op, role)
    return _ti_access(t, layout, op, role, group)


def _check_live(t: Any, op: str, role: str) -> None:
    storage = t.storage
    if storage.freed:
        raise _err("APK408", f"{op}: {role} {t.name} uses storage {storage.name}, which was "
                   "freed when the block that declared it ended",
                   help="declare the tensor in the enclosing block so it outlives its use",
                   tensor=storage.name)


def _static_access(t: Any, layout: Layout, op: str, role: str, code: str,
                   dynamic: str | None = None) -> Access:
    dtype = t.dtype
    storage = t.storage
    name = t.name
    limit = storage.nbytes * 8 // dtype.bits
    shape = layout.shape
    if layout.is_regular:
        ls, lt = _leaves(layout)
        lo, hi = _pattern_bounds(layout.base, ls, lt)
        if lo < 0 or hi >= limit:
            raise _bounds_error(t, layout.base, ls, lt, lo, hi, limit, op, role, code, dynamic)
        if dtype.bits < 8:
            offs = _strided_offsets(layout.base, ls, lt).reshape(shape)
            return Indexed(name, storage, dtype, shape, layout, offs,
                           proven=_terms_injective((abs(s), abs(s) * (c - 1))
                                                   for c, s in zip(ls, lt)))
        return Strided(name, storage, dtype, shape, layout, layout.base, ls, lt)
    parts = []
    for p in layout.pieces():
        ls = tuple(c for s, c in p.pattern if c != 1)
        lt = tuple(s for s, c in p.pattern if c != 1)
        lo, hi = _pattern_bounds(p.offset, ls, lt)
        if lo < 0 or hi >= limit:
            raise _bounds_error(t, p.offset, ls, lt, lo, hi, limit, op, role, code, dynamic)
        box = tuple(slice(a, a + n) for a, n in zip(p.start, p.shape))
        parts.append((box, Strided(name, storage, dtype, p.shape, None, p.offset, ls, lt)))
    if dtype.bits < 8:
        offs = np.empty(shape, np.int64)
        for box, part in parts:
            offs[box] = part.offsets()
        return Indexed(name, storage, dtype, shape, layout, offs,
                       proven=_layout_injective(layout))
    return Pieces(name, storage, dtype, shape, layout, parts)


def _plain_leaves(layout: Layout) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Leaves of a layout whose dims are all plain with int sizes and strides and an int base
    (what most views are), else None."""
    if type(layout.base) is not int:
        return None
    ls, lt = [], []
    for d in layout.dims:
        modes = d.modes
        if len(modes) != 1 or d.start != 0 or d.step != 1:
            return None
        c, s = d.size, modes[0][1]
        if type(c) is not int or type(s) is not int:
            return None
        if c != 1:
            ls.append(c)
            lt.append(s)
    return tuple(ls), tuple(lt)


def _leaves(layout: Layout) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Leaf counts and strides of a regular layout, outermost first, count-1 leaves dropped."""
    ls, lt = [], []
    for d in layout.dims:
        if len(d.modes) == 1:
            if d.size != 1:
                ls.append(d.size)
                lt.append(d.modes[0][1])
        else:
            for c, s in reversed(d.modes):
                if c != 1:
                    ls.append(c)
                    lt.append(s)
    return tuple(ls), tuple(lt)


def _bounds_error(t: Any, offset: int, lshape: tuple[int, ...], lstrides: tuple[int, ...],
                  lo: int, hi: int, limit: int, op: str, role: str, code: str,
                  dynamic: str | None) -> ApdslRuntimeError:
    bad = lo if lo < 0 else hi
    what = {"APK401": "the access pattern", "APK403": "the runtime index",
            "APK406": "the register values"}[code]
    pattern = [[s, c] for c, s in zip(lshape, lstrides)]
    notes = [f"offset = {offset}, pattern = {pattern}",
             f"storage {t.storage.describe()} holds {limit} {t.dtype} elements (0..{limit - 1})"]
    if dynamic:
        notes.insert(0, f"runtime index {dynamic}")
    return _err(code, f"{op}: {what} of {role} {t.name} reaches element {bad}, outside its "
                f"storage of {limit} elements", notes=notes,
                help="keep offset + sum((count - 1) * stride) inside the tensor"
                if code == "APK401" else "check the index or register values that feed the "
                "access pattern", tensor=t.name, offset=bad, storage_size=limit)


def _resolve_registers(t: Any, layout: Layout, op: str, role: str) -> Layout:
    """Replace register strides, counts and offsets by their current values."""
    dims = []
    for k, d in enumerate(layout.dims):
        if all(is_static(c) and is_static(s) for c, s in d.modes) and is_static(d.size):
            dims.append(d)
            continue
        c = registers.resolve(d.size, f"the count of dim {k}", op)
        s = registers.resolve(d.modes[0][1], f"the stride of dim {k}", op)
        if c < 1:
            raise _err("APK406", f"{op}: register count {c} of dim {k} of {role} {t.name} must "
                       "be >= 1", help="load a positive count into the register", count=c)
        dims.append(Dim.plain(c, s))
    base = registers.resolve(layout.base, "the offset", op)
    if t.onchip and dims:
        tgt = targets.target_for(t.buffer)
        free = prod(t.storage.shape[1:]) * t.storage.dtype.bits // t.dtype.bits
        c0, s0 = dims[0].size, dims[0].modes[0][1]
        if c0 > tgt.partitions:
            raise TargetError(f"{op}: {role} {t.name} addresses {c0} partitions (from a "
                              f"register); {tgt.name} has {tgt.partitions}", code="APK301")
        if c0 > 1 and s0 != free:
            raise TargetError(f"{op}: the partition stride of {role} {t.name} is {s0} (from a "
                              f"register); it must be the tensor's free size {free}",
                              code="APK303", help=f"load {free} into the stride register")
    return Layout(tuple(dims), base)


def _index_values(index: Any, op: str, what: str) -> np.ndarray:
    """The integer values of an index tensor (init-checked) as intp, logical shape."""
    acc = resolve(index, op, what)
    _check_init(acc, op, what)
    if acc.storage.buffer == "psum":
        psum.note_read(acc)
    if type(acc) is Strided:
        return acc.array().astype(np.intp).reshape(acc.shape)
    return acc.read().astype(np.intp)


def _scalar_index(dyn: Any, op: str, role: str, t: Any) -> int:
    if isinstance(dyn.index, VirtualRegister):
        v = dyn.index.resolve(f"the index of {role}", op)
    else:
        v = int(_index_values(dyn.index, op, f"index {dyn.index_name}").reshape(-1)[0])
    upper = dyn.bound
    if v < 0 or (upper is not None and v >= upper):
        rng = f"[0, {upper})" if upper is not None else "[0, ...) inside the storage"
        raise _err("APK402", f"{op}: runtime index {dyn.index_name} = {v} at position [0, 0] "
                   f"is outside the allowed range {rng} ({dyn.origin} on {role} {t.name})",
                   notes=[f"{role} {t.name}: shape {tuple(t.shape)} @ {t.buffer}"],
                   help="NKI leaves an out-of-range index undefined; clamp or check it before "
                   "the instruction", index=v, position=(0, 0), bound=upper)
    return v


def _range_error(op: str, role: str, t: Any, dyn: Any, values: np.ndarray,
                 positions: np.ndarray, upper: int | None) -> ApdslRuntimeError:
    """The first index outside [0, upper): `values`/`positions` list candidates in order."""
    bad = (values < 0) if upper is None else ((values < 0) | (values >= upper))
    k = int(np.argmax(bad))
    v = int(values[k])
    pos = tuple(int(x) for x in positions[k])
    rng = f"[0, {upper})" if upper is not None else "[0, ...) inside the storage"
    return _err("APK402", f"{op}: runtime index {dyn.index_name}{_fmt_coord(pos)} = {v} is "
                f"outside the allowed range {rng} ({dyn.origin} on {role} {t.name})",
                notes=[f"{int(bad.sum())} of {values.size} indices are out of range",
                       f"{role} {t.name}: shape {tuple(t.shape)} @ {t.buffer}"],
                help="NKI leaves an out-of-range index undefined; clamp or check it before "
                "the instruction", index=v, position=pos, bound=upper)


def _vector_offsets(t: Any, parts: int, op: str, role: str) -> tuple[np.ndarray, int]:
    """The per-partition row indices of a vector-dynamic view (shape and range checked), and
    the largest of them."""
    dyn = t.dynamic
    values = _index_values(dyn.index, op, f"index {dyn.index_name}")
    _check_vector_shape(t, values.shape, parts, op, role)
    idx = values.reshape(parts)
    upper = dyn.bound
    # One reduction checks both ends: as unsigned, a negative index is larger than any bound.
    top = int(idx.view(np.uintp).max()) if parts else 0
    if top > _INTP_MAX or (upper is not None and top >= upper):
        positions = np.stack([np.arange(parts), np.zeros(parts, np.int64)], axis=1)
        raise _range_error(op, role, t, dyn, idx, positions, upper)
    return idx, top


def warn_static(t: Any, op: str, role: str) -> None:
    """Warnings an instruction operand earns from its view alone (checked in both modes)."""
    dyn = t.dynamic
    if dyn is None or dyn.kind != "vector" or dyn.origin != "ap":
        return
    d0 = t.layout.dims[0]
    lead, parts = d0.modes[0][1], d0.size
    if is_static(parts) and parts > 1 and lead != dyn.scale:
        trace.warn(Warning_(
            f"{op}: the leading stride {lead} of {role} {t.name} is ignored with "
            f"vector_offset; rows are {dyn.scale} elements apart in the base tensor",
            code="APK450", notes=["hardware scales vector offsets by the base tensor's row "
                                  f"size prod(shape[1:]) = {dyn.scale}"],
            help=f"write the leading pair as [{dyn.scale}, {parts}] so the code stays correct "
            "if the limitation is lifted"), key=("APK450", op, role))


def _rows_plan(t: Any, layout: Layout) -> RowsPlan | None:
    """The cacheable part of a row gather, when the rest of the view is one regular pattern
    and rows step forward."""
    dyn = t.dynamic
    rest = Layout(layout.dims[1:], layout.base)
    if not rest.is_regular or t.dtype.bits < 8 or dyn.scale <= 0:
        return None
    ls, lt = _leaves(rest)
    lo, hi = _pattern_bounds(rest.base, ls, lt)
    limit = t.storage.nbytes * 8 // t.dtype.bits
    if lo < 0 or hi >= limit:
        return None  # the general path reports it
    rows = (limit - 1 - hi) // dyn.scale + 1  # rows whose every element lies in storage
    return RowsPlan(t.name, t.storage, t.dtype, layout.shape, dyn.scale, rest.base, ls, lt,
                    rows, dyn.bound)


def _bind_rows(t: Any, plan: RowsPlan, op: str, role: str) -> Rows:
    idx, top = _vector_offsets(t, plan.shape[0], op, role)
    if top >= plan.bound:
        # within the select's range but past the storage (a bad .ap, or a broken base view)
        _vector_access(t, t.layout, op, role)
    return Rows(plan, idx)


def _vector_access(t: Any, layout: Layout, op: str, role: str) -> Access:
    dyn = t.dynamic
    parts = layout.dims[0].size
    idx, _ = _vector_offsets(t, parts, op, role)
    rest = Layout(layout.dims[1:], layout.base)
    shape = layout.shape
    limit = t.storage.nbytes * 8 // t.dtype.bits
    static = Layout((Dim.plain(parts, 0),) + rest.dims, rest.base).offsets()
    offs = static + (idx * dyn.scale).reshape((-1,) + (1,) * (len(shape) - 1))
    if offs.size and (offs.min() < 0 or offs.max() >= limit):
        raise _dynamic_bounds_error(t, op, role, dyn, int(offs.min()), int(offs.max()), limit)
    return Indexed(t.name, t.storage, t.dtype, shape, None, offs)


def _ti_access(t: Any, layout: Layout, op: str, role: str, group: int) -> Access:
    dyn = t.dynamic
    values = _index_values(dyn.index, op, f"index {dyn.index_name}")
    n = layout.dims[1].size
    i = np.arange(n)
    rows, cols = i % group, i // group
    _check_ti_shape(dyn, values.shape, n, group, op)
    col = values[rows, cols]
    if col.size and (col.min() < 0 or col.max() >= dyn.bound):
        raise _range_error(op, role, t, dyn, col, np.stack([rows, cols], axis=1), dyn.bound)
    dims = list(layout.dims)
    dims[1] = Dim.plain(n, 0)
    static = Layout(tuple(dims), layout.base).offsets()
    shape = layout.shape
    offs = static + (col * dyn.scale).reshape((1, -1) + (1,) * (len(shape) - 2))
    limit = t.storage.nbytes * 8 // t.dtype.bits
    if offs.size and (offs.min() < 0 or offs.max() >= limit):
        raise _dynamic_bounds_error(t, op, role, dyn, int(offs.min()), int(offs.max()), limit)
    return Indexed(t.name, t.storage, t.dtype, shape, None, offs)


def _check_vector_shape(t: Any, shape: tuple[int, ...], parts: int, op: str, role: str) -> None:
    if shape != (parts, 1):
        raise _err("APK407", f"{op}: vector offsets {t.dynamic.index_name} have shape "
                   f"{shape}; {role} {t.name} needs ({parts}, 1), one per partition",
                   help="give one row index per partition of the access pattern")


def _check_ti_shape(dyn: Any, shape: tuple[int, ...], n: int, group: int, op: str) -> None:
    if len(shape) != 2 or (n and (min(n, group) > shape[0] or (n - 1) // group >= shape[1])):
        raise _err("APK407", f"{op}: Tensor Indirection reads index {dyn.index_name}[i % {group}, "
                   f"i // {group}] for i < {n}, but the index has shape {shape}",
                   notes=[f"the group size is {group} for this instruction"],
                   help=f"give the index at least {min(group, n)} partitions")


def check_dynamic(t: Any, op: str, role: str, *, group: int = TI_GROUP) -> None:
    """Check mode: what a runtime-indexed view decides before any index value is read, in the
    order `resolve` meets it: its storage is live, its index tensor lies in storage, and the
    index has the shape the view needs."""
    dyn = t.dynamic
    if dyn is None or not t.layout.static:
        return
    _check_live(t, op, role)
    index = dyn.index
    if isinstance(index, VirtualRegister) or not hasattr(index, "layout"):
        return
    if index.dynamic is None and index.layout.static:
        resolve(index, op, f"index {dyn.index_name}")
    shape = tuple(index.shape)
    if dyn.kind == "vector":
        _check_vector_shape(t, shape, t.layout.dims[0].size, op, role)
    elif dyn.kind == "ti":
        _check_ti_shape(dyn, shape, t.layout.dims[1].size, group, op)


def _dynamic_bounds_error(t: Any, op: str, role: str, dyn: Any, lo: int, hi: int,
                          limit: int) -> ApdslRuntimeError:
    bad = lo if lo < 0 else hi
    return _err("APK403", f"{op}: with its runtime index {dyn.index_name}, {role} {t.name} "
                f"reaches element {bad}, outside its storage of {limit} elements",
                notes=[f"the index is scaled by {dyn.scale} ({dyn.origin})",
                       f"storage {t.storage.describe()}"],
                help="keep every index small enough that the whole access stays in the tensor",
                tensor=t.name, offset=bad, storage_size=limit)


# =============================================================================================
# Checks shared by reads and writes
# =============================================================================================

def _check_init(acc: Access, op: str, role: str) -> None:
    storage = acc.storage
    if storage.all_written or not current().options.init_check:
        return
    ok = acc.written()
    if ok is True:
        return
    flat = int(np.argmin(np.reshape(ok, -1)))
    coord = np.unravel_index(flat, acc.shape)
    offset = int(np.reshape(acc.offsets(), -1)[flat])
    missing = int(ok.size - np.count_nonzero(ok))
    notes = [f"{missing} of the {acc.size} elements read are unwritten",
             f"view {acc.name}: shape {acc.shape}, storage {storage.describe()}"]
    what = "before anything wrote it"
    partly = _written_part(acc, offset)
    if partly is not None:
        what = f"when only {partly} {'was' if partly.startswith('1 ') else 'were'} written"
        notes.insert(1, "an element counts as written only when all its bytes are: a write "
                     "through a narrower view (a uint8 or bfloat16 view of float32, an int4 "
                     "nibble) wrote part of it")
    err = _err("APK404", f"{op}: {role} reads {storage.name}{_fmt_coord(coord)} (storage element "
               f"{offset}) {what}",
               notes=notes,
               help="write the data first (dma_copy, memset, iota, ...), or turn the check off "
               "with --no-init-check / apdsl.options(init_check=False) to read it as 0",
               tensor=storage.name, coord=tuple(int(c) for c in coord), offset=offset)
    err.add_label(storage.span, "allocated here")
    raise err


def _check_unique(acc: Access, op: str, role: str) -> None:
    storage = acc.storage
    if acc.dtype.bits < storage.unit_bits and not storage.all_written \
            and acc.size * acc.dtype.bits < storage.nbytes * 8:
        # the write covers parts of units: refine first, so that running out of budget for
        # the finer record (APK430) happens before anything is written
        _refine(storage, acc.dtype.bits)
    if acc.size <= 1 or acc.injective():
        return
    offs = np.reshape(acc.offsets(), -1)
    order = np.argsort(offs, kind="stable")
    s = offs[order]
    same = s[1:] == s[:-1]
    if not same.any():
        return
    k = int(np.argmax(same))
    i, j = sorted((int(order[k]), int(order[k + 1])))
    ci, cj = np.unravel_index(i, acc.shape), np.unravel_index(j, acc.shape)
    dup = int(s[k])
    raise _err("APK405", f"{op}: {role} {acc.name} writes storage element {dup} twice "
               f"(logical {_fmt_coord(ci)} and {_fmt_coord(cj)})",
               notes=[f"{int(same.sum())} writes land on an element already written by this "
                      "instruction", f"view shape {acc.shape}, storage "
                      f"{acc.storage.describe()}"],
               help="a destination cannot repeat elements: no broadcast (stride 0), no "
               "overlapping .ap pattern, no repeated runtime index",
               tensor=acc.name, offset=dup)


def _written_part(acc: Access, offset: int) -> str | None:
    """For the unwritten element at storage `offset` (in elements of the access dtype): "2 of
    its 4 bytes" when some of its units are written, else None."""
    storage = acc.storage
    eb, ub = acc.dtype.bits, storage.unit_bits
    if eb <= ub:
        return None
    units = storage.mask[_units(acc.dtype, storage, np.array([offset]))[0]]
    done = int(np.count_nonzero(units))
    if not done:
        return None
    if ub % 8 == 0:
        return f"{done * ub // 8} of its {eb // 8} bytes"
    return f"{done} of its {units.size} nibbles"


def _refine(storage: Storage, bits: int) -> None:
    """Written state per `bits`-bit unit from now on (a narrower view is about to write)."""
    ratio = storage.refine(bits)
    if storage in _written_count:
        _written_count[storage] *= ratio


def _mark_written(acc: Access) -> None:
    storage = acc.storage
    if storage.buffer == "psum":
        psum.note_write(acc)
    if storage.all_written:
        return
    # The write was checked free of duplicates, so covering every bit means covering all.
    if acc.size * acc.dtype.bits >= storage.nbytes * 8:
        storage.note_written_all()
        _written_count.pop(storage, None)
        return
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)  # part of a unit: only that part is written
    total = _written_count.get(storage, 0) + acc.mark()
    if total >= storage.units_total:
        storage.note_written_all()
        _written_count.pop(storage, None)
    else:
        _written_count[storage] = total


def set_written(acc: Access, written: np.ndarray) -> None:
    """Make the written state of the elements `acc` touches exactly `written` (logical shape:
    an element's units all written or all not), keeping the count of written units exact."""
    storage = acc.storage
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)
    units = _units(acc.dtype, storage, acc.offsets())
    if units.ndim > written.ndim:
        written = np.broadcast_to(written[..., None], units.shape)
    _assign_units(storage, units, written)


def copy_written(dst: Access, src: Access) -> None:
    """Give the elements `dst` touches the written state of the elements `src` touches, byte
    for byte (same dtype and element count: a move of stored bytes such as LoadData, which is
    not an init-checked read).  Partly written elements stay partly written."""
    sst = src.storage
    if sst.all_written:
        _mark_written(dst)
        return
    ok = src.written()
    if ok is True:
        _mark_written(dst)
        return
    u = sst.unit_bits
    if u >= src.dtype.bits:  # whole elements only: the per-element state is exact
        set_written(dst, np.reshape(ok, dst.shape))
        return
    r = src.dtype.bits // u
    state = sst.mask[_units(src.dtype, sst, src.offsets())].reshape(dst.shape + (r,))
    dstorage = dst.storage
    if dstorage.unit_bits > u:
        _refine(dstorage, u)
    units = _units(dst.dtype, dstorage, dst.offsets())
    rd = units.shape[-1] if units.ndim > len(dst.shape) else 1
    if rd == 1:
        units = units[..., None]
    _assign_units(dstorage, units, np.repeat(state, rd // r, axis=-1) if rd != r else state)


def _assign_units(storage: Storage, units: np.ndarray, values: np.ndarray) -> None:
    total = storage.units_total
    counted = total if storage.all_written else _written_count.get(storage, 0)
    mask = storage.mask  # materialised (all True when everything was written)
    storage.all_written = False
    before = int(np.count_nonzero(mask[units]))
    mask[units] = values
    after = int(np.count_nonzero(mask[units]))
    count = counted - before + after
    if count >= total:
        storage.note_written_all()
        _written_count.pop(storage, None)
    else:
        _written_count[storage] = count


def has_written(storage: Storage) -> bool:
    """Whether anything of `storage` may have been written."""
    return storage.all_written or bool(_written_count.get(storage))


def forget_all(storage: Storage) -> None:
    """Every byte of `storage` unwritten again (a reused buffer's old contents are not data)."""
    if storage._mask is not None and storage.unit_bits == storage.dtype.bits:
        storage._mask[...] = False  # (reused: a tile loop binds the same buffer again and again)
    else:
        storage.unit_bits = storage.dtype.bits
        storage._mask = None  # made again, all False, when needed
    storage.all_written = False
    _written_count[storage] = 0


def forget_written(acc: Access) -> None:
    """The units `acc` touches unwritten again, keeping the count of written units exact (or
    `_mark_written` could later declare the storage whole)."""
    storage = acc.storage
    if not has_written(storage):
        return
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)
    was_all = storage.all_written
    storage.mask  # noqa: B018 - materialised (all True when everything was written)
    storage.all_written = False
    before = storage.units_total if was_all else _written_count.get(storage, 0)
    _written_count[storage] = max(0, before - acc.unmark())


# =============================================================================================
# Moving data
# =============================================================================================

def read(acc: Access, op: str, role: str) -> np.ndarray:
    """The logical contents of a resolved source (init-checked), as a new array."""
    try:
        _check_init(acc, op, role)
        if acc.storage.buffer == "psum":
            psum.note_read(acc)
        return acc.read()
    except MemoryError as e:
        raise _oom(op, role, acc.storage, e) from None


def read_float32(acc: Access, op: str, role: str) -> np.ndarray:
    """`read` converted to float32, in one pass over the storage where the view is strided
    (an engine's arithmetic input)."""
    _check_init(acc, op, role)
    if acc.storage.buffer == "psum":
        psum.note_read(acc)
    if type(acc) is Strided:
        return acc.array().astype(np.float32).reshape(acc.shape)
    return acc.read().astype(np.float32)


def prepare_write(acc: Access, op: str, role: str) -> None:
    """Checks a destination must pass before anything is written (APK405)."""
    _check_unique(acc, op, role)


def store(acc: Access, values: np.ndarray) -> None:
    """Write `values` (any dtype; cast by the float32 rule) in logical row-major order."""
    try:
        values = cast(values, acc.dtype)
        if values.shape != acc.shape:
            values = values.reshape(acc.shape)
        acc.write(values)
        _mark_written(acc)
    except MemoryError as e:
        raise _oom("write", "dst", acc.storage, e) from None


def fill(acc: Access, value: Any) -> None:
    """Write one value (already cast to the access dtype) to every element."""
    try:
        if isinstance(acc, Strided):
            acc.array()[...] = value
        else:
            acc.write(np.full(acc.shape, value, acc.dtype.np))
        _mark_written(acc)
    except MemoryError as e:
        raise _oom("fill", "dst", acc.storage, e) from None


def copy(dst: Access, src: Access, op: str) -> None:
    """Move `src` into `dst` in logical row-major order (sizes already checked equal).  The
    source is init-checked and the destination duplicate-checked before anything moves."""
    try:
        _check_init(src, op, "src")
        _check_unique(dst, op, "dst")
        if src.storage.buffer == "psum":
            psum.note_read(src)
        if type(dst) is Strided and type(src) is Strided:
            _strided_copy(dst.array(), src.array(), src.dtype != dst.dtype, dst.dtype)
        elif type(dst) is Strided and type(src) is Rows and src.dtype == dst.dtype:
            _gather_copy(dst, src)
        else:
            store(dst, src.read())
            return
        _mark_written(dst)
    except MemoryError as e:
        raise _oom(op, "dst", dst.storage, e) from None


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


def _strided_copy(d: np.ndarray, s: np.ndarray, convert: bool, dtype: DType) -> None:
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
    Reading unwritten memory is APK404 unless init checking is off."""
    acc = resolve(t, op, role)
    _check_init(acc, op, role)
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
    store(acc, arr)
