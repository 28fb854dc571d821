"""Storage: the memory a tensor and all its views share.

Storage is raw bytes (allocated lazily, so checking a program allocates nothing) plus a record of
which bytes were written, because memory starts unwritten as on hardware.  Written state is
exact per *unit*: a unit starts as one element of the storage's own dtype (its bytes are always
written together while every write goes through views of that size or wider) and is refined to
the element size of a narrower view the first time one writes (`refine`: one byte of a float32
through a `uint8` view, a bfloat16 half, an int4 nibble), so an element counts as written only
when all of its bytes (nibbles) are.  The record collapses to a flag once everything is
written, so the common case (inputs fully loaded, outputs fully written) costs nothing to
check.

Capacity is accounted per buffer when storage is allocated, on the current machine
(`apdsl.tensor.machine`: one program run, one test), so tensors left alive elsewhere do not
count against its capacity; on-chip buffers count bytes per partition.  Every storage, HBM and GM included, also reserves its bytes in the memory budget
(`budget`).  Storage is freed explicitly (block scopes in the language) or when
garbage-collected.
"""

from __future__ import annotations

import itertools
import weakref
from math import prod
from typing import Any

import numpy as np

from ..errors import Span, TargetError
from . import budget, liveness, targets
from .dtypes import DType
from .machine import Accounting, Memory, current

_ids = itertools.count()


def _holders_note(accounting: Accounting, buffer: str, unit: str) -> list[str]:
    """What fills `buffer` now, largest first: the first thing to shrink or free."""
    holders = accounting.holders(buffer)
    if not holders:
        return []
    shown = []
    for storage, size in holders[:4]:
        what = "a tensor apdsl cannot name" if storage is None else storage.describe()
        span = getattr(storage, "span", None)
        where = f" (line {span.line})" if span is not None else ""
        shown.append(f"{what}{where}: {size} bytes{unit}")
    more = f"; and {len(holders) - 4} more" if len(holders) > 4 else ""
    return [f"in use in {buffer}: " + "; ".join(shown) + more]


class Storage:
    """The bytes behind a tensor.  `shape` and `dtype` are those it was declared with.
    `freed`: False while usable, True once freed, `liveness.DORMANT` while an overdraft waits
    on it (usable: the next access revives it)."""

    __slots__ = ("id", "name", "buffer", "dtype", "shape", "format", "c0", "nbytes", "span",
                 "address", "_data", "_mask", "all_written", "freed", "target", "_accounting",
                 "unit_bits", "_reserved", "_memory", "space", "taint", "lnc", "__weakref__")
    fixed_address = False  # placed by the program (`address=`), not by apdsl

    def __init__(self, shape: tuple[int, ...], dtype: DType, buffer: str, *, name: str = "",
                 format: str = "ND", storage_elements: int | None = None,
                 span: Span | None = None, c0: int | None = None) -> None:
        self.id = sid = next(_ids)
        self.name = name or f"%{sid}"
        self.buffer = buffer
        self.dtype = dtype
        self.shape = shape = tuple(shape)
        self.format = format
        self.c0 = c0  # the C0 a fractal format was made with when not the default (`formats`)
        elements = prod(shape) if storage_elements is None else storage_elements
        bits = dtype.bits
        self.nbytes = nbytes = -(-elements * bits // 8)
        self.span = span
        self._data: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self.all_written = False
        self.freed = False
        self.unit_bits = bits  # written state is exact per unit of this many bits
        # where unwritten units' data came from (`apdsl.runtime.core.unwritten.Taint`)
        self.taint: Any = None
        # the race checker of the LNC=2 launch sharing it (`apdsl.runtime.core.lnc_race`)
        self.lnc: Any = None
        machine = current()
        # the address space of on-chip storage: its core's, in a launch on several cores
        self.space = machine.space
        self.target = targets.TARGETS[machine.targets[targets.family(buffer)]]
        self._accounting: Accounting | None = None
        # the memory budget: the data and one bookkeeping byte per written-state unit (the
        # mask the storage needs while partly written); what fits is reserved here, the rest
        # goes through `_reserve` (a collection, then APK430)
        need = nbytes + nbytes * 8 // bits
        memory = machine.memory
        if memory.bytes + need <= machine.options.max_memory:
            memory.bytes += need
            self._memory: Memory | None = memory
            self._reserved = need
        else:
            self._reserved = 0
            self._memory = None
            self._reserve()
        try:
            self.address = self._account()
        except BaseException:
            self._unreserve()
            raise

    # -- the memory budget ------------------------------------------------------------------
    def _reserve(self) -> None:
        """Reserve the data and one bookkeeping byte per written-state unit (the mask the
        storage needs while partly written) in the memory budget: APK430 past it."""
        need = self.nbytes + self.nbytes * 8 // self.unit_bits
        self._memory = budget.reserve(need, lambda: (
            f"allocating {self.describe()}", f"{budget.human(self.nbytes)} of data and "
            f"{budget.human(need - self.nbytes)} of written-state bookkeeping"))
        self._reserved = need

    def _unreserve(self) -> None:
        if self._reserved and self._memory is not None:
            budget.release(self._memory, self._reserved)
            self._reserved = 0

    def _account(self) -> int:
        t = self.target
        cap = t.capacity_of(self.buffer)
        if cap is None:
            return 0
        onchip = self.buffer in targets.NKI_ONCHIP
        if onchip:
            parts = self.shape[0] if self.shape else 1
            if parts > t.partitions:
                raise TargetError(
                    f"{self.buffer} tensor has {parts} partitions; {t.name} has {t.partitions}",
                    code="APK301", notes=[f"shape = {self.shape}"],
                    help="put at most 128 rows on the partition dimension (dim 0)",
                    shape=self.shape)
            size = self.charged_bytes(parts)
        else:
            size = self.nbytes
        bank = t.psum_bank_bytes if self.buffer == "psum" else None
        accounting = current().accounting
        addr = accounting.place(self.id, self.buffer, size, cap, bank, weakref.ref(self))
        if (addr < 0 or accounting.shelf) and onchip:  # by liveness (`liveness`)
            addr = liveness.overdraw(accounting, self, size, cap, bank, addr)
        if addr < 0:
            used = accounting.used(self.buffer)
            unit = " per partition" if onchip else ""
            raise TargetError(
                f"allocating {size} bytes{unit} in {self.buffer} exceeds its capacity "
                f"({cap} bytes{unit} on {t.name}, {used} already in use)",
                code="APK302", notes=[t.describe(self.buffer), f"shape = {self.shape}, "
                                      f"dtype = {self.dtype}",
                                      *_holders_note(accounting, self.buffer, unit)],
                help="use smaller tiles, or free tensors by declaring them inside a loop body",
                requested=size, capacity=cap, in_use=used)
        self._accounting = accounting
        return addr

    def charged_bytes(self, parts: int) -> int:
        """The bytes a partition of an on-chip storage takes from its buffer's capacity."""
        return self.nbytes // max(parts, 1)

    def free(self) -> None:
        """End the storage's life (its block ended): capacity and budget are returned and its
        bytes dropped; views of it can no longer be read or written (APK408)."""
        if self.freed is not True:
            self.freed = True
            if self._accounting is not None:
                self._accounting.release(self.id, self.buffer)
                self._accounting = None
            self._unreserve()
            self._data = None
            self._mask = None
            self.taint = None

    def __del__(self) -> None:
        # (cheaper than a weakref.finalize per allocation; a storage freed by its block has
        # returned everything already)
        try:
            if self._accounting is not None:
                self._accounting.release(self.id, self.buffer)
            if self._reserved and self._memory is not None:
                budget.release(self._memory, self._reserved)
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: nothing left to return
            pass

    # -- contents ---------------------------------------------------------------------------
    @property
    def data(self) -> np.ndarray:
        """The raw bytes (uint8), allocated on first use (zeroed: unwritten bytes read 0)."""
        if self._data is None:
            self._allocate(np.zeros)
        return self._data  # type: ignore[return-value]

    def allocate_blank(self) -> bool:
        """Allocate the bytes without zeroing them, for a write about to cover every one of
        them (a tile declared in a loop and filled by one copy: the zero fill was 5% of the
        .apk tile loop); True when it did, False when they exist already.  A caller that got
        True and whose write then fails calls `data.fill(0)`, so unwritten bytes read 0."""
        if self._data is not None:
            return False
        self._allocate(np.empty)
        return True

    def _allocate(self, make: Any) -> None:
        try:
            self._data = make(self.nbytes, dtype=np.uint8)
        except MemoryError as e:
            raise budget.out_of_memory(f"the {budget.human(self.nbytes)} of "
                                       f"{self.describe()}", e, tensor=self.name) from None

    def elements(self, dtype: DType) -> np.ndarray:
        """The storage as a flat array of `dtype` (int4: one element per nibble, a copy)."""
        if dtype.bits == 4:
            raw = self.data
            lo = (raw & 0x0F).astype(np.int8)
            hi = (raw >> 4).astype(np.int8)
            out = np.empty(raw.size * 2, dtype=np.int8)
            out[0::2], out[1::2] = lo, hi
            out = np.where(out > 7, out - 16, out).astype(np.int8)
            return out.astype(dtype.np)
        usable = self.nbytes - self.nbytes % max(dtype.bits // 8, 1)
        return self.data[:usable].view(dtype.np)

    def store_int4(self, flat_index: np.ndarray, values: np.ndarray) -> None:
        """Write int4 elements (low nibble first) at element indices of the nibble array."""
        raw = self.data
        v = np.asarray(values).astype(np.int8).astype(np.uint8) & 0x0F
        byte = flat_index // 2
        high = (flat_index % 2).astype(bool)
        raw[byte[~high]] = (raw[byte[~high]] & 0xF0) | v[~high]
        raw[byte[high]] = (raw[byte[high]] & 0x0F) | (v[high] << 4)

    @property
    def elements_total(self) -> int:
        return self.nbytes * 8 // self.dtype.bits

    @property
    def units_total(self) -> int:
        """Units of written state (see the module docstring)."""
        return self.nbytes * 8 // self.unit_bits

    @property
    def mask(self) -> np.ndarray:
        """Per unit of `unit_bits`: written yet?  (Only materialised while partly written.)"""
        if self._mask is None:
            try:
                self._mask = np.full(self.units_total, self.all_written, dtype=bool)
            except MemoryError as e:
                raise budget.out_of_memory(f"the written-state record of {self.describe()}",
                                           e, tensor=self.name) from None
        return self._mask

    def refine(self, bits: int) -> int:
        """Make written state exact for elements of `bits` (< `unit_bits`, both powers of two);
        returns how many new units each old one became.  The extra bookkeeping is reserved
        in the memory budget (APK430 past it)."""
        ratio = self.unit_bits // bits
        need = self.nbytes + self.nbytes * 8 // bits
        if need > self._reserved:
            budget.reserve(need - self._reserved, lambda: (
                f"tracking written state per {bits}-bit unit of {self.describe()}",
                "a write through a narrower view needs written state per byte (per nibble "
                "for int4)"), memory=self._memory)
            self._reserved = need
        if self._mask is not None:
            try:
                self._mask = np.repeat(self._mask, ratio)
            except MemoryError as e:
                raise budget.out_of_memory(f"the written-state record of {self.describe()}",
                                           e, tensor=self.name) from None
        self.unit_bits = bits
        return ratio

    def note_written_all(self) -> None:
        self.all_written = True
        self._mask = None
        self.taint = None
        # uniform state is exact at any unit: go back to the cheapest
        self.unit_bits = self.dtype.bits

    def describe(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)} @ {self.buffer}"

    def __repr__(self) -> str:
        return f"Storage({self.describe()})"
