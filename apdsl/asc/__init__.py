"""`apdsl.asc`: the pyasc frontend (SPEC section 18).  pyasc kernels (`import asc`,
`@asc.jit`) run unchanged on apdsl's Ascend model, with its checks, diagnostics at the user's
line and the synchronisation checker:

    import apdsl.asc as asc

    @asc.jit
    def vadd(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int): ...

    vadd[1, stream](x, y, z, n)     # NumPy arrays: z gets what the kernel wrote

`install()` makes a plain `import asc` resolve here when the real pyasc is absent, and
`pytest -p apdsl.asc` does so for a test session.
"""

from __future__ import annotations

from typing import Any

from . import adv, language, lib, runtime
from .auto import LocalTensorAuto
from .dtypes import TYPES as _TYPES
from .dtypes import DataType
from .install import install, uninstall
from .kernel import JitKernel, jit
from .memory import GlobalAddress, GlobalTensor, LocalTensor
from .names import ConstExpr, ceildiv, get_block_idx, get_block_num, property, range, static_range
from .plugin import pytest_configure, pytest_load_initial_conftests
from .queues import TBuf, TPipe, TQue, TQueBind  # noqa: F401

# `pytest -p apdsl.asc` also loads the surface that reports failed tests as diagnostics
pytest_plugins = ["apdsl.surfaces.pytest_report"]

globals().update(_TYPES)  # asc.float16, asc.half, ...

__all__ = ["adv", "ceildiv", "property", "ConstExpr", "DataType", "GlobalAddress", "GlobalTensor", "JitKernel",
           "LocalTensor", "LocalTensorAuto", "TBuf", "TPipe", "TQue", "TQueBind", "get_block_idx", "get_block_num", "install", "jit", "language",
           "lib", "pytest_configure", "runtime", "pytest_load_initial_conftests", "range",
           "static_range", "uninstall"]


def __getattr__(name: str) -> Any:
    from .names import lookup
    return lookup(name)
