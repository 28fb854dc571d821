"""The pyasc frontend's own diagnostics (APK660-APK669), each raised complete at the user's
line (the kernel call's `locate` points them at the innermost user frame)."""

from __future__ import annotations

from ..errors import ApdslNameError, ApdslTypeError


class AscNameError(ApdslNameError, AttributeError):
    """A pyasc name apdsl does not model yet: an apdsl diagnostic naming it, and still an
    AttributeError so `hasattr(asc, ...)` keeps working."""


class AscModuleError(ApdslNameError, ModuleNotFoundError):
    """A pyasc module apdsl does not provide (`asc.codegen`, `asc.language.core.dtype`): the
    APK660 diagnostic naming it, and still a ModuleNotFoundError, so `try: import ...
    except ImportError:` keeps working and its `name` is the module's."""

    def __init__(self, message: str, *, module: str, **fields: object) -> None:
        super().__init__(message, module=module, **fields)
        ImportError.__init__(self, message, name=module)  # sets `name` (not a field)


def missing(name: str, why: str = "") -> AscNameError:
    """`asc.NAME` exists in pyasc but not (yet) in apdsl: APK660 naming it."""
    return AscNameError(
        f"apdsl.asc does not model asc.{name} yet" + (f" ({why})" if why else ""),
        code="APK660", name=name,
        notes=["apdsl.asc runs the pyasc names that SPEC 17 covers: data_copy, data_copy_pad, "
               "the vector instructions, set_flag/wait_flag/pipe_barrier, GlobalTensor, "
               "LocalTensor"],
        help="rewrite this part with the names apdsl has, or run the kernel on pyasc itself")


def cores(n: object, most: int) -> ApdslTypeError:
    """`kernel[n, stream]` with n not a number of AI cores."""
    shown = n if isinstance(n, int) else type(n).__name__
    return ApdslTypeError(
        f"kernel[{shown!r}, stream]: a pyasc kernel launches on 1 to {most} AI cores",
        code="APK661", cores=str(n),
        notes=["pyasc: kernel[numBlocks, stream](...), AscendC's kernel<<<numBlocks, ...>>>"],
        help="launch with kernel[n, stream](...), n an int: the kernel runs once per core, "
             "get_block_idx() telling each which it is")


def bad_argument(param: str, value: object) -> ApdslTypeError:
    if type(value).__name__ == "MockTensor":
        return ApdslTypeError(
            f"parameter {param} is a MockTensor: apdsl runs the kernel, and a MockTensor has "
            "no memory for it to read or write", code="APK662", input=param,
            notes=["pyasc's MockTensor stands for a global address when code is generated "
                   "without a device"],
            help="pass a NumPy array (or a CPU torch tensor) of the kernel's data")
    return ApdslTypeError(
        f"parameter {param} is an asc.GlobalAddress but got {type(value).__name__}; a "
        "GlobalAddress takes a NumPy array (or a CPU torch tensor)", code="APK662",
        input=param, help="pass a NumPy array: its elements are the global memory the kernel "
        "reads and writes in place")
