"""Dimensions: one logical dimension of a `Layout` as mixed-radix modes (see `layout`).

The offset formula itself (`mode_offset`) lives here, at the bottom, so that every coordinate ->
offset computation in apdsl, whether of a view, a format or a TLA tile, is this one function.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..records import record

Mode = tuple[Any, Any]  # (count, stride); int or VirtualRegister
CHUNK = 1 << 16  # indices per step where a check walks a dim's offsets


def mode_offset(modes: tuple[Mode, ...], x: Any) -> Any:
    """THE offset formula: `x` decomposed into mixed-radix digits over the mode counts (inner
    first, the outermost digit unbounded), each digit times its mode's stride.  `x` is an int or
    an int64 array (elementwise); every coordinate -> offset computation in apdsl comes here."""
    if len(modes) == 1:
        return x * modes[0][1]
    total = 0
    for c, s in modes[:-1]:
        total = total + (x % c) * s
        x = x // c
    return total + x * modes[-1][1]

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

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Dim:
            return NotImplemented
        return (self.size == other.size and self.modes == other.modes  # type: ignore[attr-defined]
                and self.start == other.start and self.step == other.step)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.size, self.modes, self.start, self.step))

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

    def phi(self, x: Any) -> Any:
        """The offset of mode position `x` (an int or an int64 array); see `mode_offset`."""
        return mode_offset(self.modes, x)

    def offsets(self) -> np.ndarray:
        """The storage offset (relative to the layout base) of every index, as int64."""
        return self.at(np.arange(self.size, dtype=np.int64))

    def at(self, i: np.ndarray) -> np.ndarray:
        """The storage offsets (relative to the layout base) of the indices `i` (int64)."""
        return mode_offset(self.modes, i if self.start == 0 and self.step == 1
                           else self.start + i * self.step)

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
        for lo in range(1, count, CHUNK):
            k = np.arange(lo, min(count, lo + CHUNK), dtype=np.int64)
            bad = np.nonzero(d.at(k * block) - f0 != k * s)[0]
            if bad.size:
                run = int(k[bad[0]])
                break
        if count % run:
            return None
        modes.append((run, s))
        block *= run
    modes_t = _merge_modes(tuple(modes))
    for lo in range(0, n, CHUNK):
        i = np.arange(lo, min(n, lo + CHUNK), dtype=np.int64)
        if not np.array_equal(d.at(i) - f0, mode_offset(modes_t, i)):
            return None
    return modes_t

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
        out.append((head, [[s0, head]], mode_offset(modes, a)))
        a, n = a + head, n - head
    full = n // c0
    if full:
        for length, leaves, off in _decompose(a // c0, full, modes[1:]):
            out.append((length * c0, leaves + [[s0, c0]], off))
        a, n = a + full * c0, n - full * c0
    if n:
        out.append((n, [[s0, n]], mode_offset(modes, a)))
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
