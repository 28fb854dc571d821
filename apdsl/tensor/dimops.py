"""Merging and splitting dimensions: the algebra behind `Layout.merge`, `split` and `reshape`.

Each function returns the new dimension(s) with the offset folded out of them, or None when the
result is no `Dim`; the caller that knows what the user asked for raises the error.
"""

from __future__ import annotations

from math import prod

import numpy as np

from .dims import CHUNK, Dim, Mode, fit_modes, make_dim


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
    for lo in range(0, d.size, CHUNK):
        i = np.arange(lo, min(d.size, lo + CHUNK), dtype=np.int64)
        total = np.full(i.shape, off, dtype=np.int64)
        rest = i
        for nd, n in zip(reversed(dims), reversed(sizes)):
            total += nd.at(rest % n)
            rest = rest // n
        if not np.array_equal(total, d.at(i)):
            return False
    return True
