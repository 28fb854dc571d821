"""What `t[key] = value`, `t += value` and `a + b` mean for tensors.

In the model a view moves no data, so neither means anything by itself.  The legacy NKI API
(`neuronxcc.nki`) writes tiles that way (`qk[i, j] = nisa.nc_matmul(...)`, `acc += nl.matmul(
...)`), and the frontend that runs such a kernel lends a `TileWriter` for the length of the
kernel call (`lending`): outside one, each is a located error.  The legacy API also overloads
Python's arithmetic operators on tiles (`c = a + b` is `nl.add(a, b)`, as its getting-started
guide says of `+`, `-`, `*`, `/`); `arithmetic` gives them that meaning.  Its tiles also have
the method `t.broadcast_to(shape)` (the legacy reference's `tensor.broadcast_to`: NumPy's
broadcast rules), which is `nl.broadcast_to(t, shape)`; `broadcast_to` gives it that meaning.
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

    def arithmetic(self, op: str, left: Any, right: Any) -> Any:
        """`left OP right` with a tile on at least one side: the `nl` function `op`'s new
        tile."""

    def broadcast_to(self, tile: Any, shape: Any) -> Any:
        """`tile.broadcast_to(shape)`: `nl.broadcast_to(tile, shape)`'s new tile."""


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


def _computing(what: str, help: str) -> TileWriter:
    writer = _WRITER.get()
    if writer is None:
        raise ApdslTypeError(f"{what} computes nothing by itself: outside a legacy NKI kernel, "
                             "issue an instruction", code="APK946", help=help)
    return writer


def arithmetic(op: str, left: Any, right: Any) -> Any:
    return _computing(f"an arithmetic operator on a tensor ({op})",
                      f"compute with nisa.tensor_tensor(dst=..., op=nl.{op}) or "
                      "nisa.tensor_scalar").arithmetic(op, left, right)


def broadcast_to(tile: Any, shape: Any) -> Any:
    """`tile.broadcast_to(shape)`, the legacy API's tile method: `nl.broadcast_to(tile, shape)`
    (a new SBUF tile; the partition dimension broadcast from 1 as that function does it).

    >>> import apdsl.nki as nki, apdsl.nki.language as nl
    >>> @nki.jit
    ... def rows(v):
    ...     out = nl.ndarray((3, 4), dtype=v.dtype, buffer=nl.shared_hbm)
    ...     nl.store(out, nl.load(v).broadcast_to((3, 4)))
    ...     return out
    >>> rows(np.arange(4, dtype=np.float32).reshape(1, 4))
    array([[0., 1., 2., 3.],
           [0., 1., 2., 3.],
           [0., 1., 2., 3.]], dtype=float32)
    """
    return _computing("t.broadcast_to(shape) on a tensor",
                      "copy a stride-0 view into a tile of that shape: nisa.tensor_copy("
                      "dst=..., src=t.broadcast(dim, size))").broadcast_to(tile, shape)


# Python's operator methods -> the `nl` function each means on tiles (the reflected form swaps
# the operands: `2.0 * t` is `nl.multiply(2.0, t)`)
OPERATOR_FUNCTIONS = {"add": "add", "sub": "subtract", "mul": "multiply",
                      "truediv": "divide", "pow": "power", "and": "bitwise_and",
                      "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
                      "rshift": "right_shift"}


def operator_methods() -> dict[str, Any]:
    """`__add__`, `__radd__`, ..., `__neg__` and `broadcast_to` for a tile class body (the same
    for tensors, index-grid views and the legacy API's pending results)."""
    methods: dict[str, Any] = {"__array_ufunc__": None}  # NumPy scalars defer to these

    def forward(fn: str) -> Any:
        return lambda self, other: arithmetic(fn, self, other)

    def reflected(fn: str) -> Any:
        return lambda self, other: arithmetic(fn, other, self)

    for py, fn in OPERATOR_FUNCTIONS.items():
        methods[f"__{py}__"] = forward(fn)
        methods[f"__r{py}__"] = reflected(fn)
    methods["__neg__"] = lambda self: arithmetic("multiply", self, -1.0)
    methods["broadcast_to"] = broadcast_to
    return methods
