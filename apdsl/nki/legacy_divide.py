"""`nl.divide(x, y)` (and `/`, `/=` on tiles) in kernels written for the legacy NKI API.

The legacy reference (the Neuron SDK releases before the `nki` package) lists `nl.divide` among
its math functions: "Divide the inputs, element-wise ... a tile that has x / y".  The current
one lists it as not supported, and no instruction takes divide as its operator (SPEC 11:
`op=nl.divide` stays refused, APK183).  So the function runs only where the legacy API is
used: in a source file that imports `neuronxcc` (the legacy API's only import path:
`locate.legacy_caller`).

What it issues is what the legacy tutorials write for a division on the device: the divisor's
reciprocal, then a multiply (the legacy attention example's `nki.isa` version of its
`nl.divide(exp_row, sum_row)` is `nisa.reciprocal` then `nisa.tensor_scalar(op0=multiply)`;
the RMSNorm tutorial's "division of RMS(a)" is `nl.multiply(a_tile, rms_reciprocal)`).  Here:
`nl.reciprocal(y)` into a float32 tile (the `reciprocal` instruction: float32 math), then
`nl.multiply(x, inv)` with its shape rules (tensor_tensor, tensor_scalar for a [P, 1] column,
broadcast across partitions); by a number, a multiply by its float32 reciprocal; `1.0 / y` is
the reciprocal alone.  Integer tiles are refused: the legacy reference does not say how an
integer quotient is rounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ApdslTypeError
from ..semantics.nl_operators import promote
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor


def is_number(v: Any) -> bool:
    """A Python or NumPy number (not a bool)."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _float_reciprocal(v: Any) -> float:
    """1 / v in float32 (inf for 0, as the reciprocal instruction's float32 math gives)."""
    with np.errstate(divide="ignore"):
        return float(np.float32(1.0) / np.float32(v))


def _check(x: Any, y: Any) -> None:
    """Each a tile of floats or a number, at least one a tile (APK152; integer tiles APK183)."""
    for role, v in (("x", x), ("y", y)):
        if not isinstance(v, Tensor) and not is_number(v):
            raise ApdslTypeError(f"nl.divide: {role} must be a tile or a number, not "
                                 f"{type(v).__name__}", code="APK152", param=role)
        if isinstance(v, Tensor) and not v.dtype.is_float:
            raise ApdslTypeError(
                f"nl.divide: {role} {v.name} is {v.dtype.name}: the legacy reference does "
                "not say how an integer quotient is rounded, and apdsl divides as the device "
                "does, by a float32 reciprocal and a multiply", code="APK183", param=role,
                help="copy the tile to float32 first: nl.copy(t, dtype=nl.float32)")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise ApdslTypeError("nl.divide: at least one of x and y must be a tile", code="APK152",
                             help="compute with plain Python for two numbers")


def divide(builtins: dict[str, Any], x: Any, y: Any, dtype: Any = None) -> Tensor:
    """The legacy `nl.divide(x, y, dtype=None)` on tiles (x, y made: no index grids or
    pending results): the module docstring's instructions, in the result dtype the legacy
    reference gives (the inputs', or the wider of two)."""
    _check(x, y)
    if not isinstance(y, Tensor):
        return builtins["nl.multiply"](x, _float_reciprocal(y), dtype=dtype)
    if dtype is not None:
        result = to_dtype(dtype)
    elif isinstance(x, Tensor):
        result = promote(x.dtype, y.dtype)
    else:
        result = y.dtype
    if not isinstance(x, Tensor) and float(x) == 1.0:
        return builtins["nl.reciprocal"](y, dtype=result)
    inv = builtins["nl.reciprocal"](y, dtype="float32")
    return builtins["nl.multiply"](x, inv, dtype=result)


def multiplier(builtins: dict[str, Any], value: Any) -> Any:
    """What `t /= value` multiplies t by: value's float32 reciprocal (a float32 tile by the
    reciprocal instruction, or a number)."""
    if isinstance(value, Tensor):
        _check(value, value)
        return builtins["nl.reciprocal"](value, dtype="float32")
    return _float_reciprocal(value)
