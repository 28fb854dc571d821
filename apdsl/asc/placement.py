"""Where a kernel call's LocalTensors are: `asc.LocalTensor(dtype, TPosition.X, addr, n)` by
buffer, byte address and size, and `asc.LocalTensorAuto` by the operation that makes it (one
UB buffer each, `AutoSite`) (the call under way's `Placement`, a context variable)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, ApdslTypeError
from ..nki.host import Host
from ..nki.locate import caller_span
from ..runtime.ascend.queues import Buffers
from ..runtime.sync.auto import register
from ..runtime.sync.sync_facts import facts_of
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.machine import current
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
        self.sites: dict[Any, Any] = {}  # LocalTensorAuto operations: (file, line, col)

    def auto(self, dtype: str, n: int, span: Any, name: str) -> Tensor:
        """The tensor a `LocalTensorAuto` operation at `span` makes: its operation's one
        UB buffer (made the first time it runs), the tensor it held before freed."""
        key = (span.file, span.line, span.column) if span is not None else None
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = AutoSite(dtype, n, name or "auto")
        return site.allocate(dtype, n, span)

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


class AutoSite:
    """The UB buffer of one LocalTensorAuto operation on one core, and the tensor it holds."""

    def __init__(self, dtype: str, n: int, name: str) -> None:
        self.buffers = Buffers(name, "VECCALC", 1, n * _itemsize(dtype))
        self.name = name
        self.held: Any = None
        sync = current().sync
        self.sync_buffer = None
        if sync is not None:
            key, _base, lo, hi, *_ = facts_of(self.buffers.backing)
            self.sync_buffer = register(sync, key, lo, hi)

    def allocate(self, dtype: str, n: int, span: Any) -> Any:
        """The operation runs (again): the tensor before is freed, a new one made over the
        buffer's bytes."""
        nbytes = n * _itemsize(dtype)
        if nbytes > self.buffers.size:
            raise ApdslRuntimeError(
                f"asc.LocalTensorAuto: {n} {dtype} elements ({nbytes} bytes) here, but this "
                f"operation's buffer was made for {self.buffers.size} bytes when it first ran",
                code="APK667", notes=["the compiler gives each LocalTensorAuto operation one "
                                      "buffer, sized when the kernel starts"],
                help="give the tensor the same size every time the operation runs"
            ).replace(span=span)
        if self.held is not None:
            self.held.storage.free()  # a use of the tensor before is APK408
        if self.sync_buffer is not None:
            self.sync_buffer.reallocate()
        self.held = self.buffers.slot(0, dtype, self.name, (n,))
        return self.held


def _itemsize(dtype: str) -> int:
    return max(1, to_dtype(dtype).bits // 8)
