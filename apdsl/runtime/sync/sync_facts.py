"""What the synchronisation checker (`apdsl.runtime.sync`) records of one operand access, the
facts of a view it needs (the region its storage lies in and the byte range it touches), and
the plan of an instruction on its operand views (their facts and the pipe that runs it)."""

from __future__ import annotations

import weakref
from math import prod
from typing import Any

import numpy as np

from ...tensor.layout import pattern_bounds, plain_leaves
from ...tensor.machine import current
from .pipes import PIPE_INDEX, pipe_of

# An access as the checker keeps it, in its hot path: a plain tuple (made per operand of every
# instruction, so as cheap as Python makes anything), turned into a `Touch` only for a message.
# Fields: pipe index, the pipe's sequence number, first and last region byte, the checker's
# access number (which of two earlier accesses came first), write?, the view's static facts
# (`Static`), (op, name= given), span, location.
Record = tuple[int, int, int, int, int, bool, "Static", tuple[str, Any], Any, Any]
# What the exact byte set needs of a view: its layout (None: not static), element bits, the
# region byte where its storage starts; whether its byte range is dense; and its storage's
# (id, name, line declared), so a race on bytes a new tensor reuses names both tensors.  The
# layout, not the view: the checker must not keep freed storage alive.
Static = tuple[Any, int, int, bool, Any]


class Touch:
    """One operand access of one executed instruction (a `Record` made readable, for the slow
    path that compares exact bytes and writes the message)."""

    __slots__ = ("pipe", "seq", "write", "lo", "hi", "dense", "layout", "bits", "opname",
                 "span", "location", "base", "n", "owner")

    def __init__(self, rec: Record) -> None:
        self.pipe, self.seq, self.lo, self.hi, self.n, self.write, static, self.opname, \
            self.span, self.location = rec
        self.layout, self.bits, self.base, self.dense, self.owner = static

    @property
    def op(self) -> str:
        """How messages name the instruction (made only when a message needs it)."""
        op, name = self.opname
        return f"{op} {name!r}" if name is not None else op

    def exact(self) -> np.ndarray:
        """The sorted region bytes the access touches."""
        if self.layout is None:
            return np.arange(self.lo, self.hi + 1, dtype=np.int64)
        offs = _sorted_unique(np.asarray(self.layout.offsets(), dtype=np.int64).ravel())
        bits = self.bits
        if bits < 8:
            out = _sorted_unique(offs * bits // 8)
        else:
            size = bits // 8
            out = (offs[:, None] * size + np.arange(size, dtype=np.int64)).ravel()
        return _sorted_unique(out) + self.base


def common_bytes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The bytes two `Touch.exact` arrays (sorted, unique) share, sorted: each of the smaller
    looked up in the larger (`np.intersect1d` sorts both together, the checker's cost when two
    cores' tiles interleave in one GM matrix)."""
    if a.size > b.size:
        a, b = b, a
    if not a.size:
        return a
    at = np.searchsorted(b, a)
    hit = at < b.size
    hit[hit] = b[at[hit]] == a[hit]
    return a[hit]


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """`np.unique(a)`; an array already strictly increasing (a tile's offsets in row-major
    order, mostly) is returned as it is, found in one pass instead of a sort."""
    if a.size < 2 or bool((a[1:] > a[:-1]).all()):
        return a
    return np.unique(a)


def region_key(t: Any) -> tuple[Any, int]:
    """The key of the region a view's storage lies in, and where the storage starts in it:
    on-chip Ascend buffers are one address space each per core (a freed tile's bytes are the
    next allocation's), GM is one region per storage, shared by the cores."""
    s = t.storage
    address = getattr(s, "address", None)
    if s.buffer != "gm" and isinstance(address, int):
        # (each core of a launch has its own on-chip buffers: its address space)
        return (s.buffer, s.space) if s.space else s.buffer, address
    return s.id, 0  # the id, not the storage: a freed tensor must be freed


# What the checker needs of a view, per view: (region key, region byte of its storage's start,
# first region byte, last region byte, dense, layout or None, element bits, buffer).  A loop's
# tiles come back (apdsl.runtime.ascend.dma caches them), so most instructions find their operands
# here and the checker does no layout work for them.
_Facts = tuple[Any, int, int, int, bool, Any, int, str, Any]
_facts: weakref.WeakKeyDictionary[Any, _Facts] = weakref.WeakKeyDictionary()


def facts_of(t: Any) -> _Facts:
    planned = current().options.plans  # (off: made afresh every time)
    if planned:
        try:
            return _facts[t]
        except (KeyError, TypeError):
            pass
    key, base = region_key(t)
    lo, hi, dense = _measure(t)
    static = t.dynamic is None and t.layout.static
    st = t.storage
    span = getattr(st, "span", None)
    out = (key, base, lo + base, hi + base, dense, t.layout if static else None, t.dtype.bits,
           st.buffer, (st.id, st.name, span.line if span is not None else None))
    if t.dynamic is None and planned:
        try:
            _facts[t] = out
        except TypeError:
            pass
    return out


def _measure(t: Any) -> tuple[int, int, bool]:
    fast = plain_leaves(t.layout) if t.dynamic is None else None
    if fast is not None:
        counts, strides = fast
        if 0 in counts:
            return 0, -1, True
        lo, hi = pattern_bounds(t.layout.base, counts, strides)
        bits = t.dtype.bits
        return lo * bits // 8, ((hi + 1) * bits - 1) // 8, prod(counts) == hi - lo + 1
    if t.dynamic is None and t.layout.static:
        lo, hi = t.layout.span()
        if hi < lo:
            return 0, -1, True
        bits = t.dtype.bits
        dense = prod(t.shape) == hi - lo + 1
        return lo * bits // 8, ((hi + 1) * bits - 1) // 8, dense
    return 0, t.storage.nbytes - 1, False


# -- plans: the facts of one instruction's operands ---------------------------------------------

# The pipe of an instruction by (op, its operands' roles and buffers): the table decides by the
# path the operands take (`pipe_of`), the same for every instance on the same buffers.
_pipes: dict[tuple[Any, ...], str | None] = {}
# Per instruction signature (op, roles, the views' ids): its plan, ending with the weak
# references to the views (their callbacks drop the plan)
PLANS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_PLAN_LIMIT = 4096  # instruction signatures remembered (`plan_of`)


def plan_of(op: str, operands: dict[str, Any]) -> tuple[Any, ...]:
    """(pipe, pipe index (-1: none), the accesses' facts) of an instruction on these operands,
    made once per instruction and operand views: views are immutable and a loop issues the same
    instruction on the same tiles again and again.  Nothing in a plan depends on a checker's
    state.  Kept by the views' ids, and dropped when any of the views dies (its weak
    reference's callback runs before the view's memory, and so its id, can be reused): a plan
    found is the plan of these very views.  The cache keeps no storage alive; bounded."""
    facts = [(role, facts_of(t)) for role, t in operands.items()]
    pkey = (op,) + tuple((role, f[7]) for role, f in facts)
    try:
        pipe = _pipes[pkey]
    except KeyError:
        pipe = _pipes[pkey] = pipe_of(op, operands)
    # (a written operand is `dst`; an instruction writing several names them dst0, dst1, ...)
    entries = tuple((k, lo, hi, role.startswith("dst"), (layout, bits, base, dense, owner), role)
                    for role, (k, base, lo, hi, dense, layout, bits, _, owner) in facts
                    if hi >= lo)
    plan = (pipe, PIPE_INDEX[pipe] if pipe is not None else -1, entries)
    views = operands.values()
    if all(t.dynamic is None for t in views) and current().options.plans:
        key = (op, *operands, *map(id, views))

        def drop(_: Any, key: tuple[Any, ...] = key, plans: dict[Any, Any] = PLANS) -> None:
            plans.pop(key, None)

        try:
            refs = tuple(weakref.ref(t, drop) for t in views)
        except TypeError:  # not a weakly referable view: not cached
            return plan
        if len(PLANS) >= _PLAN_LIMIT:
            PLANS.clear()
        PLANS[key] = plan + (refs,)  # (the references live as long as the plan)
    return plan
