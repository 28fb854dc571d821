"""pyasc's `asc.TPipe`, `asc.TQue` and `asc.TBuf` on apdsl's queue model
(`apdsl.runtime.ascend.queues`: enque/deque order the producer's and consumer's pipes, misuse
is an error): the same objects with pyasc's parameters (`init_buffer(que=, num=, len=)`,
`alloc_tensor(dtype)`, `deque(dtype)`), taking pyasc's data types and handing out
`LocalTensor`s, whose `t[k:]` is AscendC's operator[]."""

from __future__ import annotations

from typing import Any

from ..nki.locate import assigned_name, caller_span
from ..runtime.ascend import queues as model
from .auto import refuse_queues
from .errors import missing
from .memory import LocalTensor, unwrap


def _dtype(dtype: Any) -> Any:
    """A pyasc data type (`asc.float16`, `x.dtype`) as apdsl names it."""
    return getattr(dtype, "name", dtype) if dtype is not None else None


def _local(tensor: Any) -> LocalTensor:
    return LocalTensor(tensor=tensor)


class TQue:
    """`asc.TQue(pos, depth)`: a queue from the position's producer pipe to its consumer."""

    def __init__(self, pos: Any = "VECIN", depth: Any = 1, mask: Any = 0) -> None:
        refuse_queues("TQue")
        self.model = model.TQue(pos, 1 if depth is None else depth)
        self.model.name = assigned_name() or self.model.name  # diagnostics say in_queue_x[0]

    def alloc_tensor(self, dtype: Any = None, shape: Any = None, *,
                     tensor: LocalTensor | None = None) -> LocalTensor | None:
        """`alloc_tensor(dtype)`: the next free buffer as a LocalTensor; `alloc_tensor(t)`
        (pyasc's in-place form) makes LocalTensor t that buffer."""
        if isinstance(dtype, LocalTensor):
            dtype, tensor = None, dtype
        if tensor is not None:
            tensor.tensor = self._allocated(self.model.alloc_tensor(tensor.tensor.dtype.name))
            return None
        return _local(self._allocated(self.model.alloc_tensor(_dtype(dtype) or "float16",
                                                              shape)))

    def _allocated(self, t: Any) -> Any:
        """`t`, its buffer's allocation recorded at the user's line (the queue's notes name
        it: a Python kernel sets no statement location between instructions)."""
        span = caller_span(3)
        if span is not None:
            for i, held in enumerate(self.model.tensor):
                if held is t:
                    self.model.allocated[i] = (span.file, span.line)
        return t

    def enque(self, tensor: Any) -> None:
        self.model.enque(unwrap(tensor))

    def deque(self, dtype: Any = None, shape: Any = None, *,
              tensor: LocalTensor | None = None) -> LocalTensor | None:
        """`deque(dtype)`: the oldest enqueued tensor; `deque(t)` (in place) makes t it."""
        if isinstance(dtype, LocalTensor):
            dtype, tensor = None, dtype
        if tensor is not None:
            tensor.tensor = self.model.deque(tensor.tensor.dtype.name)
            return None
        return _local(self.model.deque(_dtype(dtype), shape))

    def free_tensor(self, tensor: Any) -> None:
        self.model.free_tensor(unwrap(tensor))

    def get_tensor_count_in_que(self) -> int:
        return self.model.get_tensor_count_in_que()

    def has_tensor_in_que(self) -> bool:
        return self.model.has_tensor_in_que()

    def has_idle_buffer(self) -> bool:
        return self.model.has_idle_buffer()

    def vacant_in_que(self) -> bool:
        return self.model.vacant_in_que()

    def free_all_event(self) -> None:
        """Releases the queue's events on hardware; apdsl's queues hold none past a deque."""

    def __repr__(self) -> str:
        return f"<TQue {self.model.name} {self.model.position}>"

    def __getattr__(self, name: str) -> Any:
        raise _absent("TQue", name)


class TQueBind(TQue):
    """`asc.TQueBind(src, dst, depth)`: a queue for data moving from position `src` to `dst`
    (AscendC's TQueBind table: GM -> VECIN/A1/B1/C1 and VECOUT -> GM are those positions'
    TQue, A1 -> A2, B1 -> B2, C1 -> C2 and CO1 -> CO2 the TQue of the L0/BT/L0C end,
    VECIN -> VECOUT one UB buffer from MTE2 to MTE3)."""

    def __init__(self, src: Any = "VECIN", dst: Any = "VECIN", depth: Any = 0,
                 mask: Any = 0) -> None:
        refuse_queues("TQueBind")
        pos = model.bind_position(src, dst, "TQueBind")
        self.model = model.TQue(pos, 0 if depth is None else depth)
        self.model.name = assigned_name() or self.model.name


class TBuf:
    """`asc.TBuf(pos)`: a buffer without a queue (scratch space; no synchronisation)."""

    def __init__(self, pos: Any = "VECCALC") -> None:
        refuse_queues("TBuf")
        self.model = model.TBuf(pos)
        self.model.name = assigned_name() or self.model.name

    def get(self, dtype: Any = None, len: Any = None, shape: Any = None) -> LocalTensor:  # noqa: A002
        return _local(self.model.get(_dtype(dtype) or "float16", len, shape))

    def get_with_offset(self, size: Any, buf_offset: Any, dtype: Any = None) -> LocalTensor:
        return _local(self.model.get_with_offset(size, buf_offset, _dtype(dtype) or "float16"))

    def alloc_tensor(self, dtype: Any = None) -> LocalTensor:
        """pyasc's TBuf is a TQueBind without a queue: alloc_tensor is the whole buffer."""
        return self.get(dtype)

    def free_tensor(self, tensor: Any) -> None:
        """A TBuf's buffer stays its own: nothing to give back, no event (no queue)."""

    def __getattr__(self, name: str) -> Any:
        raise _absent("TBuf", name)

    def __repr__(self) -> str:
        return f"<TBuf {self.model.name} {self.model.position}>"


class TPipe:
    """`asc.TPipe()`: gives queues and TBufs their buffers."""

    def __init__(self) -> None:
        self.model = model.TPipe()

    def init_buffer(self, que: Any = None, num: Any = 0, len: Any = 0, *,  # noqa: A002
                    buf: Any = None) -> None:
        """`init_buffer(que, num, len)`: num buffers of len bytes; `init_buffer(buf, num)`: a
        TBuf of num bytes (pyasc's parameters)."""
        target = buf if que is None else que
        inner = getattr(target, "model", target)
        self.model.init_buffer(inner, num, len)

    def init(self) -> None:
        """AscendC's Init: a TPipe is ready when made on apdsl."""

    def destroy(self) -> None:
        """AscendC's Destroy: the buffers end with the kernel on apdsl."""

    reset = destroy

    def __getattr__(self, name: str) -> Any:
        raise _absent("TPipe", name)


def _absent(owner: str, name: str) -> Exception:
    """`obj.NAME` of a pyasc object apdsl lacks: APK660 at the user's line."""
    if name.startswith("_"):
        return AttributeError(name)
    return missing(f"{owner}.{name}").replace(span=caller_span(3))
