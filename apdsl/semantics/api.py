"""The language from Python: `apdsl.run(...)` and `apdsl.check(...)`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ApdslError
from .program import Program


def program_of(source_or_path: str | os.PathLike, base_dir: str | os.PathLike | None = None
             ) -> Program:
    if isinstance(source_or_path, os.PathLike) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith(".apk")):
        program = Program.from_path(str(Path(source_or_path)))
        if base_dir is not None:
            program.base_dir = str(base_dir)
        return program
    return Program(str(source_or_path), "<string>", None if base_dir is None else str(base_dir))


def run(source_or_path: str | os.PathLike, kernel: str | None = None,
        inputs: dict[str, Any] | None = None, *, base_dir: str | os.PathLike | None = None
        ) -> np.ndarray | None:
    """Run a program (a `.apk` path or source text): its top level, then `kernel` (or its only
    kernel).  Returns the kernel's result as a NumPy array of its logical contents, or None
    when there is no kernel.  Errors raise `ApdslError` subclasses.  `load` and `save` stay
    inside `base_dir` (default: the file's folder, or for source text the working directory).

    >>> source = '''
    ... kernel copy(A: f32[2, 3] @ hbm) -> f32[2, 3] @ hbm:
    ...     out = ndarray((2, 3), f32, hbm)
    ...     dma_copy(out, A)
    ...     return out
    ... '''
    >>> apdsl.run(source, inputs={"A": np.ones((2, 3), np.float32)})[1]
    array([1., 1., 1.], dtype=float32)
    """
    result = program_of(source_or_path, base_dir).run(kernel, inputs)
    value = result.value
    if value is None:
        return None
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def check(source_or_path: str | os.PathLike) -> list[ApdslError]:
    """Every independent error of a program, without moving data (empty when it is correct).

    >>> errors = apdsl.check("x: f32[4, 8] @ hbm\\ny = x.slice(1, 0, 9)\\n")
    >>> [e.code for e in errors]
    ['APK203']
    """
    try:
        return program_of(source_or_path).check()
    except ApdslError as e:
        return [e]
