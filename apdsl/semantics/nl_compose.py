"""The composite `nl` functions of the NKI language reference: `nl.where`, `nl.expand_dims`,
`nl.softmax` and `nl.rms_norm`.  Each is the sequence of the table's instructions that computes
its docstring's meaning (the reference names no instruction for them), issued through the
program's instruction builtins, so each step is checked, lowered and costed as itself:

- `where(condition, x, y, dtype=None)`: condition holds 1.0 (True) or 0.0 (False).  y (a tile,
  or a number) is put into the result (`tensor_copy`, or `memset` for a number), the condition
  made a uint8 predicate (`tensor_copy`; a uint8/uint16/uint32 SBUF condition is used as it is)
  and x (a tile, cast to the result dtype by `tensor_copy` if it differs, or a number) copied
  over it where the predicate holds (`tensor_copy_predicated`): exact, NaN and infinities
  included.  x and y have the condition's shape; the result has x's dtype (of two tiles, the
  dtype `nl.add` would give) unless `dtype` is given.  A condition holding another value is
  APK166 when the values are known (`apdsl check` reads none).
- `expand_dims(x, axis)`: a view (no instruction): x with a size-1 dimension inserted at
  `axis` of the result (NumPy's rule: -ndim-1 <= axis <= ndim); on chip not at axis 0, which
  is the partition dimension.
- `softmax(x, axis=-1, dtype=None)`: over the axes (free, the last contiguous ones, as the
  reductions take them), in float32: the maximum (`tensor_reduce`), x minus it
  (`tensor_tensor`), exp (`activation`), the sum (`tensor_reduce`), its `reciprocal`, and the
  product (`tensor_tensor`) into the result (x's dtype unless `dtype`).
- `rms_norm(x, w, axis, n, epsilon=1e-6, dtype=None, compute_dtype=None)`:
  `x / sqrt(sum(x**2 over axis) / n + epsilon) * w`, in `compute_dtype` (float32 unless given):
  the squares (`activation` square), their sum (`tensor_reduce`), times 1/n plus epsilon (one
  `tensor_scalar`), `activation` rsqrt, and two `tensor_tensor` multiplies (by it, by w).  w
  has x's shape or broadcasts to it (NumPy's rule, as `nl.multiply` takes it).
Broadcasting a reduced tile back over the reduced axes reads it through a stride-0 view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, ApdslTypeError, ViewError
from ..runtime.table.operators import OPERATORS
from ..tensor.dtypes import DType
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor
from .host import Host
from .nl_constants import broadcast_to
from .nl_operators import on_chip, promote
from .nl_reductions import free_axes

NAMES = ("where", "expand_dims", "softmax", "rms_norm")
PREDICATES = ("uint8", "uint16", "uint32")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _tile(x: Any, fn: str, role: str, numbers: bool = False) -> Tensor | float:
    if type(x) is Tensor:
        on_chip(x, fn, role)
        return x
    if numbers and _number(x):
        return float(x)
    raise ApdslTypeError(f"nl.{fn}: {role} must be a tile{' or a number' if numbers else ''}, "
                         f"not {type(x).__name__}", code="APK152", param=role)


def _spread(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """`t` (size 1 on some free axes of `shape`) read as `shape` through stride-0 views."""
    for d in range(1, len(shape)):
        if t.shape[d] == 1 and shape[d] > 1:
            t = t.broadcast(d, shape[d])
    return t


class Composer:
    """The functions bound to one program: `interp` allocates their tiles, `table` holds the
    program's instruction builtins they issue."""

    def __init__(self, interp: Host, table: dict[str, Any]) -> None:
        self.interp, self.table = interp, table

    def alloc(self, shape: tuple, dtype: Any) -> Tensor:
        return self.interp.allocate(tuple(shape), dtype, "sbuf", "ND", "",
                                    span=self.interp.call_span)

    # -- where -----------------------------------------------------------------------------------
    def binary_values(self, cond: Tensor) -> None:
        """APK166 when the condition holds a value other than 1.0 and 0.0 (values known)."""
        interp = self.interp
        if interp.dry and cond.storage not in interp.known_values:
            return
        values = np.asarray(cond.numpy(), np.float64)
        bad = ~((values == 0.0) | (values == 1.0))
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ApdslRuntimeError(
                f"nl.where: the condition holds {float(values[at])} at {at}; its values are 1.0 "
                "(True) or 0.0 (False), as the reference says", code="APK166",
                param="condition", help="make it with a comparison (nl.greater, nl.equal, "
                "...), which gives 1.0 and 0.0")

    def where(self, condition: Any, x: Any, y: Any, dtype: Any = None) -> Tensor:
        cond = _tile(condition, "where", "condition")
        xs = _tile(x, "where", "x", numbers=True)
        ys = _tile(y, "where", "y", numbers=True)
        tiles = [t for t in (xs, ys) if isinstance(t, Tensor)]
        for role, t in (("x", xs), ("y", ys)):
            if isinstance(t, Tensor) and tuple(t.shape) != tuple(cond.shape):
                raise ApdslTypeError(
                    f"nl.where: {role} has shape {tuple(t.shape)}, the condition "
                    f"{tuple(cond.shape)}; nl.where takes tiles of one shape", code="APK154",
                    param=role, help="broadcast it first with nl.broadcast_to")
        if dtype is not None:
            out_dt = to_dtype(dtype)
        elif len(tiles) == 2:
            out_dt = promote(tiles[0].dtype, tiles[1].dtype)
        else:
            out_dt = tiles[0].dtype if tiles else to_dtype("float32")
        self.binary_values(cond)
        table, shape = self.table, tuple(cond.shape)
        out = self.alloc(shape, out_dt)
        if isinstance(ys, Tensor):
            table["tensor_copy"](dst=out, src=ys)
        else:
            table["memset"](dst=out, value=ys)
        pred = cond
        if cond.dtype.name not in PREDICATES or cond.buffer != "sbuf":
            pred = self.alloc(shape, "uint8")
            table["tensor_copy"](dst=pred, src=cond)
        if isinstance(xs, Tensor) and xs.dtype != out_dt:
            cast = self.alloc(shape, out_dt)
            table["tensor_copy"](dst=cast, src=xs)
            xs = cast
        table["tensor_copy_predicated"](dst=out, src=xs, predicate=pred)
        return out

    # -- the reductions' building blocks ---------------------------------------------------------
    def reduce(self, op: str, x: Tensor, axes: tuple[int, ...], dt: DType) -> Tensor:
        kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        out = self.alloc(kept, dt)
        self.table["tensor_reduce"](dst=out, op=OPERATORS[op], data=x, axis=axes,
                                    keepdims=True)
        return out

    def tensor_tensor(self, a: Tensor, b: Tensor, op: str, dt: DType) -> Tensor:
        out = self.alloc(tuple(a.shape), dt)
        self.table["tensor_tensor"](dst=out, data1=a, data2=_spread(b, tuple(a.shape)),
                                    op=OPERATORS[op])
        return out

    def unary(self, op: str, x: Tensor, dt: DType) -> Tensor:
        out = self.alloc(tuple(x.shape), dt)
        if op == "reciprocal":
            self.table["reciprocal"](dst=out, data=x)
        else:
            self.table["activation"](dst=out, op=OPERATORS[op], data=x)
        return out

    def softmax(self, x: Any, axis: Any = -1, dtype: Any = None, compute_dtype: Any = None
                ) -> Tensor:
        x = _tile(x, "softmax", "x")
        axes = free_axes(x, axis, "softmax")
        ct = to_dtype("float32" if compute_dtype is None else compute_dtype)
        peak = self.reduce("maximum", x, axes, ct)
        e = self.unary("exp", self.tensor_tensor(x, peak, "subtract", ct), ct)
        inv = self.unary("reciprocal", self.reduce("add", e, axes, ct), ct)
        return self.tensor_tensor(e, inv, "multiply",
                                  x.dtype if dtype is None else to_dtype(dtype))

    def rms_norm(self, x: Any, w: Any, axis: Any, n: Any, epsilon: Any = 1e-6,
                 dtype: Any = None, compute_dtype: Any = None) -> Tensor:
        x = _tile(x, "rms_norm", "x")
        w = _tile(w, "rms_norm", "w")
        axes = free_axes(x, axis, "rms_norm")
        if not _number(n) or n <= 0:
            raise ApdslTypeError(f"nl.rms_norm: n must be a positive number (the count of "
                                 f"values the rms is over), not {n!r}", code="APK172",
                                 param="n", help=f"the count of x's reduced elements: "
                                 f"{int(np.prod([x.shape[a] for a in axes]))}")
        if not _number(epsilon) or epsilon < 0:
            raise ApdslTypeError(f"nl.rms_norm: epsilon must be a number >= 0, not "
                                 f"{epsilon!r}", code="APK172", param="epsilon")
        shape, ws = tuple(x.shape), tuple(w.shape)
        if len(ws) != len(shape) or any(a not in (1, b) for a, b in zip(ws, shape)):
            raise ApdslTypeError(
                f"nl.rms_norm: w has shape {ws}, which does not broadcast to x's {shape}: "
                "each dimension equal or 1, one rank", code="APK154", param="w",
                help="slice or reshape w to x's shape")
        if ws[0] == 1 and shape[0] > 1:
            w = broadcast_to(self.interp, self.table, w, (shape[0], *ws[1:]))
        ct = to_dtype("float32" if compute_dtype is None else compute_dtype)
        total = self.reduce("add", self.unary("square", x, ct), axes, ct)
        mean = self.alloc(tuple(total.shape), ct)
        self.table["tensor_scalar"](dst=mean, data=total, op0=OPERATORS["multiply"],
                                    operand0=1.0 / float(n), op1=OPERATORS["add"],
                                    operand1=float(epsilon))
        scaled = self.tensor_tensor(x, self.unary("rsqrt", mean, ct), "multiply", ct)
        return self.tensor_tensor(scaled, w, "multiply",
                                  x.dtype if dtype is None else to_dtype(dtype))


def expand_dims(x: Any, axis: Any) -> Tensor:
    """`nl.expand_dims(x, axis)`: x with a size-1 dimension at `axis` of the result, a view."""
    if type(x) is not Tensor:
        raise ApdslTypeError(f"nl.expand_dims: x must be a tile, not {type(x).__name__}",
                             code="APK152", param="x")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise ApdslTypeError(f"nl.expand_dims: axis must be an int, not "
                             f"{type(axis).__name__}", code="APK111", param="axis")
    nd = len(x.shape)
    if not -nd - 1 <= axis <= nd:
        raise ViewError(f"nl.expand_dims: axis {axis} is out of range for x of shape "
                        f"{tuple(x.shape)}: the new axis is at a position of the "
                        f"{nd + 1}-d result, -{nd + 1}..{nd}", code="APK201",
                        param="axis", help=f"use an axis in 1..{nd} on a tile")
    d = int(axis) % (nd + 1)
    if d == 0 and x.onchip:
        raise ViewError(f"nl.expand_dims: axis {axis} would put the new axis before the "
                        f"partition dimension of {x.name} ({x.buffer}, shape "
                        f"{tuple(x.shape)}); on chip the partition dimension stays first",
                        code="APK202", param="axis",
                        help=f"insert it among the free dimensions (axis 1..{nd})")
    return x.expand_dim(d)


def make(interp: Host, table: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The functions bound to one program (its allocator and instruction builtins)."""
    c = Composer(interp, table)
    return {"where": c.where, "expand_dims": expand_dims, "softmax": c.softmax,
            "rms_norm": c.rms_norm}
