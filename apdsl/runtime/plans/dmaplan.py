"""`dma_copy` plans: what a copy between two views checked once, kept on the views.

Everything `dma_copy` checks about its operands besides their state is decided by values: each
view's layout, dtype, buffer, runtime index and storage size, and the target (the buffer
family, Tensor Indirection, PSUM, the element counts, the bounds of static patterns, the
on-chip entry limit, duplicate writes; with every hint at its default no hint rule can fail).
So once a copy has passed them, a plan repeats only what can change from one call to the next:

- whether either storage was freed (APK408: the full path then runs and reports it);
- the init check of the source (APK404), which reads the current written state;
- the written-state refinement a narrow destination needs, and marking dst written.

A *plain* plan (both views static strided, the copy one `np.copyto`) is matched by value: kept
on the destination view (`pair`) for sources equal in those facts, and on the source view
(`spair`) for such destinations.  So a tile declared in a loop, a new view of new storage in
every iteration, still finds the plan of the view it is copied from or into: its own access
is made from the plan's leaf pattern over its own storage (no layout work, the bounds already
known to hold for a storage of that size), and NumPy views of the storages' bytes are made
per call (a storage's bytes never move while it lives).  A plan holds no tensor or storage.

Any other plan (a runtime index: a `vector_select` gather; a transposing copy in tiles) is
kept on the destination for the very source object it was made with (held weakly) and
resolves both views each call (their memoised accesses; an index is read, shape- and
range-checked as always).

A plan is used only while executing (not in check mode), with nothing tracing (a trace records
every instruction through the slow path), and on the target it was made for.  A plain plan is
made by the first copy (a tile declared in a loop meets each slice once per round of the
loop); the others the second time the same pair is copied.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...tensor.machine import current
from ..core.access import Access, Strided, oom
from ..core.move import cast, copy, plain_pair
from ..core.resolve import resolve, warn_static
from ..core.trace import instruction_label
from ..core.written import check_init, check_unique, mark_written


class DmaPlan:
    """A kept copy.  A plain plan (`src` None) holds the facts of the two views it was made
    with (`dside`, `sside`: layout, dtype, buffer, storage size, then the logical shape and
    the leaf pattern: offset, leaf counts and strides) and is kept on both; `dshape`/`sshape`:
    the shapes the two arrays are viewed as when they differ from their leaf shapes.
    Otherwise `src` is a weak reference to the one source the plan serves."""

    __slots__ = ("src", "target", "dside", "sside", "dshape", "sshape", "convert")

    def __init__(self, target: str, src: weakref.ref | None = None, dside: tuple = (),
                 sside: tuple = (), dshape: tuple[int, ...] | None = None,
                 sshape: tuple[int, ...] | None = None, convert: bool = False) -> None:
        self.src = src
        self.target = target
        self.dside = dside
        self.sside = sside
        self.dshape = dshape
        self.sshape = sshape
        self.convert = convert


def _side(v: Any, acc: Strided) -> tuple[Any, ...]:
    st = v.storage
    return (v.layout, v.dtype, st.buffer, st.nbytes, acc.shape, acc.offset, acc.lshape,
            acc.lstrides)


def _matches(f: tuple[Any, ...], v: Any) -> bool:
    """View `v` equals, in every fact the plan's checks depended on, the view it was made
    with (the layout by value: the same object first, as fresh row-major layouts and kept
    children are; an equal one made another way, `h.slice(1, 0, 64)` for `h[:, 0:64]`, too)."""
    if v.dtype is not f[1] or v.dynamic is not None:
        return False
    st = v.storage
    if st.nbytes != f[3] or st.buffer != f[2]:
        return False
    layout = v.layout
    return layout is f[0] or layout == f[0]


def run(dst: Any, src: Any, name: Any) -> bool:
    """Copy `src` to `dst` by a kept plan; False (nothing done) when there is no usable plan
    and the full `dma_copy` must run."""
    p = getattr(dst, "pair", None)
    if type(p) is DmaPlan:
        if p.src is None:
            f = p.sside  # (`_matches`, inlined: this is every planned copy's first step)
            if src.dtype is f[1] and src.dynamic is None:
                st = src.storage
                if st.nbytes == f[3] and st.buffer == f[2] and \
                        (src.layout is f[0] or src.layout == f[0]):
                    return _plain(p, dst, src, False, name)
        elif p.src() is src:
            return _resolving(p, dst, src, name)
    p = getattr(src, "spair", None)
    if type(p) is DmaPlan and p.src is None and _matches(p.dside, dst):
        return _plain(p, dst, src, True, name)
    return False


def _usable(p: DmaPlan) -> bool:
    m = current()
    return not m.check and m.trace is None and m.targets["nki"] == p.target


def _resolving(p: DmaPlan, dst: Any, src: Any, name: Any) -> bool:
    if not _usable(p):
        return False
    label = "dma_copy" if name is None else instruction_label("dma_copy", name)
    for role, t in (("src", src), ("dst", dst)):
        if t.dynamic is not None:
            warn_static(t, label, role)
    sacc = resolve(src, label, "src")  # a storage freed: APK408 as always
    copy(resolve(dst, label, "dst"), sacc, label)
    return True


def _plain(p: DmaPlan, dst: Any, src: Any, held_by_src: bool, name: Any) -> bool:
    m = current()
    if m.check or m.trace is not None or m.targets["nki"] != p.target:
        return False
    ds, ss = dst.storage, src.storage
    if ds.freed or ss.freed:
        return False  # the full path reports it
    dacc = getattr(dst, "memo", None)
    sacc = getattr(src, "memo", None)
    if held_by_src:
        if type(sacc) is not Strided:
            return False
        if type(dacc) is not Strided:
            if dacc is not None:
                return False
            dacc = _access(dst, p.dside)
    else:
        if type(dacc) is not Strided:
            return False
        if type(sacc) is not Strided:
            if sacc is not None:
                return False
            sacc = _access(src, p.sside)
    if not ss.all_written and m.options.init_check:
        check_init(sacc, _label(name), "src")
    if dacc.dtype.bits < ds.unit_bits:
        check_unique(dacc, _label(name), "dst")  # refines the written state before moving
    try:
        d, s = dacc.array(), sacc.array()
        if p.dshape is not None:
            d = np.reshape(d, p.dshape, copy=False)
        if p.sshape is not None:
            s = np.reshape(s, p.sshape, copy=False)
        np.copyto(d, cast(s, dacc.dtype) if p.convert else s)
        if not ds.all_written:  # (NKI DMA: no PSUM operand, nothing else to note)
            mark_written(dacc)
    except MemoryError as e:
        raise oom(_label(name), "dst", ds, e) from None
    return True


def _access(t: Any, f: tuple[Any, ...]) -> Strided:
    """View `t`'s access, as `resolve` would make it (the same layout and dtype give the same
    leaves; a storage of the same size, the same bounds), memoised on it."""
    acc = Strided(t.name, t.storage, f[1], f[4], f[0], f[5], f[6], f[7])
    try:
        object.__setattr__(t, "memo", acc)
    except AttributeError:
        pass
    return acc


def _label(name: Any) -> str:
    return "dma_copy" if name is None else instruction_label("dma_copy", name)


def _put(t: Any, slot: str, value: Any) -> None:
    try:
        object.__setattr__(t, slot, value)
    except AttributeError:  # an object without the slot keeps nothing
        pass


def keep(dst: Any, src: Any, accs: list[Access] | None) -> None:
    """After the full `dma_copy` (every hint at its default) copied `src` to `dst` with the
    resolved accesses `accs` (src, dst): keep its plans (one np.copyto: on both views, matched
    by value; else on dst for this source, the second time the pair is copied)."""
    if accs is None:
        return  # check mode
    target = current().targets["nki"]
    sacc, dacc = accs
    if type(sacc) is Strided and type(dacc) is Strided and \
            getattr(dst, "memo", None) is dacc and getattr(src, "memo", None) is sacc:
        p = getattr(dst, "pair", None)
        if type(p) is DmaPlan and p.src is None and p.target == target and \
                _matches(p.sside, src) and getattr(src, "spair", None) is p:
            return  # (the plan was bypassed: tracing or checking)
        d, s = dacc.array(), sacc.array()
        pair = plain_pair(d, s)
        if pair is not None:
            p = DmaPlan(target, None, _side(dst, dacc), _side(src, sacc),
                        None if pair[0].shape == d.shape else pair[0].shape,
                        None if pair[1].shape == s.shape else pair[1].shape,
                        sacc.dtype != dacc.dtype)
            _put(dst, "pair", p)
            _put(src, "spair", p)
            return
    # not one np.copyto: a plan for this very source object, resolving both views each call
    p = getattr(dst, "pair", None)
    ref = p.src if type(p) is DmaPlan else p
    if type(ref) is weakref.ref and ref() is src:
        if type(p) is DmaPlan and p.target == target:
            return  # (the plan was bypassed: tracing or checking)
        if not (dst.layout.static and src.layout.static):
            return  # registers decide a shape: resolved afresh every time
        p = DmaPlan(target, ref)
    else:
        p = weakref.ref(src)
    _put(dst, "pair", p)
