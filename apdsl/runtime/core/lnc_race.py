"""Races between the two programs of an LNC=2 launch on the HBM they share (SPEC 16).

apdsl runs the two programs by turns (`apdsl.runtime.nki.group`): program 0 until it waits at
a `core_barrier` or `sendrecv`, then program 1.  On hardware the two NeuronCores run at the
same time, and only those meetings order one program's accesses against the other's.  The
turns are one order of many, so a kernel whose result depends on the order must stop, not get
the turns' answer with exit 0 (nki-library's `blockwise_mm_bwd` zero-fills, on program 1,
rows program 0 has already scattered gradients into: which wins is timing).

`Races` keeps, for every shared storage, which bytes each program wrote (with their values)
and read since the programs last met, and stops the run at the first access of one program
that conflicts with an access of the other since that meeting:

- a write of a byte the other wrote, with another value (a byte both write with one value
  holds it whatever the order);
- a read of a byte the other wrote, unless this program wrote the same value there too, or the
  other's write left the value the byte held before it (on hardware the read may come before
  the other's write, and sees the same value only then);
- a write of a byte the other read, with another value than it read (on hardware the read
  may see this write).

A write leaves the value a byte held (is quiet) when the program read the byte earlier in
the same epoch and writes back what it read: nki-library's MoE kernels end with each program
copying the output onto itself (`dma_copy(output, output)`) to flush it, which reads on either
order the same values.  Where the program did not read the byte first, the value it replaced
is not known here, and the write counts as a change (the one conservative case).

Bytes, not elements: two views of one storage may differ in dtype, and DMA writes whole bytes.
The `lnc` slot of a storage holds its `Races` while the launch runs (None otherwise: the hooks
in `written` cost one attribute test).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, Label, Span
from ...tensor.storage import Storage
from .access import Access, fmt_coord


class _Log:
    """What one program did to one storage: per byte, the access that last wrote it and the
    value it left, and the access that first read it in its epoch and the value it saw.  An
    access is kept as a number telling its epoch and its source line (`Races._stamp`; 0:
    none), so one log serves a program and storage for the whole launch, each epoch's entries
    told from the others' by the number (a fresh zeroed log each epoch cost the pages' first
    touch again: most of the checker's time on an LNC=2 MoE kernel meeting every block).
    Made on first use (zeroed pages cost nothing until touched)."""

    __slots__ = ("wid", "val", "rid", "seen", "quiet")

    def __init__(self, units: int, dtype: type, unit: int) -> None:
        self.wid = np.zeros(units, dtype)
        self.val = np.zeros(units, _BITS[unit])
        self.rid: np.ndarray | None = None
        self.seen: np.ndarray | None = None
        # per entry: whether the last write left the value the byte held (see the module)
        self.quiet = np.zeros(units, bool)

    def reads(self) -> tuple[np.ndarray, np.ndarray]:
        if self.rid is None:
            self.rid = np.zeros(self.wid.size, self.wid.dtype)
            self.seen = np.zeros(self.wid.size, self.val.dtype)
        return self.rid, self.seen  # type: ignore[return-value]

    def bytewise(self, unit: int) -> None:
        """Entries per `unit`-byte element as entries per byte: each byte of an element was
        accessed with it, and its value is its byte of the element's bits."""
        self.wid = np.repeat(self.wid, unit)
        self.val = self.val.view(np.uint8)
        self.quiet = np.repeat(self.quiet, unit)
        if self.rid is not None:
            self.rid = np.repeat(self.rid, unit)
            self.seen = self.seen.view(np.uint8)  # type: ignore[union-attr]


# the unsigned integer holding a unit's bits
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# An access's number: (epoch + 1) << bits | site (1 + an index into `Races._sites`).  A launch
# starts with 32-bit numbers of SITE_BITS bits of site (a quarter of the memory traffic of
# 64-bit ones: the checker's gathers were most of its time), and widens its logs to 64-bit
# numbers of WIDE_BITS bits of site when a site or an epoch no longer fits.
SITE_BITS = 12
WIDE_BITS = 32


class Races:
    """The race checker of one LNC=2 launch of `n` programs: `program()` says which program
    the access under way is (None: none of them, e.g. the host reading the result), and
    `locate()` the user's source line of it (each frontend knows how)."""

    def __init__(self, program: Callable[[], int | None], locate: Callable[[], Span | None],
                 n: int = 2, barriers: bool = True) -> None:
        self._program = program
        self._barriers = barriers  # whether the frontend has core_barrier and sendrecv
        self._locate = locate
        self._n = n
        self.epoch = [0] * n  # meetings each program has passed
        # program -> storage id -> _Log
        self._logs: list[dict[int, _Log]] = [{} for _ in range(n)]
        self._sites: list[Span | None] = []
        self._site_ids: dict[Span | None, int] = {}  # each source line once, however often it runs
        self._storages: list[weakref.ref[Storage]] = []
        self._bits = SITE_BITS  # of an access's number, its site's (see SITE_BITS)
        self._dtype: type = np.int32
        # storage id -> the bytes of one entry of its logs: the element size of every access
        # to it so far (their offsets and bits taken whole: a half or a quarter of the
        # indexing of bytes), or 1 (bytes) once accesses of two sizes met
        self._unit: dict[int, int] = {}

    # -- the launch --------------------------------------------------------------------------
    def attach(self, storage: Storage) -> None:
        """Check `storage` (shared by the programs) while the launch runs."""
        if storage.lnc is not self:
            storage.lnc = self
            self._storages.append(weakref.ref(storage))

    def detach(self) -> None:
        """The launch ended: its storages are the caller's again."""
        for ref in self._storages:
            s = ref()
            if s is not None and s.lnc is self:
                s.lnc = None
        self._storages.clear()
        for logs in self._logs:
            logs.clear()
        self._unit.clear()
        self._sites.clear()
        self._site_ids.clear()

    def passed(self, program: int) -> None:
        """`program` passed a meeting with the other (`core_barrier`, `sendrecv`): what either
        did before it is ordered before what either does after it."""
        self.epoch[program] += 1
        if self._dtype is np.int32 and (self.epoch[program] + 2) << self._bits >= 2**31:
            self._widen()  # (the numbers of the epoch begun, and its bound, in 32 bits)

    # -- the accesses (from `written`) -------------------------------------------------------
    def read(self, acc: Access, only: np.ndarray | None = None) -> None:
        """The program under way reads `acc` (the elements `only`, when given)."""
        me = self._program()
        if me is None:
            return
        unit = self._unit_of(acc)
        at, pos = _units(acc, only, unit)
        if not at.size:
            return
        e = self.epoch[me]
        mine = self._logs[me].get(acc.storage.id)
        for other, log in self._others(me, e, acc.storage):
            hit = self._within(log.wid[at], e)
            if hit.any():  # (a byte the other wrote back unchanged reads the same either way)
                hit &= ~log.quiet[at]
            if mine is not None and hit.any():  # both wrote one value: that is what it reads
                hit &= ~(self._within(mine.wid[at], e) & (mine.val[at] == log.val[at]))
            if hit.any():
                if unit > 1:  # (the error by bytes, as ever: which byte differs first)
                    self._bytewise(acc.storage)
                    return self.read(acc, only)
                raise self._error(acc, at, pos(), hit, me, other, log.wid, "reads", "wrote")
        log = self._log(me, acc.storage)
        first = ~self._within(log.reads()[0][at], e)
        if first.any():
            new = at if first.all() else at[first]
            stamp = self._stamp(e)  # (first: it may widen the logs' numbers)
            log.rid[new] = stamp  # type: ignore[index]
            log.seen[new] = _data(acc.storage, unit)[new]  # type: ignore[index]
        return None

    def wrote(self, acc: Access, only: np.ndarray | None = None) -> None:
        """The program under way has just written `acc` (the elements `only`, when given)."""
        me = self._program()
        if me is None:
            return
        unit = self._unit_of(acc)
        at, pos = _units(acc, only, unit)
        if not at.size:
            return
        e = self.epoch[me]
        data = _data(acc.storage, unit)[at]
        for other, log in self._others(me, e, acc.storage):
            hit = self._within(log.wid[at], e) & (log.val[at] != data)
            if hit.any() and unit > 1:
                self._bytewise(acc.storage)
                return self.wrote(acc, only)
            if hit.any():
                raise self._error(acc, at, pos(), hit, me, other, log.wid, "writes", "wrote")
            if log.rid is not None:
                hit = self._within(log.rid[at], e) & (log.seen[at] != data)  # type: ignore[index]
                if hit.any() and unit > 1:
                    self._bytewise(acc.storage)
                    return self.wrote(acc, only)
                if hit.any():
                    raise self._error(acc, at, pos(), hit, me, other, log.rid, "writes", "read")
        stamp = self._stamp(e)  # (first: it may widen the logs' numbers)
        mine = self._log(me, acc.storage)
        mine.quiet[at] = self._quiet(mine, at, e, data)
        mine.wid[at] = stamp
        mine.val[at] = data
        return None

    def _quiet(self, log: _Log, at: np.ndarray, epoch: int, data: np.ndarray) -> np.ndarray:
        """Whether the write of `data` at `at` leaves, with this program's earlier writes of
        epoch `epoch`, the value each byte held before them: known where the program read the
        byte before its first write of the epoch (its first read's value is what that write
        replaced: the other program runs in its own turn, and its writes of other values to
        a byte this program read are races of their own)."""
        again = self._within(log.wid[at], epoch)
        quiet = again & log.quiet[at] & (log.val[at] == data)  # a write after a quiet one
        if log.rid is not None:
            read = ~again & self._within(log.rid[at], epoch)
            if read.any():
                quiet |= read & (log.seen[at] == data)  # type: ignore[index]
        return quiet

    # -- helpers -----------------------------------------------------------------------------
    def _within(self, ids: np.ndarray, epoch: int) -> np.ndarray:
        """Which access numbers `ids` are of epoch `epoch`."""
        low = (epoch + 1) << self._bits
        return (ids >= low) & (ids < low + (1 << self._bits))

    def _log(self, program: int, storage: Storage) -> _Log:
        logs = self._logs[program]
        log = logs.get(storage.id)
        if log is None:
            unit = self._unit[storage.id]
            log = logs[storage.id] = _Log(storage.nbytes // unit, self._dtype, unit)
        return log

    def _unit_of(self, acc: Access) -> int:
        """The bytes of one entry of the logs of `acc`'s storage, for this access (see
        `_unit`): its element size while every access has had it, else 1."""
        storage = acc.storage
        bits = acc.dtype.bits
        size = bits // 8 if bits % 8 == 0 and bits // 8 in _BITS else 1
        unit = self._unit.get(storage.id)
        if unit is None:
            unit = self._unit[storage.id] = size if storage.nbytes % size == 0 else 1
        elif unit != size and unit > 1:
            unit = self._bytewise(storage)
        return unit

    def _bytewise(self, storage: Storage) -> int:
        """The logs of `storage` by bytes from now on."""
        unit = self._unit[storage.id]
        for logs in self._logs:
            log = logs.get(storage.id)
            if log is not None:
                log.bytewise(unit)
        self._unit[storage.id] = 1
        return 1

    def _others(self, me: int, epoch: int, storage: Storage) -> list[tuple[int, _Log]]:
        """The other programs' logs of `storage` (their entries of epoch `epoch` are what the
        access under way meets)."""
        return [(k, self._logs[k][storage.id]) for k in range(self._n)
                if k != me and storage.id in self._logs[k]]

    def _stamp(self, epoch: int) -> int:
        """The number of the access under way in epoch `epoch`: the epoch and its source line,
        each line kept once however often it runs."""
        span = self._locate()
        sid = self._site_ids.get(span)
        if sid is None:
            self._sites.append(span)
            sid = self._site_ids[span] = len(self._sites)
        if sid >> self._bits and self._dtype is np.int32:
            self._widen()
        return ((epoch + 1) << self._bits) | sid

    def _widen(self) -> None:
        """The logs' access numbers as 64-bit ones of WIDE_BITS bits of site, the same
        epochs and sites."""
        old, mask = self._bits, (1 << self._bits) - 1
        for logs in self._logs:
            for log in logs.values():
                for name in ("wid", "rid"):
                    ids = getattr(log, name)
                    if ids is not None:
                        wide = ids.astype(np.int64)
                        setattr(log, name, ((wide >> old) << WIDE_BITS) | (wide & mask))
        self._bits, self._dtype = WIDE_BITS, np.int64

    def _error(self, acc: Access, at: np.ndarray, pos: np.ndarray, hit: np.ndarray, me: int,
               other: int, ids: np.ndarray, doing: str, did: str) -> ApdslRuntimeError:
        first = int(np.argmax(hit))
        count = int(np.unique(pos[hit]).size)
        there = self._sites[(int(ids[at[first]]) & ((1 << self._bits) - 1)) - 1]
        storage = acc.storage
        done = "written" if did == "wrote" else "read"
        differ = ("" if doing == "reads" else ", with other values" if did == "wrote" else
                  ", and this access writes other values than it read")
        notes = [f"{count} element{'s' if count > 1 else ''} of this access "
                 f"{'were' if count > 1 else 'was'} {done} by program {other} since the two "
                 f"programs last met{differ}",
                 "the two programs of an LNC=2 launch run at the same time: only "
                 "nisa.core_barrier and nisa.sendrecv order one's accesses against the "
                 "other's, so which access comes first is timing, and so is the result",
                 f"storage {storage.describe()}"]
        labels = [] if there is None else [Label(there, f"program {other} {did} it here")]
        return ApdslRuntimeError(
            f"race between the programs of an LNC=2 launch: program {me} {doing} "
            f"{_element(storage, int(at[first]))}, which program {other} {did} with no "
            "core_barrier or sendrecv between", code="APK973", span=self._locate(),
            labels=labels, notes=notes, help=(
                "order the two accesses with nisa.core_barrier(data, (0, 1)) between them in "
                "both programs, or make each program touch its own part of the tensor"
                if self._barriers else "make each program touch its own part of the tensor "
                "(a .apk launch has no core_barrier; a Python kernel does)"),
            tensor=storage.name, programs=(me, other))


def _element(storage: Storage, byte: int) -> str:
    """How a message names the element of `storage` holding `byte`: by its coordinate in the
    shape the storage was declared with."""
    bits = storage.dtype.bits
    if bits % 8 or not storage.shape or prod(storage.shape) * bits // 8 != storage.nbytes:
        return f"byte {byte} of {storage.name}"
    coord = np.unravel_index(byte // (bits // 8), storage.shape)
    return f"{storage.name}{fmt_coord(tuple(int(c) for c in coord))}"


def _units(acc: Access, only: np.ndarray | None, unit: int
           ) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    """`_bytes`, or with `unit` > 1 (the access's element size) the storage's elements of
    that size `acc` touches, and what gives each one's flat logical position."""
    if unit == 1:
        return _bytes(acc, only)
    offs = np.asarray(acc.offsets(), np.int64).reshape(-1)
    if only is None:
        return offs, lambda: np.arange(offs.size, dtype=np.int64)
    keep = np.asarray(only, bool).reshape(-1)
    return offs[keep], lambda: np.arange(keep.size, dtype=np.int64)[keep]


def _data(storage: Storage, unit: int) -> np.ndarray:
    """The storage's bytes, or its `unit`-byte elements' bits."""
    data = storage.data
    return data if unit == 1 else data.view(_BITS[unit])


def _bytes(acc: Access, only: np.ndarray | None) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    """The storage bytes `acc` touches (of the elements `only`), and what gives for each the
    flat logical position of its element (asked for only by an error)."""
    offs = np.asarray(acc.offsets(), np.int64).reshape(-1)
    keep = None if only is None else np.asarray(only, bool).reshape(-1)
    if keep is not None:
        offs = offs[keep]
    bits = acc.dtype.bits
    size = 1 if bits % 8 else bits // 8

    def positions() -> np.ndarray:
        pos = np.arange(keep.size if keep is not None else offs.size, dtype=np.int64)
        return np.repeat(pos if keep is None else pos[keep], size)

    if bits % 8:  # elements narrower than a byte: DMA writes whole bytes
        return offs * bits // 8, positions
    if size == 1:
        return offs, positions
    # byte j of each element, column by column (a third of the time of adding a broadcast
    # row of the byte numbers to a column of the element offsets: the same array)
    at = np.empty((offs.size, size), np.int64)
    first = offs * size
    for j in range(size):
        np.add(first, j, out=at[:, j])
    return at.reshape(-1), positions


def attach_all(races: Races, tensors: Any) -> None:
    """Attach the shared-HBM storages among `tensors` (any nesting of lists, tuples, dicts)."""
    from ...tensor.targets import NKI_HBM
    stack = [tensors]
    while stack:
        t = stack.pop()
        if isinstance(t, (list, tuple)):
            stack.extend(t)
        elif isinstance(t, dict):
            stack.extend(t.values())
        else:
            storage = getattr(t, "storage", None)
            if isinstance(storage, Storage) and storage.buffer in NKI_HBM:
                races.attach(storage)
