"""`apdsl show FILE.py NAME`: the view a Python kernel file binds to NAME, for the picture.

NAME is a tensor the file's top level defines, or KERNEL.NAME: the kernel runs to the end on
its `-i` inputs and the value its own frame holds under NAME when it returns (the last view
bound to NAME, even if its storage was freed since) is drawn."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from ..errors import ApdslNameError, ApdslTypeError
from ..tensor.view import Tensor
from .program import PyProgram

_UNBOUND = object()


def bound_view(program: PyProgram, kernel: str | None, name: str,
               inputs: dict[str, Any], grid: tuple[int, ...] = ()) -> Tensor:
    """The tensor view NAME (top level) or KERNEL.NAME (inside the kernel) is bound to."""
    if kernel is None:
        value = vars(program.module).get(name, _UNBOUND)
        where = f"the top level of {program.file}"
    else:
        value = _last_binding(program, kernel, name, inputs, grid)
        where = f"kernel {kernel}"
    if value is _UNBOUND:
        raise ApdslNameError(f"'{name}' is never bound in {where}", code="APK101", name=name,
                             help="name a tensor or view the kernel binds to a variable")
    if not isinstance(value, Tensor):
        raise ApdslTypeError(f"'{name}' in {where} is {type(value).__name__}, not a tensor "
                             "view", code="APK110", name=name,
                             help="name a tensor or view the kernel binds to a variable")
    return value


def _last_binding(program: PyProgram, kernel: str, name: str, inputs: dict[str, Any],
                  grid: tuple[int, ...] = ()) -> Any:
    """Run the kernel and read NAME in its frame as it returns (a profile hook sees the
    return of that one code object)."""
    code = program.kernel_function(kernel).__code__
    seen: list[Any] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is code:
            seen.append(frame.f_locals.get(name, _UNBOUND))

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        program.run(kernel, inputs, grid=grid)
    finally:
        sys.setprofile(previous)
    return seen[-1] if seen else _UNBOUND
