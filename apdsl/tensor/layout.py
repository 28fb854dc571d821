"""Layouts: functions from a logical coordinate to a storage offset.

This module is the one place that knows how a coordinate becomes an offset.  NKI views, einops
rearranges, Ascend fractal formats and TLA tiles are all `Layout`s; lowering an instruction operand
to a hardware access pattern is `Layout.pieces()` followed by `coalesce`.

A `Layout` is a base offset plus one `Dim` per logical dimension.  A `Dim` is a mixed-radix map
(CuTe-style modes, inner first, each `(count, stride)`) composed with an arithmetic progression:

    offset_of(i) = phi(start + i * step),   phi(x) = sum_k digit_k(x) * stride_k

where the digits decompose x over the mode counts, inner first, and the outermost digit is
unbounded.  A plain NumPy-like dimension has one mode and start 0, step 1.  A dimension made by
merging dimensions that NumPy could only merge by copying (`b c h w -> (b h w) c`) has several
modes; a slice of such a dimension that is not aligned to its blocks keeps `start`/`step` and
lowers to several access patterns ("pieces").

Operations are pure: each returns a new `Layout`, or None where the result would be no layout
(`merge`, `split`, `reshape`); the caller, which knows what the user asked for, raises the error.
A split succeeds exactly when the result's offsets are such a map (checked offset by offset
where the modes alone do not decide it); a merge of regular dims always succeeds, and one with
a sliced dim when the result is one mode list or a window of one (the sliced dim outermost).

Patterns are lists of `[stride, count]` pairs, outermost first, as NKI writes them.  Strides and
counts may be `VirtualRegister`s only in plain dimensions made by `.ap`; such layouts are resolved
to integers when an instruction executes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..records import record
from .dimops import contiguous, merge_dims, reshape_blocks, split_dim
from .dims import Dim, Mode, dim_pieces, is_static, make_dim, mode_offset

__all__ = ["Dim", "Layout", "Mode", "Piece", "bounds", "coalesce", "is_injective", "is_static",
           "leaves", "make_dim", "mode_offset", "pattern_bounds", "pattern_injective",
           "piece_leaves", "plain_leaves", "strided_offsets", "terms_injective"]


@record
class Piece:
    """One access pattern covering the box `start[d]:start[d]+shape[d]` of the layout."""

    start: tuple[int, ...]
    shape: tuple[int, ...]
    pattern: tuple[tuple[int, int], ...]  # [stride, count], outermost first, per leaf
    offset: int
    dims_of_leaves: tuple[int, ...]  # which layout dim each pattern entry belongs to

@record
class Layout:
    """A function from a logical coordinate to a storage offset: a base offset and one `Dim` per
    dimension, each a list of (count, stride) modes, inner first (CuTe notation in `str`).

    >>> x = apdsl.ndarray((2, 3, 4), "float32", "hbm").rearrange("b c h -> (b h) c")
    >>> str(x.layout)
    '((4,2),3):((1,12),4)'
    >>> int(x.layout.offsets()[5, 1])                   # b = 1, h = 1, c = 1
    17
    """
    dims: tuple[Dim, ...]
    base: int = 0

    # -- construction -------------------------------------------------------------------------
    @staticmethod
    def row_major(shape: tuple[int, ...], offset: int = 0) -> Layout:
        if offset == 0:
            return _cached_row_major(tuple(shape))
        return _row_major_layout(tuple(shape), offset)

    @staticmethod
    def from_pattern(pattern: list, offset: Any = 0) -> Layout:
        return Layout(tuple(Dim.plain(c, s) for s, c in pattern), offset)

    @staticmethod
    def from_modes(shape: tuple[int, ...], modes: tuple[tuple[Mode, ...], ...],
                   offset: int = 0) -> Layout:
        dims, base = [], offset
        for n, m in zip(shape, modes):
            d, off = make_dim(n, tuple(m))
            dims.append(d)
            base += off
        return Layout(tuple(dims), base)

    # -- queries ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(d.size for d in self.dims)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def strides(self) -> tuple:
        return tuple(d.stride if d.is_plain or d.size == 1 else None for d in self.dims)

    @property
    def static(self) -> bool:
        """No register among the base, sizes, counts and strides (a register is the only
        non-integer they may hold; plain ints are tested first, by type, for speed)."""
        if type(self.base) is not int and not is_static(self.base):
            return False
        for d in self.dims:
            if type(d.size) is not int and not is_static(d.size):
                return False
            for c, s in d.modes:
                if (type(c) is not int and not is_static(c)) or \
                        (type(s) is not int and not is_static(s)):
                    return False
        return True

    # Layouts key caches (trace lowering, row-gather plans): hash and compare the two fields
    # directly rather than through the generic record tuple.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Layout:
            return NotImplemented
        return self.base == other.base and self.dims == other.dims  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.dims, self.base))

    @property
    def offset(self) -> Any:
        """Storage offset of the first element."""
        return self.base + sum(d.phi(d.start) for d in self.dims if not d.is_regular)

    @property
    def is_regular(self) -> bool:
        return all(d.is_regular for d in self.dims)

    @property
    def is_plain(self) -> bool:
        return all(d.is_plain or d.size == 1 for d in self.dims)

    @property
    def stride(self) -> tuple:
        """CuTe-style strides: an int per plain dim, a tuple (inner first) per nested one."""
        return tuple(d.modes[0][1] if len(d.modes) == 1 else tuple(s for _, s in d.modes)
                     for d in self.dims)

    def __str__(self) -> str:
        """CuTe notation, `shape:stride` with nested modes inner first, plus the offset."""
        def mode(d: Dim) -> tuple[str, str]:
            if len(d.modes) == 1 and d.step == 1 and d.start == 0:
                return str(d.size), str(d.modes[0][1])
            shape = "(" + ",".join(str(c) for c, _ in d.modes) + ")"
            stride = "(" + ",".join(str(s) for _, s in d.modes) + ")"
            if not d.is_regular:  # a part of the modes: which indices, as a slice would say
                end = d.start + d.size * d.step
                shape += f"[{d.start}:{end}{'' if d.step == 1 else f':{d.step}'}]"
            return shape, stride
        parts = [mode(d) for d in self.dims]
        text = f"({','.join(p[0] for p in parts)}):({','.join(p[1] for p in parts)})"
        return text if not self.base else f"{text}+{self.base}"

    def pattern(self) -> list[list[Any]]:
        """One `[stride, count]` pair per leaf mode, outermost first (regular layouts only)."""
        out: list[list[Any]] = []
        for d in self.dims:
            out.extend(d.leaves())
        return out

    def offsets(self) -> np.ndarray:
        """Storage offset of every element, shape `self.shape`, int64 (static layouts)."""
        total = np.full((), self.base, dtype=np.int64)
        n = len(self.dims)
        for k, d in enumerate(self.dims):
            total = total + d.offsets().reshape((-1,) + (1,) * (n - k - 1))
        return np.broadcast_to(total, self.shape)

    def span(self) -> tuple[int, int]:
        """(lowest, highest) storage offset touched; (base, base - 1) when empty (`bounds`)."""
        return bounds(self)

    def pieces(self) -> list[Piece]:
        """The fewest access patterns that together cover the layout, in row-major box order."""
        per_dim = [dim_pieces(d) for d in self.dims]
        out: list[Piece] = []

        def rec(k: int, start: list, shape: list, pattern: list, owners: list, off: int) -> None:
            if k == len(per_dim):
                out.append(Piece(tuple(start), tuple(shape), tuple(map(tuple, pattern)),
                                 self.base + off, tuple(owners)))
                return
            for i0, length, leaves, o in per_dim[k]:
                rec(k + 1, start + [i0], shape + [length], pattern + leaves,
                    owners + [k] * len(leaves), off + o)

        rec(0, [], [], [], [], 0)
        return out

    # -- movement ops (each returns a new Layout) ---------------------------------------------
    def replace_dim(self, k: int, dims: tuple[Dim, ...], extra: int = 0) -> Layout:
        return Layout(self.dims[:k] + dims + self.dims[k + 1:], self.base + extra)

    def slice(self, k: int, start: int, end: int, step: int = 1) -> Layout:
        d = self.dims[k]
        n = max(0, -(-(end - start) // step))
        if d.is_plain:
            s = d.modes[0][1]
            return self.replace_dim(k, (Dim.plain(n, s * step if n > 1 else s),), start * s)
        nd, off = make_dim(n, d.modes, d.start + start * d.step, d.step * step)
        return self.replace_dim(k, (nd,), off)

    def index(self, k: int, i: int) -> Layout:
        """Fix dimension k at index i, removing it."""
        d = self.dims[k]
        off = d.phi(d.start + i * d.step)
        return Layout(self.dims[:k] + self.dims[k + 1:], self.base + off)

    def permute(self, order: tuple[int, ...]) -> Layout:
        return Layout(tuple(self.dims[i] for i in order), self.base)

    def insert(self, k: int, size: int = 1, stride: int = 0) -> Layout:
        return Layout(self.dims[:k] + (Dim.plain(size, stride),) + self.dims[k:], self.base)

    def broadcast(self, k: int, size: int) -> Layout:
        return self.replace_dim(k, (Dim.plain(size, 0),))

    # Merge, split and reshape return None when the result is no layout; the caller, which
    # knows what the user asked for, raises the error (so one cause always gets one code).
    def merge(self, k0: int, k1: int) -> Layout | None:
        """Merge dims k0..k1 (inclusive) into one nested dim, or None when that is no `Dim`."""
        merged = merge_dims(self.dims[k0:k1 + 1])
        if merged is None:
            return None
        nd, off = merged
        return Layout(self.dims[:k0] + (nd,) + self.dims[k1 + 1:], self.base + off)

    def split(self, k: int, sizes: tuple[int, ...]) -> Layout | None:
        """Split dim k into `sizes` (outer first), or None when the dim's offsets are not a sum
        of one function per new dim (its modes cannot be cut there)."""
        cut = split_dim(self.dims[k], tuple(sizes))
        if cut is None:
            return None
        dims, off = cut
        return self.replace_dim(k, dims, off)

    def reshape(self, shape: tuple[int, ...]) -> Layout | None:
        """NumPy's no-copy reshape rule, where a nested dim counts as the merge it already is:
        dims merged across old dims must be contiguous with each other (each outer dim's inner
        stride continues the inner dim's outer mode), and a block is then split by `split_dim`.
        None when a copy would be needed."""
        blocks = reshape_blocks(self.dims, shape)
        if blocks is None:
            return None
        base = self.base + sum(d.first for d in self.dims if d.size == 1)
        out: list[Dim] = []
        for group, sizes in blocks:
            if len(group) == 1:
                merged: tuple[Dim, int] | None = (group[0], 0)
            else:
                merged = merge_dims(group) if contiguous(group) else None
            if merged is None:
                return None
            cut = split_dim(merged[0], sizes)
            if cut is None:
                return None
            out.extend(cut[0])
            base += merged[1] + cut[1]
        # size-1 dims of the new shape, in place
        dims: list[Dim] = []
        it = iter(out)
        for n in shape:
            dims.append(Dim.plain(1, 0) if n == 1 else next(it))
        return Layout(tuple(dims), base)

# Layouts are immutable values, so the row-major layout of a shape (every allocation's) is made
# once: a tile loop allocates the same shapes again and again.
def _row_major_layout(shape: tuple[int, ...], offset: int = 0) -> Layout:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return Layout(tuple(Dim.plain(n, s) for n, s in zip(shape, reversed(strides))), offset)


_cached_row_major = lru_cache(maxsize=512)(_row_major_layout)


def coalesce(pattern: list, keep_first: bool = False) -> list[list[int]]:
    """Merge adjacent `[stride, count]` pairs where `outer_stride == inner_stride * inner_count`
    and drop count-1 pairs.  With `keep_first` the first (partition) pair is kept as it is."""
    head = [list(pattern[0])] if keep_first and pattern else []
    rest = pattern[1:] if keep_first else pattern
    out: list[list[int]] = []
    for s, c in rest:
        if c == 1:
            continue
        if out and out[-1][0] == s * c:
            out[-1] = [s, out[-1][1] * c]
        else:
            out.append([s, c])
    if not out and not head:
        out = [[1, 1]]
    return head + out


# -- pure queries of a layout, shared by execution, lowering, TLA and pictures ----------------
# A pattern here is (counts, strides), outermost first, as two tuples: the form the runtime
# strides NumPy arrays with.  None means "not this kind of layout"; callers decide what to do.

def pattern_bounds(offset: int, counts: tuple[int, ...], strides: tuple[int, ...]
                   ) -> tuple[int, int]:
    """(lowest, highest) offset that `offset + sum(i_k * strides[k])` reaches over
    `0 <= i_k < counts[k]` (every count at least 1)."""
    lo = hi = offset
    for c, s in zip(counts, strides):
        ext = s * (c - 1)
        if ext < 0:
            lo += ext
        else:
            hi += ext
    return lo, hi


def strided_offsets(offset: int, counts: tuple[int, ...], strides: tuple[int, ...]
                    ) -> np.ndarray:
    """The offset of every index of a (counts, strides) pattern, shape `counts`, int64."""
    out = np.full((), offset, dtype=np.int64)
    n = len(counts)
    for k, (c, s) in enumerate(zip(counts, strides)):
        out = out + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    return np.broadcast_to(out, counts)


def plain_leaves(layout: Layout) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(counts, strides) of a layout whose dims are all plain with int sizes and strides and an
    int base (what most views are), count-1 dims dropped; None for any other layout.  The fast
    path of execution, so it tests types rather than calling the general properties."""
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


def leaves(layout: Layout) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(counts, strides) of every leaf mode of a regular layout, outermost first, count-1 leaves
    dropped; None when the layout is not regular (it needs several pieces)."""
    if not layout.is_regular:
        return None
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


def bounds(layout: Layout) -> tuple[int, int]:
    """(lowest, highest) storage offset a static layout touches; (base, base - 1) when empty."""
    if any(d.size == 0 for d in layout.dims):
        return layout.base, layout.base - 1
    fast = leaves(layout)
    if fast is not None:
        return pattern_bounds(layout.base, *fast)
    lo, hi = None, None
    for p in layout.pieces():
        low, high = pattern_bounds(p.offset, *piece_leaves(p))
        lo = low if lo is None else min(lo, low)
        hi = high if hi is None else max(hi, high)
    return lo, hi


def terms_injective(terms: Any) -> bool:
    """Digits, each taking at least two values, with (|stride|, extent) pairs map injectively
    when, sorted by stride, each stride exceeds the total extent of the smaller ones (a
    sufficient condition; a zero stride always fails it)."""
    acc = 0
    for s, ext in sorted(terms):
        if s <= acc:
            return False
        acc += ext
    return True


def pattern_injective(counts: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """`terms_injective` for a (counts, strides) pattern whose counts are all above 1."""
    return terms_injective((abs(s), abs(s) * (c - 1)) for c, s in zip(counts, strides))


def is_injective(layout: Layout) -> bool:
    """A sufficient condition for a static layout to touch no element twice: the mode digits of
    all dimensions, over the ranges the indices reach, pass `terms_injective`.  False means
    "not proven", so a caller that must know looks at the offsets themselves."""
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
    return terms_injective(terms)


def piece_leaves(piece: Piece) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(counts, strides) of one piece's pattern, count-1 entries dropped."""
    return (tuple(c for s, c in piece.pattern if c != 1),
            tuple(s for s, c in piece.pattern if c != 1))
