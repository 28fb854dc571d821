"""Where a kernel call's LocalTensors are: `asc.LocalTensor(dtype, TPosition.X, addr, n)` by
buffer, byte address and size (the call under way's `Placement`, a context variable)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, ApdslTypeError
from ..nki.host import Host
from ..nki.locate import caller_span
from ..tensor.view import Tensor
from . import errors

# where each TPosition lives on Atlas A2 (AscendC: VECIN/VECOUT/VECCALC on UB, A1/B1/C1 on
# L1, A2 on L0A, B2 on L0B, CO1 on L0C, C2 the bias table); CO2 is global memory there
POSITIONS = {"VECIN": "ub", "VECOUT": "ub", "VECCALC": "ub", "A1": "l1", "B1": "l1",
             "C1": "l1", "A2": "l0a", "B2": "l0b", "CO1": "l0c", "C2": "bt"}


class Placement:
    """The LocalTensors of one kernel call by buffer, byte address and size: the same
    address, size and dtype is the same storage; a partial overlap is refused (APK664)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.placed: list[tuple[str, int, int, str, Tensor]] = []

    def local(self, dtype: Any, pos: str, addr: Any, tile_size: Any) -> Tensor:
        bare = pos.rpartition(".")[2]
        buffer = POSITIONS.get(bare)
        if bare == "CO2":
            raise ApdslTypeError(
                "LocalTensor(dtype, TPosition.CO2, ...): on Atlas A2 CO2 is global memory, "
                "not a local buffer", code="APK664", notes=[
                    "AscendC's TPosition table: CO2 is Global Memory on Atlas A2 (Fixpipe "
                    "writes L0C to GM directly)"],
                help="fixpipe the CO1 LocalTensor into a GlobalTensor")
        if buffer is None:
            raise errors.missing(f"TPosition.{pos}", "apdsl has no buffer for this position")
        if not isinstance(addr, int) or not isinstance(tile_size, int) or addr < 0 or \
                tile_size <= 0:
            raise ApdslTypeError(
                f"LocalTensor(dtype, {pos}, addr={addr!r}, tile_size={tile_size!r}): the "
                "address is a byte offset >= 0 and tile_size a number of elements > 0",
                code="APK664")
        name = getattr(dtype, "name", None) or str(dtype)
        size = int(np.dtype(name).itemsize) * tile_size
        for b, a, s, d, t in self.placed:
            if b != buffer or a + s <= addr or addr + size <= a:
                continue
            if (a, s, d) == (addr, size, name):
                return t  # the same address, size and type: the same storage
            raise ApdslRuntimeError(
                f"LocalTensor at {buffer} bytes [{addr}, {addr + size}) overlaps the one at "
                f"[{a}, {a + s}) ({d}): apdsl gives each LocalTensor its own storage and does "
                "not model partly overlapping ones", code="APK664",
                help="place LocalTensors at disjoint addresses (or at the same address, size "
                     "and dtype to share one)")
        span = caller_span(2)
        t = self.host.allocate((tile_size,), name, buffer, span=span)
        self.placed.append((buffer, addr, size, name, t))
        return t


PLACEMENT: ContextVar[Placement | None] = ContextVar("apdsl_asc_placement", default=None)


def placement() -> Placement:
    p = PLACEMENT.get()
    if p is None:
        raise ApdslRuntimeError("a LocalTensor is made inside an @asc.jit kernel call",
                                code="APK664", help="create it in the kernel's body")
    return p


