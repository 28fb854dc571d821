"""Tensors indexed by the legacy NKI index grids (`t[i_p, k * 512 + i_f]`, `t[idx_tile, i_f]`):
the key's shape by NumPy's rules, and the view (an access pattern) it selects once the mask of
the instruction using it is known (`IndexedTile`).  The grids themselves are `index_grid`."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslTypeError, ViewError
from . import tile_writes
from .index_grid import IndexExpr, Iterator, Limits, broadcast, is_int


def is_grid_key(key: Any) -> bool:
    """Does this tensor index hold an index expression (the legacy grid API), or index rows
    by a tile (`t[idx_tile, i_f]`)?"""
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, IndexExpr) for k in items) or (
        len(items) > 1 and _is_index_tile(items[0]))


def key_shape(shape: tuple[int, ...], key: Any) -> tuple[int, ...]:
    """The shape `t[key]` has without a mask, for `t` of this shape (NumPy's rule for advanced
    indices: their broadcast shape goes where the first one is when they are adjacent, else
    first)."""
    items = _items(len(shape), key)
    adv = [d for d, k in enumerate(items) if not isinstance(k, slice)]
    grid: tuple[int, ...] = ()
    for d in adv:
        k = items[d]
        if isinstance(k, IndexExpr):
            grid = broadcast(grid, k.shape)
        elif d == 0 and _is_index_tile(k):
            grid = broadcast(grid, (int(k.shape[0]), 1))
    adjacent = adv == list(range(adv[0], adv[-1] + 1)) if adv else True
    out: list[int] = [] if adjacent else list(grid)
    placed = not adjacent
    for d, k in enumerate(items):
        if isinstance(k, slice):
            out.append(len(range(*k.indices(shape[d]))))
        elif not placed:
            out.extend(grid)
            placed = True
    return tuple(out)


class IndexedTile:
    """`t[i_p, i_f]` with index expressions: the view is made by the instruction that uses it,
    once its mask is known (a mask may keep an index inside a tensor it would overrun).
    Anything else asked of it is asked of the view made without a mask."""

    __slots__ = ("base", "key", "shape")

    def __init__(self, base: Any, key: Any) -> None:
        self.base, self.key = base, key
        self.shape = key_shape(tuple(base.shape), key)

    def resolve(self, limits: Limits | None = None) -> Any:
        """The view under a mask's `limits` (None: the mask selects nothing)."""
        return grid_view(self.base, self.key, limits)

    def view(self) -> Any:
        v = self.resolve()
        if v is None:
            raise ViewError("this index selects no element", code="APK944")
        return v

    @property
    def dtype(self) -> Any:
        return self.base.dtype

    @property
    def buffer(self) -> str:
        return self.base.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        return self.base.name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.view(), name)

    def __getitem__(self, key: Any) -> Any:
        return self.view()[key]

    def __iadd__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "add", value)

    def __isub__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "subtract", value)

    def __imul__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "multiply", value)

    def __repr__(self) -> str:
        return f"<{self.base.name}[index grid] shape={self.shape}>"


def _items(ndim: int, key: Any) -> list[Any]:
    items = list(key) if isinstance(key, tuple) else [key]
    if any(k is Ellipsis for k in items):
        i = items.index(Ellipsis)
        items[i:i + 1] = [slice(None)] * (ndim - len(items) + 1)
    if len(items) > ndim:
        raise ViewError(f"too many indices: {len(items)} for a {ndim}-d tensor",
                        code="APK230")
    items += [slice(None)] * (ndim - len(items))
    for d, k in enumerate(items):
        if d == 0 and _is_index_tile(k):
            continue  # an index tile: the rows of a gather (`_gathered`)
        if not (isinstance(k, (slice, IndexExpr)) or is_int(k)):
            raise ApdslTypeError(f"unsupported index {k!r} next to an index expression: use "
                                 "ints, slices and nl.arange/nl.mgrid indices", code="APK940")
    return items


def _gathered(items: list[Any], limits: Limits | None) -> tuple[Any, list[Any]] | None:
    """An index tile in the first position (`t[idx_tile, i_f]`, the legacy indirect DMA): the
    tile (its partitions the grid's axis 0) and the key with a plain index over its rows."""
    index = items[0]
    if isinstance(index, IndexedTile):
        index = index.resolve(limits)
        if index is None:
            return None
    index = getattr(index, "tile", index)  # a legacy result computed
    rows = int(index.shape[0])
    it = Iterator(0, 1, rows)
    return index, [IndexExpr(0, ((it, 1),), ((it, 0),), (rows, 1)), *items[1:]]


def _is_index_tile(k: Any) -> bool:
    return hasattr(k, "storage") or isinstance(k, IndexedTile) or hasattr(k, "tile")


def _grid_axes(items: list[Any]) -> tuple[tuple[int, ...], dict[Iterator, int]]:
    """The broadcast shape of the key's index expressions and each iterator's axis in it."""
    grid: tuple[int, ...] = ()
    exprs = [k for k in items if isinstance(k, IndexExpr)]
    for k in exprs:
        grid = broadcast(grid, k.shape)
    axes: dict[Iterator, int] = {}
    for k in exprs:
        for it, a in k.axes:
            a += len(grid) - k.ndim
            if axes.setdefault(it, a) != a:
                raise ViewError("an index appears on two different axes of one index",
                                code="APK941")
    return grid, axes


def _counts(grid: tuple[int, ...], axes: dict[Iterator, int], limits: Limits
            ) -> list[int] | None:
    """Each grid axis's count of kept positions (None: a mask keeps none)."""
    counts = list(grid)
    seen: dict[int, tuple[int, int]] = {}
    for it, a in axes.items():
        lo, hi = limits.get(it, (0, it.count))
        if hi <= lo:
            return None
        if seen.setdefault(a, (lo, hi)) != (lo, hi):
            raise ViewError("two indices on one axis are narrowed differently by the mask",
                            code="APK943")
        counts[a] = hi - lo
    return counts


def _steps(t: Any, items: list[Any], axes: dict[Iterator, int], limits: Limits,
           gathered: bool) -> tuple[list[int], int]:
    """Each grid axis's storage step per position, and the offset of the first element;
    every index checked against its dimension over the kept positions (APK944)."""
    strides = t.layout.strides
    steps = [0] * (max(axes.values()) + 1 if axes else 0)
    offset = 0
    for d, k in enumerate(items):
        if isinstance(k, slice):
            continue
        n = t.shape[d]
        if isinstance(k, IndexExpr):
            lo_v = hi_v = k.const
            for it, c in k.terms:
                lo, hi = limits.get(it, (0, it.count))
                first, last = it.start + it.step * lo, it.start + it.step * (hi - 1)
                lo_v += min(c * first, c * last)
                hi_v += max(c * first, c * last)
                steps[axes[it]] += strides[d] * c * it.step
                offset += strides[d] * c * first
            offset += strides[d] * k.const
        else:
            lo_v = hi_v = int(k) + n if k < 0 else int(k)
            offset += strides[d] * lo_v
        if (lo_v < 0 or hi_v >= n) and not (d == 0 and gathered):
            raise ViewError(f"index of dim {d} reaches {lo_v if lo_v < 0 else hi_v}; the "
                            f"dimension has size {n}", code="APK944", dim=d, size=n,
                            help="narrow the index with a mask, e.g. mask=(i_p < n)")
    return steps, offset


def grid_view(t: Any, key: Any, limits: Limits | None = None) -> Any:
    """`t[key]` for a key with index expressions, each iterator narrowed to its positions in
    `limits`: a view (an access pattern) over t's storage, bounds checked per dimension.  None
    when some iterator keeps no position (a mask that selects nothing)."""
    items = _items(t.ndim, key)
    gather = None  # the index tile of a gather: its values pick the rows, checked at run time
    if _is_index_tile(items[0]):
        gathered = _gathered(items, limits)
        if gathered is None:
            return None
        gather, items = gathered
    strides = t.layout.strides
    if any(s is None for s in strides):
        raise ViewError("an index expression needs plain (single-stride) dimensions; this "
                        "view has a nested (fractal) one", code="APK941")
    limits = limits or {}
    grid, axes = _grid_axes(items)
    counts = _counts(grid, axes, limits)
    if counts is None:
        return None
    steps, offset = _steps(t, items, axes, limits, gather is not None)
    steps += [0] * (len(counts) - len(steps))
    block = [[s, c] for s, c in zip(steps, counts)]
    adv = [d for d, k in enumerate(items) if not isinstance(k, slice)]
    adjacent = adv == list(range(adv[0], adv[-1] + 1)) if adv else True
    pattern: list[list[int]] = [] if adjacent else block
    placed = not adjacent
    for d, k in enumerate(items):
        if isinstance(k, slice):
            start, stop, step = k.indices(t.shape[d])
            count = len(range(start, stop, step))
            if count == 0:
                return None
            offset += strides[d] * start
            pattern.append([strides[d] * step, count])
        elif not placed:
            pattern.extend(block)
            placed = True
    if t.onchip and pattern and pattern[0][1] != 1 and pattern[0][0] != strides[0]:
        raise ViewError("an indexed on-chip tile must keep the partition dimension first: "
                        "its first index selects partitions", code="APK945",
                        notes=[f"access pattern {pattern}"],
                        help="index partitions with the first index (t[i_p, i_f])")
    if gather is not None:  # rows by the tile's values, scaled by the row size
        return t.ap(pattern, offset=offset, vector_offset=gather, indirect_dim=0)
    return t.ap(pattern, offset=offset)


for _name, _method in tile_writes.operator_methods().items():  # the legacy API's `a + b`
    setattr(IndexedTile, _name, _method)
