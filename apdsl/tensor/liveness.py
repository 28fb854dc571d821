"""On-chip allocation by liveness: a tile is live from its first access to its last access,
not from its declaration to the moment Python drops it.

NKI's allocator gives a tile its address at its first write and takes it back after its last
read (aws-neuron-sdk, nki.compiler.Allocation: LINEAR), in program order.  A kernel may declare
its tiles long before it uses them (nki-library's MoE kernels declare lists of accumulators up
front) and keep a dead tile named by a local variable until its function returns (nki-library's
blockwise matmul keeps `tmp_psum`); what counts is what is live.  neuronx-cc's default flow
reorders instructions and spills what overflows, so it can accept what this rule refuses
(`apdsl explain APK302`).  The rule, exact:

    a tensor is *live at* the first access T of another when it was accessed before T (read or
    written by any instruction, DMA, host read...) and is accessed at or after T; a program is
    accepted exactly when, at every tensor's first access, the live tensors plus that one fit
    the buffer.

apdsl decides it online.  A declaration whose buffer has room beside every tensor Python still
holds is placed then: whatever is live later is among those.  One that has no room takes no
space yet: it is `PENDING` (a truthy `freed`, so its first access takes the path that checks
`freed`) and its first access places it (`start`).  When that finds no room beside the tensors
held, it is an *overdraft* (`Overdraft`): the held tensors never accessed yet (`started`: no
written state) are not live, and become `PENDING` too; every other tensor held then (of those
apdsl places itself) is *waiting*: maybe dead.  Its storage is marked `freed = DORMANT`, a
truthy value, so the `freed` check every access already makes
(`apdsl.runtime.core.resolve.check_live`, with the plans' executors falling back to it) costs
nothing more while no overdraft is pending.  A waiting tensor accessed again is live at the
overdraft: `revive` adds it to the overdraft's live set and checks that the set still fits,
else APK302 located at the overdraft's tensor's declaration (SPEC 4), naming the tensor and
where it was accessed.  A waiting tensor freed (Python dropped it, its block ended) was dead:
it stops waiting.  No tensor is chosen as a victim, so no choice can refuse a program wrongly;
each storage keeps its own bytes, so nothing is overwritten.

Fit is decided as `apdsl.tensor.room` places tensors (largest first, a PSUM tile of at most a bank
inside one bank, a larger one keeping its offset within a bank), around the tensors placed by
hand (`address=`), which are counted live while Python holds them (their bytes are the
program's to manage).  Fragmentation between apdsl's own tensors is ignored, as an allocator that
knows every tile's lifetime places them without it.  Buffers outside NKI's SBUF and PSUM keep the
held-tensor rule (Ascend's on-chip buffers: their addresses feed the synchronisation checker).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..errors import TargetError
from . import room
from .machine import current

Block = tuple[int, int, int]  # (storage id, start, size) of a buffer's accounting


class _State:
    """A `freed` value that is not a freed storage: truthy, so every access takes the path
    that checks `freed`, and not `True`."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return self._name


# a storage an overdraft is waiting on
DORMANT = _State("DORMANT")
# a storage that holds no space yet: allocated but not accessed since (a declaration that did
# not fit then, or a tile an overdraft found never used); its first access places it (`start`)
PENDING = _State("PENDING")


def started(storage: Any) -> bool:
    """Whether `storage` was accessed yet: some of it written (written state records every
    write, in check mode too), or read (reading unwritten data records it the same way)."""
    return storage.all_written or storage._mask is not None or storage.taint is not None


class Overdraft:
    """An allocation that did not fit the tensors Python held: what it needed and what it
    waits on.  `fixed`: the hand-placed tensors then held (start, size), counted live; `live`:
    the new tensor and the waiting ones accessed since (id -> (start, size)); `waiting`: the
    held tensors not accessed since (id -> (start, size))."""

    __slots__ = ("buffer", "capacity", "bank", "new", "span", "fixed", "live", "waiting", "unit",
                 "target", "shape", "dtype", "name")

    def __init__(self, storage: Any, addr: int, size: int, capacity: int, bank: int | None,
                 fixed: list[tuple[int, int]], waiting: dict[int, tuple[int, int]]) -> None:
        self.buffer = storage.buffer
        self.capacity = capacity
        self.bank = bank
        self.new = storage.id
        self.span = storage.span
        self.fixed = fixed
        self.live: dict[int, tuple[int, int]] = {storage.id: (addr, size)}
        self.waiting = waiting
        self.target = storage.target
        self.shape, self.dtype = storage.shape, storage.dtype
        self.name = storage.name

    def fits(self) -> bool:
        return fits(self.fixed, self.live, self.capacity, self.bank)


def fits(fixed: list[tuple[int, int]], blocks: dict[int, tuple[int, int]], capacity: int,
         bank: int | None) -> bool:
    """Whether `blocks` (id -> (start, size)) can all be placed around `fixed`."""
    return room.plan(fixed, [(sid, s, n) for sid, (s, n) in blocks.items()], capacity,
                     bank) is not None


def overdraw(acc: Any, storage: Any, size: int, capacity: int, bank: int | None,
             addr: int, first: bool = False) -> int:
    """The allocation of `storage` (`size` bytes of `capacity`; `addr`: where `acc.place` put
    it, -1 when nothing held leaves room) by liveness: its address, or -1 when even the
    tensors that must be live (the hand-placed ones) leave no room.  Called only when `addr`
    is -1 or the buffer has waiting tensors.  At the declaration (`first` False) a tensor
    that does not fit beside everything held takes no space yet: it is `PENDING` (address
    0 until placed) and its first access places it (`start`, which calls this with `first`
    True): a tile is live from its first access, as NKI's allocator gives a tile its address
    at its first write."""
    buffer = storage.buffer
    shelved = {sid: (start, n) for sid, (buf, start, n) in acc.shelf.items() if buf == buffer}
    if addr >= 0 and not shelved:
        return addr  # (waiting tensors of other buffers only: `place` decided)
    blocks = acc.live.get(buffer, [])
    fixed, mine = [], {}
    for sid, start, n in blocks:
        if sid == storage.id:
            continue
        owner = acc.owner(sid)
        if owner is not None and owner.fixed_address:
            fixed.append((start, n))
        else:
            mine[sid] = (start, n)
    mine.update(shelved)
    if addr >= 0 and fits(fixed, {**mine, storage.id: (addr, size)}, capacity, bank):
        return addr  # everything held fits: whatever is live does
    if not fits(fixed, {storage.id: (0, size)}, capacity, bank):
        return -1 if addr < 0 else addr  # no room even beside the hand-placed ones alone
    if not first:  # the declaration: its space is taken at its first access
        if addr >= 0:
            acc.release_block(storage.id, buffer)
        storage.freed = PENDING
        return 0
    for sid in [sid for sid in mine if sid not in acc.shelf]:
        owner = acc.owner(sid)
        if owner is not None and not started(owner):  # allocated, never used: not live yet
            acc.release_block(sid, buffer)
            owner.freed = PENDING
            del mine[sid]
    if addr < 0:  # (room the tiles not used yet gave back)
        addr = acc.place(storage.id, buffer, size, capacity, bank, weakref.ref(storage))
    if addr >= 0 and fits(fixed, {**mine, storage.id: (addr, size)}, capacity, bank):
        return addr
    if not mine:
        return addr
    for sid, (start, n) in list(mine.items()):
        if sid not in acc.shelf:
            shelve(acc, sid, buffer, start, n)
    if addr < 0:
        addr = acc.place(storage.id, buffer, size, capacity, bank, weakref.ref(storage))
        if addr < 0:
            return -1
    o = Overdraft(storage, addr, size, capacity, bank, fixed, mine)
    for sid in mine:
        acc.watch.setdefault(sid, []).append(o)
    return addr


def shelve(acc: Any, sid: int, buffer: str, start: int, size: int) -> None:
    """Take block `sid` out of its buffer's live blocks while overdrafts wait on it."""
    acc.release_block(sid, buffer)
    acc.shelf[sid] = (buffer, start, size)
    owner = acc.owner(sid)
    if owner is not None:
        owner.freed = DORMANT


def start(storage: Any) -> None:
    """The first access of `PENDING` storage: it takes its space now, beside what is live
    (an overdraft when the tensors held leave no room), else APK302 at its declaration."""
    acc = storage._accounting
    t = storage.target
    buffer = storage.buffer
    cap = t.capacity_of(buffer)
    bank = t.psum_bank_bytes if buffer == "psum" else None
    size = storage.charged_bytes(storage.shape[0] if storage.shape else 1)
    storage.freed = False
    addr = acc.place(storage.id, buffer, size, cap, bank, weakref.ref(storage))
    if addr < 0 or acc.shelf:
        addr = overdraw(acc, storage, size, cap, bank, addr, first=True)
    if addr < 0:
        storage.freed = True  # (it holds nothing: no release owed)
        storage._accounting = None
        unit = " per partition"
        used = acc.used(buffer)
        raise TargetError(
            f"allocating {size} bytes{unit} in {buffer} exceeds its capacity "
            f"({cap} bytes{unit} on {t.name}, {used} already in use)",
            code="APK302", span=storage.span, notes=[
                t.describe(buffer), f"shape = {storage.shape}, dtype = {storage.dtype}",
                "the tensors placed with address= leave it no room at its first access"],
            help="use smaller tiles, or place fewer tensors by hand",
            requested=size, capacity=cap, in_use=used)
    storage.address = addr


# where the access that revives a tensor happened (`apdsl.nki` installs the user frame's span;
# else the statement under way)
here: Callable[[], Any] | None = None


def revive(storage: Any, op: str, role: str) -> None:
    """Waiting `storage` is accessed (by `op`, as `role`): it is live at every overdraft that
    waits on it.  APK302 at the first overdraft whose live set no longer fits."""
    acc = storage._accounting
    sid = storage.id
    storage.freed = False
    buffer, start, size = acc.shelf.pop(sid)
    over = None
    for o in acc.watch.pop(sid, ()):
        o.waiting.pop(sid, None)
        o.live[sid] = (start, size)
        if over is None and not o.fits():
            over = o
    if over is not None:
        # counted where it was (the accounting stays whole for a session that goes on)
        acc.claim(sid, buffer, start, size, weakref.ref(storage))
        _refuse(acc, over, storage, op, role)
    _return(acc, storage, buffer, start, size)


def _return(acc: Any, storage: Any, buffer: str, start: int, size: int) -> None:
    """Put a revived storage back among its buffer's live blocks: at its address when free,
    else moved clear of the others (its recorded address is apdsl's choice, as in
    `apdsl.tensor.room`)."""
    t = storage.target
    cap = t.capacity_of(buffer)
    bank = t.psum_bank_bytes if buffer == "psum" else None
    blocks = acc.live.setdefault(buffer, [])
    taken = [(s, n) for _, s, n in blocks]
    if not any(s < start + size and start < s + n for s, n in taken):
        acc.claim(storage.id, buffer, start, size, weakref.ref(storage))
        return
    moved = room.plan(taken, [(storage.id, start, size)], cap, bank)
    if moved is None:  # all of apdsl's own tensors of the buffer at once
        owners = {sid: acc.owner(sid) for sid, _, _ in blocks}
        fixed = [(s, n) for sid, s, n in blocks
                 if owners[sid] is not None and owners[sid].fixed_address]
        movers = [b for b in blocks if owners[b[0]] is None or not owners[b[0]].fixed_address]
        moved = room.plan(fixed, [*movers, (storage.id, start, size)], cap, bank)
        if moved is None:
            raise TargetError(
                f"{storage.describe()} is accessed again, and the {buffer} tensors live now "
                "leave it no room at any address", code="APK302", notes=[
                    t.describe(buffer), "the live tensors fit in total; apdsl's own placement "
                    "of them cannot place them all around the tensors placed with address="],
                help="place fewer tensors by hand, or free tensors without an address earlier",
                requested=size, capacity=cap)
        for sid, at in moved.items():
            if sid != storage.id:
                acc.move(sid, buffer, at)
                acc.owner(sid).address = at
    at = moved[storage.id]
    storage.address = at
    acc.claim(storage.id, buffer, at, size, weakref.ref(storage))


def _refuse(acc: Any, o: Overdraft, storage: Any, op: str, role: str) -> None:
    where = current().span  # (the statement under way, in a .apk program)
    if where is None and here is not None:
        where = here()
    at = f" at line {where.line}" if where is not None else ""
    made = f" (line {storage.span.line})" if storage.span is not None else ""
    new_size = o.live[o.new][1]
    used = sum(n for sid, (_, n) in o.live.items() if sid != o.new) + sum(n for _, n in o.fixed)
    onchip = o.buffer in ("sbuf", "psum")
    unit = " per partition" if onchip else ""
    held = []
    for sid, (_, n) in sorted(o.live.items(), key=lambda kv: -kv[1][1]):
        if sid == o.new:
            continue
        owner = acc.owner(sid)
        what = "a tensor apdsl cannot name" if owner is None else owner.describe()
        line = getattr(owner, "span", None)
        held.append(f"{what}{f' (line {line.line})' if line is not None else ''}: "
                    f"{n} bytes{unit}")
    raise TargetError(
        f"allocating {new_size} bytes{unit} in {o.buffer} exceeds its capacity "
        f"({o.capacity} bytes{unit} on {o.target.name}, {used} already in use)",
        code="APK302", span=o.span, notes=[
            o.target.describe(o.buffer), f"shape = {o.shape}, dtype = {o.dtype}",
            f"{storage.describe()}{made} is accessed again{at} ({op}, {role}), after this "
            "tensor's first access: it is live there, with this tensor",
            f"in use in {o.buffer} (live here): " + "; ".join(held[:4]) + (f"; and {len(held) - 4} more"
                                                   if len(held) > 4 else ""),
            "a tensor is live from its first access to its last, in program order (tiles "
            "not used yet, or no longer, take no space); the Neuron compiler's default flow "
            "may reorder instructions or spill to HBM instead (apdsl explain APK302)"],
        help="use smaller tiles, or end the use of a tensor before allocating the next",
        requested=new_size, capacity=o.capacity, in_use=used, tensor=o.name,
        accessed=storage.name)

