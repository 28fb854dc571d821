"""TPipe, TQue and TBuf (SPEC 17): AscendC's buffer management, and the synchronisation its
queues imply.

`TPipe.init_buffer(que, num, len)` gives a queue `num` buffers of `len` bytes (32-byte
aligned) in the memory of its position: VECIN/VECOUT/VECCALC in UB, A1/B1 in L1, A2 in L0A, B2
in L0B, CO1 in L0C.  A queue links a producer pipe to a consumer pipe (the TPipe-TQue
programming guide: EnQue/DeQue order a write before its reads, AllocTensor/FreeTensor a read
before the next write of the buffer):

| position | memory | producer | consumer |
|---|---|---|---|
| VECIN | UB | MTE2 (GM -> UB) | V |
| VECOUT | UB | V | MTE3 (UB -> GM) |
| A1, B1 | L1 | MTE2 | MTE1 |
| A2, B2 | L0A, L0B | MTE1 | M |
| CO1 | L0C | M | FIX |

- `alloc_tensor` takes the next free buffer (in order); the producer pipe's later
  instructions follow the consumer's instructions before the buffer's last `free_tensor`.
- `enque(t)`: what the producer pipe has issued so far is what the tensor carries; `deque()`
  hands the oldest enqueued tensor to the consumer, whose later instructions follow it.  A
  dequeued tensor may be enqueued again (AscendC's EnQue takes a buffer allocated or dequeued:
  the state check of asc-devkit's TQueBind::EnQue accepts OCCUPIED or DEQUE), carrying what
  the producer pipe has issued by then.
- `free_tensor(t)`: the buffer is free once the consumer's instructions so far are done; the
  tensor can no longer be used (APK408: each allocation is a storage of its own over the
  buffer's bytes, freed by `free_tensor`, and starts unwritten: what the previous tensor left
  there is not its data).

So a kernel written with queues passes the race checker without explicit flags, as on
hardware.  Misuse is an error at the call (APK591-APK596): `alloc_tensor` with every buffer in
use, `enque` of more tensors than the queue's depth without a `deque` between, `deque` of an
empty queue, `enque`/`free_tensor` of a tensor that is not the queue's or not in the state the
call needs, a queue without `init_buffer`.  `TBuf` is a plain buffer (`get`,
`get_with_offset`): no synchronisation, as AscendC's VECCALC scratch space.  A VECCALC `TQue`
(the AscendC API docs allocate temporary buffers with `TQue<TPosition::VECCALC, 1>`) is a queue
from V to V: its bookkeeping and misuse errors are a queue's, but it orders nothing, since both
ends are the vector pipe, where two dependent accesses still need `pipe_barrier("V")`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ...errors import ApdslTypeError
from ...tensor.dtypes import dtype as to_dtype
from ...tensor.machine import current
from ...tensor.storage import Storage
from ...tensor.view import Tensor, ndarray, new_view
from ..sync.pipes import PIPE_INDEX

# position -> (memory, producer pipe, consumer pipe); a VECCALC queue runs from V to V
POSITIONS: dict[str, tuple[str, str, str]] = {
    "VECIN": ("ub", "MTE2", "V"), "VECOUT": ("ub", "V", "MTE3"), "VECCALC": ("ub", "V", "V"),
    "A1": ("l1", "MTE2", "MTE1"), "B1": ("l1", "MTE2", "MTE1"), "C1": ("l1", "MTE2", "MTE1"),
    "A2": ("l0a", "MTE1", "M"), "B2": ("l0b", "MTE1", "M"), "CO1": ("l0c", "M", "FIX"),
    "C2": ("bt", "MTE1", "M"),
    # TQueBind(VECIN, VECOUT): one UB buffer in and out again with no vector step (AscendC's
    # TQueBind page: the input and output share the buffer), from MTE2 to MTE3
    "VECIN>VECOUT": ("ub", "MTE2", "MTE3"),
}
ALIGN = 32  # InitBuffer rounds each buffer up to 32 bytes
MAX_BUFFERS = 8  # event ids per position on Atlas A2: at most 8 queue buffers (TQue docs)


def _err(message: str, code: str, help: str | None = None, notes: Any = (),
         **facts: Any) -> ApdslTypeError:
    return ApdslTypeError(message, code=code, help=help, notes=notes, **facts)


# TQueBind(src, dst): the TQue each of AscendC's listed paths is (its TQueBind table), or a
# position of its own (VECIN -> VECOUT); GM on either side is the other position's queue
BIND_AS = {("A1", "A2"): "A2", ("B1", "B2"): "B2", ("C1", "C2"): "C2", ("CO1", "CO2"): "CO1",
           ("VECIN", "VECOUT"): "VECIN>VECOUT"}


def bind_position(src: Any, dst: Any, what: str) -> str:
    """The queue position of `TQueBind(src, dst)` (APK591 for a path apdsl does not model)."""
    names = []
    for pos in (src, dst):
        name = getattr(pos, "name", pos)
        names.append(name.upper().removeprefix("TPOSITION.") if isinstance(name, str) else
                     repr(pos))
    a, b = names
    if a == b or b == "GM":
        return position_name(a, what)
    if a == "GM":
        return position_name(b, what)
    if (a, b) in BIND_AS:
        return BIND_AS[(a, b)]
    raise _err(f"{what}: TQueBind({a} -> {b}) is not a path apdsl models", "APK591",
               notes=["modelled: GM -> VECIN/A1/B1/C1, VECOUT -> GM, VECIN -> VECOUT, A1 -> A2, "
                      "B1 -> B2, C1 -> C2, CO1 -> CO2, and a position to itself"],
               help="use the TQue of the destination position, or the path through GM")


def position_name(pos: Any, what: str) -> str:
    """A TPosition given as `"VECIN"`, `asc.TPosition.VECIN` or an enum member so named."""
    name = getattr(pos, "name", pos)
    if isinstance(name, str):
        bare = name.upper().removeprefix("TPOSITION.")
        if bare in POSITIONS:
            return bare
        if bare in ("GM", "CO2", "MAX"):
            raise _err(f"{what}: TPosition.{bare} has no queue buffer on Atlas A2", "APK591",
                       help="queues live in VECIN, VECOUT (UB), A1, B1 (L1), A2 (L0A), B2 "
                       "(L0B) or CO1 (L0C); on Atlas A2 Fixpipe writes CO1 to GM directly")
    raise _err(f"{what}: unknown TPosition {pos!r}", "APK591",
               help="one of " + ", ".join(POSITIONS))


class _Slot(Storage):
    """One allocation of a queue buffer: storage over the buffer's bytes (its address and
    capacity belong to the buffer, which `TPipe.init_buffer` allocated)."""

    __slots__ = ("at",)
    queued = True  # freed by free_tensor, not by a block's end (APK408 says which)

    def __init__(self, like: Storage, at: int, name: str) -> None:
        self.at = at
        super().__init__(like.shape, like.dtype, like.buffer, name=name, format=like.format,
                         storage_elements=like.nbytes * 8 // like.dtype.bits, c0=like.c0)

    def _account(self) -> int:
        return self.at


class Buffers:
    """The `num` buffers `init_buffer` gave a queue or TBuf: one storage holding them all."""

    def __init__(self, owner: str, position: str, num: int, nbytes: int) -> None:
        memory = POSITIONS[position][0]
        self.size = -(-nbytes // ALIGN) * ALIGN
        self.num = num
        self.memory = memory
        self.backing = ndarray((num * self.size,), "uint8", memory, name=owner)
        self.base = self.backing.storage.address

    def slot(self, i: int, dtype: Any, name: str, shape: Any = None,
             format: str = "ND") -> Tensor:  # noqa: A002
        """A new tensor over buffer `i`: 1-D over the whole buffer, or of `shape` (in
        `format`), which must fit in it."""
        dt = to_dtype(dtype)
        if shape is None:
            shape = (self.size * 8 // dt.bits,)
        with current().child().active():  # the layout any allocation would have, unplaced
            like = ndarray(tuple(shape), dt, self.memory, format or "ND", name=name)
        if like.storage.nbytes > self.size:
            raise _err(f"{name}: a {dt}{list(shape)} tensor needs {like.storage.nbytes} bytes; "
                       f"the buffer holds {self.size}", "APK592",
                       help="give the queue bigger buffers (init_buffer's len, in bytes)")
        s = _Slot(like.storage, self.base + i * self.size, name)
        return new_view(s, like.dtype, like.layout)


class TPipe:
    """`asc.TPipe()`: gives queues and TBufs their buffers."""

    APK_ATTRS = frozenset({"init_buffer"})

    def init_buffer(self, que: Any, num: Any = 0, len: Any = 0) -> None:  # noqa: A002
        """`init_buffer(que, num, len)`: `num` buffers of `len` bytes; `init_buffer(tbuf,
        len)` (pyasc's second parameter is the TBuf's bytes)."""
        if isinstance(que, TBuf):
            que.init(num if not len else len)
            return
        if not isinstance(que, TQue):
            raise _err(f"init_buffer: {type(que).__name__} is not a TQue or TBuf", "APK592")
        que.init(num, len)


class TQue:
    """`asc.TQue(position, depth)`: a queue from the position's producer pipe to its
    consumer pipe (see the module docstring)."""

    APK_ATTRS = frozenset({"alloc_tensor", "enque", "deque", "free_tensor",
                           "get_tensor_count_in_que", "has_tensor_in_que", "has_idle_buffer",
                           "vacant_in_que"})
    _count = 0

    def __init__(self, position: Any = "VECIN", depth: Any = 1) -> None:
        pos = position_name(position, "TQue")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise _err(f"TQue: depth {depth!r} is not an int >= 0", "APK592")
        self.position = pos
        self.depth = depth
        TQue._count += 1
        self.name = f"que{TQue._count}"
        self.buffers: Buffers | None = None
        self.state: list[str] = []       # per buffer: free, held, queued, dequeued
        self.tensor: list[Tensor | None] = []
        self.free_snap: list[Any] = []  # per buffer: what its last free_tensor carried
        self.allocated: list[Any] = []
        self.enqueued: deque[tuple[int, Any]] = deque()  # (buffer, what enque carried)
        self.next = 0

    def init(self, num: Any, nbytes: Any) -> None:
        if self.buffers is not None:
            raise _err(f"init_buffer: {self.name} already has its buffers", "APK592")
        for v, what in ((num, "num"), (nbytes, "len")):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise _err(f"init_buffer: {what} {v!r} is not a positive int", "APK592")
        if num > MAX_BUFFERS:
            raise _err(f"init_buffer: {num} buffers; a queue has at most {MAX_BUFFERS} on "
                       "Atlas A2 (one event id each)", "APK592",
                       help="double buffering uses 2")
        self.buffers = Buffers(self.name, self.position, num, nbytes)
        self.state = ["free"] * num
        self.tensor = [None] * num
        self.free_snap = [None] * num
        self.allocated: list[Any] = [None] * num  # where each buffer's tensor was allocated

    # -- the pipes ------------------------------------------------------------------------
    def _pipes(self) -> tuple[int, int]:
        _, src, dst = POSITIONS[self.position]
        return PIPE_INDEX[src], PIPE_INDEX[dst]

    def _sync(self) -> Any:
        """The race checker, when the queue orders pipes: a queue from a pipe to itself (V to
        V, VECCALC) orders nothing, since only `pipe_barrier("V")` orders two V accesses."""
        _, src, dst = POSITIONS[self.position]
        return current().sync if src != dst else None

    def _which(self, t: Any, what: str) -> int:
        if isinstance(t, Tensor):
            for i, held in enumerate(self.tensor):
                if held is not None and held.storage is t.storage:
                    return i
        raise _err(f"{self.name}.{what}: the tensor is not one this queue allocated (or it "
                   "was freed)", "APK595",
                   help="pass the tensor alloc_tensor or deque of this queue returned")

    def _ready(self, what: str) -> Buffers:
        if self.buffers is None:
            raise _err(f"{self.name}.{what}: the queue has no buffers", "APK592",
                       help="pipe.init_buffer(que, num, bytes) first")
        return self.buffers

    # -- the API -------------------------------------------------------------------------------
    def alloc_tensor(self, dtype: Any = "float16", shape: Any = None,
                     format: str = "ND") -> Tensor:  # noqa: A002
        bufs = self._ready("alloc_tensor")
        order = [(self.next + k) % bufs.num for k in range(bufs.num)]
        free = [i for i in order if self.state[i] == "free"]
        if not free:
            states = ", ".join(f"{self.state[i]}" for i in range(bufs.num))
            raise _err(f"{self.name}.alloc_tensor: all {bufs.num} buffers of the queue are in "
                       f"use ({states})", "APK593",
                       help="free_tensor a tensor of this queue first, or give the queue "
                       "more buffers (pipe.init_buffer(que, num, bytes))")
        i = free[0]
        self.next = (i + 1) % bufs.num
        t = bufs.slot(i, dtype, f"{self.name}[{i}]", shape, format)
        sync = self._sync()
        snap = self.free_snap[i]
        if sync is not None and snap is not None:
            sync.join(self._pipes()[0], snap)
        self.state[i] = "held"
        self.tensor[i] = t
        self.allocated[i] = current().location
        return t

    def enque(self, t: Any) -> None:
        self._ready("enque")
        i = self._which(t, "enque")
        if self.state[i] not in ("held", "dequeued"):
            raise _err(f"{self.name}.enque: the tensor is {self.state[i]}; a tensor is "
                       "enqueued after alloc_tensor or deque gave it (once)", "APK595")
        if self.depth and len(self.enqueued) >= self.depth:
            raise _err(f"{self.name}.enque: the queue already holds {len(self.enqueued)} "
                       f"tensor{'s' if len(self.enqueued) != 1 else ''}, its depth", "APK594",
                       help=f"deque before enqueuing again, or make the queue deeper "
                       f"(TQue(position, {len(self.enqueued) + 1}))")
        sync = self._sync()
        snap = sync.snapshot(self._pipes()[0]) if sync is not None else None
        self.state[i] = "queued"
        self.enqueued.append((i, snap))

    def deque(self, dtype: Any = None, shape: Any = None) -> Tensor:
        self._ready("deque")
        if not self.enqueued:
            held = [i for i, st in enumerate(self.state) if st == "held"]
            where = self.allocated[held[0]] if held else None
            notes = ["on hardware DeQue waits for the producer's EnQue event: a deque of an "
                     "empty queue waits forever (a deadlock)"]
            if where is not None:
                notes.append(f"the tensor alloc_tensor gave at line {where[1]} was never "
                             "enqueued")
            raise _err(f"deadlock: {self.name}.deque of an empty queue (no enque since the "
                       "last deque)", "APK596", notes=notes,
                       help="enque the tensor on the producer's side (after the copy that "
                       "fills it) before the consumer deques it")
        i, snap = self.enqueued.popleft()
        sync = self._sync()
        if sync is not None and snap is not None:
            sync.join(self._pipes()[1], snap)
        self.state[i] = "dequeued"
        t = self.tensor[i]
        assert t is not None
        if dtype is not None and to_dtype(dtype) != t.dtype:
            t = t.view(to_dtype(dtype))
        if shape is not None and tuple(shape) != tuple(t.shape):
            t = t.reshape(tuple(shape))
        return t

    def free_tensor(self, t: Any) -> None:
        self._ready("free_tensor")
        i = self._which(t, "free_tensor")
        if self.state[i] == "queued":
            raise _err(f"{self.name}.free_tensor: the tensor is still in the queue", "APK595",
                       help="deque it first")
        sync = self._sync()
        self.free_snap[i] = sync.snapshot(self._pipes()[1]) if sync is not None else None
        held = self.tensor[i]
        assert held is not None
        held.storage.free()  # using it after this is APK408
        self.state[i] = "free"
        self.tensor[i] = None

    def get_tensor_count_in_que(self) -> int:
        return len(self.enqueued)

    def has_tensor_in_que(self) -> bool:
        return bool(self.enqueued)

    def has_idle_buffer(self) -> bool:
        return "free" in self.state

    def vacant_in_que(self) -> bool:
        return not self.depth or len(self.enqueued) < self.depth


class TBuf:
    """`asc.TBuf(position)`: a buffer without a queue (VECCALC scratch)."""

    APK_ATTRS = frozenset({"get", "get_with_offset"})
    _count = 0

    def __init__(self, position: Any = "VECCALC") -> None:
        self.position = position_name(position, "TBuf")
        TBuf._count += 1
        self.name = f"tbuf{TBuf._count}"
        self.buffers: Buffers | None = None

    def init(self, nbytes: Any) -> None:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise _err(f"init_buffer: len {nbytes!r} is not a positive int", "APK592")
        self.buffers = Buffers(self.name, self.position, 1, nbytes)
        # one storage over the whole buffer, its bytes seen through every dtype asked for
        self.bytes = self.buffers.slot(0, "uint8", self.name)

    def get(self, dtype: Any = "float16", len: Any = None, shape: Any = None) -> Tensor:  # noqa: A002
        if self.buffers is None:
            raise _err(f"{self.name}.get: the buffer has no memory", "APK592",
                       help="pipe.init_buffer(tbuf, bytes) first")
        dt = to_dtype(dtype)
        t = self.bytes if dt.bits == 8 and dt.name == "uint8" else self.bytes.view(dt)
        if len is not None:
            t = t[0:len]
        if shape is not None:
            t = t.reshape(tuple(shape))
        return t

    def get_with_offset(self, size: Any, buf_offset: Any, dtype: Any = "float16") -> Tensor:
        t = self.get("uint8")[buf_offset:buf_offset + size * to_dtype(dtype).bits // 8]
        return t.view(to_dtype(dtype))
