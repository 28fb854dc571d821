"""On-chip tensors with *block dimensions*, the legacy NKI shape `(B..., par_dim(P), F...)`.

The blocks are B logical tiles of `(P, F...)`; the compiler gave them physical addresses as it
saw fit, keeping only the live ones in memory (the NKI block-dimension migration guide).  Here
they are one storage `(P, prod(B), F...)` -- the blocks folded into the free dimensions, as the
guide rewrites them -- whose capacity is charged for one block: the least the compiler needs, so
a kernel the compiler could place is never refused (and one that needs more live blocks than
fit is not caught here).  Indexing the blocks with ints gives an ordinary tile view.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

from ..errors import ApdslTypeError, Span
from . import tile_writes
from .layout import Layout
from .storage import Storage


class BlockStorage(Storage):
    """The storage of a tensor with block dimensions: its capacity charge is one block."""

    __slots__ = ("blocks",)

    def __init__(self, shape: tuple[int, ...], dtype: Any, buffer: str, blocks: int,
                 **kw: Any) -> None:
        self.blocks = blocks
        super().__init__(shape, dtype, buffer, **kw)

    def charged_bytes(self, parts: int) -> int:
        return self.nbytes // max(parts, 1) // self.blocks


def _refuse(what: str) -> ApdslTypeError:
    return ApdslTypeError(f"{what} of a tensor with block dimensions: index its blocks with "
                          "ints first (t[i, j] is a tile)", code="APK150",
                          help="the NKI block-dimension migration guide shows the rewrite "
                               "without block dimensions")


class BlockTensor:
    """`(B..., par_dim(P), F...)`: `t[i, j]` (ints for the block dimensions, then any index of
    the tile) is a view of block (i, j); fewer ints give the tensor of the remaining blocks.

    With a `placer` (direct allocation: `ncc.sbuf.alloc`) each block is its own tile, placed
    where `placer(block number)` says when first used (blocks numbered row-major over the whole
    tensor); `backing` is then None and `tile_shape` says the tiles' shape."""

    __slots__ = ("backing", "blocks", "first", "placer", "tiles", "tile_shape", "_dtype",
                 "_buffer", "_name")

    def __init__(self, backing: Any, blocks: tuple[int, ...], first: int = 0, *,
                 placer: Callable[[int], Any] | None = None,
                 tiles: dict[int, Any] | None = None, tile_shape: tuple[int, ...] = (),
                 dtype: Any = None, buffer: str = "", name: str = "") -> None:
        self.backing, self.blocks, self.first = backing, blocks, first
        self.placer, self.tiles = placer, tiles if tiles is not None else {}
        if backing is not None:
            b = backing.shape
            tile_shape, dtype, buffer, name = (b[0], *b[2:]), backing.dtype, backing.buffer, \
                backing.name
        self.tile_shape, self._dtype, self._buffer, self._name = tile_shape, dtype, buffer, name

    @staticmethod
    def placed(blocks: tuple[int, ...], tile: tuple[int, ...], dtype: Any, buffer: str,
               name: str, placer: Callable[[int], Any]) -> BlockTensor:
        """Blocks placed one by one by `placer(block index) -> tile` (direct allocation)."""
        return BlockTensor(None, blocks, placer=placer, tile_shape=tile, dtype=dtype,
                           buffer=buffer, name=name)

    def _sub(self, blocks: tuple[int, ...], first: int) -> BlockTensor:
        return BlockTensor(self.backing, blocks, first, placer=self.placer, tiles=self.tiles,
                           tile_shape=self.tile_shape, dtype=self._dtype,
                           buffer=self._buffer, name=self._name)

    @staticmethod
    def allocate(blocks: tuple[int, ...], tile: tuple[int, ...], dtype: Any, buffer: str,
                 name: str = "", span: Span | None = None) -> BlockTensor:
        from .view import new_view
        shape = (tile[0], prod(blocks), *tile[1:])
        storage = BlockStorage(shape, dtype, buffer, prod(blocks), name=name, span=span)
        return BlockTensor(new_view(storage, dtype, Layout.row_major(shape)), blocks)

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.blocks, *self.tile_shape)

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def buffer(self) -> str:
        return self._buffer

    @property
    def name(self) -> str:
        return self._name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def tile(self, index: int) -> Any:
        """Block `index` (counted over this tensor's blocks, row-major) as a `(P, F...)` view."""
        b = self.first + index
        if self.placer is not None:  # direct allocation: each block placed on first use
            tile = self.tiles.get(b)
            if tile is None:
                tile = self.tiles[b] = self.placer(b)
            return tile
        view = self.backing.slice(1, b, b + 1)
        return view.squeeze_dim(1) if self.backing.ndim > 2 else view

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        nb = len(self.blocks)
        given = []
        for k in items[:nb]:
            if not isinstance(k, int) or isinstance(k, bool):
                raise _refuse(f"index {k!r} on a block dimension")
            given.append(k)
        for k, n in zip(given, self.blocks):
            if not 0 <= k < n:
                raise ApdslTypeError(f"block index {k} is out of range for a block dimension "
                                     f"of size {n}", code="APK944")
        offset = sum(k * prod(self.blocks[d + 1:]) for d, k in enumerate(given))
        if len(given) < nb:
            return self._sub(self.blocks[len(given):], self.first + offset)
        tile = self.tile(offset)
        rest = items[nb:]
        return tile[rest] if rest and not all(k == slice(None) for k in rest) else tile

    def __setitem__(self, key: Any, value: Any) -> None:
        tile_writes.assign(self, key, value)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _refuse(f".{name}")

    def __repr__(self) -> str:
        return f"<{self.name}: blocks {self.blocks} of {self.dtype} tiles @ {self.buffer}>"
