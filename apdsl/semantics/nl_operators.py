"""The NKI operators as the high-level `nl` functions: `nl.add(a, b)`, `nl.exp(x)` return a new
SBUF tile, while `nl.add` passed as `op=` is still the operator value (`NlFunction` is an
`Operator`, Contract A), so one name serves both as NKI code uses it.

What each issues (docs/facts/nki_isa.md section 7; the reference publishes no mapping beyond
the DMA and matmul wrappers, so apdsl issues the instruction whose documented meaning is the
function's):
- a binary operator on two tiles of one shape: `tensor_tensor(dst, x, y, op)`;
- a tile and a scalar, or a tile and a per-partition `[P, 1]` tile: `tensor_scalar(dst, data,
  op0=op, operand0=..., reverse0=...)` (reverse0 when the operand is the left argument);
- two tiles of other shapes broadcast by NumPy's rule (the legacy reference's "broadcastable
  to a common shape", with its examples of [1, 512] and [1, 1] tiles added to [128, 512] ones):
  a one-partition tile is brought onto the other's partitions by `nl.broadcast_to` (nc_matmul
  of a ones row: exact, integers too), then the column or same-shape rule
  above, a size-1 free dimension read through a stride-0 view; other shapes are APK154;
- a unary function: `activation(dst, op, data)` on the Scalar Engine, except `nl.reciprocal`
  (the `reciprocal` instruction) and `nl.negative` (`tensor_scalar` multiplying by -1, exact);
- `nl.copy(x)` is the copy function of `nl_functions` (tensor_copy).
An operator an instruction does not take is that instruction's coded refusal; nothing is
computed outside an instruction.  `nl.divide` is refused as the function called (APK183: the
device compiler rejects divide; multiply by the reciprocal), except in the legacy API, where
the frontend gives it that reciprocal and multiply (`apdsl.nki.legacy_divide`).

Result dtype (`dtype=None`): the input tile's; of two tiles, the wider float, or the float of a
float/integer pair, or the wider integer (bfloat16 with float16, and integers of one width but
different signedness, widen to float32 and the next signed integer); a float scalar with an
integer tile gives float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslTypeError, TargetError
from ..runtime.table.operators import OPERATORS, Operator, divide_refused
from ..tensor.dtypes import DType
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor
from .host import Host
from .nl_constants import broadcast_to


class NlFunction(Operator):
    """An NKI operator that is also its high-level `nl` function: calling it computes a new
    tile; as a value it is the operator (instructions take it as `op=`).  Made from the plain
    operator's fields, plus the function (`call`), as immutable as it."""

    def __init__(self, op: Operator, call: Callable[..., Any]) -> None:
        # the operator's fields as they are (an interpreter makes ~60 of these: copied
        # straight, not through the frozen dataclass's checked __init__)
        state = self.__dict__
        state.update(op.__dict__)  # (an Operator keeps its fields, and only them, there)
        state["call"] = call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        # the same operator as the plain value of its name (`nl.add == add`)
        if not isinstance(other, Operator):
            return NotImplemented
        return self.name == other.name and self.kind == other.kind and self.fn is other.fn

    def __hash__(self) -> int:
        return Operator.__hash__(self)  # over the operator's fields: the plain value's hash


# operator values with no nl function of their own signature (tensor_partition_reduce's
# average, activate2's bypass and prelu): `nl.X` is the plain operator
VALUES_ONLY = frozenset({"average", "bypass", "prelu"})


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def promote(a: DType, b: DType) -> DType:
    """The result dtype of a binary function on tiles of dtypes a and b (module docstring)."""
    if a == b:
        return a
    fa, fb = a.name.startswith(("float", "bfloat", "tfloat")), \
        b.name.startswith(("float", "bfloat", "tfloat"))
    if fa != fb:
        return a if fa else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    if fa:
        return to_dtype("float32")
    return to_dtype({8: "int16", 16: "int32"}.get(a.bits, "int32"))


def _scalar_dtype(t: DType, scalar: Any) -> DType:
    is_float = isinstance(scalar, (float, np.floating))
    if is_float and not t.name.startswith(("float", "bfloat", "tfloat")):
        return to_dtype("float32")
    return t


def on_chip(x: Tensor, fn: str, role: str) -> None:
    if not x.onchip:
        raise TargetError(f"nl.{fn}: {role} {x.name} is in {x.buffer}; nl.{fn} works on SBUF "
                          "and PSUM tiles", code="APK151", param=role, buffer=x.buffer,
                          help="nl.load it into SBUF first")


def _tile_arg(x: Any, fn: str, role: str) -> Tensor:
    if type(x) is not Tensor:
        raise ApdslTypeError(f"nl.{fn}: {role} must be a tile, not {type(x).__name__}",
                             code="APK152", param=role)
    on_chip(x, fn, role)
    return x


def _broadcast_shape(op: Operator, x: Tensor, y: Tensor) -> tuple[int, ...]:
    """The common shape of two tiles of one rank by NumPy's rule, or APK154."""
    sx, sy = tuple(x.shape), tuple(y.shape)
    if len(sx) == len(sy) and all(a == b or 1 in (a, b) for a, b in zip(sx, sy)):
        return tuple(max(a, b) for a, b in zip(sx, sy))
    raise ApdslTypeError(
        f"nl.{op.name}: shapes {sx} and {sy} do not broadcast: two tiles broadcast when "
        "they have one rank and each dimension is equal or 1 in one of them (NumPy's rule, "
        "as the reference says)", code="APK154",
        notes=[f"x: {sx} @ {x.buffer}", f"y: {sy} @ {y.buffer}"],
        help="slice or reshape one tile to the other's shape, or broadcast it with "
             "nl.broadcast_to")


def make(interp: Host, table: dict[str, Any], copy: Callable[..., Any]
         ) -> dict[str, NlFunction]:
    """Every operator of `OPERATORS` as an `NlFunction` issuing through the program's
    instruction builtins (`table`); `copy` is nl.copy's function."""

    def alloc(shape: tuple, dtype: DType) -> Tensor:
        return interp.allocate(shape, dtype, "sbuf", "ND", "", span=interp.call_span)

    def binary(op: Operator) -> Callable[..., Any]:
        def call(x: Any, y: Any, dtype: Any = None) -> Tensor:
            fn = op.name
            if fn == "divide":  # (refused as the function the user called, not as the
                raise divide_refused("nl.divide")  # instruction it would issue)
            tx, ty = type(x) is Tensor, type(y) is Tensor
            if not tx and not ty:
                raise ApdslTypeError(
                    f"nl.{fn}: at least one of x and y must be a tile, got "
                    f"{type(x).__name__} and {type(y).__name__}", code="APK152",
                    help="compute with plain Python for two scalars")
            for role, v, is_tile in (("x", x, tx), ("y", y, ty)):
                if is_tile:
                    on_chip(v, fn, role)
                elif not _number(v):
                    raise ApdslTypeError(f"nl.{fn}: {role} must be a tile or a number, not "
                                         f"{type(v).__name__}", code="APK152", param=role)
            if tx and ty:
                return _two_tiles(op, x, y, dtype)
            tile, scalar, reverse = (x, y, False) if tx else (y, x, True)
            out = alloc(tuple(tile.shape), to_dtype(dtype) if dtype is not None
                        else _scalar_dtype(tile.dtype, scalar))
            table["tensor_scalar"](dst=out, data=tile, op0=op, operand0=scalar,
                                   reverse0=reverse)
            return out
        return call

    def _two_tiles(op: Operator, x: Tensor, y: Tensor, dtype: Any) -> Tensor:
        sx, sy = tuple(x.shape), tuple(y.shape)
        result = to_dtype(dtype) if dtype is not None else promote(x.dtype, y.dtype)
        if sx == sy:
            out = alloc(sx, result)
            table["tensor_tensor"](dst=out, data1=x, data2=y, op=op)
            return out
        column = _column_operand(op, x, y, result)
        if column is not None:
            return column
        # NumPy's broadcast (the legacy reference: "x.shape and y.shape must be broadcastable
        # to a common shape"; its examples broadcast [1, 512] and [1, 1] across 128
        # partitions): a one-partition tile is first brought onto the other's partitions
        # (nl.broadcast_to's nc_matmul with a ones row), a size-1 free dimension is read
        # through a stride-0 view
        shape = _broadcast_shape(op, x, y)
        x, y = (broadcast_to(interp, table, t, (shape[0], *t.shape[1:]))
                if t.shape[0] == 1 and shape[0] > 1 else t for t in (x, y))
        column = _column_operand(op, x, y, result)
        if column is not None:
            return column
        views = []
        for t in (x, y):
            for d in range(1, len(shape)):
                if t.shape[d] == 1 and shape[d] > 1:
                    t = t.broadcast(d, shape[d])
            views.append(t)
        out = alloc(shape, result)
        table["tensor_tensor"](dst=out, data1=views[0], data2=views[1], op=op)
        return out

    def _column_operand(op: Operator, x: Tensor, y: Tensor, result: DType) -> Tensor | None:
        """A [P, 1] tile against a [P, F...] one: the per-partition operand of tensor_scalar
        (None for other shapes)."""
        for big, small in ((x, y), (y, x)):
            sb, ss = tuple(big.shape), tuple(small.shape)
            if len(ss) == 2 and ss[1] == 1 and ss[0] == sb[0] and len(sb) >= 2 and \
                    sb != ss:
                out = alloc(sb, result)
                # tensor_scalar computes `data op operand`: reversed when the column is x
                table["tensor_scalar"](dst=out, data=big, op0=op, operand0=small,
                                       reverse0=small is x)
                return out
        return None

    def unary(op: Operator) -> Callable[..., Any]:
        def call(x: Any, dtype: Any = None) -> Tensor:
            x = _tile_arg(x, op.name, "x")
            out = alloc(tuple(x.shape), x.dtype if dtype is None else to_dtype(dtype))
            if op.name == "reciprocal":
                table["reciprocal"](dst=out, data=x)
            elif op.name == "negative":
                table["tensor_scalar"](dst=out, data=x, op0=OPERATORS["multiply"],
                                       operand0=-1.0)
            else:
                table["activation"](dst=out, op=op, data=x)
            return out
        return call

    out: dict[str, NlFunction] = {}
    for name, op in OPERATORS.items():
        if name == "copy":
            call = copy
        elif name in VALUES_ONLY:
            continue  # operator values only: no nl function of that signature
        elif op.arity == 1 and "activation" not in table and name not in (
                "reciprocal", "negative"):
            continue  # computed by nisa.activation: without it, nl.X is the operator value
        else:
            call = binary(op) if op.arity == 2 else unary(op)
        call.__name__ = name
        out[name] = NlFunction(op, call)
    return out
