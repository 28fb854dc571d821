"""What the synchronisation checker (`apdsl.runtime.sync`) records of one operand access, and
the facts of a view it needs: the region its storage lies in and the byte range it touches."""

from __future__ import annotations

import weakref
from math import prod
from typing import Any

import numpy as np

from ..tensor.layout import pattern_bounds, plain_leaves

# An access as the checker keeps it, in its hot path: a plain tuple (made per operand of every
# instruction, so as cheap as Python makes anything), turned into a `Touch` only for a message.
# Fields: pipe index, the pipe's sequence number, first and last region byte, the checker's
# access number (which of two earlier accesses came first), write?, the view's static facts
# (`Static`), (op, name= given), span, location.
Record = tuple[int, int, int, int, int, bool, "Static", tuple[str, Any], Any, Any]
# What the exact byte set needs of a view: its layout (None: not static), element bits, the
# region byte where its storage starts; and whether its byte range is dense.  The layout, not
# the view: the checker must not keep freed storage alive.
Static = tuple[Any, int, int, bool]


class Touch:
    """One operand access of one executed instruction (a `Record` made readable, for the slow
    path that compares exact bytes and writes the message)."""

    __slots__ = ("pipe", "seq", "write", "lo", "hi", "dense", "layout", "bits", "opname",
                 "span", "location", "base", "n")

    def __init__(self, rec: Record) -> None:
        self.pipe, self.seq, self.lo, self.hi, self.n, self.write, static, self.opname, \
            self.span, self.location = rec
        self.layout, self.bits, self.base, self.dense = static

    @property
    def op(self) -> str:
        """How messages name the instruction (made only when a message needs it)."""
        op, name = self.opname
        return f"{op} {name!r}" if name is not None else op

    def exact(self) -> np.ndarray:
        """The sorted region bytes the access touches."""
        if self.layout is None:
            return np.arange(self.lo, self.hi + 1, dtype=np.int64)
        offs = np.unique(np.asarray(self.layout.offsets(), dtype=np.int64).ravel())
        bits = self.bits
        if bits < 8:
            out = np.unique(offs * bits // 8)
        else:
            size = bits // 8
            out = (offs[:, None] * size + np.arange(size, dtype=np.int64)).ravel()
        return np.unique(out) + self.base


def region_key(t: Any) -> tuple[Any, int]:
    """The key of the region a view's storage lies in, and where the storage starts in it:
    on-chip Ascend buffers are one address space each (a freed tile's bytes are the next
    allocation's), GM is one region per storage."""
    s = t.storage
    address = getattr(s, "address", None)
    if s.buffer != "gm" and isinstance(address, int):
        return s.buffer, address
    return s.id, 0  # the id, not the storage: a freed tensor must be freed


# What the checker needs of a view, per view: (region key, region byte of its storage's start,
# first region byte, last region byte, dense, layout or None, element bits, buffer).  A loop's
# tiles come back (apdsl.runtime.ascend caches them), so most instructions find their operands
# here and the checker does no layout work for them.
_Facts = tuple[Any, int, int, int, bool, Any, int, str]
_facts: weakref.WeakKeyDictionary[Any, _Facts] = weakref.WeakKeyDictionary()


def facts_of(t: Any) -> _Facts:
    try:
        return _facts[t]
    except (KeyError, TypeError):
        pass
    key, base = region_key(t)
    lo, hi, dense = _measure(t)
    static = t.dynamic is None and t.layout.static
    out = (key, base, lo + base, hi + base, dense, t.layout if static else None, t.dtype.bits,
           t.storage.buffer)
    if t.dynamic is None:
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
