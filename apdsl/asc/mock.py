"""`asc.runtime.jit`'s argument stand-ins (`runtime_jit` is that module).  pyasc's unit tests
pass `MockTensor(dtype)` where a kernel takes a global address, to generate code without
memory; apdsl runs the kernel, so a MockTensor argument is APK662 at the launch (it
has no elements for the kernel to read or write)."""

from __future__ import annotations

from typing import Any


class MockTensor:
    """`MockTensor(dtype)`: a global address with a dtype and no memory."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"MockTensor({getattr(self.dtype, 'name', self.dtype)})"


class MockValue:
    """`MockValue(dtype)`: a scalar argument with a dtype and no value."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"MockValue({getattr(self.dtype, 'name', self.dtype)})"



