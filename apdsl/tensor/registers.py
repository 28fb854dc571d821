"""Virtual registers: runtime integers usable as `.ap` strides, counts and offsets.

`resolve(x, role, label)` is the one place a stride, count, offset or index that may come from
a register becomes an int: a plain int, a `VirtualRegister`, or a `RegisterSum` (an offset that
is a register plus a static part, possibly nested).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, ApdslTypeError

_ids = itertools.count()


class VirtualRegister:
    """A scalar register.  Its value is set by `register_alloc(value)` or `register_load` and
    read when an instruction that uses it executes.

    >>> r = apdsl.register_alloc(3)
    >>> isinstance(r, apdsl.VirtualRegister), r.value
    (True, 3)
    """

    __slots__ = ("id", "name", "value")

    def __init__(self, value: int | None = None, name: str = "") -> None:
        self.id = next(_ids)
        self.name = name or f"r{self.id}"
        self.value = None if value is None else int(value)

    def resolve(self, role: str = "register", label: str = "") -> int:
        """The value, read as `role` by instruction `label` (APK410 before any was loaded)."""
        if self.value is None:
            where = f"{label}: " if label else ""
            raise ApdslRuntimeError(
                f"{where}register {self.name} is read as {role} before any value was loaded",
                code="APK410", help="give register_alloc an initial value or call register_load "
                "before the instruction that uses it", register=self.name)
        return self.value

    def __repr__(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"

    def _as_python(self, *_: Any) -> Any:
        # NKI's tracer raises TypeError here too: the value is known only when the kernel
        # runs, so Python arithmetic, `if`/`while` and `int()` on it have nothing to act on
        # (and a silently truthy register would turn `while reg:` into an endless loop).
        raise ApdslTypeError(
            f"register {self.name} is used as a Python value; its value exists only on the "
            "device", code="APK413",
            notes=["the NKI migration guide (NKI 0.6): the loop variable is read-only; do not "
                   "write to it or perform Python arithmetic on it"],
            help="read it as a runtime offset with .ap(..., scalar_offset=reg); loop with "
            "nl.fori_loop or nl.while_loop, and compute on the device (nisa.scalar_load gives "
            "an NkiScalar, which has +, - and *)", register=self.name)

    __bool__ = __index__ = __int__ = __float__ = __neg__ = __pos__ = __abs__ = _as_python
    __lt__ = __le__ = __gt__ = __ge__ = _as_python
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _as_python
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _as_python
    __mod__ = __rmod__ = __pow__ = __rpow__ = _as_python
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _as_python
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _as_python


class RegisterSum:
    """A base offset that is a register plus a static part; resolved at execution."""

    __slots__ = ("static", "reg")

    def __init__(self, static: Any, reg: Any) -> None:
        self.static, self.reg = static, reg

    def resolve(self, role: str = "offset", label: str = "") -> int:
        return resolve(self.static, role, label) + resolve(self.reg, role, label)

    def __add__(self, other: Any) -> RegisterSum:
        return RegisterSum(self.static + other, self.reg) \
            if isinstance(other, (int, np.integer)) else NotImplemented

    __radd__ = __add__

    @property
    def name(self) -> str:
        return f"{self.static}+{getattr(self.reg, 'name', self.reg)}"

    def __repr__(self) -> str:
        return self.name


def resolve(x: object, role: str, label: str = "") -> int:
    """`x` as an int now: registers read (APK410 names `label` and `role` when one is empty)."""
    if isinstance(x, (VirtualRegister, RegisterSum)):
        return x.resolve(role, label)
    return int(x)  # type: ignore[call-overload]
