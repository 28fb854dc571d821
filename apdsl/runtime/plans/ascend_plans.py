"""Plans of the Ascend hot paths: a copy's (or an mmad's) rules checked once per operand views.

Views are immutable, so every rule an Ascend copy or `mmad` checks of its operands (path,
dtypes, alignment, formats, valid extents, whole-fractal extents, element counts, strict-padding
K) has the same answer whenever the same views come back, as a loop's tiles do
(`apdsl.tensor.tla` memoises them).  `ascend.dma_copy` and `mmad.mmad` check a new set of views
in full and keep the outcome, a plan, here; a call with a plan only does what can differ from
call to call: freed storage (`resolve`), the init check of what it reads, the duplicate check
and written marks of what it writes, the synchronisation checker and the trace
(`trace.record`), and the data itself.  The first call runs the same plan right after making
it (resolving the views, as any instruction does).  When that run was one `np.copyto` (or, for
mmad, two gathers, a product and an add) over static strided views, the plan keeps their
accesses and NumPy arrays, and later calls take the fast path (`run_fast`, `mmad.run_fast`):
the same per-call checks in the same order on what the first call made; anything out of the
ordinary (check mode, a freed storage, unwritten operands) goes back to the full path, which
reports it.

A fast copy between a GM view and an on-chip view is also kept "by value" on the on-chip view
(`keep_value`, as `apdsl.runtime.plans.dmaplan` keeps a plain NKI pair): a GM tile of a loop is a
new view at a new base offset each time (and each run: new storages), but every rule of the
copy depends on its layout only relative to that base (GM has no alignment rule; the bounds
are checked again per tile), so another GM view equal in dtype, buffer, format, layout dims,
valid extent (a full tile: its valid view is itself) and storage size, shape and dtype takes a
plan made from the kept one (`by_value`): its access and NumPy array are the kept ones moved
by the base's difference over its own storage's bytes.  Loads (whole fractals: GM offsets
have a rule) and tiles with a tail are never matched by value.

Plans are kept per first view (weakly: they die with it; also on the view itself, `Kept`), per
the other views by id, each checked by a weak reference (a dead view's id may be reused), at
most `LIMIT` per first view, and dropped when another view of the entry dies.  A plan never
refers to its first view (that would keep it alive): `None` stands for it.
"""

from __future__ import annotations

import weakref
from math import prod
from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor.layout import pattern_bounds
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.access import oom
from ..core.move import plain_pair
from ..core.nd2nz import tail_offsets, zero_row_tails
from ..core.operands import operand_shapes, resolve_operands
from ..core.written import check_init, check_unique, mark_written

LIMIT = 64  # plans per first view (a loop over fresh views must not grow memory)
Table = weakref.WeakKeyDictionary  # first view -> {(extra, ids of the others): (refs, plan)}


class Kept(dict):  # type: ignore[type-arg]
    """A first view's plans, {(extra, ids of the other views): (their weak references, plan)}:
    in the table and on the view itself (its `pair` slot, which the NKI `dmaplan` uses on NKI
    views only), so a loop's next call finds them with one attribute read."""

    __slots__ = ()


def _kept(table: Table, first: Any) -> Kept | None:
    per = getattr(first, "pair", None)
    if type(per) is Kept:
        return per
    try:
        return table.get(first)
    except TypeError:  # not a view: the full checks report it
        return None


def lookup(table: Table, first: Any, rest: tuple[Any, ...], extra: Any = None) -> Any:
    """The plan kept for these views (and `extra`, what else the checks depended on), or
    None (always with plans off: the `plans` option)."""
    if not current().options.plans:
        return None
    per = _kept(table, first)
    if per is None:
        return None
    got = per.get((extra,) + tuple(map(id, rest)))
    if got is None:
        return None
    for ref, t in zip(got[0], rest):
        if ref() is not t:
            return None
    return got[1]


def keep(table: Table, first: Tensor, rest: tuple[Tensor, ...], extra: Any, plan: Any) -> None:
    """Keep `plan` for these views.  The entry goes when any of the other views dies (a plan
    holds views of their storage and NumPy arrays over it, which must not outlive them)."""
    per = _kept(table, first)
    if per is None:
        per = Kept()
        try:
            object.__setattr__(first, "pair", per)
        except AttributeError:  # an object without the slot: the table alone
            pass
    elif len(per) >= LIMIT:
        per.clear()
    table[first] = per
    key = (extra,) + tuple(map(id, rest))
    held = weakref.ref(first)

    def drop(_: Any, key: Any = key) -> None:
        # (finds the entry through the first view, held weakly: a callback holding the entry's
        # dict would make a cycle with it, and the storages its plan holds would then wait for
        # the garbage collector instead of going when their views do)
        t = held()
        per = None if t is None else _kept(table, t)
        if per is not None:
            per.pop(key, None)

    per[key] = (tuple(weakref.ref(t, drop) for t in rest), plan)


def cacheable(*ts: Tensor) -> bool:
    """Views whose checks depend on nothing but the views: no runtime index, no register
    (and plans on: with the `plans` option off nothing is kept)."""
    return current().options.plans and all(t.dynamic is None and t.layout.static for t in ts)


# =============================================================================================
# Copies
# =============================================================================================

class CopyPlan:
    """What an Ascend `dma_copy` moves once its rules passed: the views it moves (`dv`, `sv`;
    None: dst or src itself), whether it is a whole-fractal load (LoadData/Load2D: bytes and
    their written state) or a row-major copy (with Nd2Nz's row-tail zero fill into `tails`).
    `fast`, set after the first call that ran in full (the general copy): the resolved
    accesses and NumPy arrays of a copy of two static strided views that is one np.copyto,
    which later calls use directly (`run_fast`)."""

    __slots__ = ("empty", "load", "dv", "sv", "tails", "column_major", "counted", "fast", "sync")

    def __init__(self, *, empty: bool = False, load: bool = False, dv: Tensor | None = None,
                 sv: Tensor | None = None, tails: bool = False,
                 column_major: bool = False) -> None:
        self.empty = empty  # a tile wholly past the edge of its parent: nothing moves
        self.load = load
        self.dv, self.sv = dv, sv
        self.tails, self.column_major = tails, column_major
        self.counted = False  # the element counts were found equal (static views: for good)
        self.fast: tuple[Any, ...] | None = None
        self.sync: tuple[Any, ...] | None = None  # (`trace.kept_plan`, with `fast`)


def run_copy(plan: CopyPlan, dst: Tensor, src: Tensor, name: str | None, label: str) -> None:
    """Execute a checked copy: resolve (freed storage), record (sync checker, trace), move."""
    if plan.empty:
        return
    if plan.fast is not None and run_fast(plan, dst, src, name):
        return
    dv = dst if plan.dv is None else plan.dv
    sv = src if plan.sv is None else plan.sv
    accs = resolve_operands(label, ex.TI_GROUP, ("src", sv), ("dst", dv))
    if not plan.load and not plan.counted:
        ss, ds = operand_shapes(accs, sv, dv)
        if ss is not None and ds is not None and prod(ss) != prod(ds):
            raise TargetError(f"{label}: dst has {prod(ds)} elements {ds}, src has {prod(ss)} "
                              f"{ss}", code="APK306",
                              notes=[f"dst {dst.name} @ {dst.buffer}, src {src.name} @ "
                                     f"{src.buffer}"],
                              help="a DMA moves elements in row-major order; both sides must "
                              "hold the same number of elements", dst_shape=ds, src_shape=ss)
        plan.counted = cacheable(dv, sv)
    trace.record("dma_copy", name, {"dst": dv, "src": sv})
    if accs is None:
        return
    sacc, dacc = accs
    if plan.load:  # whole fractals as stored, written state too; not an init-checked read
        check_unique(dacc, label, "dst")
        if type(dacc) is ex.Strided and type(sacc) is ex.Strided:
            ex.strided_copy(dacc.array(), sacc.array(), False, dacc.dtype)
        else:
            dacc.write(sacc.read().reshape(dacc.shape))
        ex.copy_written(dacc, sacc)
        _keep_fast(plan, dacc, sacc, dv, sv)
        return
    ex.copy(dacc, sacc, label)
    if plan.counted and dacc.dtype == sacc.dtype:
        _keep_fast(plan, dacc, sacc, dv, sv)
    if not current().check and plan.tails:
        zero_row_tails(dv, plan.column_major)


def _keep_fast(plan: CopyPlan, dacc: ex.Access, sacc: ex.Access, dv: Tensor,
               sv: Tensor) -> None:
    """After a full run of a copy of two static strided views that is one np.copyto: what
    `run_fast` needs (the accesses are the ones `resolve` memoises on the views, so they are
    what resolving would give; the tails' offsets are the ones `zero_row_tails` keeps for the
    view)."""
    if type(dacc) is not ex.Strided or type(sacc) is not ex.Strided or not cacheable(dv, sv) \
            or getattr(dv, "memo", None) is not dacc or getattr(sv, "memo", None) is not sacc:
        return
    arrays = plain_pair(dacc.array(), sacc.array())
    if arrays is None:
        return
    tails = None
    if plan.tails:
        tails = tail_offsets(dv, plan.column_major)
        if tails is not None:  # the fill's own access, made once
            tails = ex.Indexed(dv.name, dv.storage, dv.dtype, (tails.size,), None, tails)
    # injective: checked by the full run (a duplicate write raised before the plan got here)
    plan.sync = trace.kept_plan("dma_copy", {"dst": dv, "src": sv})
    plan.fast = (dacc, sacc, dacc.storage, sacc.storage, arrays[0], arrays[1],
                 dacc.dtype.bits, tails)


def run_fast(plan: CopyPlan, dst: Tensor, src: Tensor, name: str | None) -> bool:
    """A planned copy of two static strided views, with every per-call check of the full path
    (freed storage, the sync checker and trace, the init check of a row-major copy's source,
    the written-state refinement of a narrow destination, the written marks) on the accesses
    and arrays the first call made.  False (nothing done): the full path must run (check mode,
    a freed storage, which it reports)."""
    m = current()
    if m.check:
        return False
    dacc, sacc, dst_st, src_st, d, s, bits, tails = plan.fast  # type: ignore[misc]
    if dst_st.freed or src_st.freed:
        return False
    trace.record_kept(m, plan.sync, "dma_copy", name,
                      {"dst": dst if plan.dv is None else plan.dv,
                       "src": src if plan.sv is None else plan.sv})
    if plan.load:
        if bits < dst_st.unit_bits:
            check_unique(dacc, _label(name), "dst")  # refines the written state first
        np.copyto(d, s)
        if not src_st.all_written:
            ex.copy_written(dacc, sacc)
        elif not dst_st.all_written:
            mark_written(dacc)
        return True
    if not src_st.all_written and m.options.init_check:
        check_init(sacc, _label(name), "src")
    try:
        if bits < dst_st.unit_bits:
            check_unique(dacc, _label(name), "dst")
        np.copyto(d, s)
        if not dst_st.all_written or m.taint is not None:
            mark_written(dacc)  # (the source's unwritten elements stay unwritten in dst)
        if tails is not None:
            ex.store(tails, np.zeros(tails.size, tails.dtype.np))
    except MemoryError as e:
        raise oom(_label(name), "dst", dst_st, e) from None
    return True


def run_kept(dst: Any, src: Any, name: str | None) -> bool:
    """`dma_copy(dst, src)` by the fast plan kept for this very pair, before any of the
    copy's checks (the family, the path, atomic add, alignment: all passed for these views
    when the plan was made; the caller checked that atomic add is off); False (nothing done)
    when the pair has none or its fast path declines (`run_fast`)."""
    per = getattr(dst, "pair", None)
    if type(per) is not Kept:
        return False
    got = per.get((None, id(src)))
    if got is None or got[0][0]() is not src:
        return False
    plan = got[1]
    return plan.fast is not None and run_fast(plan, dst, src, name)


def _label(name: str | None) -> str:
    return "dma_copy" if name is None else trace.instruction_label("dma_copy", name)


# -- plans by value (a GM tile and an on-chip view) -------------------------------------------

_VALUE = object()  # first item of a by-value key in a Kept (id keys start with None or a bool)


def _gm_side(dst: Tensor, src: Tensor) -> int:
    """0: the GM view is src, 1: it is dst, -1: no GM view or both."""
    d, s = dst.buffer == "gm", src.buffer == "gm"
    return -1 if d is s else (1 if d else 0)


def _value_key(role: int, g: Tensor) -> tuple[Any, ...]:
    st = g.storage
    return (_VALUE, role, g.layout.dims, g.dtype, g.origin_shape, st.buffer, st.format, st.dtype,
            st.shape, st.nbytes, st.c0)


class ValuePlan:
    """A fast GM <-> on-chip copy kept on its on-chip view, for the GM views equal to the one it
    was made with but for their base offset: the on-chip side's parts as they were, the GM
    side's access and array relative to the base (no view or storage of the GM side)."""

    __slots__ = ("role", "chip", "base", "offset", "shape", "lshape", "lstrides", "lo", "hi",
                 "aoff", "ashape", "astrides", "dtype")

    def __init__(self, role: int, plan: CopyPlan, g: Tensor) -> None:
        dacc, sacc, dst_st, src_st, d, s, bits, tails = plan.fast  # type: ignore[misc]
        if role == 0:  # GM is src
            acc, arr = sacc, s
            self.chip = (plan.dv, dacc, dst_st, d, bits, tails, plan.tails, plan.column_major)
        else:
            acc, arr = dacc, d
            self.chip = (plan.sv, sacc, src_st, s, bits, tails, plan.tails, plan.column_major)
        self.role = role
        self.base, self.offset = g.layout.base, acc.offset
        self.shape, self.lshape, self.lstrides = acc.shape, acc.lshape, acc.lstrides
        self.lo, self.hi = pattern_bounds(0, acc.lshape, acc.lstrides)
        self.aoff = arr.__array_interface__["data"][0] \
            - acc.storage.data.__array_interface__["data"][0]
        self.ashape, self.astrides, self.dtype = arr.shape, arr.strides, acc.dtype

    def make(self, g: Tensor, o: Tensor) -> CopyPlan | None:
        """The plan of the copy between on-chip view `o` and GM view `g` (None: `g` is out of
        bounds there, or already resolved otherwise: the full path decides)."""
        st = g.storage
        if st.freed:
            return None
        delta = g.layout.base - self.base
        off = self.offset + delta
        if off + self.lo < 0 or off + self.hi >= st.nbytes * 8 // self.dtype.bits:
            return None  # the full path reports it (APK401)
        acc = getattr(g, "memo", None)
        if acc is None:
            acc = ex.Strided(g.name, st, self.dtype, self.shape, g.layout, off, self.lshape,
                             self.lstrides)
            try:
                object.__setattr__(g, "memo", acc)  # as `resolve` memoises it
            except AttributeError:
                return None
        elif type(acc) is not ex.Strided or acc.offset != off or acc.lshape != self.lshape \
                or acc.lstrides != self.lstrides:
            return None
        arr = np.ndarray(self.ashape, self.dtype.np, buffer=st.data,
                         offset=self.aoff + delta * self.dtype.np.itemsize,
                         strides=self.astrides)
        view, cacc, cst, carr, bits, tails, has_tails, column_major = self.chip
        if self.role == 0:
            plan = CopyPlan(dv=view, tails=has_tails, column_major=column_major)
            plan.fast = (cacc, acc, cst, st, carr, arr, bits, tails)
        else:
            plan = CopyPlan(sv=view, tails=has_tails, column_major=column_major)
            plan.fast = (acc, cacc, st, cst, arr, carr, bits, tails)
        plan.counted = True  # (the element counts: values of the layouts, equal)
        dst, src = (o, g) if self.role == 0 else (g, o)
        plan.sync = trace.kept_plan("dma_copy", {"dst": dst if plan.dv is None else plan.dv,
                                                 "src": src if plan.sv is None else plan.sv})
        return plan


def by_value(table: Table, dst: Tensor, src: Tensor) -> CopyPlan | None:
    """A plan for this GM <-> on-chip pair made from one kept by value on the on-chip view
    (`keep_value`), or None.  Both views pass `cacheable`."""
    role = _gm_side(dst, src)
    if role < 0:
        return None
    g, o = (src, dst) if role == 0 else (dst, src)
    per = _kept(table, o)
    if per is None or g.origin_shape not in (None, g.shape):
        return None
    got = per.get(_value_key(role, g))
    return None if got is None else got[1].make(g, o)


def keep_value(table: Table, dst: Tensor, src: Tensor, plan: CopyPlan) -> None:
    """After a copy of this pair ran in full and made its fast plan: keep it by value on the
    on-chip view (a plain row-major copy of a full GM tile only)."""
    role = _gm_side(dst, src)
    if role < 0 or plan.fast is None or plan.load or plan.empty:
        return
    g, o = (src, dst) if role == 0 else (dst, src)
    if (plan.sv if role == 0 else plan.dv) is not None or g.origin_shape not in (None, g.shape):
        return  # a tail: its valid view is a region of it
    acc = plan.fast[1 - role]
    if type(acc) is not ex.Strided or acc.dtype.bits < 8 or not isinstance(g.layout.base, int):
        return
    per = _kept(table, o)
    if per is None:
        per = Kept()
        try:
            object.__setattr__(o, "pair", per)
        except AttributeError:
            pass
        table[o] = per
    elif len(per) >= LIMIT:
        per.clear()
    per[_value_key(role, g)] = ((), ValuePlan(role, plan, g))
