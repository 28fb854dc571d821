"""Where a kernel call's LocalTensors are: `asc.LocalTensor(dtype, TPosition.X, addr, n)` by
buffer, byte address and size, and `asc.LocalTensorAuto` by the operation that makes it (one
UB buffer each, `AutoSite`) (the call under way's `Placement`, a context variable)."""

from __future__ import annotations

import weakref
from contextvars import ContextVar
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, ApdslTypeError, Span
from ..nki.host import Host
from ..nki.locate import assigned_name, caller_span
from ..runtime.ascend.dma import ALIGN_BYTES, BT_ALIGN_BYTES
from ..runtime.ascend.queues import Buffers
from ..runtime.core.written import share_placed
from ..runtime.sync.auto import register
from ..runtime.sync.sync_facts import facts_of
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.layout import Layout
from ..tensor.machine import current
from ..tensor.placement import PlacedStorage
from ..tensor.view import Tensor, new_view
from . import errors

# where each TPosition lives on Atlas A2 (AscendC: VECIN/VECOUT/VECCALC on UB, A1/B1/C1 on
# L1, A2 on L0A, B2 on L0B, CO1 on L0C, C2 the bias table); CO2 is global memory there
POSITIONS = {"VECIN": "ub", "VECOUT": "ub", "VECCALC": "ub", "A1": "l1", "B1": "l1",
             "C1": "l1", "A2": "l0a", "B2": "l0b", "CO1": "l0c", "C2": "bt"}


class Placement:
    """The LocalTensors of one kernel call on one core, by buffer, byte address and size: the
    same address, size and dtype is the same storage; LocalTensors over some of the same bytes
    are storages over one memory per buffer (`AddressedStorage`)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.placed: list[tuple[str, int, int, str, Tensor]] = []
        self.memories: dict[str, BufferBytes] = {}  # buffer -> its bytes (made when first used)
        self.sites: dict[Any, Any] = {}  # LocalTensorAuto operations: (file, line, col)

    def auto(self, dtype: str, n: int, span: Span | None, name: str) -> Tensor:
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
            if (b, a, s, d) == (buffer, addr, size, name):
                return t  # the same address, size and type: the same storage
        span = caller_span(2)
        memory = self.memories.get(buffer)
        if memory is None:  # (allocated only when a tensor's bytes are first used)
            memory = self.memories[buffer] = BufferBytes()
        dt = to_dtype(name)
        storage = AddressedStorage((tile_size,), dt, buffer, addr, memory,
                                   name=assigned_name() or f"{bare}@{addr}", span=span)
        t = new_view(storage, dt, Layout.row_major((tile_size,)))
        self.placed.append((buffer, addr, size, name, t))
        return t


class BufferBytes:
    """The bytes of one on-chip buffer of one core, made when a LocalTensor's are first used."""

    def __init__(self) -> None:
        self.bytes: np.ndarray | None = None

    def view(self, start: int, nbytes: int, capacity: int) -> np.ndarray:
        """Bytes [start, start + nbytes) of the buffer (of `capacity` bytes)."""
        if self.bytes is None:  # (zeroed: unwritten bytes read 0, as apdsl's storages do)
            self.bytes = np.zeros(capacity, np.uint8)
        return self.bytes[start:start + nbytes]


class AddressedStorage(PlacedStorage):
    """A LocalTensor's storage: its bytes are those at its address of its buffer's `BufferBytes`, so
    LocalTensors over some of the same bytes read what either wrote, as on hardware; their
    written state is shared through `apdsl.runtime.core.written.share` (the NKI placement's
    model, `copies_data` off: nothing to copy), and the race checker sees one address space
    (`region_key`: the storage's address is the LocalTensor's)."""

    __slots__ = ("memory",)
    copies_data = False

    def __init__(self, shape: tuple[int, ...], dtype: Any, buffer: str, addr: int,
                 memory: BufferBytes, *, name: str, span: Span | None) -> None:
        self.memory = memory
        super().__init__(shape, dtype, buffer, (0, addr), name=name, span=span)

    @property
    def rows(self) -> int:
        return 1

    def _allocate(self, make: Any) -> None:
        self._data = self.memory.view(self.at[1], self.nbytes,
                                      self.target.capacity_of(self.buffer) or 0)

    def allocate_blank(self) -> bool:
        if self._data is None:  # (its bytes are other LocalTensors' too: never left blank)
            self._allocate(None)
        return False

    def _account(self) -> int:
        """Checked against the buffer, its bytes claimed: linked with the LocalTensors over
        some of them; over a buffer apdsl placed itself (a TPipe queue's), refused."""
        addr, size = self.at[1], self.nbytes
        cap = self.target.capacity_of(self.buffer) or 0
        where = f"LocalTensor at {self.buffer} bytes [{addr}, {addr + size})"
        if addr + size > cap:
            raise ApdslRuntimeError(
                f"{where} ends past the {cap} bytes {self.buffer.upper()} has on "
                f"{self.target.name}", code="APK664", help="use a lower address or fewer "
                "elements", notes=[f"{self.describe()}: {size} bytes"])
        align = BT_ALIGN_BYTES if self.buffer == "bt" else ALIGN_BYTES
        if addr % align:
            raise ApdslRuntimeError(
                f"{where}: {self.buffer.upper()} addresses are {align}-byte aligned",
                code="APK664", notes=["AscendC operands in UB, L1 and L0 start on 32-byte "
                                      "blocks (the bias table's on 64 bytes)"],
                help=f"use a multiple of {align}")
        accounting = current().accounting
        for sid, start, length in list(accounting.live.get(self.buffer, ())):
            other = accounting.owner(sid)
            if other is None or start + length <= addr or addr + size <= start:
                continue
            if not isinstance(other, AddressedStorage):
                raise ApdslRuntimeError(
                    f"{where} overlaps {other.describe()}, which apdsl placed itself at "
                    f"[{start}, {start + length})", code="APK664", notes=[
                        "the AscendC docs do not say where TPipe.init_buffer puts a queue's or "
                        "TBuf's buffers, so apdsl places them (and LocalTensorAuto's) itself, "
                        "around the LocalTensors made before them"],
                    help="make the LocalTensors before TPipe.init_buffer, or use one or the "
                         "other")
            other.overlaps.append(weakref.ref(self))
            self.overlaps.append(weakref.ref(other))
        accounting.claim(self.id, self.buffer, addr, size, weakref.ref(self))
        self._accounting = accounting
        if self.overlaps:
            share_placed(self)
        return addr


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

    def allocate(self, dtype: str, n: int, span: Span | None) -> Any:
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
