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

Patterns are lists of `[stride, count]` pairs, outermost first, as NKI writes them.  Strides and
counts may be `VirtualRegister`s only in plain dimensions made by `.ap`; such layouts are resolved
to integers when an instruction executes.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import ViewError
from ..records import record

Mode = tuple[Any, Any]  # (count, stride); int or VirtualRegister


def is_static(x: Any) -> bool:
    return isinstance(x, (int, np.integer))


@record
class Dim:
    size: Any
    modes: tuple[Mode, ...]  # inner first
    start: int = 0
    step: int = 1

    @staticmethod
    def plain(size: Any, stride: Any) -> Dim:
        return Dim(size, ((size, stride),))

    @property
    def is_plain(self) -> bool:
        return len(self.modes) == 1 and self.start == 0 and self.step == 1

    @property
    def is_regular(self) -> bool:
        """Covers its modes exactly once from the first element: one access pattern."""
        return self.start == 0 and self.step == 1 and (
            len(self.modes) == 1 or prod(c for c, _ in self.modes) == self.size)

    @property
    def stride(self) -> Any:
        """The single stride of a plain dimension, None for a nested or irregular one."""
        if len(self.modes) == 1 and self.step == 1:
            return self.modes[0][1]
        return None

    def leaves(self) -> list[list[Any]]:
        """`[stride, count]` pairs outermost first (only meaningful for a regular dim)."""
        if len(self.modes) == 1:
            return [[self.modes[0][1], self.size]]
        return [[s, c] for c, s in reversed(self.modes)]

    def phi(self, x: int) -> int:
        total = 0
        for c, s in self.modes[:-1]:
            total += (x % c) * s
            x //= c
        return total + x * self.modes[-1][1]

    def phi_array(self, x: np.ndarray) -> np.ndarray:
        total = np.zeros_like(x)
        for c, s in self.modes[:-1]:
            total += (x % c) * s
            x = x // c
        return total + x * self.modes[-1][1]

    def offsets(self) -> np.ndarray:
        """The storage offset (relative to the layout base) of every index, as int64."""
        if len(self.modes) == 1:
            return np.arange(self.size, dtype=np.int64) * (self.step * self.modes[0][1]) \
                + self.start * self.modes[0][1]
        idx = self.start + np.arange(self.size, dtype=np.int64) * self.step
        return self.phi_array(idx)


def make_dim(size: int, modes: tuple[Mode, ...], start: int = 0, step: int = 1) -> tuple[Dim, int]:
    """Normalise a dimension: returns the canonical Dim and the offset folded out of it."""
    if not (is_static(size) and all(is_static(c) and is_static(s) for c, s in modes)):
        return Dim(size, modes, start, step), 0
    if size == 1:
        off = Dim(size, modes).phi(start) if start else 0
        return Dim(1, ((1, 0),)), off
    # Fold an outer step that is a multiple of the inner blocks into the outer modes.
    modes = tuple(m for m in modes if m[0] != 1) or ((1, 0),)
    base = 0
    while len(modes) > 1 and step % modes[0][0] == 0:
        c, s = modes[0]
        base += (start % c) * s
        start //= c
        step //= c
        modes = modes[1:]
    modes = _merge_modes(modes)
    if len(modes) == 1:
        c, s = modes[0]
        return Dim(size, ((size, s * step),)), base + start * s
    if step == 1:
        pieces = _decompose(start, size, modes)
        if len(pieces) == 1:
            _, leaves, off = pieces[0]
            new_modes = _merge_modes(tuple((c, s) for s, c in reversed(leaves)))
            return Dim(size, new_modes), base + off
    return Dim(size, modes, start, step), base


def _merge_modes(modes: tuple[Mode, ...]) -> tuple[Mode, ...]:
    out: list[list[int]] = []
    for c, s in modes:
        if c == 1:
            continue
        if out and out[-1][1] * out[-1][0] == s:
            out[-1][0] *= c
        else:
            out.append([c, s])
    return tuple((c, s) for c, s in out) or ((1, 0),)


def _phi(modes: tuple[Mode, ...], x: int) -> int:
    total = 0
    for c, s in modes[:-1]:
        total += (x % c) * s
        x //= c
    return total + x * modes[-1][1]


def _decompose(a: int, n: int, modes: tuple[Mode, ...]) -> list[tuple[int, list[list[int]], int]]:
    """Split the index range [a, a+n) of a mixed-radix dim into the fewest pieces that are each
    one pattern: (length, [[stride, count]...] outer first, offset of the first element)."""
    if n == 0:
        return []
    if len(modes) == 1:
        return [(n, [[modes[0][1], n]], a * modes[0][1])]
    c0, s0 = modes[0]
    out: list[tuple[int, list[list[int]], int]] = []
    r = a % c0
    if r or n < c0:
        head = min(n, c0 - r)
        out.append((head, [[s0, head]], _phi(modes, a)))
        a, n = a + head, n - head
    full = n // c0
    if full:
        for length, leaves, off in _decompose(a // c0, full, modes[1:]):
            out.append((length * c0, leaves + [[s0, c0]], off))
        a, n = a + full * c0, n - full * c0
    if n:
        out.append((n, [[s0, n]], _phi(modes, a)))
    return out


def dim_pieces(dim: Dim) -> list[tuple[int, int, list[list[int]], int]]:
    """Pieces of one dimension: (first index, length, leaves outer first, offset)."""
    if dim.is_regular:
        return [(0, dim.size, dim.leaves(), 0)]
    if dim.step == 1:
        out, i = [], 0
        for length, leaves, off in _decompose(dim.start, dim.size, dim.modes):
            out.append((i, length, leaves, off))
            i += length
        return out
    # An irregular step: maximal runs where the offset is an arithmetic progression.
    offs = dim.offsets()
    out, i = [], 0
    while i < dim.size:
        j = i + 1
        if j < dim.size:
            d = int(offs[j] - offs[i])
            while j + 1 < dim.size and offs[j + 1] - offs[j] == d:
                j += 1
            j += 1
        else:
            d = 0
        out.append((i, j - i, [[d, j - i]], int(offs[i])))
        i = j
    return out


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
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        return Layout(tuple(Dim.plain(n, s) for n, s in zip(shape, reversed(strides))), offset)

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
        return is_static(self.base) and all(
            is_static(d.size) and all(is_static(c) and is_static(s) for c, s in d.modes)
            for d in self.dims)

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
        """(lowest, highest) storage offset touched; (base, base - 1) when empty."""
        if any(d.size == 0 for d in self.dims):
            return self.base, self.base - 1
        lo, hi = None, None
        for p in self.pieces():
            low = p.offset + sum(s * (c - 1) for s, c in p.pattern if s < 0)
            high = p.offset + sum(s * (c - 1) for s, c in p.pattern if s > 0)
            lo = low if lo is None else min(lo, low)
            hi = high if hi is None else max(hi, high)
        return lo, hi

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

    def merge(self, k0: int, k1: int) -> Layout:
        """Merge dims k0..k1 (inclusive) into one nested dim: always a view, never a copy."""
        group = self.dims[k0:k1 + 1]
        for d in group:
            if not d.is_regular:
                raise ViewError("cannot merge a dimension that was sliced across its blocks",
                                code="APK214", help="merge before slicing, or slice whole blocks")
        modes: list[Mode] = []
        for d in reversed(group):
            modes.extend(d.modes if len(d.modes) > 1 else ((d.size, d.modes[0][1]),))
        size = prod(d.size for d in group)
        nd, off = make_dim(size, tuple(modes))
        return Layout(self.dims[:k0] + (nd,) + self.dims[k1 + 1:], self.base + off)

    def split(self, k: int, sizes: tuple[int, ...]) -> Layout | None:
        """Split dim k into `sizes` (outer first).  None when the dim's modes cannot be cut
        there without a copy."""
        d = self.dims[k]
        if not d.is_regular:
            return None
        if len(d.modes) == 1:
            s = d.modes[0][1]
            new, acc = [], s
            for n in reversed(sizes):
                new.append(Dim.plain(n, acc))
                acc *= n
            return self.replace_dim(k, tuple(reversed(new)))
        leaves = [list(m) for m in d.modes]  # inner first, consumed as we go
        new_dims: list[Dim] = []
        for n in reversed(sizes):
            need, taken = n, []
            while need > 1:
                if not leaves:
                    return None
                c, s = leaves[0]
                if c <= need and need % c == 0:
                    taken.append((c, s))
                    need //= c
                    leaves.pop(0)
                elif c % need == 0:
                    taken.append((need, s))
                    leaves[0] = [c // need, s * need]
                    need = 1
                else:
                    return None
            nd, _ = make_dim(n, tuple(taken) or ((1, 0),))
            new_dims.append(nd)
        return self.replace_dim(k, tuple(reversed(new_dims)))

    def reshape(self, shape: tuple[int, ...]) -> Layout | None:
        """NumPy's no-copy reshape rule, applied to the leaf modes.  None when a copy would be
        needed."""
        if not self.is_regular:
            return None
        leaves = [(c, s) for s, c in self.pattern() if c != 1]
        out: list[Dim] = []
        i = 0
        new = list(shape)
        j = 0
        while j < len(new):
            if new[j] == 1:
                out.append(Dim.plain(1, 0))
                j += 1
                continue
            # Collect a group of old leaves and new dims with equal products.
            if i >= len(leaves):
                return None
            group_old = [leaves[i]]
            po, pn = leaves[i][0], new[j]
            group_new = [new[j]]
            i, j = i + 1, j + 1
            while po != pn:
                if po < pn:
                    if i >= len(leaves):
                        return None
                    group_old.append(leaves[i])
                    po *= leaves[i][0]
                    i += 1
                else:
                    while j < len(new) and new[j] == 1:
                        group_new.append(1)
                        j += 1
                    if j >= len(new):
                        return None
                    group_new.append(new[j])
                    pn *= new[j]
                    j += 1
            for (_, s0), (c1, s1) in zip(group_old, group_old[1:]):
                if s0 != c1 * s1:
                    return None
            acc = group_old[-1][1]
            dims = []
            for n in reversed(group_new):
                dims.append(Dim.plain(n, acc if n != 1 else 0))
                acc *= n
            out.extend(reversed(dims))
        if i != len(leaves):
            return None
        return Layout(tuple(out), self.base)


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
