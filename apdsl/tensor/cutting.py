"""Cutting one instruction into pieces where every operand is a single access pattern.

An operand whose layout is several access patterns (a slice across the blocks of a nested
dimension, an unaligned fractal tile) makes the instruction several hardware instructions.  The
cut must respect the boundaries of *all* operands at once, and each piece must be one AP in every
operand, so that the pieces together are exactly the instruction.

Two kinds of instruction are cut:

- element for element (`dma_copy`, `tensor_copy`): the operands correspond in logical row-major
  order whatever their shapes (SPEC section 4), so the cut is over the flat logical element
  index.  A piece is a set of flat indices, enumerated in increasing order; in each operand its
  storage offsets, in that order, are one AP.  Pieces are found exactly from the offsets of every
  element: first the sets where every operand stays inside one of its own pieces, then, where
  such a set is not one AP in some operand, runs of it merged greedily while they remain one AP
  everywhere.
- matrix multiplies (`nc_matmul`, `mmad`): operands do not correspond element for element but
  along the axes M, N and K (stationary/`a` is (K, M)/(M, K), moving/`b` (K, N), dst (M, N); an
  on-chip operand's free dimensions are flattened into its second axis).  The cut is a grid of
  index ranges on M, N and K; a piece computes `dst[Mi, Ni] (+)= ...[Ki] ...` and every piece
  after the first K range of a dst block accumulates onto it, as a split matmul does.  (In
  nc_matmul's double_row mode K is the partitions times the first free dim of 2.)

The element-for-element cut works on blocks of g consecutive elements of the last dimension when
every operand's last dimension is plain and its pieces' boundaries fall on multiples of g (a
`(b h w) c` copy: blocks of c), so its cost is the number of blocks, not of elements.

Only the offsets of static layouts are known before execution; an operand with a runtime vector
index or Tensor Indirection drives its rows from an index tensor that a piece cannot slice, so
cutting such an instruction is refused (APK320) rather than printed wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import TargetError
from ..records import record

Pattern = list[list[int]]


# -- one sequence of offsets as one access pattern ---------------------------------------------

def factor(offs: np.ndarray) -> Pattern | None:
    """The coalesced `[stride, count]` pattern (outermost first) that enumerates exactly the
    storage offsets `offs` in their order, relative to `offs[0]`; None when no pattern does.

    The innermost entry is the longest run of one difference from the start: a pattern's inner
    entries that coalesce make exactly such a run, and any that do not end it.  The sequence must
    then be blocks of that run, all alike, whose first elements are again a pattern."""
    pattern: Pattern = []
    cur = np.asarray(offs, dtype=np.int64)
    while cur.size > 1:
        diffs = np.diff(cur)
        d = int(diffs[0])
        bad = np.flatnonzero(diffs != d)
        run = cur.size if bad.size == 0 else int(bad[0]) + 1
        if cur.size % run:
            return None
        blocks = cur.reshape(-1, run)
        if blocks.shape[0] > 1 and not np.array_equal(blocks - blocks[:, :1],
                                                       np.broadcast_to(blocks[0] - blocks[0, 0],
                                                                       blocks.shape)):
            return None
        pattern.insert(0, [d, run])
        cur = blocks[:, 0]
    return pattern


def access_pattern(offs: np.ndarray, pstride: int | None, max_free: int | None = None,
                   inner: tuple[int, int] | None = None) -> tuple[int, Pattern] | None:
    """`(offset, pattern)` enumerating `offs` in order, or None.  With `pstride` (an on-chip
    operand: elements per partition) the first entry is the partition entry `[pstride, count]`
    over consecutive partitions, each partition with the same free pattern, and at most
    `max_free` free entries.  With `inner` (`[stride, g]`), `offs` are the starts of blocks of g
    elements that step by `stride`, and the pattern ends with that entry."""
    offs = np.asarray(offs, dtype=np.int64)
    first = int(offs[0])
    if pstride is None:
        pat = factor(offs)
        if pat is None:
            return None
        return first, _with_inner(pat, inner) or [[1, 1]]
    parts = offs // pstride
    p0 = int(parts[0])
    nparts = int(parts[-1]) - p0 + 1
    if nparts < 1 or offs.size % nparts:
        return None
    grid = offs.reshape(nparts, -1)
    rows = np.arange(nparts, dtype=np.int64)[:, None]
    if not (grid // pstride == p0 + rows).all():
        return None
    if not (grid - rows * pstride == grid[0]).all():
        return None
    free = factor(grid[0])
    if free is None:
        return None
    free = _with_inner(free, inner)
    if max_free is not None and len(free) > max_free:
        return None
    return first, [[pstride, nparts]] + free


def _with_inner(pattern: Pattern, inner: tuple[int, int] | None) -> Pattern:
    """`pattern` (of block starts) with the blocks' own entry appended, coalesced."""
    if inner is None:
        return pattern
    out: Pattern = []
    for s, c in [*pattern, list(inner)]:
        if c == 1:
            continue
        if out and out[-1][0] == s * c:
            out[-1] = [s, out[-1][1] * c]
        else:
            out.append([s, c])
    return out


# -- operands ------------------------------------------------------------------------------------

@record(identity=True)
class Operand:
    """What the cut needs of one operand: every element's storage offset and own piece number,
    in logical row-major order, and its own lowering (reused where a cut piece is all of one of
    its pieces)."""

    role: str
    offsets: np.ndarray  # int64, the view's logical shape
    piece_of: np.ndarray  # int, same shape: which of the operand's own pieces holds the element
    piece_sizes: tuple[int, ...]
    pstride: int | None  # elements per partition for an on-chip operand
    max_free: int | None
    pinned: bool  # a vector index or Tensor Indirection: cannot be cut
    aps: tuple[Any, ...]  # its own AccessPatterns, one per piece
    # With `inner` = [stride, g], `offsets` and `piece_of` are per block of g consecutive
    # elements of the last dimension (each block one run of that stride in one piece): the
    # element-for-element cut then works on N / g blocks instead of N elements.
    inner: tuple[int, int] | None = None


Make = Callable[[Operand, int, Pattern], Any]  # builds one piece's AccessPattern


def refuse(label: str, role: str, why: str) -> TargetError:
    """APK320 for instruction `label` (its op and `name=`)."""
    return TargetError(
        f"{label}: lower cannot cut this instruction into pieces: {role} {why}", code="APK320",
        notes=["another operand needs several access patterns, so the instruction is several "
               "hardware instructions, and this operand would have to be cut with it"],
        help="give the other operand a layout that is one access pattern (align its slice to "
        "the blocks of its nested dimension), or copy through a plain tile first")


# -- element-for-element instructions ------------------------------------------------------------

def cut_flat(op: str, operands: Sequence[Operand], make: Make) -> list[dict[str, Any]]:
    """Pieces of an instruction whose operands correspond in logical row-major order."""
    flat = [(o, o.offsets.reshape(-1), o.piece_of.reshape(-1)) for o in operands]
    n = flat[0][1].size
    key = np.zeros(n, dtype=np.int64)
    for o, _, pid in flat:
        key = key * len(o.piece_sizes) + pid
    order = np.argsort(key, kind="stable")  # grouped by key, each group in flat order
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    groups = np.split(order, bounds)
    groups.sort(key=lambda g: int(g[0]))
    out: list[tuple[int, dict[str, Any]]] = []
    for g in groups:
        for part in _split_group(g, flat):
            out.append((int(part[0]), _piece(part, flat, make)))
    out.sort(key=lambda x: x[0])
    pieces = [p for _, p in out]
    if len(pieces) > 1:
        for o in operands:
            if o.pinned:
                raise refuse(op, o.role, "has a runtime vector index or indirection, which "
                              "drives its rows from an index tensor that a piece cannot slice")
    return pieces


def _fits(idx: np.ndarray, flat: list[tuple[Operand, np.ndarray, np.ndarray]]) -> bool:
    return all(access_pattern(offs[idx], o.pstride, o.max_free, o.inner) is not None
               for o, offs, _ in flat)


def _run_starts(seq: np.ndarray) -> np.ndarray:
    """Greedy maximal runs of one difference along `seq`: True where a new run begins (after
    the first)."""
    starts = np.zeros(seq.size, dtype=bool)
    if seq.size < 3:
        return starts
    d = np.diff(seq)
    change = np.flatnonzero(d[1:] != d[:-1]) + 1  # j with d[j] != d[j - 1]
    s = 0
    while s < seq.size - 1:
        k = int(np.searchsorted(change, s + 1))
        if k >= change.size:
            break
        c = int(change[k])  # the run from s ends at element c; the next begins at c + 1
        starts[c + 1] = True
        s = c + 1
    return starts


def _split_group(g: np.ndarray, flat: list[tuple[Operand, np.ndarray, np.ndarray]]
                 ) -> list[np.ndarray]:
    """A set of elements inside one piece of every operand, as few consecutive parts as a
    greedy merge finds that are each one AP in every operand."""
    if _fits(g, flat):
        return [g]
    # Runs: stretches with one offset difference in every operand (and one partition on chip),
    # each certainly one AP; then neighbours merge while the result stays one AP everywhere.
    cut = np.zeros(g.size, dtype=bool)
    for o, offs, _ in flat:
        seq = offs[g]
        cut |= _run_starts(seq)
        if o.pstride is not None:
            p = seq // o.pstride
            cut[1:] |= p[1:] != p[:-1]
    runs = np.split(g, np.flatnonzero(cut))
    parts: list[np.ndarray] = []
    cur, i, step = runs[0], 1, 1
    while i < len(runs):
        # galloping: try ever more runs at once while merging succeeds, fewer after a failure
        cand = np.concatenate([cur, *runs[i:i + step]])
        if _fits(cand, flat):
            cur, i, step = cand, i + step, step * 2
        elif step > 1:
            step //= 2
        else:
            parts.append(cur)
            cur, i = runs[i], i + 1
    parts.append(cur)
    return parts


def _piece(idx: np.ndarray, flat: list[tuple[Operand, np.ndarray, np.ndarray]],
           make: Make) -> dict[str, Any]:
    out = {}
    for o, offs, pid in flat:
        j = int(pid[idx[0]])
        if idx.size == o.piece_sizes[j]:  # all of one of its own pieces: its own lowering
            out[o.role] = o.aps[j]
            continue
        found = access_pattern(offs[idx], o.pstride, o.max_free, o.inner)
        assert found is not None  # _split_group made it one AP
        out[o.role] = make(o, found[0], found[1])
    return out


# -- matrix multiplies ---------------------------------------------------------------------------

def cut_axes(op: str, operands: Sequence[Operand], axes: dict[str, tuple[str, str]],
             make: Make, order: tuple[str, ...] = ("M", "N", "K")) -> list[dict[str, Any]]:
    """Pieces of an instruction whose operands are matrices over named axes (`axes[role]` =
    (row axis, column axis)): a grid of index ranges on every axis, refined until each block of
    each operand is one AP.  Blocks come in `order`, the last axis fastest."""
    two = {o.role: (o, o.offsets.reshape(o.offsets.shape[0], -1),
                    o.piece_of.reshape(o.offsets.shape[0], -1)) for o in operands}
    sizes: dict[str, int] = {}
    for role, (_o, offs, _) in two.items():
        for ax, n in zip(axes[role], offs.shape):
            if sizes.setdefault(ax, n) != n:
                raise refuse(op, role, f"has {n} along {ax} where another operand has "
                              f"{sizes[ax]}")
    cuts = {ax: {0, n} for ax, n in sizes.items()}
    for role, (_o, _, pid) in two.items():
        rows, cols = axes[role]
        cuts[rows].update((np.flatnonzero((pid[1:] != pid[:-1]).any(axis=1)) + 1).tolist())
        cuts[cols].update((np.flatnonzero((pid[:, 1:] != pid[:, :-1]).any(axis=0)) + 1).tolist())
    while True:
        ranges = {ax: sorted(c) for ax, c in cuts.items()}
        pieces, refined = [], False
        for block in _grid([list(zip(ranges[ax], ranges[ax][1:])) for ax in order]):
            where = dict(zip(order, block))
            piece = {}
            for role, (o, offs, pid) in two.items():
                (r0, r1), (c0, c1) = where[axes[role][0]], where[axes[role][1]]
                sub = offs[r0:r1, c0:c1]
                own = pid[r0:r1, c0:c1]
                j = int(own.flat[0])
                if sub.size == o.piece_sizes[j] and (own == j).all():
                    piece[role] = o.aps[j]
                    continue
                found = access_pattern(sub.reshape(-1), o.pstride, o.max_free)
                if found is None:
                    rb, cb = _breaks(sub, o.pstride)
                    if not rb and not cb:  # cannot happen for views that obey the rules
                        raise refuse(op, role, "has a block that is not one access pattern")
                    cuts[axes[role][0]].update(r0 + b for b in rb)
                    cuts[axes[role][1]].update(c0 + b for b in cb)
                    refined = True
                    break
                piece[role] = make(o, found[0], found[1])
            if refined:
                break
            pieces.append(piece)
        if not refined:
            break
    if len(pieces) > 1:
        for o in operands:
            if o.pinned:
                raise refuse(op, o.role, "has a runtime index or indirection, which a piece "
                              "cannot slice")
    return pieces


def _grid(axes: list[list[tuple[int, int]]]) -> list[tuple[tuple[int, int], ...]]:
    out: list[tuple[tuple[int, int], ...]] = [()]
    for ranges in axes:
        out = [b + (r,) for b in out for r in ranges]
    return out


def _breaks(sub: np.ndarray, pstride: int | None) -> tuple[list[int], list[int]]:
    """Where to cut a block that is not one AP: inside a row that is several runs, else between
    rows that do not continue one another."""
    rows, width = sub.shape
    if width > 1:
        for r in range(rows):
            starts = np.flatnonzero(_run_starts(sub[r])).tolist()
            if starts:
                return [], starts
        d = sub[:, 1] - sub[:, 0]
    else:
        d = np.zeros(rows, dtype=np.int64)
    s = sub[:, 0]
    out, r0 = [], 0
    for r in range(1, rows):
        step = int(s[r] - s[r - 1])
        if pstride is not None:
            ok = step == pstride
        else:
            ok = r == r0 + 1 or step == int(s[r0 + 1] - s[r0])
        if not ok or d[r] != d[r0]:
            out.append(r)
            r0 = r
    return out, []
