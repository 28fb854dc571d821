"""Synchronisation a compiler inserts: pyasc's `insert_sync` pass, which orders the on-chip
dependencies of the kernel's `LocalTensorAuto`s (SPEC 18).

What the pass does (pyasc's `InsertSync`, `MaterializeTensor` and `InputOutputTensor` passes,
read as facts): each `LocalTensorAuto` operation becomes one buffer of its own (a one-deep
queue, or a VECCALC buffer when no copy to or from GM touches it), allocated where the tensor
is made and freed at the end of the enclosing block; after every instruction that writes such
a tensor it enqueues it (or, for a VECCALC buffer, puts a `PIPE_V` barrier), and it dequeues it
before the tensor's next user.  So on one core:

- a later access of the tensor, read or write, on any pipe follows the last instruction that
  wrote it (enque / barrier, then deque: read-after-write, write-after-write);
- a write into the buffer after it is made again (the next loop iteration) follows every
  access of the tensor it held before (free at the block's end, alloc: write-after-read);
- a write after a read of the *same* tensor, with no new allocation between, is ordered by
  nothing the pass inserts, and stays a race the checker reports.

An `AutoBuffer` keeps those three facts as clock snapshots; `Sync.access` joins the accessing
pipe's clock with them before it checks (`order`) and records the access after (`record`).
Global memory is not the pass's business: races there are reported as in any kernel."""

from __future__ import annotations

from typing import Any

from .pipes import PIPE_INDEX

_S, _V = PIPE_INDEX["S"], PIPE_INDEX["V"]


def _merge(snaps: list[list[int]]) -> list[int]:
    n = max(len(s) for s in snaps)
    return [max(s[q] if q < len(s) else 0 for s in snaps) for q in range(n)]


class AutoBuffer:
    """The buffer of one `LocalTensorAuto` operation: its region bytes [lo, hi] in region
    `rkey`, and what its accesses so far carry (clock snapshots)."""

    __slots__ = ("rkey", "lo", "hi", "written", "reads", "freed")

    def __init__(self, rkey: Any, lo: int, hi: int) -> None:
        self.rkey, self.lo, self.hi = rkey, lo, hi
        self.written: list[int] | None = None   # after the last write of the tensor it holds
        self.reads: dict[int, list[int]] = {}   # per pipe, after its last read since then
        self.freed: list[int] | None = None     # after every access of the tensors before

    def reallocate(self) -> None:
        """The tensor is made again: the old one is freed (at its block's end), and the next
        write into these bytes follows every access of it."""
        snaps = [s for s in (self.written, self.freed, *self.reads.values()) if s is not None]
        self.freed = _merge(snaps) if snaps else None
        self.written = None
        self.reads = {}


def register(sync: Any, rkey: Any, lo: int, hi: int) -> AutoBuffer:
    """A new auto buffer of checker `sync` (one per `LocalTensorAuto` operation and core)."""
    buf = AutoBuffer(rkey, lo, hi)
    sync.auto.setdefault(rkey, []).append(buf)
    return buf


def order(sync: Any, p: int, entries: Any) -> list[tuple[AutoBuffer, bool]]:
    """Before an instruction on pipe `p` (local index) with these plan entries: join its clock
    with what the pass's enque/deque and alloc/free give it; the buffers it touches."""
    touched: list[tuple[AutoBuffer, bool]] = []
    auto = sync.auto
    for rkey, lo, hi, write, _static, _role in entries:
        for b in auto.get(rkey, ()):
            if b.hi < lo or hi < b.lo:
                continue
            if b.written is not None:
                sync.join(p, b.written)
            if write and b.freed is not None:
                sync.join(p, b.freed)
            touched.append((b, bool(write)))
    return touched


def record(sync: Any, p: int, touched: list[tuple[AutoBuffer, bool]]) -> None:
    """After the instruction: what pipe `p` knows now, itself included, is what a later user
    of the buffers it wrote (or a later writer, for those it read) waits for."""
    snap = sync.snapshot(p)
    for b, write in touched:
        if write:
            b.written = snap
        else:
            b.reads[p] = snap


def scalar_before(sync: Any) -> None:
    """The pass's `V_S` event before a `get_value`/`set_value`: the scalar access follows the
    vector pipe's instructions so far."""
    sync.join(_S, sync.snapshot(_V))


def scalar_after(sync: Any) -> None:
    """The pass's `S_V` event after it: later vector instructions follow the scalar access."""
    sync.join(_V, sync.snapshot(_S))
