"""Room for a placed tensor among the tensors apdsl placed itself.

A kernel may give some on-chip tensors an address (`address=`) and leave the others to the
compiler, which allocates those with the whole kernel in view, around the hand-placed ones
(nki-library's kernels do this: a hand-managed stack of SBUF tensors beside an identity matrix
or a scratch tile without an address).  apdsl places a tensor without an address when it is
allocated, before it knows where later placed tensors go; where it put one is apdsl's choice,
which nothing in a program can observe.  So when a placed tensor lands on the bytes of such a
tensor, apdsl moves its own choice out of the way (`plan`): to the highest free bytes of the
buffer, clear of every live tensor (the hand-managed stacks of the NKI library grow from the
bottom), keeping the rules a place of apdsl's own obeys (a PSUM tile of at most one bank stays
inside one bank; a larger PSUM tensor keeps its offset within a bank, which is all its bank
check reads).  Each tensor keeps its own bytes, so nothing is shared: only the recorded
address changes.

When the tensors apdsl placed cannot all be moved clear, even all of them at once, the kernel
needs more of the buffer than there is at that moment: the refusal (APK165) says by how much,
or how small the gaps between the placed tensors are.  apdsl checks what is live at each
moment; it does not model the compiler's allocator, which gives a tensor one address for its
whole life and may need more.  A placed tensor is counted on every partition here (a tensor
without an address starts at partition 0 and may span them all), which is conservative for
placed tensors on the upper partitions only.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable

Block = tuple[int, int]  # (start, size) in bytes of each partition


def merged(blocks: Iterable[Block]) -> list[Block]:
    """The union of `blocks` as disjoint (start, size) runs in address order."""
    runs: list[list[int]] = []
    for start, size in sorted(blocks):
        if runs and start <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], start + size)
        else:
            runs.append([start, start + size])
    return [(lo, hi - lo) for lo, hi in runs]


def gaps(taken: Iterable[Block], capacity: int) -> list[Block]:
    """The free runs (start, size) of a buffer of `capacity` bytes around `taken`."""
    out, at = [], 0
    for start, size in merged(taken):
        if start > at:
            out.append((at, start - at))
        at = max(at, start + size)
    if capacity > at:
        out.append((at, capacity - at))
    return out


def highest(taken: Iterable[Block], size: int, capacity: int, bank: int | None,
            phase: int) -> int:
    """The highest start for `size` bytes clear of `taken`, or -1.  PSUM (`bank` given): a
    tile of at most a bank inside one bank, a larger one at an offset within a bank equal to
    `phase`'s."""
    for lo, length in reversed(gaps(taken, capacity)):
        at = lo + length - size
        if at < lo:
            continue
        if bank and size <= bank and at // bank != (at + size - 1) // bank:
            at = (at + size - 1) // bank * bank - size
        elif bank and size > bank:
            at -= (at - phase) % bank
        if at >= lo:
            return at
    return -1


def plan(fixed: Iterable[Block], movers: Iterable[tuple[int, int, int]], capacity: int,
         bank: int | None) -> dict[int, int] | None:
    """New starts for `movers` (id, start, size), each clear of `fixed` and of the others
    (largest first), or None when one does not fit."""
    taken = sorted(fixed)
    moved: dict[int, int] = {}
    for sid, start, size in sorted(movers, key=lambda m: (-m[2], m[0])):
        at = highest(taken, size, capacity, bank, start)
        if at < 0:
            return None
        moved[sid] = at
        insort(taken, (at, size))
    return moved
