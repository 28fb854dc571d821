"""The large Python values a program builds (lists, tuples, strings, dicts, sets), counted in
the memory budget (SPEC section 15: it covers everything a program makes, not only tensors).

The operators and builtins that can build a value of any size hand it to `Held.hold` when it
has at least HOLD_MIN elements; its bytes are estimated (the container itself exactly, its
elements from a sample: shared and cached objects such as small ints count nothing) and
reserved on the machine's memory count, so 64 lists of 10**8 elements under `--max-memory 1G`
are APK430 at the statement that builds the second one, not the machine running out.

Lists and strings cannot be weakly referenced, so the holder keeps them and learns that the
program dropped one from its reference count (only the holder left).  It looks before each
value it takes while it holds few (a look costs far less than building a value this large),
else when what it holds has doubled since the last look, and when the budget would refuse an
allocation (`apdsl.tensor.budget.reserve` asks every holder of its count); so what it keeps
alive past the program's use stays a fraction of what the program uses.  A value kept
alive only by a reference cycle stays counted until the program ends: the estimate errs on
the side of counting too much.  Everything is returned when the holder (the program's
budget) is dropped.
"""

from __future__ import annotations

import sys
import weakref
from itertools import islice
from typing import Any

from ..tensor.budget import human, release, reserve
from ..tensor.machine import Memory, current

HOLD_MIN = 4096  # elements (characters) from which a value is counted
_SAMPLE = 16  # elements looked at to estimate what a container's elements take
_FEW = 64  # values held: up to this many, the holder looks at them all before each new one
# objects every value shares (Python caches them): their bytes are not the value's
_SHARED = (type(None), bool)


class Held:
    """The values one program built that the memory budget counts, by identity."""

    __slots__ = ("entries", "bytes", "swept", "__weakref__")

    def __init__(self) -> None:
        # id -> (value, bytes, the count they were reserved on)
        self.entries: dict[int, tuple[Any, int, Memory]] = {}
        self.bytes = 0  # held now
        self.swept = 0  # bytes held after the last look
        weakref.finalize(self, _release_all, self.entries)

    def hold(self, value: Any) -> None:
        """Count `value` (built by the program) until the program drops it; APK430 past the
        budget.  A value held already (a list grown in place) is counted anew."""
        entries = self.entries
        if len(entries) <= _FEW or self.bytes >= 2 * self.swept:
            self.sweep()
        nbytes = estimate(value, entries)
        old = entries.pop(id(value), None)
        if old is not None:
            release(old[2], old[1])
            self.bytes -= old[1]
        memory = current().memory
        memory.holders.add(self)
        kind = _kind(value)
        memory = reserve(nbytes, lambda: (
            f"building a {kind} of {len(value):,} {'characters' if kind == 'string' else 'elements'}",
            f"a Python {kind} of about {human(nbytes)} (its elements included)"))
        entries[id(value)] = (value, nbytes, memory)
        self.bytes += nbytes

    def sweep(self) -> None:
        """Return the bytes of the values only the holder still refers to."""
        entries = self.entries
        for key, (value, nbytes, memory) in list(entries.items()):
            # references: the entry's tuple, `value` here, getrefcount's argument
            if sys.getrefcount(value) <= 3:
                del entries[key]
                release(memory, nbytes)
                self.bytes -= nbytes
        self.swept = self.bytes


def _release_all(entries: dict[int, tuple[Any, int, Memory]]) -> None:
    for _, nbytes, memory in entries.values():
        release(memory, nbytes)
    entries.clear()


def estimate(value: Any, held: dict[int, Any] | None = None) -> int:
    """Bytes `value` takes: the container exactly, its elements from a sample (an object the
    sample meets twice, or that Python shares, counted once or not at all; one `held`
    counts already)."""
    held = held or {}
    size = sys.getsizeof(value)
    kind = type(value)
    if kind is str or kind is bytes:
        return size
    n = len(value)
    if not n:
        return size
    if kind is list or kind is tuple:
        step = max(1, n // _SAMPLE)
        sample = [value[i] for i in range(0, n, step)][:_SAMPLE]
    elif kind is dict:
        sample = [x for item in islice(value.items(), _SAMPLE // 2) for x in item]
    else:
        sample = list(islice(value, _SAMPLE))
    seen: set[int] = set()
    own = 0
    for x in sample:
        if id(x) in seen or id(x) in held or isinstance(x, _SHARED) or \
                type(x) is int and -5 <= x <= 256:
            continue
        seen.add(id(x))
        own += sys.getsizeof(x)
    per = own / len(sample) * (2 if kind is dict else 1)
    return size + int(per * n)


def repeated(seq: Any, n: int) -> int:
    """Bytes `seq * n` will take (its elements are `seq`'s own objects, counted with it)."""
    if type(seq) is str:
        top = max(seq) if seq else "a"
        width = 1 if top <= "\xff" else 2 if top <= "\uffff" else 4
    else:
        width = 8  # a list's or tuple's slots
    return sys.getsizeof(seq[:0]) + width * len(seq) * n


def _kind(value: Any) -> str:
    return {str: "string", list: "list", tuple: "tuple", dict: "dict", set: "set",
            frozenset: "set"}.get(type(value), "value")
