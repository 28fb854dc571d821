"""A `dma_copy` plan per (destination view, source view), kept on the destination view.

A kernel copies the same views again and again (views asked for again are the same objects:
`apdsl.tensor.viewcache`).  Everything `dma_copy` checks about its operands besides their
state is decided by the two immutable views and the target: the buffer family, Tensor
Indirection, PSUM, the element counts, the bounds of static patterns, the on-chip entry limit
(and, with every hint at its default, no hint rule can fail).  So once a copy from `src` to
`dst` has passed them, the plan repeats only what can change from one call to the next:

- whether either storage was freed (APK408: the full path then runs and reports it);
- the init check of the source (APK404), which reads the current written state;
- the written-state refinement a narrow destination needs, and marking dst written;
- runtime indices and registers: a plan whose views have none copies between NumPy views
  made once; one with a runtime index (a `vector_select` gather) resolves both views each
  call (their memoised accesses; the index read, shape- and range-checked as always).

A plan is used only while executing (not in check mode), with nothing tracing (a trace records
every instruction through the slow path), on the target it was made for, and for the very
source object it was made with (held weakly).  It is kept the second time the same pair is
copied, so a copy whose views are new every time pays no more than a weak reference.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..tensor.machine import current
from .access import Access, Strided, oom
from .move import cast, copy, plain_pair
from .resolve import resolve, warn_static
from .trace import instruction_label
from .written import check_init, check_unique, mark_written


class DmaPlan:
    """What one (dst, src) copy needs per call.  `d`: a NumPy view of dst's storage for a
    plain copy (None for a plan that resolves its views each call), `common`: the shape the
    source array is viewed as when it differs from dst's.  Nothing of the source is held but
    a weak reference: a plan never keeps another tensor's storage alive."""

    __slots__ = ("src", "target", "dacc", "d", "common", "convert")

    def __init__(self, src: weakref.ref, target: str, dacc: Access, sacc: Access,
                 d: np.ndarray | None, common: tuple[int, ...] | None) -> None:
        self.src = src
        self.target = target
        self.dacc = dacc
        self.d = d
        self.common = common
        self.convert = sacc.dtype != dacc.dtype


def run(dst: Any, src: Any, name: Any) -> bool:
    """Copy `src` to `dst` by the plan kept on `dst`; False (nothing done) when there is no
    usable plan and the full `dma_copy` must run."""
    p = getattr(dst, "pair", None)
    if type(p) is not DmaPlan or p.src() is not src:
        return False
    m = current()
    if m.check or m.trace is not None or m.targets["nki"] != p.target:
        return False
    label = "dma_copy" if name is None else instruction_label("dma_copy", name)
    if p.d is None:
        for role, t in (("src", src), ("dst", dst)):
            if t.dynamic is not None:
                warn_static(t, label, role)
        sacc = resolve(src, label, "src")  # a storage freed: APK408 as always
        copy(resolve(dst, label, "dst"), sacc, label)
        return True
    dacc = p.dacc
    sacc = getattr(src, "memo", None)  # the source's memoised access (a static view's)
    ds, ss = dacc.storage, src.storage
    if ds.freed or ss.freed or type(sacc) is not Strided:
        return False  # the full path reports it
    if not ss.all_written and m.options.init_check:
        check_init(sacc, label, "src")
    if dacc.dtype.bits < ds.unit_bits:
        check_unique(dacc, label, "dst")  # refines the written state before anything moves
    s = sacc.array()
    if p.common is not None:
        s = np.reshape(s, p.common, copy=False)
    try:
        np.copyto(p.d, cast(s, dacc.dtype) if p.convert else s)
        mark_written(dacc)
    except MemoryError as e:
        raise oom(label, "dst", ds, e) from None
    return True


def keep(dst: Any, src: Any, accs: list[Access] | None) -> None:
    """After the full `dma_copy` (every hint at its default) copied `src` to `dst` with the
    resolved accesses `accs` (src, dst): remember the pair, and the second time keep its plan."""
    if accs is None:
        return  # check mode
    p = getattr(dst, "pair", None)
    ref = p.src if type(p) is DmaPlan else p
    if type(ref) is weakref.ref and ref() is src:
        target = current().targets["nki"]
        if type(p) is DmaPlan and p.target == target:
            return  # (the plan was bypassed: tracing or checking)
        if not (dst.layout.static and src.layout.static):
            return  # registers decide a shape: resolved afresh every time
        sacc, dacc = accs
        d = common = None
        if type(dacc) is Strided and type(sacc) is Strided and getattr(dst, "memo", None) is \
                dacc and getattr(src, "memo", None) is sacc:
            pair = plain_pair(dacc.array(), sacc.array())
            if pair is not None:
                d = pair[0]
                common = None if pair[1].shape == sacc.array().shape else pair[1].shape
        p = DmaPlan(ref, target, dacc, sacc, d, common)
    else:
        p = weakref.ref(src)
    try:
        object.__setattr__(dst, "pair", p)
    except AttributeError:  # an object without the slot keeps nothing
        pass
