"""The memory budget (SPEC section 15): live storage plus its written-state bookkeeping.

Every `Storage` reserves its bytes here when it is allocated (declared, `ndarray()`,
`from_numpy`, a kernel input), whatever its buffer: the data, and one byte of bookkeeping per
unit of written state it may need (`Storage.reservation`).  Reserving at the allocation, not
when NumPy finally touches the memory, makes an allocation past `--max-memory` /
`apdsl.options(max_memory=)` an error at the declaration, in `check` (which allocates nothing)
as in `run`.  A storage returns its reservation when it is freed or garbage-collected.

The count lives on the current machine (`apdsl.tensor.machine`) and is shared with its children,
because memory is: tensors a Python caller keeps alive use the same memory as the program it
runs.  A storage returns its bytes to the count it reserved them from.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from ..errors import ApdslRuntimeError
from .machine import Memory, current

HELP = ("raise the budget with --max-memory BYTES or apdsl.options(max_memory=BYTES), or use "
        "smaller tensors")




def human(n: int) -> str:
    """A byte count for people: `40000000000 bytes (37.3 GiB)`."""
    text = f"{n:,} bytes"
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{text} ({n / (1 << shift):.1f} {unit})"
    return text


def live() -> int:
    """Bytes reserved by live storage on the current machine."""
    return current().memory.bytes


def reserve(nbytes: int, explain: Callable[[], tuple[str, str]], *,
            memory: Memory | None = None) -> Memory:
    """Reserve `nbytes` on the current machine and return the count they came from (to
    `release` them to), or raise APK430.  `explain()` (called only then) gives what is being
    allocated ("allocating x: f32[4, 8] @ hbm") and what the bytes are (data, bookkeeping).
    `memory`: the count to reserve in (a storage growing its bookkeeping: its own)."""
    m = current()
    limit = m.options.max_memory
    if memory is None:
        memory = m.memory
    if memory.bytes + nbytes <= limit:
        memory.bytes += nbytes
        return memory
    if nbytes <= limit:
        # The holders of Python values return those no longer alive, and storage in
        # reference cycles returns its bytes only when the cycle collector runs (paused while
        # a program runs): both before refusing what could then fit.
        for holder in list(memory.holders):
            holder.sweep()
        if memory.bytes + nbytes > limit:
            gc.collect()
        if memory.bytes + nbytes <= limit:
            memory.bytes += nbytes
            return memory
    what, detail = explain()
    raise over_budget(nbytes, what, detail, limit)


def release(memory: Memory, nbytes: int) -> None:
    memory.bytes = max(0, memory.bytes - nbytes)


def over_budget(nbytes: int, what: str, detail: str, limit: int) -> ApdslRuntimeError:
    in_use = live()
    return ApdslRuntimeError(
        f"{what} needs {human(nbytes)}, past the memory budget of {human(limit)}",
        code="APK430",
        notes=[detail] + ([f"{human(in_use)} of the budget already in use by live "
                           "tensors and values"] if in_use else [])
        + ["the budget bounds all live storage and its written-state bookkeeping, every "
           "buffer (HBM and GM included), and the large Python values a program builds"],
        help=HELP, requested=nbytes, budget=limit, in_use=in_use)


def out_of_memory(what: str, exc: BaseException | None = None, **facts: Any) -> ApdslRuntimeError:
    """APK431: the machine refused memory (NumPy's MemoryError) within the budget."""
    said = f" ({exc})" if exc is not None and str(exc) else ""
    return ApdslRuntimeError(
        f"out of memory: {what}{said}", code="APK431",
        notes=[f"the memory budget is {human(current().options.max_memory)}; the machine could not give "
               "this much"],
        help="lower --max-memory / apdsl.options(max_memory=BYTES) to what the machine can "
        "really hold, so that allocations fail at their declaration, or use smaller tensors",
        **facts)
