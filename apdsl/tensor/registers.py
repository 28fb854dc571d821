"""Virtual registers: runtime integers usable as `.ap` strides, counts and offsets.

`resolve(x, role, label)` is the one place a stride, count, offset or index that may come from
a register becomes an int: a plain int, a `VirtualRegister`, or a `RegisterSum` (an offset that
is a register plus a static part, possibly nested).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError

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
