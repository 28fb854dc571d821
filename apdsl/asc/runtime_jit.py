"""`asc.runtime.jit`: pyasc's `JITFunction` (apdsl's `JitKernel`) and its argument stand-ins
`MockTensor`/`MockValue` (`mock`)."""

from __future__ import annotations

from .kernel import JitKernel as JITFunction
from .mock import MockTensor, MockValue

__all__ = ["JITFunction", "MockTensor", "MockValue"]
