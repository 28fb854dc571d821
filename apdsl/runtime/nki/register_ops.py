"""The register instructions: `register_alloc`, `register_load`, `register_move` and
`register_store` (SPEC sections 4 and 11; NKI isa docs: registers are 32-bit), and NKI 2.33's
`scalar_load`, a register load that gives an `NkiScalar`."""

from __future__ import annotations

import numpy as np

from ...errors import TargetError
from ...tensor import targets
from ...tensor.machine import current
from ...tensor.registers import VirtualRegister
from ...tensor.scalars import WIDTHS, NkiScalar
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.operands import arg_error, instruction_label, int_arg, resolve_operands, tensor_arg

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
    t = _load_source(t, label, "a register")
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


def register_move(dst: VirtualRegister, src: int | VirtualRegister) -> None:
    """Set register `dst` to an int or to another register's value (touches no memory).

    >>> n = apdsl.register_alloc()
    >>> apdsl.register_move(n, 10)
    >>> m = apdsl.register_alloc()
    >>> apdsl.register_move(m, n)
    >>> m.value
    10
    """
    label = "register_move"
    if not isinstance(dst, VirtualRegister):
        raise arg_error(label, f"dst must be a register, got {dst!r}",
                         help="make one with register_alloc()")
    if isinstance(src, VirtualRegister):
        # check mode may not know src (a register_load's value): then dst is unknown too
        value = src.value if current().check else src.resolve("src", label)
    else:
        value = _register_int(int_arg(src, label, "src"), label)
    trace.record("register_move", None, {})
    dst.value = value


def register_store(dst: Tensor, src: VirtualRegister) -> None:
    """Store register `src` into the one-element ([1] or [1, 1]) integer tensor `dst` (SBUF or
    HBM, at most 32-bit; the value is cast with the saturating rule).

    >>> r = apdsl.register_alloc(42)
    >>> t = apdsl.ndarray((1, 1), "int32", "sbuf")
    >>> apdsl.register_store(t, r)
    >>> t.numpy()
    array([[42]], dtype=int32)
    """
    label = "register_store"
    t = tensor_arg(dst, label, "dst")
    if not isinstance(src, VirtualRegister):
        raise arg_error(label, f"src must be a register, got {src!r}",
                         help="make one with register_alloc()")
    if t.buffer != "sbuf" and t.buffer not in targets.NKI_HBM:
        raise TargetError(f"{label}: dst {t.name} is in {t.buffer}; a register stores to SBUF "
                          "or HBM", code="APK492",
                          help="register_store into an SBUF tile, then tensor_copy it into PSUM"
                          if t.buffer == "psum" else "store into an SBUF or HBM tensor",
                          buffer=t.buffer)
    if tuple(t.shape) not in ((1,), (1, 1)) or t.dtype.kind not in "iu" or t.dtype.bits > 32:
        raise TargetError(f"{label}: a register stores into a [1] or [1, 1] integer tensor of "
                          f"at most 32 bits, not {t.dtype}{list(t.shape)}", code="APK493",
                          help="slice one element, t[0:1, 0:1], of an int32 tile",
                          shape=tuple(t.shape), dtype=str(t.dtype))
    accs = resolve_operands(label, ex.TI_GROUP, ("dst", t))
    value = None if accs is None else src.resolve("src", label)
    trace.record("register_store", None, {"dst": t})
    if accs is None or value is None:
        return
    value = min(max(value, -2**63), 2**63 - 1)  # the cast saturates anyway; keep it int64
    ex.prepare_write(accs[0], label, "dst")
    ex.store(accs[0], np.asarray(value, np.int64).reshape(accs[0].shape))


def _load_source(t: Tensor, label: str, into: str) -> Tensor:
    """The source tensor of a register or scalar load: in SBUF or HBM (APK344)."""
    t = tensor_arg(t, label, "src")
    if t.buffer != "sbuf" and t.buffer not in targets.NKI_HBM:
        raise TargetError(f"{label}: src {t.name} is in {t.buffer}; {into} loads from SBUF "
                          "or HBM", code="APK344",
                          help="tensor_copy the value into an SBUF tile first"
                          if t.buffer == "psum" else "copy the value into SBUF or HBM first",
                          buffer=t.buffer)
    return t


def _register_int(value: int, label: str) -> int:
    """A register holds 32 bits (NKI: 64 x 32-bit registers per engine sequencer): an
    immediate must fit int32 or uint32 (APK494)."""
    if not -2**31 <= value < 2**32:
        raise TargetError(f"{label}: {value} does not fit a 32-bit register", code="APK494",
                          help="registers hold 32-bit values: -2**31 .. 2**32 - 1",
                          value=value)
    return value


def scalar_load(src: Tensor) -> NkiScalar:
    """`nisa.scalar_load(src)` (NKI 2.33): the integer in the 1x1 `int32` or `int64` tensor
    `src` (SBUF or HBM) as an `NkiScalar` of that dtype, not truncated.  On the device this is
    a register load, and `lower`/`profile` show it as one (`register_load`).

    >>> t = apdsl.ndarray((1, 1), "int32", "sbuf")
    >>> apdsl.memset(t, -7)
    >>> scalar_load(t)
    NkiScalar(-7, int32)
    """
    label = "scalar_load"
    t = _load_source(src, label, "a scalar")
    if tuple(t.shape) != (1, 1) or t.dtype.name not in WIDTHS:
        raise TargetError(f"{label}: a scalar loads from a 1x1 int32 or int64 tensor, not "
                          f"{t.dtype}{list(t.shape)}", code="APK319",
                          notes=["the NKI reference (scalar_load): unsigned dtypes are not "
                                 "accepted; use the signed dtype of the same width"],
                          help="slice one element, t[0:1, 0:1], of an int32 or int64 tile",
                          shape=tuple(t.shape), dtype=str(t.dtype))
    accs = resolve_operands(label, ex.TI_GROUP, ("src", t))
    trace.record("register_load", label, {"src": t})
    if accs is None:  # check mode reads no memory: the value is unknown
        return NkiScalar(None, t.dtype.name)
    return NkiScalar(int(ex.read(accs[0], label, "src").reshape(-1)[0]), t.dtype.name)
