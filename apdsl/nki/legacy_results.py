"""A legacy NKI instruction's result (`apdsl.nki.legacy`): computed into its own new tile the
moment anything else happens, or straight into the tile it is first written to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..errors import Span
from ..semantics.host import Host
from ..tensor import tile_writes
from ..tensor.index_grid import Limits, Predicate
from ..tensor.view import Tensor


class Owner(Protocol):
    """What a pending result needs of the legacy state that made it (`legacy.Legacy`)."""

    pending: Any
    host: Host

    def narrow(self, t: Tensor, mask: Predicate | None, limits: Limits | None
               ) -> Tensor | None: ...

    def augmented(self, target: Any, op: str, value: Any) -> Any: ...


class PendingTile:
    """A legacy instruction's result before it is computed (module docstring)."""

    __slots__ = ("shape", "dtype", "buffer", "op", "_issue", "_owner", "_tile", "_name",
                 "_span", "_limits", "_mask")

    def __init__(self, owner: Owner, op: str, shape: tuple[int, ...], dtype: Any, buffer: str,
                 issue: Callable[..., None], name: str, span: Span | None,
                 mask: Predicate | None, limits: Limits | None) -> None:
        self.shape, self.dtype, self.buffer, self.op = shape, dtype, buffer, op
        self._issue, self._owner, self._name, self._span = issue, owner, name, span
        self._mask, self._limits = mask, limits
        self._tile: Tensor | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def pending(self) -> bool:
        return self._tile is None and self._owner.pending is self

    @property
    def tile(self) -> Tensor:
        """The result in its own new tile (computed now if it was pending)."""
        if self._tile is None:
            self._owner.pending = None
            tile = self._owner.host.allocate(self.shape, self.dtype, self.buffer,
                                             name=self._name, span=self._span)
            self._tile = tile
            region = self._owner.narrow(tile, self._mask, self._limits)
            if region is not None:
                self._issue(region)
        return self._tile

    def write_into(self, dst: Tensor, **extra: Any) -> None:
        """Compute the result straight into `dst` (already narrowed by the call's mask)."""
        self._owner.pending = None
        self._issue(dst, **extra)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.tile, name)

    def __getitem__(self, key: Any) -> Any:
        return self.tile[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tile[key] = value

    def __iadd__(self, value: Any) -> Any:
        return self._owner.augmented(self.tile, "add", value)

    def __isub__(self, value: Any) -> Any:
        return self._owner.augmented(self.tile, "subtract", value)

    def __imul__(self, value: Any) -> Any:
        return self._owner.augmented(self.tile, "multiply", value)

    def __repr__(self) -> str:
        state = "pending" if self._tile is None else "computed"
        return f"<{self.op} result {self.shape} {self.dtype} @ {self.buffer}, {state}>"


for _name, _method in tile_writes.operator_methods().items():  # the legacy API's `a + b`
    setattr(PendingTile, _name, _method)


def computed(value: Any) -> Any:
    """A kernel's result with legacy results as their tiles (tuples and lists walked)."""
    if isinstance(value, PendingTile):
        return value.tile
    if isinstance(value, (tuple, list)):
        return type(value)(computed(v) for v in value)
    return value
