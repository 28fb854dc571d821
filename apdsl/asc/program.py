"""A pyasc file as the command line runs it (`apdsl run|check|lower|profile kernel.py`): the
NKI frontend's `PyProgram` with pyasc's kernels (`@asc.jit`), launch (one core) and `asc`
installed.  An int parameter takes a NumPy scalar file (`-i n=n.npy`, a 0-d array)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..nki.program import PyProgram
from . import errors
from .kernel import JitKernel, call


class AscProgram(PyProgram):
    KERNEL = JitKernel
    KIND = "@asc.jit kernel"

    def _load(self, path: str) -> Any:
        from ..nki.program import import_file
        from .install import install
        install()
        return import_file(path, self.source)

    def buffers(self) -> set[str]:
        return {"ub"}  # a pyasc file: Ascend targets apply

    def _invoke(self, fn: Any, args: tuple, grid: tuple[int, ...], *, dry: bool = False,
                raw: bool = False) -> Any:
        if grid and grid[0] != 1:
            raise errors.cores(grid[0])
        params = list(inspect.signature(fn).parameters.values())
        given = tuple(_scalar(a, p) for a, p in zip(args, params))
        return call(fn, given, {}, dry=dry, raw=raw)


def _scalar(value: Any, param: inspect.Parameter) -> Any:
    """A 0-d array for a parameter annotated int or float is that number."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and param.annotation in (
            int, float, "int", "float"):
        kind = int if param.annotation in (int, "int") else float
        return kind(value[()])
    return value


def is_pyasc(source: str) -> bool:
    """Does this Python file write pyasc kernels (`import asc`, `apdsl.asc`)?"""
    import re
    return re.search(r"^\s*(import\s+asc\b|from\s+asc\b|import\s+apdsl\.asc\b|"
                     r"from\s+apdsl\.asc\b|from\s+apdsl\s+import\s+asc\b)", source,
                     re.MULTILINE) is not None
