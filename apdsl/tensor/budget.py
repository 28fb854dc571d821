"""The memory budget (SPEC section 15): live storage plus its written-state bookkeeping.

Every `Storage` reserves its bytes here when it is allocated (declared, `ndarray()`,
`from_numpy`, a kernel input), whatever its buffer: the data, and one byte of bookkeeping per
unit of written state it may need (`Storage.reservation`).  Reserving at the allocation, not
when NumPy finally touches the memory, makes an allocation past `--max-memory` /
`apdsl.options(max_memory=)` an error at the declaration, in `check` (which allocates nothing)
as in `run`.  A storage returns its reservation when it is freed or garbage-collected.

The count is process-wide because memory is: tensors a Python caller keeps alive use the same
machine as the program it runs.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from ..errors import ApdslRuntimeError
from ..runtime.options import OPTIONS

HELP = ("raise the budget with --max-memory BYTES or apdsl.options(max_memory=BYTES), or use "
        "smaller tensors")


class _Live:
    """Bytes reserved by live storage."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


LIVE = _Live()


def human(n: int) -> str:
    """A byte count for people: `40000000000 bytes (37.3 GiB)`."""
    text = f"{n:,} bytes"
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{text} ({n / (1 << shift):.1f} {unit})"
    return text


def reserve(nbytes: int, explain: Callable[[], tuple[str, str]]) -> None:
    """Reserve `nbytes`, or raise APK430.  `explain()` (called only then) gives what is being
    allocated ("allocating x: f32[4, 8] @ hbm") and what the bytes are (data, bookkeeping)."""
    limit = OPTIONS.max_memory
    if LIVE.bytes + nbytes <= limit:
        LIVE.bytes += nbytes
        return
    if nbytes <= limit:
        # Storage in reference cycles returns its bytes only when the cycle collector runs
        # (paused while a program runs); collect once before refusing what could then fit.
        gc.collect()
        if LIVE.bytes + nbytes <= limit:
            LIVE.bytes += nbytes
            return
    what, detail = explain()
    raise over_budget(nbytes, what, detail, limit)


def release(nbytes: int) -> None:
    LIVE.bytes = max(0, LIVE.bytes - nbytes)


def over_budget(nbytes: int, what: str, detail: str, limit: int) -> ApdslRuntimeError:
    return ApdslRuntimeError(
        f"{what} needs {human(nbytes)}, past the memory budget of {human(limit)}",
        code="APK430",
        notes=[detail] + ([f"{human(LIVE.bytes)} of the budget already in use by live "
                           "tensors"] if LIVE.bytes else [])
        + ["the budget bounds all live storage and its written-state bookkeeping, every "
           "buffer (HBM and GM included)"],
        help=HELP, requested=nbytes, budget=limit, in_use=LIVE.bytes)


def out_of_memory(what: str, exc: BaseException | None = None, **facts: Any) -> ApdslRuntimeError:
    """APK431: the machine refused memory (NumPy's MemoryError) within the budget."""
    said = f" ({exc})" if exc is not None and str(exc) else ""
    return ApdslRuntimeError(
        f"out of memory: {what}{said}", code="APK431",
        notes=[f"the memory budget is {human(OPTIONS.max_memory)}; the machine could not give "
               "this much"],
        help="lower --max-memory / apdsl.options(max_memory=BYTES) to what the machine can "
        "really hold, so that allocations fail at their declaration, or use smaller tensors",
        **facts)
