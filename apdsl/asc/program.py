"""A pyasc file as the command line runs it (`apdsl run|check|lower|profile kernel.py`): the
NKI frontend's `PyProgram` with pyasc's kernels (`@asc.jit`), launch (`--grid N`: N AI cores,
as `kernel[N, stream]`) and `asc` installed.  An int parameter takes a NumPy scalar file (`-i n=n.npy`, a 0-d array)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..nki.program import PyProgram
from .kernel import JitKernel, call, check_cores, compiled_as


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

    def select_kernel(self, name: str | None) -> str | None:
        """The kernel to run: `name`, else the file's only entry kernel (an `@asc.jit`
        function no other `@asc.jit` function of the file calls: pyasc tutorials split a
        kernel into jit helpers, copy_in, compute and copy_out)."""
        from ..semantics.program import pick_kernel
        kernels = self._kernels()
        if name is not None:
            return pick_kernel(self.file, list(kernels), name, self.KIND)
        return pick_kernel(self.file, self._entries(), None, self.KIND)

    def _entries(self) -> list[str]:
        kernels = self._kernels()
        called = {n for k in kernels.values() for n in _names(k.fn.__code__)}
        return [k for k in kernels if k not in called] or list(kernels)

    def kernels(self) -> list[Any]:
        """The file's entry kernels (what `check` counts)."""
        kernels = self._kernels()
        return [kernels[k] for k in self._entries()]

    def is_ascend(self, kernel: str | None = None) -> bool:
        return True  # `--grid N` is N AI cores

    def _invoke(self, fn: Any, args: tuple, grid: tuple[int, ...], *, dry: bool = False,
                raw: bool = False) -> Any:
        cores = check_cores(grid[0]) if grid else 1
        params = list(inspect.signature(fn).parameters.values())
        given = tuple(_scalar(a, p) for a, p in zip(args, params))
        options = next((k.options for k in self._kernels().values() if k.fn is fn), {})
        with compiled_as(fn, options):
            return call(fn, given, {}, dry=dry, raw=raw, cores=cores)


def _names(code: Any) -> set[str]:
    """The global names a function's code (and the code nested in it) uses."""
    out = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _names(c)
    return out


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
