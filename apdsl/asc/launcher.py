"""`asc.runtime.launcher`: the step of a pyasc launch that puts the kernel's results where the
caller sees them.  pyasc compiles an `@asc.jit` kernel, then `Launcher(options).run(kernel,
name, args)` runs the binary on the NPU, whose writes reach the caller's tensors.  apdsl runs
the kernel on its model first (its compile step: every check and diagnostic happens there,
on copies of the arrays in its global memory), then calls `Launcher.run` once, which copies
what the kernel wrote back into the caller's arrays.  A test that patches `Launcher.run` out
(pyasc's unit tests do, to check code generation without a device) still has the kernel
checked, and its arrays stay as they were, as with pyasc."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..records import record


@record
class LaunchOptions:
    """`LaunchOptions(core_num, stream)`: the `kernel[core_num, stream]` of a launch."""

    core_num: int = 0
    stream: Any = None


@record
class CompiledKernel:
    """What apdsl's compile step hands the launcher: each caller array with the global
    memory the kernel ran on (`results`: pairs of the caller's array and its GM copy)."""

    results: tuple[tuple[np.ndarray, np.ndarray], ...]


class Launcher:
    """`Launcher(options)`: `run(kernel, function_name, user_args)` makes the launch's writes
    visible to the caller (see the module docstring)."""

    def __init__(self, options: LaunchOptions) -> None:
        self.options = options

    def run(self, kernel: CompiledKernel, function_name: str, user_args: tuple[Any, ...]) -> None:
        for array, written in kernel.results:
            array[...] = written.reshape(array.shape)
