"""pyasc's automatic synchronisation: `asc.LocalTensorAuto(dtype, shape)` and the kernels its
compiler's `insert_sync` pass synchronises (`@asc.jit(insert_sync=True)`, or any kernel that
makes a `LocalTensorAuto`, as pyasc decides).

In such a kernel the compiler places each `LocalTensorAuto` operation in a UB buffer of its own
(made again, so freed and allocated again, each time the operation runs: one buffer per
operation, not per tensor) and orders the tensor's on-chip dependencies itself; it also erases
the kernel's own `set_flag`/`wait_flag`/`pipe_barrier` and fences each `get_value`/`set_value`
with the vector pipe (`V_S` before, `S_V` after).  apdsl models the same
(`apdsl.runtime.sync.auto` says what is ordered and what stays a race), so the race checker
still reports what the pass leaves unordered: global memory, and a write after a read of the
same tensor with no new allocation between.  The kernel's queues are rewritten by the pass in
ways apdsl does not model: a `TQue`/`TBuf` in such a kernel is APK660.
"""

from __future__ import annotations

from math import prod
from typing import Any

from ..errors import ApdslTypeError
from ..nki.locate import assigned_name, caller_span
from .errors import missing
from .memory import LocalTensor
from .placement import placement
from .served import auto_sync


class LocalTensorAuto(LocalTensor):
    """`asc.LocalTensorAuto(dtype, shape)`: a UB tensor the compiler places and synchronises
    (see the module docstring); `shape` an element count or a tuple of them (apdsl's tensor
    is the flat one of that many elements)."""

    def __init__(self, dtype: Any = None, shape: Any = None) -> None:  # noqa: D107
        span = caller_span(2)
        if not auto_sync():
            raise ApdslTypeError(
                "asc.LocalTensorAuto in a kernel compiled with insert_sync=False: nothing "
                "synchronises or places it", code="APK667",
                help="drop insert_sync=False (pyasc turns it on for a kernel that makes a "
                "LocalTensorAuto), or use LocalTensor or TQue with explicit synchronisation"
            ).replace(span=span)
        dims = shape if isinstance(shape, (tuple, list)) else (shape,)
        if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                               for d in dims):
            raise ApdslTypeError(
                f"asc.LocalTensorAuto({getattr(dtype, 'name', dtype)}, {shape!r}): the shape "
                "is a positive element count or a tuple of them", code="APK667"
            ).replace(span=span)
        name = getattr(dtype, "name", None) or str(dtype)
        self.tensor = placement().auto(name, prod(dims), span, assigned_name())


def refuse_queues(what: str) -> None:
    """A TQue/TBuf in a compiler-synchronised kernel: APK660 at the user's line."""
    if auto_sync():
        raise missing(what, "in an insert_sync kernel pyasc's pass rewrites the queues' "
                      "enque/deque and erases their events, which apdsl does not model; use "
                      "LocalTensorAuto").replace(span=caller_span(3))
