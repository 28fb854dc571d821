"""`nisa.NkiScalar`: one integer computed on the device (NKI 2.33), made by `nisa.scalar_load`
from a 1x1 `int32` or `int64` tensor.

What the reference fixes, and apdsl models: the width is the loaded tensor's and never
changes, so 32-bit arithmetic wraps (100000 * 100000 is 1410065408); `+`, `-` (binary and
unary) and `*` exist at both widths, with a Python int or a scalar of the same dtype as the
other operand; the comparisons `< <= > >= == !=` exist at 32 bits only, and their result is
usable only as the condition of `nl.if_else`.  A scalar of 32 bits bounds `nl.fori_loop` and
conditions `nl.if_else`.  apdsl executes a kernel in program order, so the value a scalar holds
here is the one the device computes at that point; `apdsl check` reads no memory, so there a
loaded scalar (and what is computed from it) has no value.

Not modelled (refused where used, APK178): any other operator (the reference page apdsl
follows lists no others), a scalar used as a Python value (`if s:`, `range(s)`, an index), and
a scalar as `scalar_offset` of an access pattern (the reference allows it; apdsl's access
patterns take registers and (1, 1) tensors there)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import ApdslTypeError

WIDTHS = {"int32": 32, "int64": 64}
COMPARISONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def scalar_error(message: str, **kw: Any) -> ApdslTypeError:
    """A misuse of an NkiScalar (APK178)."""
    return ApdslTypeError(message, code="APK178", **kw)


def _wrap(value: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


class NkiScalar:
    """An integer on the device: `value` (None where `apdsl check` cannot know it), its
    `dtype` ("int32" or "int64"), and whether it is a comparison's result.

    >>> s = NkiScalar(100000, "int32")
    >>> (s * 100000).value
    1410065408
    >>> (s < 5).comparison, (s < 5).value
    (True, 0)
    """

    __slots__ = ("value", "dtype", "comparison")
    __hash__ = object.__hash__  # (== is traced, as in NKI; identity stays the hash)

    def __init__(self, value: int | None, dtype: str = "int32",
                 comparison: bool = False) -> None:
        if dtype not in WIDTHS:
            raise scalar_error(f"NkiScalar: dtype {dtype} is not int32 or int64")
        self.dtype = dtype
        self.comparison = comparison
        self.value = None if value is None else _wrap(int(value), WIDTHS[dtype])

    def __repr__(self) -> str:
        shown = "?" if self.value is None else self.value
        return f"NkiScalar({shown}, {self.dtype})"

    def usable(self, role: str) -> int | None:
        """The value, where a comparison's result may not go (anywhere but `nl.if_else`)."""
        if self.comparison:
            raise scalar_error(
                f"a scalar comparison's result is used as {role}",
                notes=["the NKI reference (NkiScalar): comparisons are traced, but their "
                       "result can only be the condition of nl.if_else"])
        return self.value

    def _other(self, other: Any, op: str) -> int | None | type(NotImplemented):
        if isinstance(other, NkiScalar):
            if other.dtype != self.dtype:
                raise scalar_error(
                    f"NkiScalar {op}: operands of {self.dtype} and {other.dtype}",
                    notes=["the NKI reference (NkiScalar): the other operand may be a Python "
                           "int or an NkiScalar so long as the dtypes match"],
                    help="load both from tensors of one dtype")
            return other.usable(f"an operand of {op}")
        if isinstance(other, (int, np.integer)) and not isinstance(other, (bool, np.bool_)):
            return int(other)
        return NotImplemented

    def _arith(self, other: Any, op: str, fn: Callable[[int, int], int]) -> Any:
        rhs = self._other(other, op)
        if rhs is NotImplemented:
            return NotImplemented
        lhs = self.usable(f"an operand of {op}")
        value = None if lhs is None or rhs is None else fn(lhs, rhs)
        return NkiScalar(value, self.dtype)

    def __add__(self, other: Any) -> Any:
        return self._arith(other, "+", lambda a, b: a + b)

    def __radd__(self, other: Any) -> Any:
        return self._arith(other, "+", lambda a, b: b + a)

    def __sub__(self, other: Any) -> Any:
        return self._arith(other, "-", lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Any:
        return self._arith(other, "-", lambda a, b: b - a)

    def __mul__(self, other: Any) -> Any:
        return self._arith(other, "*", lambda a, b: a * b)

    def __rmul__(self, other: Any) -> Any:
        return self._arith(other, "*", lambda a, b: b * a)

    def __neg__(self) -> NkiScalar:
        value = self.usable("an operand of unary -")
        return NkiScalar(None if value is None else -value, self.dtype)

    def _compare(self, other: Any, name: str, fn: Callable[[int, int], bool]) -> Any:
        op = COMPARISONS[name]
        if self.dtype != "int32":
            raise scalar_error(
                f"NkiScalar {op}: a comparison of {self.dtype} scalars",
                notes=["the NKI reference (NkiScalar): at 64 bits only addition, subtraction "
                       "and multiplication exist; comparisons are rejected at compile time"],
                help="compare 32-bit scalars (load from an int32 tensor)")
        rhs = self._other(other, op)
        if rhs is NotImplemented:
            return NotImplemented
        lhs = self.usable(f"an operand of {op}")
        value = None if lhs is None or rhs is None else int(fn(lhs, rhs))
        return NkiScalar(value, self.dtype, comparison=True)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "lt", lambda a, b: a < b)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "le", lambda a, b: a <= b)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, "gt", lambda a, b: a > b)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, "ge", lambda a, b: a >= b)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, "eq", lambda a, b: a == b)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, "ne", lambda a, b: a != b)

    def _as_python(self, *_: Any) -> Any:
        raise scalar_error(
            "an NkiScalar is used as a Python value; its value exists only on the device",
            notes=["the NKI reference (NkiScalar): arithmetic on a scalar is traced, not "
                   "evaluated in Python"],
            help="branch with nl.if_else and loop with nl.fori_loop, which take scalars")

    __bool__ = __index__ = __int__ = __float__ = _as_python


def _unmodelled(op: str) -> Callable[..., Any]:
    def refuse(self: NkiScalar, *_: Any) -> Any:
        raise scalar_error(
            f"NkiScalar {op}: an operator apdsl does not model",
            notes=["the NKI reference (NkiScalar) lists +, - (binary and unary), * and the "
                   "comparisons; apdsl models those only"])
    return refuse


for _name, _op in (("truediv", "/"), ("floordiv", "//"), ("mod", "%"), ("pow", "**"),
                   ("lshift", "<<"), ("rshift", ">>"), ("and", "&"), ("or", "|"),
                   ("xor", "^")):
    setattr(NkiScalar, f"__{_name}__", _unmodelled(_op))
    setattr(NkiScalar, f"__r{_name}__", _unmodelled(_op))
for _name, _op in (("invert", "~"), ("pos", "unary +"), ("abs", "abs")):
    setattr(NkiScalar, f"__{_name}__", _unmodelled(_op))
