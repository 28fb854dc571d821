"""How pyasc compiled the launch under way.  Who runs a kernel's Matmul (pyasc's `asc.adv.Matmul`): in a mixed kernel the vector cores
call the API and the cube core serves them -- AscendC's REGIST_MATMUL_OBJ ends the kernel on
the cube core once it has served, which `ServedByCube` signals to the launch -- and with
`@asc.jit(matmul_cube_only=True)` the cube core calls it itself (`CUBE_ONLY`, set by the
launch under way on each core's thread); and whether its insert_sync pass synchronises the
kernel (`AUTO`)."""

from __future__ import annotations

from contextvars import ContextVar

CUBE_ONLY: ContextVar[bool] = ContextVar("apdsl_asc_cube_only", default=False)
# the launch under way is synchronised by pyasc's compiler (`insert_sync`: `apdsl.asc.auto`)
AUTO: ContextVar[bool] = ContextVar("apdsl_asc_insert_sync", default=False)


def auto_sync() -> bool:
    """Is the kernel under way one pyasc's insert_sync pass synchronises?"""
    return AUTO.get()


def cube_only() -> bool:
    return CUBE_ONLY.get()


class ServedByCube(BaseException):  # noqa: N818 - a core's end, not an error
    """Raised by `register_matmul` on the cube core of a mixed kernel; the launch
    (`kernel._run_cores`) ends that core's run there."""
