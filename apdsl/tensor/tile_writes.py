"""What `t[key] = value` and `t += value` mean for a tensor.

In the model a view moves no data, so neither means anything by itself.  The legacy NKI API
(`neuronxcc.nki`) writes tiles that way (`qk[i, j] = nisa.nc_matmul(...)`, `acc += nl.matmul(
...)`), and the frontend that runs such a kernel lends a `TileWriter` for the length of the
kernel call (`lending`): outside one, both are a located error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from ..errors import ApdslTypeError


class TileWriter(Protocol):
    """The frontend's meaning of tile writes (`apdsl.nki.legacy.Legacy`)."""

    def assign(self, target: Any, key: Any, value: Any) -> None:
        """`target[key] = value`."""

    def augmented(self, target: Any, op: str, value: Any) -> Any:
        """`target OP= value` (op: add, subtract, multiply, divide); returns target."""


_WRITER: ContextVar[TileWriter | None] = ContextVar("apdsl_tile_writer", default=None)


@contextmanager
def lending(writer: TileWriter) -> Iterator[None]:
    token = _WRITER.set(writer)
    try:
        yield
    finally:
        _WRITER.reset(token)


def _writer(what: str) -> TileWriter:
    writer = _WRITER.get()
    if writer is None:
        raise ApdslTypeError(f"{what} of a tensor moves no data by itself: outside an NKI "
                             "kernel, issue an instruction", code="APK946",
                             help="copy with dma_copy/tensor_copy(dst=t[...], src=...), or "
                                  "compute with dst=t[...]")
    return writer


def assign(target: Any, key: Any, value: Any) -> None:
    _writer("an item assignment").assign(target, key, value)


def augmented(target: Any, op: str, value: Any) -> Any:
    return _writer("an augmented assignment").augmented(target, op, value)
