"""The reductions of `nki.language`: `nl.sum`, `nl.max`, `nl.min`, `nl.prod`, `nl.all`,
`nl.mean` and `nl.var` `(x, axis, dtype=None, keepdims=False)` (`nl.all` has no keepdims),
each a new SBUF tile computed by `tensor_reduce` over free axes of x.

The reference: the axes must be free dimensions, trailing and contiguous ([1], [1, 2], ...).
(A legacy index expression may reduce other free axes: `apdsl.nki.legacy` lists them last.)
The result has x's dtype unless `dtype` is given; its shape drops the reduced axes (keeps them
as 1 with keepdims), and an on-chip tile keeps at least one free dimension, so reducing every
free axis of [P, F] gives [P, 1].  `nl.mean` divides the float32 sum by the element count
with one `tensor_scalar` multiply by 1/n (exact for a power-of-two count; within one float32
rounding otherwise); `nl.var` is the two-pass variance (the mean, the squared deviations,
their mean), of every free axis only.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

from ..errors import ApdslTypeError
from ..runtime.table.operators import OPERATORS
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor
from .host import Host

_OPS = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "multiply",
        "all": "logical_and"}
NAMES = (*_OPS, "mean", "var")


def free_axes(x: Tensor, axis: Any, fn: str) -> tuple[int, ...]:
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = len(x.shape)
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, int) or not -nd <= a < nd:
            raise ApdslTypeError(f"nl.{fn}: axis {a!r} is not a dimension of x "
                                 f"{tuple(x.shape)}", code="APK158", param="axis")
        out.append(a % nd)
    axes = tuple(sorted(set(out)))
    if not axes or axes[0] == 0 or axes != tuple(range(axes[0], nd)):
        raise ApdslTypeError(
            f"nl.{fn}: axis {axis!r} of x {tuple(x.shape)}: the reduced axes must be free "
            "dimensions, trailing and contiguous ([1], [1, 2], ...; the reference: \"can "
            "only be the last contiguous dim(s) of the tile\")", code="APK158",
            param="axis", help="across partitions use nisa.tensor_partition_reduce, or "
            "nisa.nc_matmul with a ones stationary" if 0 in axes else None)
    return axes


def _shape(x: Tensor, axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)
                  if keepdims or i not in axes)
    return shape if len(shape) >= 2 else shape + (1,)


def make(interp: Host, table: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The reductions bound to one program (its allocator and instruction builtins)."""

    def alloc(shape: tuple, dtype: Any) -> Tensor:
        return interp.allocate(shape, dtype, "sbuf", "ND", "", span=interp.call_span)

    def tile(x: Any, fn: str) -> Tensor:
        if type(x) is not Tensor:
            raise ApdslTypeError(f"nl.{fn}: x must be a tile, not {type(x).__name__}",
                                 code="APK152", param="x")
        if not x.onchip:
            from .nl_operators import on_chip
            on_chip(x, fn, "x")
        return x

    def reduction(fn: str) -> Callable[..., Any]:
        op = OPERATORS[_OPS[fn]]

        def call(x: Any, axis: Any, dtype: Any = None, keepdims: bool = False) -> Tensor:
            x = tile(x, fn)
            axes = free_axes(x, axis, fn)
            out = alloc(_shape(x, axes, keepdims), x.dtype if dtype is None
                        else to_dtype(dtype))
            table["tensor_reduce"](dst=out, op=op, data=x, axis=axes, keepdims=keepdims)
            return out
        call.__name__ = fn
        return call

    def all_(x: Any, axis: Any, dtype: Any = None) -> Tensor:
        return reduction("all")(x, axis, dtype)

    def sum_to_f32(x: Tensor, axes: tuple[int, ...], keepdims: bool) -> Tensor:
        total = alloc(_shape(x, axes, keepdims), "float32")
        table["tensor_reduce"](dst=total, op=OPERATORS["add"], data=x, axis=axes,
                               keepdims=keepdims)
        return total

    def mean(x: Any, axis: Any, dtype: Any = None, keepdims: bool = False) -> Tensor:
        x = tile(x, "mean")
        axes = free_axes(x, axis, "mean")
        total = sum_to_f32(x, axes, keepdims)
        out = alloc(tuple(total.shape), x.dtype if dtype is None else to_dtype(dtype))
        n = prod(x.shape[a] for a in axes)
        table["tensor_scalar"](dst=out, data=total, op0=OPERATORS["multiply"],
                               operand0=1.0 / n)
        return out

    def var(x: Any, axis: Any, dtype: Any = None, keepdims: bool = False) -> Tensor:
        x = tile(x, "var")
        axes = free_axes(x, axis, "var")
        if axes[0] != 1:
            raise ApdslTypeError(f"nl.var: axis {axis!r}: apdsl computes the variance over "
                                 "every free axis only", code="APK158", param="axis",
                                 help=f"pass axis={list(range(1, len(x.shape)))}")
        n = prod(x.shape[a] for a in axes)
        m = mean(x, axes, "float32", keepdims=False)  # [P, 1]: the per-partition operand
        dev = alloc(tuple(x.shape), "float32")
        table["tensor_scalar"](dst=dev, data=x, op0=OPERATORS["subtract"], operand0=m)
        sq = alloc(tuple(x.shape), "float32")
        table["tensor_tensor"](dst=sq, data1=dev, data2=dev, op=OPERATORS["multiply"])
        total = sum_to_f32(sq, axes, keepdims)
        out = alloc(tuple(total.shape), x.dtype if dtype is None else to_dtype(dtype))
        table["tensor_scalar"](dst=out, data=total, op0=OPERATORS["multiply"],
                               operand0=1.0 / n)
        return out

    from .nl_operators import NlFunction
    # `nl.max` as `op=` (the reference's own tensor_reduce examples pass it) is the operator
    # it reduces with: each reduction is also that operator's value (as nl.add is)
    out: dict[str, Callable[..., Any]] = {
        fn: NlFunction(OPERATORS[_OPS[fn]], reduction(fn)) for fn in _OPS if fn != "all"}
    out.update({"all": NlFunction(OPERATORS["logical_and"], all_), "mean": mean, "var": var})
    return out
