"""On-chip tensors placed at an explicit address: `nl.ndarray(..., address=(partition_offset,
free_offset))`.

What the NKI docs say (aws-neuron-sdk `nki/api/nki/language/__init__.py`: "optional memory
address (partition_offset, free_offset)"; `nki/migration/index.rst`, "Improved allocation
API"): the partition offset is a physical partition lane; PSUM is 8 banks of 2 KiB a
partition and "the allocation for PSUM tensors must start at the beginning of each bank".
The free offset counts bytes: the guide's prose says "element offset", but each of its
examples, and the NKI library's allocator reference, step it in bytes (a bfloat16 PSUM tensor
on bank 3 at `3 * 2048`; tiles of `n_k` bfloat16 elements `n_k * 2` apart, "virtual byte
addresses"; `(128, 512)` bfloat16 at 0, the next tile at 1024).  So a tensor of P partitions
and S bytes a partition at (p, f) covers partitions p..p+P-1, bytes f..f+S-1 of each.

What they leave open, apdsl refuses: an address on HBM (it has no partitions), a free offset
that is not a whole number of the dtype's elements (`sbuf_min_align` has no published value).
The docs' own examples let a tensor be placed over an earlier one still referenced (the
allocator reference's `buf4` over `buf2`), and the NKI library allocates rings of tiles at
addresses taken modulo the ring (`ModularAllocator`: all of a ring's tiles made at once, used in
turn): the user manages the bytes, and two tensors over the same bytes are two names for them.
So both stay live, each knows the placed tensors it `overlaps`, and a write through one is
copied into the others at the same (partition, byte) addresses
(`apdsl.runtime.core.written.share`): a tensor read after an overlapping one wrote its bytes
reads that data, as on hardware.  apdsl places tensors without an address itself, at addresses
hardware does not fix (the compiler places them around the placed ones, and so does apdsl): a
placed tensor over one of those moves apdsl's choice out of the way (`apdsl.tensor.room`),
and only when no room is left for them is it refused (APK165).
"""

from __future__ import annotations

import weakref
from typing import Any

from ..errors import ApdslTypeError, Span, TargetError
from . import room, targets
from .machine import current
from .storage import Storage

# where an address error points: the `address=` keyword (nl.ndarray's fifth parameter)
ADDRESS = ("address", 4)


class PlacedStorage(Storage):
    """Storage at an explicit (partition, byte) address.  `overlaps`: weak references to the
    other placed storages over some of its bytes (both ways)."""

    __slots__ = ("partition", "at", "overlaps")
    fixed_address = True
    # whether a write's bytes are copied into the storages over them (NKI: each storage has
    # its own bytes); False where they are views of one memory already (Ascend's LocalTensors)
    copies_data = True

    @property
    def rows(self) -> int:
        """The partitions it spans (a flat buffer's storage spans one)."""
        return self.shape[0]

    def __init__(self, shape: tuple[int, ...], dtype: Any, buffer: str, at: tuple[int, int],
                 *, name: str = "", span: Span | None = None) -> None:
        self.at = at
        self.partition = at[0]
        self.overlaps: list[weakref.ref[PlacedStorage]] = []
        super().__init__(shape, dtype, buffer, name=name, span=span)

    def _account(self) -> int:
        t = self.target
        cap = t.capacity_of(self.buffer)
        p0, f0 = self.at
        parts = self.shape[0]
        size = self.nbytes // parts
        where = f"address ({p0}, {f0})"
        facts = [t.describe(self.buffer), f"shape {self.shape}, {self.dtype}, "
                 f"{size} bytes a partition"]
        def refuse(code: str, message: str, help: str, more: tuple[str, ...] = ()) -> None:
            raise TargetError(f"{where}: {message}", code=code, param=ADDRESS,
                              notes=[*facts, *more], help=help)

        if p0 + parts > t.partitions:
            refuse("APK163", f"{parts} partitions from partition {p0} end at partition "
                   f"{p0 + parts - 1}; {self.buffer} has {t.partitions}",
                   f"start at most at partition {t.partitions - parts}")
        if cap is not None and f0 + size > cap:
            refuse("APK163", f"{size} bytes a partition from byte {f0} end at byte "
                   f"{f0 + size - 1}; a {self.buffer} partition has {cap} bytes on {t.name}",
                   f"start at most at byte {cap - size}")
        if self.buffer == "psum" and f0 % t.psum_bank_bytes:
            refuse("APK164", f"a PSUM tensor starts at the beginning of a bank; byte {f0} is "
                   f"inside bank {f0 // t.psum_bank_bytes}",
                   f"use a multiple of the bank size, {t.psum_bank_bytes} bytes (bank k at "
                   f"k * {t.psum_bank_bytes})")
        width = self.dtype.bits // 8
        if width > 1 and f0 % width:
            refuse("APK164", f"byte {f0} is not a whole number of {self.dtype} elements "
                   f"({width} bytes)", f"use a multiple of {width}",
                   ("the NKI reference publishes no SBUF alignment (nl.tile_size.sbuf_min_align "
                    "has no value); apdsl places elements whole",))
        accounting = current().accounting
        mine = range(p0, p0 + parts)
        taken, movers = [], []
        for sid, start, length in list(accounting.live.get(self.buffer, ())):
            old = accounting.owner(sid)
            if old is None:  # a storage being collected: its bytes are free
                accounting.release(sid, self.buffer)
                continue
            hit = start < f0 + size and f0 < start + length
            if isinstance(old, PlacedStorage):
                if hit and _meet(mine, range(old.partition, old.partition + old.shape[0])):
                    taken.append((sid, old))  # the two share those bytes
                    continue
            elif hit and _meet(mine, range(old.shape[0] if old.shape else 1)):
                movers.append((sid, start, length))
        if movers:
            _make_room(accounting, self, size, movers, cap, refuse)
        for _, old in taken:
            # (a tensor of a past loop iteration is dropped from the lists when they are read:
            # `written.share`)
            old.overlaps.append(weakref.ref(self))
            self.overlaps.append(weakref.ref(old))
        accounting.claim(self.id, self.buffer, f0, size, weakref.ref(self))
        self._accounting = accounting
        return f0


def _meet(a: range, b: range) -> bool:
    return a.start < b.stop and b.start < a.stop


def _make_room(accounting: Any, new: PlacedStorage, size: int,
               movers: list[tuple[int, int, int]], capacity: int | None,
               refuse: Any) -> None:
    """Move the tensors apdsl placed itself (`movers`: id, start, size) off the bytes `new`
    takes (`apdsl.tensor.room`); when they do not fit, move all of apdsl's own tensors of the
    buffer; when those do not fit either, refuse (APK165) with the shortfall."""
    buffer = new.buffer
    bank = new.target.psum_bank_bytes if buffer == "psum" else None
    cap = capacity if capacity is not None else 1 << 62
    here = (new.at[1], size)
    live = accounting.live.get(buffer, [])
    mine = {sid for sid, _, _ in movers}
    moved = room.plan([here, *((s, n) for sid, s, n in live if sid not in mine)], movers,
                      cap, bank)
    if moved is None:  # all of apdsl's own at once
        auto = [b for b in live if not isinstance(accounting.owner(b[0]), PlacedStorage)]
        placed = [(s, n) for sid, s, n in live if isinstance(accounting.owner(sid), PlacedStorage)]
        moved = room.plan([here, *placed], auto, cap, bank)
        if moved is None:
            _no_room(accounting, new, [here, *placed], auto, cap, refuse)
    for sid, start in moved.items():
        accounting.move(sid, buffer, start)
        accounting.owner(sid).address = start


def _no_room(accounting: Any, new: PlacedStorage, placed: list[room.Block],
             auto: list[tuple[int, int, int]], capacity: int, refuse: Any) -> None:
    held = sum(n for _, n in room.merged(placed))
    need = sum(n for _, _, n in auto)
    largest = max(auto, key=lambda b: b[2])
    runs = sorted((n for _, n in room.gaps(placed, capacity)), reverse=True)
    if held + need > capacity:
        why = (f"with this one, the placed tensors hold {held} bytes a partition and those "
               f"without an address {need} more, {held + need - capacity} past the "
               f"{capacity} a {new.buffer} partition has")
    elif not runs or largest[2] > runs[0]:
        why = (f"with this one, the placed tensors leave free runs of at most "
               f"{runs[0] if runs else 0} bytes a partition, and "
               f"{accounting.owner(largest[0]).describe()} needs {largest[2]}")
    else:
        why = (f"with this one, the placed tensors leave free runs of "
               f"{', '.join(map(str, runs[:6]))} bytes a partition, too short for the "
               f"tensors without an address together ({need} bytes)")
    refuse("APK165", f"no room left for the tensors without an address: {why}",
           "free tensors without an address earlier (declare them inside the loop that uses "
           "them), or place fewer tensors by hand", tuple(
               f"placed without address=: {accounting.owner(sid).describe()}, {n} bytes a "
               "partition" for sid, _, n in sorted(auto, key=lambda b: -b[2])[:4]))


def partition_offset(storage: Any) -> int:
    """The physical partition a storage starts at (0 unless placed with address=)."""
    return getattr(storage, "partition", 0)


def address_pair(address: Any) -> tuple[int, int]:
    """`address=` as a (partition_offset, free_offset) pair of non-negative ints (APK162)."""
    ok = isinstance(address, (tuple, list)) and len(address) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in address)
    if not ok:
        raise ApdslTypeError(
            f"address must be a (partition_offset, free_offset) pair of non-negative ints, "
            f"got {address!r}", code="APK162", param=ADDRESS,
            help="address=(0, 1024): partition 0, byte 1024 of each partition")
    return int(address[0]), int(address[1])


def place(t: Any, address: Any) -> Any:
    """The tensor `t` (just allocated, nothing written) moved to `address`: a new storage of
    the same shape, dtype, buffer and name at that (partition, byte) address; `t`'s storage is
    freed first so its automatic place does not count."""
    from .view import Tensor
    at = address_pair(address)
    s = t.storage
    if not targets.is_onchip(s.buffer) or targets.family(s.buffer) != "nki":
        raise TargetError(
            f"address=: {s.buffer} has no (partition, free) address; the NKI reference "
            "places SBUF and PSUM tensors", code="APK161", buffer=s.buffer, param=ADDRESS,
            help="drop address= (HBM tensors are placed by the runtime)")
    if s.format != "ND":
        raise TargetError(f"address=: a tensor in format {s.format} cannot be placed",
                          code="APK161", param=ADDRESS, help="drop address= or format=")
    name, span, shape, dtype, buffer = s.name, s.span, s.shape, s.dtype, s.buffer
    s.free()
    return Tensor(PlacedStorage(shape, dtype, buffer, at, name=name, span=span), t.dtype,
                  t.layout)
