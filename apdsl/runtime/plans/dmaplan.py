"""NKI `dma_copy` plans, kept in the plan table (`apdsl.runtime.plans.table`).

Everything an NKI `dma_copy` with its hints at their defaults checks about its operands besides
their state is decided by values (the buffer family, Tensor Indirection, PSUM, the element
counts, the bounds of static patterns, the on-chip entry limit, duplicate writes), so a plan
kept under the two views' keys stands for any pair of equal views: a tile declared in a loop,
a new view of new storage in every iteration, finds the plan its first round made.  A call by
a plan repeats only what can change from one call to the next:

- whether either storage was freed (APK408: the full path then runs and reports it);
- the init check of the source (APK404), which reads the current written state;
- the written-state refinement a narrow destination needs, and marking dst written.

A *plain* plan (the copy one `np.copyto`) keeps the two leaf patterns and makes each operand's
access from them (`table.access`: no layout work), and NumPy views of the storages' bytes per
call; one whose destination covers its whole storage (its pattern is injective: the first call
checked it) allocates a fresh tile's bytes without the zero fill.  Any other copy (a transposing copy in tiles; a runtime index: a `vector_select`
gather, whose view has no key, and is planned for that very view object, held weakly) resolves
both views each call (their memoised accesses; an index is read, shape- and range-checked as
always) and copies them as the full path does.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...tensor.machine import current
from ..core.access import Access, Strided
from ..core.move import cast, copy, plain_pair
from ..core.resolve import resolve, warn_static
from ..core.trace import instruction_label
from . import table


class DmaPlan:
    """A kept copy: `plain` (the two leaf patterns, the arrays' shapes when they differ from
    the leaf shapes, whether it converts), or a resolving plan (`plain` None), with `refs`
    the weak references to the views keyed by identity (a runtime index)."""

    __slots__ = ("plain", "refs")

    def __init__(self, plain: tuple[Any, ...] | None, refs: tuple[Any, ...] = ()) -> None:
        self.plain = plain
        self.refs = refs


def _key(dst: Any, src: Any, target: str) -> tuple[Any, ...] | None:
    """The plan key of a copy: the views' keys, or, for a view with a runtime index over a
    static layout, the view itself by id (its plan checks it is that view)."""
    try:
        dk, sk = table.key_of(dst), table.key_of(src)
    except AttributeError:  # not a view: the full path reports it
        return None
    if dk is None:
        if dst.dynamic is None or not dst.layout.static:
            return None
        dk = id(dst)
    if sk is None:
        if src.dynamic is None or not src.layout.static:
            return None
        sk = id(src)
    return ("dma_copy", target, dk, sk)


def run(dst: Any, src: Any, name: Any) -> bool:
    """Copy `src` to `dst` by a kept plan; False (nothing done) when there is no usable plan
    and the full `dma_copy` must run."""
    m = current()
    if m.check or m.trace is not None:
        return False
    dk, sk = getattr(dst, "key", None), getattr(src, "key", None)
    if dk is not None and sk is not None:  # (both keys made before: every planned copy's path)
        p = table.PLANS.get(("dma_copy", m.targets["nki"], dk, sk))
    else:
        key = _key(dst, src, m.targets["nki"])
        p = None if key is None else table.PLANS.get(key)
    if p is None:
        return False
    if p.plain is None:
        for ref, t in zip(p.refs, (dst, src)):
            if ref is not None and ref() is not t:
                return False  # another view at a dead one's id
        return _resolving(dst, src, name)
    return _plain(p.plain, dst, src, name)


def _resolving(dst: Any, src: Any, name: Any) -> bool:
    label = _label(name)
    for role, t in (("src", src), ("dst", dst)):
        if t.dynamic is not None:
            warn_static(t, label, role)
    sacc = resolve(src, label, "src")  # a storage freed: APK408 as always
    copy(resolve(dst, label, "dst"), sacc, label)
    return True


def _plain(f: tuple[Any, ...], dst: Any, src: Any, name: Any) -> bool:
    ds, ss = dst.storage, src.storage
    dacc, sacc = getattr(dst, "memo", None), getattr(src, "memo", None)
    if ds.freed or ss.freed:
        return False  # the full path reports it
    if type(dacc) is not Strided:
        dacc = table.access(dst, f[0])
    if type(sacc) is not Strided:
        sacc = table.access(src, f[1])
    if dacc is None or sacc is None:
        return False  # another kind of memo: the full path

    def move() -> None:
        # a copy onto every byte of a storage not yet allocated needs no zero fill first
        blank = f[5] and ds is not ss and ds.allocate_blank()
        try:
            d, s = dacc.array(), sacc.array()  # type: ignore[union-attr]
            if f[2] is not None:
                d = np.reshape(d, f[2], copy=False)
            if f[3] is not None:
                s = np.reshape(s, f[3], copy=False)
            np.copyto(d, cast(s, dacc.dtype) if f[4] else s)  # type: ignore[union-attr]
        except BaseException:
            if blank:
                ds.data.fill(0)  # nothing written: unwritten bytes read 0
            raise

    table.execute(_label(name), (("src", sacc),), dacc, move)
    return True


def _label(name: Any) -> str:
    return "dma_copy" if name is None else instruction_label("dma_copy", name)


def keep(dst: Any, src: Any, accs: list[Access] | None) -> None:
    """After the full `dma_copy` (every hint at its default) copied `src` to `dst` with the
    resolved accesses `accs` (src, dst): keep its plan."""
    if accs is None:
        return  # check mode
    key = _key(dst, src, current().targets["nki"])
    if key is None:
        return  # registers decide a shape: resolved afresh every time
    sacc, dacc = accs
    if type(key[2]) is table.Key and type(key[3]) is table.Key:
        sf, df = table.leaf(sacc), table.leaf(dacc)
        if sf is not None and df is not None:
            d, s = dacc.array(), sacc.array()
            pair = plain_pair(d, s)
            if pair is not None:
                table.keep(key, DmaPlan((df, sf, None if pair[0].shape == d.shape else
                                         pair[0].shape, None if pair[1].shape == s.shape else
                                         pair[1].shape, sacc.dtype != dacc.dtype,
                                         dacc.size * dacc.dtype.bits
                                         == dacc.storage.nbytes * 8)))
                return
    refs = tuple(None if type(k) is table.Key else weakref.ref(t)
                 for k, t in zip(key[2:], (dst, src)))
    table.keep(key, DmaPlan(None, refs))
