"""The register instructions: `register_alloc` and `register_load` (SPEC section 4)."""

from __future__ import annotations

from ..errors import TargetError
from ..tensor import targets
from ..tensor.registers import VirtualRegister
from ..tensor.view import Tensor
from . import execute as ex
from . import trace
from .operands import (
    arg_error,
    instruction_label,
    int_arg,
    resolve_operands,
    tensor_arg,
)

# -- registers --------------------------------------------------------------------------------

def register_alloc(value: int | None = None, name: str | None = None) -> VirtualRegister:
    """A virtual register, optionally holding an initial value.

    >>> r = apdsl.register_alloc(5)
    >>> r.value
    5
    >>> t = apdsl.ndarray((16, 32), "float32", "sbuf")
    >>> t.ap([[32, 16], [1, r]]).shape[0]                # a count decided at run time
    16
    """
    if value is not None:
        value = int_arg(value, "register_alloc", "value")
    return VirtualRegister(value, name=name or "")


def register_load(reg: VirtualRegister, t: Tensor, name: str | None = None) -> None:
    """Load the integer in the one-element ([1] or [1, 1]) tensor `t` (SBUF or HBM, at most
    32-bit) into register `reg`.

    >>> t = apdsl.ndarray((1, 1), "int32", "sbuf")
    >>> apdsl.memset(t, 7)
    >>> r = apdsl.register_alloc()
    >>> apdsl.register_load(r, t)
    >>> r.value
    7
    """
    label = instruction_label("register_load", name)
    if not isinstance(reg, VirtualRegister):
        raise arg_error(label, f"the first argument must be a register, got {reg!r}",
                         help="make one with register_alloc()")
    t = tensor_arg(t, label, "src")
    if t.buffer != "sbuf" and t.buffer not in targets.NKI_HBM:
        raise TargetError(f"{label}: src {t.name} is in {t.buffer}; a register loads from SBUF "
                          "or HBM", code="APK344",
                          help="tensor_copy the value into an SBUF tile first"
                          if t.buffer == "psum" else "copy the value into SBUF or HBM first",
                          buffer=t.buffer)
    if tuple(t.shape) not in ((1,), (1, 1)) or t.dtype.kind not in "iu" or t.dtype.bits > 32:
        raise TargetError(f"{label}: a register loads from a [1] or [1, 1] integer tensor of "
                          f"at most 32 bits, not {t.dtype}{list(t.shape)}", code="APK319",
                          help="slice one element: t[0:1, 0:1], of an int32 tile",
                          shape=tuple(t.shape), dtype=str(t.dtype))
    accs = resolve_operands(label, ex.TI_GROUP, ("src", t))
    trace.record("register_load", name, {"src": t})
    if accs is not None:
        reg.value = int(ex.read(accs[0], label, "src").reshape(-1)[0])
    else:  # check mode reads no memory: the register's value is now unknown
        reg.value = None
