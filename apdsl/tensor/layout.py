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

from ..records import record

Mode = tuple[Any, Any]  # (count, stride); int or VirtualRegister
_CHUNK = 1 << 16  # indices per step where a check walks a dim's offsets


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
        return self.at(np.arange(self.size, dtype=np.int64))

    def at(self, i: np.ndarray) -> np.ndarray:
        """The storage offsets (relative to the layout base) of the indices `i` (int64)."""
        if len(self.modes) == 1:
            return i * (self.step * self.modes[0][1]) + self.start * self.modes[0][1]
        return self.phi_array(self.start + i * self.step)

    @property
    def static(self) -> bool:
        """No register among its size, counts and strides."""
        return is_static(self.size) and all(is_static(c) and is_static(s) for c, s in self.modes)

    @property
    def first(self) -> Any:
        """The offset of index 0 relative to the layout base (nonzero only when irregular)."""
        return self.phi(self.start) if self.start else 0


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


def fit_modes(d: Dim) -> tuple[Mode, ...] | None:
    """The canonical modes (inner first) of a mode list whose offsets are `d`'s (relative to
    its first element), or None when `d` is not one mode list.

    In canonical modes (no two adjacent ones mergeable) the first mode's stride is the offset
    of index 1 and its count is where `offset(i) == i * stride` first fails, so the modes can be
    read off greedily, then the whole dim is checked.  Time linear in the size, memory bounded.
    """
    n, f0 = d.size, d.first
    def value(i: int) -> int:
        return int(d.at(np.array([i], dtype=np.int64))[0]) - f0
    modes: list[Mode] = []
    block = 1
    while block < n:
        count = n // block
        s = value(block)
        run = count
        for lo in range(1, count, _CHUNK):
            k = np.arange(lo, min(count, lo + _CHUNK), dtype=np.int64)
            bad = np.nonzero(d.at(k * block) - f0 != k * s)[0]
            if bad.size:
                run = int(k[bad[0]])
                break
        if count % run:
            return None
        modes.append((run, s))
        block *= run
    modes_t = _merge_modes(tuple(modes))
    for lo in range(0, n, _CHUNK):
        i = np.arange(lo, min(n, lo + _CHUNK), dtype=np.int64)
        if not np.array_equal(d.at(i) - f0, _phi_array(modes_t, i)):
            return None
    return modes_t


def _phi_array(modes: tuple[Mode, ...], x: np.ndarray) -> np.ndarray:
    total = np.zeros_like(x)
    for c, s in modes[:-1]:
        total += (x % c) * s
        x = x // c
    return total + x * modes[-1][1]


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


def reshape_blocks(dims: tuple[Dim, ...], shape: tuple[int, ...]
                   ) -> list[tuple[tuple[Dim, ...], tuple[int, ...]]] | None:
    """The old dims and new sizes (size-1 ones left out) grouped into the smallest blocks of
    equal products, as NumPy's reshape groups them; None when the products do not match."""
    old = [d for d in dims if d.size != 1]
    new = [n for n in shape if n != 1]
    blocks = []
    i = j = 0
    while i < len(old) or j < len(new):
        if i >= len(old) or j >= len(new):
            return None
        group, sizes = [old[i]], [new[j]]
        po, pn = old[i].size, new[j]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn:
                if i >= len(old):
                    return None
                group.append(old[i])
                po *= old[i].size
                i += 1
            else:
                if j >= len(new):
                    return None
                sizes.append(new[j])
                pn *= new[j]
                j += 1
        blocks.append((tuple(group), tuple(sizes)))
    return blocks


def contiguous(group: tuple[Dim, ...]) -> bool:
    """NumPy's condition for merging dims (outer first) without a copy: each outer dim's inner
    stride continues the outer mode of the dim inside it.  A nested dim counts as one."""
    for outer, inner in zip(group, group[1:]):
        if not inner.is_regular:
            return False
        c, s = _dim_modes(inner)[-1]
        if outer.modes[0][1] != c * s:
            return False
    return True


def _dim_modes(d: Dim) -> tuple[Mode, ...]:
    """A regular dim's modes, inner first, with the count of a plain dim made its size."""
    return d.modes if len(d.modes) > 1 else ((d.size, d.modes[0][1]),)


def merge_dims(group: tuple[Dim, ...]) -> tuple[Dim, int] | None:
    """Dims (outer first) merged into one: (Dim, offset folded out), or None.

    Regular dims always merge (their modes are concatenated).  An irregular dim (a slice across
    the blocks of a nested dim) merges only as the outermost non-unit dim with step 1: its index
    window then continues over the inner dims' modes.  Anything else is no `Dim`.
    """
    off = sum(d.first for d in group if d.size == 1)
    live = [d for d in group if d.size != 1]
    if not live:
        return Dim.plain(1, 0), off
    if len(live) == 1:
        return live[0], off
    if all(d.is_plain for d in live) and all(  # the common case: contiguous plain dims
            o.modes[0][1] == i.size * i.modes[0][1] for o, i in zip(live, live[1:])):
        return Dim.plain(prod(d.size for d in live), live[-1].modes[0][1]), off
    # A slice that is one mode list after all (its pieces are kept for lowering) merges as one.
    for k, d in enumerate(live):
        if not d.is_regular and (d is not live[0] or d.step != 1):
            fitted = fit_modes(d) if d.static else None
            if fitted is not None:
                live[k] = Dim(d.size, fitted)
                off += d.first
    inner = live[1:]
    if not all(d.is_regular for d in inner):
        return None
    modes: list[Mode] = []
    for d in reversed(inner):
        modes.extend(_dim_modes(d))
    outer = live[0]
    size = prod(d.size for d in live)
    if outer.is_regular:
        nd, o = make_dim(size, tuple(modes) + _dim_modes(outer))
        return nd, off + o
    if outer.step != 1:
        return None
    n_in = prod(d.size for d in inner)
    nd, o = make_dim(size, tuple(modes) + outer.modes, outer.start * n_in, 1)
    return nd, off + o


def split_dim(d: Dim, sizes: tuple[int, ...]) -> tuple[tuple[Dim, ...], int] | None:
    """Dim `d` split into dims of `sizes` (outer first, product `d.size`): (dims, offset to add
    to the base), or None when `d`'s offsets are not a sum of one function per new dim.

    New dim j (inner block P_j) indexes `d` at multiples of P_j, so it is exactly
    `make_dim(sizes[j], d.modes, d.start, d.step * P_j)`; the split is valid when those add up
    to `d`.  For a regular dim that holds when the sizes refine its modes (cut a mode only
    where the count divides); otherwise it is checked offset by offset.
    """
    if len(sizes) == 1:
        return (d,), 0
    live = [k for k, n in enumerate(sizes) if n != 1]
    if len(live) <= 1:  # one real dim among size-1 ones: d itself
        at = live[0] if live else 0
        return tuple(d if k == at else Dim.plain(1, 0) for k in range(len(sizes))), 0
    if d.is_plain:  # the common case: one stride, cut anywhere
        dims, acc = [], d.modes[0][1]
        for n in reversed(sizes):
            dims.append(Dim.plain(n, acc))
            acc *= n
        return tuple(reversed(dims)), 0
    refined = _refine(_dim_modes(d), sizes) if d.is_regular else None
    if refined is not None:
        dims, off = [], 0
        for n, modes in zip(sizes, refined):
            nd, o = make_dim(n, modes)
            dims.append(nd)
            off += o
        return tuple(dims), off
    # No refinement: rarely valid (degenerate strides), so check the offsets themselves.
    if not d.static:
        return None
    dims, off, block = [], 0, 1
    for n in reversed(sizes):
        nd, o = make_dim(n, d.modes, d.start, d.step * block)
        dims.append(nd)
        off += o
        block *= n
    dims.reverse()
    off -= (len(sizes) - 1) * d.first
    if not _adds_up(d, tuple(dims), sizes, off):
        return None
    return tuple(dims), off


def _refine(modes: tuple[Mode, ...], sizes: tuple[int, ...]) -> list[tuple[Mode, ...]] | None:
    """The modes (inner first) of each new dim when `sizes` (outer first) cut `modes` only at
    mode boundaries or inside a mode whose count the cut divides; None otherwise."""
    leaves = [list(m) for m in modes if m[0] != 1]
    out: list[tuple[Mode, ...]] = []
    for n in reversed(sizes):
        need, taken = n, []
        while need > 1:
            if not leaves:
                return None
            c, s = leaves[0]
            if need % c == 0:
                taken.append((c, s))
                need //= c
                leaves.pop(0)
            elif c % need == 0:
                taken.append((need, s))
                leaves[0] = [c // need, s * need]
                need = 1
            else:
                return None
        out.append(tuple(taken) or ((1, 0),))
    out.reverse()
    return out



def _adds_up(d: Dim, dims: tuple[Dim, ...], sizes: tuple[int, ...], off: int) -> bool:
    """Whether `d(i) == off + sum_j dims[j](digit_j(i))` for every index, in bounded memory."""
    for lo in range(0, d.size, _CHUNK):
        i = np.arange(lo, min(d.size, lo + _CHUNK), dtype=np.int64)
        total = np.full(i.shape, off, dtype=np.int64)
        rest = i
        for nd, n in zip(reversed(dims), reversed(sizes)):
            total += nd.at(rest % n)
            rest = rest // n
        if not np.array_equal(total, d.at(i)):
            return False
    return True


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
