"""The pyasc frontend's own diagnostics (APK660-APK669), each raised complete at the user's
line (the kernel call's `locate` points them at the innermost user frame)."""

from __future__ import annotations

from ..errors import ApdslNameError, ApdslRuntimeError, ApdslTypeError


class AscNameError(ApdslNameError, AttributeError):
    """A pyasc name apdsl does not model yet: an apdsl diagnostic naming it, and still an
    AttributeError so `hasattr(asc, ...)` keeps working."""


def missing(name: str, why: str = "") -> AscNameError:
    """`asc.NAME` exists in pyasc but not (yet) in apdsl: APK660 naming it."""
    return AscNameError(
        f"apdsl.asc does not model asc.{name} yet" + (f" ({why})" if why else ""),
        code="APK660", name=name,
        notes=["apdsl.asc runs the pyasc names that SPEC 17 covers: data_copy, data_copy_pad, "
               "the vector instructions, set_flag/wait_flag/pipe_barrier, GlobalTensor, "
               "LocalTensor"],
        help="rewrite this part with the names apdsl has, or run the kernel on pyasc itself")


def cores(n: int) -> ApdslRuntimeError:
    """A launch on more than one core: the cores model is not in apdsl yet."""
    return ApdslRuntimeError(
        f"kernel[{n}, stream]: a launch on {n} cores is not available yet; apdsl.asc runs "
        "a pyasc kernel on one AI core (the multi-core model, its block index and cross-core "
        "flags, is not in apdsl yet)", code="APK661", cores=n,
        help="launch on one core: kernel[1, stream](...) (get_block_idx() is 0, "
             "get_block_num() is 1)")


def bad_argument(param: str, value: object) -> ApdslTypeError:
    return ApdslTypeError(
        f"parameter {param} is an asc.GlobalAddress but got {type(value).__name__}; a "
        "GlobalAddress takes a NumPy array (or a CPU torch tensor)", code="APK662",
        input=param, help="pass a NumPy array: its elements are the global memory the kernel "
        "reads and writes in place")
