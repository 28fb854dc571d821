"""NKI's memory regions and types as values (NKI language and isa reference):
`nl.MemoryRegion` (sbuf, psum, private_hbm, shared_hbm), `nl.DType`, the buffer predicates
`nl.is_hbm`, `nl.is_on_chip`, `nl.is_psum`, `nl.is_sbuf`, and the `nisa.` names
`get_nc_sub_version`, `NkiValidationError`, `VirtualRegister` and `NkiInstruction` (the handle
an instruction call returns: `apdsl.semantics.nki_instruction`).

apdsl names a buffer by a string (`nl.sbuf` is "sbuf", a tensor's `.buffer` too), so the
enum's members are strings as well: `t.buffer == nl.MemoryRegion.sbuf` and
`nl.MemoryRegion.sbuf == nl.sbuf` hold.  The reference makes `nl.hbm` "an alias of
private_hbm"; apdsl keeps the name "hbm" for it, and `MemoryRegion.private_hbm` compares equal
to "hbm" too, and `MemoryRegion("hbm")` is private_hbm.

`NkiValidationError` is "raised when hardware constraints are violated": apdsl's hardware-rule
error, `TargetError` (APK3xx, "a hardware rule of the target is violated"), is that class, so a
kernel's `except nisa.NkiValidationError` catches what apdsl refuses on a hardware rule (a
buffer, partition, engine or size limit); apdsl's errors about Python values (a wrong argument
type, an unknown name) are not hardware constraints and are not caught by it.

`get_nc_sub_version()` is the silicon revision within the target's NeuronCore generation: 0,
"first revision (default)", on every target apdsl models (none describes a second one)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ..errors import ApdslNameError, TargetError
from ..tensor import targets
from ..tensor.dtypes import DType
from ..tensor.registers import VirtualRegister

NL_NAMES = ("MemoryRegion", "DType", "is_hbm", "is_on_chip", "is_psum", "is_sbuf")
ISA_NAMES = ("get_nc_sub_version", "NkiValidationError", "VirtualRegister", "NkiInstruction")


class MemoryRegion(StrEnum):
    """Memory region constants for NKI tensors (each is apdsl's buffer name)."""

    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"

    @classmethod
    def _missing_(cls, value: object) -> MemoryRegion | None:
        return cls.private_hbm if value == "hbm" else None  # nl.hbm: private_hbm's alias

    def __eq__(self, other: object) -> bool:
        if self is MemoryRegion.private_hbm and isinstance(other, str) and other == "hbm":
            return True
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


NkiValidationError = TargetError


def _region(buffer: Any, fn: str) -> str:
    """apdsl's name of the NKI buffer `buffer` (a region, or its name), or APK105."""
    if isinstance(buffer, str):
        name = targets.buffer_name(str.__str__(buffer))
        if targets.family(name) == "nki":
            return name
    raise ApdslNameError(
        f"nl.{fn}: {buffer!r} is not an NKI memory region", code="APK105", param="buffer",
        help=f"pass a tensor's .buffer or a region: nl.sbuf, nl.psum, nl.hbm, nl.private_hbm, "
             f"nl.shared_hbm (e.g. nl.{fn}(t.buffer))")


def is_hbm(buffer: Any) -> bool:
    """Check if buffer is any HBM type."""
    return _region(buffer, "is_hbm") in targets.NKI_HBM


def is_on_chip(buffer: Any) -> bool:
    """Check if buffer is on-chip (SBUF or PSUM)."""
    return targets.is_onchip(_region(buffer, "is_on_chip"))


def is_psum(buffer: Any) -> bool:
    """Check if buffer is PSUM."""
    return _region(buffer, "is_psum") == "psum"


def is_sbuf(buffer: Any) -> bool:
    """Check if buffer is SBUF."""
    return _region(buffer, "is_sbuf") == "sbuf"


def get_nc_sub_version() -> int:
    """The silicon revision within the current target's `nc_version`: 0 (first revision, the
    default) on every target apdsl models."""
    return 0


def make() -> dict[str, Any]:
    """The names, keyed `nl.X` / `nisa.X`."""
    nl = {"MemoryRegion": MemoryRegion, "DType": DType, "is_hbm": is_hbm,
          "is_on_chip": is_on_chip, "is_psum": is_psum, "is_sbuf": is_sbuf}
    from .nki_instruction import NkiInstruction
    isa = {"get_nc_sub_version": get_nc_sub_version, "NkiValidationError": NkiValidationError,
           "VirtualRegister": VirtualRegister, "NkiInstruction": NkiInstruction}
    return {**{f"nl.{k}": v for k, v in nl.items()}, **{f"nisa.{k}": v for k, v in isa.items()}}
