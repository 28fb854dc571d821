"""Resolution: `resolve(t)` makes view `t` concrete for one execution (an `Access`).

Registers and runtime indices are read, every bound is checked before any data moves (APK401,
402, 403, 406) and the view takes the cheapest form NumPy can address.  Static views keep their
access (or row-gather plan) per view, so a loop reuses it.
"""

from __future__ import annotations

import weakref
from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError, Warning_
from ...tensor import registers, targets
from ...tensor.layout import (
    Dim,
    Layout,
    is_injective,
    is_static,
    leaves,
    pattern_bounds,
    plain_leaves,
    strided_offsets,
    terms_injective,
)
from ...tensor.liveness import DORMANT, PENDING, revive, start
from ...tensor.machine import current
from ...tensor.registers import VirtualRegister
from . import psum, trace
from .access import (
    Access,
    Indexed,
    IndexedRows,
    Pieces,
    Rows,
    RowsPlan,
    Strided,
    fmt_coord,
    oom,
)
from .written import check_init

TI_GROUP = 16  # Tensor Indirection group size of the vector/scalar/gpsimd engines
TI_GROUP_MATMUL = 32  # ... and of the tensor engine (nc_matmul operands)
_INTP_MAX = int(np.iinfo(np.intp).max)


def _err(code: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(message, code=code, **kw)


# =============================================================================================
# Resolution
# =============================================================================================

def _keep(t: Any, plan: Access | RowsPlan) -> None:
    """Memoise a static view's Access (or row-gather plan) on the view itself: it depends only
    on the view's immutable layout, dtype and storage, so a loop that reuses a view resolves it
    once, and the memo dies with the view (no table to look it up in or clean).  Not with
    plans off (the `plans` option): every call resolves afresh."""
    if not current().options.plans:
        return
    try:
        object.__setattr__(t, "memo", plan)
    except AttributeError:  # an object without the slot: nothing is memoised
        pass


def resolve(t: Any, op: str = "read", role: str = "src", *, group: int = TI_GROUP) -> Access:
    """Make view `t` concrete for one execution.  Reads runtime indices and registers, checks
    every bound (APK401/402/403/406) and returns the cheapest `Access`.  No data moves."""
    try:
        return _resolve(t, op, role, group)
    except MemoryError as e:
        raise oom(op, role, t.storage, e) from None




def _resolve(t: Any, op: str, role: str, group: int) -> Access:
    storage = t.storage
    if storage.freed:
        check_live(t, op, role)
    plan = getattr(t, "memo", None)
    if plan is not None and current().options.plans:
        if type(plan) is RowsPlan:
            return _bind_rows(t, plan, op, role)
        return plan  # type: ignore[return-value]
    layout = t.layout
    dyn = t.dynamic
    dtype = t.dtype
    if dyn is None and dtype.bits >= 8:
        leaves = plain_leaves(layout)
        if leaves is not None:  # the common case, without the general checks below
            ls, lt = leaves
            base = layout.base
            lo, hi = pattern_bounds(base, ls, lt)
            limit = storage.nbytes * 8 // dtype.bits
            if lo < 0 or hi >= limit:
                raise _bounds_error(t, base, ls, lt, lo, hi, limit, op, role, "APK401", None)
            acc = Strided(t.name, storage, dtype, layout.shape, layout, base, ls, lt)
            _keep(t, acc)
            return acc
    if not layout.static:
        layout = _resolve_registers(t, layout, op, role)
        if dyn is None:
            return _static_access(t, layout, op, role, "APK406")
    elif dyn is None:
        acc = _static_access(t, layout, op, role, "APK401")
        _keep(t, acc)
        return acc
    if dyn.kind == "scalar":
        v = _scalar_index(dyn, op, role, t)
        layout = Layout(layout.dims, layout.base + v * dyn.scale)
        return _static_access(t, layout, op, role, "APK403",
                              dynamic=f"{dyn.index_name} = {v} (x {dyn.scale})")
    if dyn.kind == "vector":
        plan = _rows_plan(t, layout)
        if plan is not None:
            _keep(t, plan)
            return _bind_rows(t, plan, op, role)
        return _vector_access(t, layout, op, role)
    return _ti_access(t, layout, op, role, group)


def check_live(t: Any, op: str, role: str) -> None:
    """APK408 when view `t`'s storage was freed; a storage an overdraft waits on is accessed
    again here (`apdsl.tensor.liveness.revive`: APK302 when it no longer fits).  Every access
    passes here: the plans' executors fall back to `resolve` on a `freed` storage."""
    storage = t.storage
    if storage.freed is DORMANT:
        revive(storage, op, role)
        return
    if storage.freed is PENDING:  # its first access: it takes its space now
        start(storage)
        return
    if storage.freed:
        if getattr(storage, "queued", False):  # a TQue buffer's tensor after free_tensor
            raise _err("APK408", f"{op}: {role} {t.name} uses storage {storage.name}, which "
                       "free_tensor gave back to its queue", tensor=storage.name,
                       help="use a queue's tensor between alloc_tensor (or deque) and "
                       "free_tensor only; alloc_tensor again for new data")
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
        ls, lt = leaves(layout)
        lo, hi = pattern_bounds(layout.base, ls, lt)
        if lo < 0 or hi >= limit:
            raise _bounds_error(t, layout.base, ls, lt, lo, hi, limit, op, role, code, dynamic)
        if dtype.bits < 8:
            offs = strided_offsets(layout.base, ls, lt).reshape(shape)
            return Indexed(name, storage, dtype, shape, layout, offs,
                           proven=terms_injective((abs(s), abs(s) * (c - 1))
                                                   for c, s in zip(ls, lt)))
        return Strided(name, storage, dtype, shape, layout, layout.base, ls, lt)
    parts = []
    for p in layout.pieces():
        ls = tuple(c for s, c in p.pattern if c != 1)
        lt = tuple(s for s, c in p.pattern if c != 1)
        lo, hi = pattern_bounds(p.offset, ls, lt)
        if lo < 0 or hi >= limit:
            raise _bounds_error(t, p.offset, ls, lt, lo, hi, limit, op, role, code, dynamic)
        box = tuple(slice(a, a + n) for a, n in zip(p.start, p.shape))
        parts.append((box, Strided(name, storage, dtype, p.shape, None, p.offset, ls, lt)))
    if dtype.bits < 8:
        offs = np.empty(shape, np.int64)
        for box, part in parts:
            offs[box] = part.offsets()
        return Indexed(name, storage, dtype, shape, layout, offs,
                       proven=is_injective(layout))
    return Pieces(name, storage, dtype, shape, layout, parts)






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


def registers_known(layout: Layout) -> bool:
    """Check mode: every register the layout's strides, counts and offset use holds a value
    (set by register_alloc; check mode forgets what register_load set), so the layout resolves
    without reading memory."""
    def known(x: Any) -> bool:
        if is_static(x):
            return True
        if isinstance(x, registers.RegisterSum):
            return known(x.static) and known(x.reg)
        return isinstance(x, VirtualRegister) and x.value is not None
    return known(layout.base) and all(
        known(d.size) and all(known(c) and known(s) for c, s in d.modes) for d in layout.dims)


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
    check_init(acc, op, what, observed=True)  # an index: an observable point
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
    return _err("APK402", f"{op}: runtime index {dyn.index_name}{fmt_coord(pos)} = {v} is "
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
            f"vector_offset; rows are {dyn.scale} elements apart in the tensor indexed",
            code="APK450", notes=["hardware scales vector offsets by the row size of the "
                                  f"tensor .ap was called on, {dyn.scale} elements"],
            help=f"write the leading pair as [{dyn.scale}, {parts}] so the code stays correct "
            "if the limitation is lifted"), key=("APK450", op, role))


# Row-gather plans per storage, by layout value: a gather's view may be made afresh in every
# call (`.ap(vector_offset=)` in a loop), and the plan depends only on values (layouts are
# immutable), so equal views share one.  Bounded per storage: a loop over ever new layouts
# starts the table over rather than growing it.  A plan holds no reference to its storage, so
# the table's entry dies with the storage.
_row_plans: weakref.WeakKeyDictionary[Any, dict[Any, RowsPlan | None]] = \
    weakref.WeakKeyDictionary()
_ROW_PLANS_PER_STORAGE = 64


def _rows_plan(t: Any, layout: Layout) -> RowsPlan | None:
    """The cacheable part of a row gather, when the rest of the view is one regular pattern
    and rows step forward (memoised per storage and layout value); None with plans off (the
    general gather)."""
    if not current().options.plans:
        return None
    dyn = t.dynamic
    key = (layout, t.dtype, dyn.scale, dyn.bound, t.name)
    storage = t.storage
    plans = _row_plans.get(storage)
    if plans is None:
        plans = _row_plans[storage] = {}
    elif key in plans:
        return plans[key]
    if len(plans) >= _ROW_PLANS_PER_STORAGE:
        plans.clear()
    plan = plans[key] = _new_rows_plan(t, layout)
    return plan


def _new_rows_plan(t: Any, layout: Layout) -> RowsPlan | None:
    dyn = t.dynamic
    rest = Layout(layout.dims[1:], layout.base)
    if not rest.is_regular or t.dtype.bits < 8 or dyn.scale <= 0:
        return None
    ls, lt = leaves(rest)
    lo, hi = pattern_bounds(rest.base, ls, lt)
    limit = t.storage.nbytes * 8 // t.dtype.bits
    if lo < 0 or hi >= limit:
        return None  # the general path reports it
    rows = (limit - 1 - hi) // dyn.scale + 1  # rows whose every element lies in storage
    return RowsPlan(t.name, t.dtype, layout.shape, dyn.scale, rest.base, ls, lt, rows,
                    dyn.bound)


def _bind_rows(t: Any, plan: RowsPlan, op: str, role: str) -> Rows:
    idx, top = _vector_offsets(t, plan.shape[0], op, role)
    if top >= plan.bound:
        # within the select's range but past the storage (a bad .ap, or a broken base view)
        _vector_access(t, t.layout, op, role)
    return Rows(plan, idx, t.storage)


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
    return IndexedRows.of_rows(t.name, t.storage, t.dtype, shape, offs, idx)


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
    check_live(t, op, role)  # (a view a register places is an access of its storage too)
    dyn = t.dynamic
    if dyn is None or not t.layout.static:
        return
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
