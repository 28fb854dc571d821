"""Virtual registers: runtime integers usable as `.ap` strides, counts and offsets."""

from __future__ import annotations

import itertools

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

    def resolve(self, role: str = "register") -> int:
        if self.value is None:
            raise ApdslRuntimeError(
                f"register {self.name} is read as {role} before any value was loaded",
                code="APK410", help="give register_alloc an initial value or call register_load "
                "before the instruction that uses it", register=self.name)
        return self.value

    def __repr__(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"


def resolve(x: object, role: str) -> int:
    return x.resolve(role) if isinstance(x, VirtualRegister) else int(x)  # type: ignore[arg-type]
