"""Instruction ordering controls of NKI: `nl.no_reorder()` and the legacy
`nki.compiler.no_reorder()` loop directive (`nl.sequential_range(n, directives=...)`).

Both tell the Neuron compiler's scheduler to keep the instructions of a block (or a loop body)
in program order instead of reordering independent ones.  apdsl never reorders: it executes a
kernel in program order, and `apdsl profile` schedules each engine's instructions in program
order too, so a kernel means the same with or without the control.  What the control changes
here is what the reference forbids inside it: `nl.dynamic_range` loops (register-based dynamic
loops) are not supported in a `no_reorder` block (the NKI language reference and the dynamic
loops deep dive), so one inside the block is refused (APK157) rather than run.

The range functions of NKI (`affine_range`, `sequential_range`, `static_range`) are Python's
`range`; the legacy API also gave them a `directives=` keyword, which takes `no_reorder()`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError
from .tile_size import dynamic_range

RANGES = ("affine_range", "sequential_range", "static_range")
NAMES = ("no_reorder", "dynamic_range", *RANGES)


class NoReorder:
    """`no_reorder()`: a `with` block (new API) or a loop directive (legacy API) whose
    instructions keep their program order.  `blocks` counts the open `with` blocks of the
    program that made it (None: the legacy directive, which belongs to no program)."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: list[int] | None = None) -> None:
        self.blocks = blocks

    def __enter__(self) -> NoReorder:
        if self.blocks is not None:
            self.blocks[0] += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.blocks is not None:
            self.blocks[0] -= 1

    def __repr__(self) -> str:
        return "no_reorder()"


def _ranged(name: str) -> Callable[..., range]:
    def ranged(start: Any, stop: Any = None, step: Any = 1, *, directives: Any = None) -> range:
        if directives is not None and not isinstance(directives, NoReorder):
            raise ApdslTypeError(
                f"nl.{name}: directives={directives!r} is not a loop directive apdsl knows",
                code="APK152", help="the directive apdsl takes is nki.compiler.no_reorder(); "
                "leave directives= out for a loop the compiler may schedule freely")
        return range(start) if stop is None and step == 1 else range(start, stop, step)

    ranged.__name__ = ranged.__qualname__ = name
    ranged.__doc__ = (f"`nl.{name}(start, stop=None, step=1, directives=None)`: Python's "
                      "range; `directives` takes the legacy `nki.compiler.no_reorder()`.")
    return ranged


def make() -> dict[str, Callable[..., Any]]:
    """The ordering controls and range functions of one program (its open `no_reorder`
    blocks counted, for the `dynamic_range` rule)."""
    blocks = [0]

    def no_reorder() -> NoReorder:
        """`nl.no_reorder()`: the block's instructions keep their program order."""
        return NoReorder(blocks)

    def dynamic(start: Any, stop: Any = None, step: Any = 1) -> range:
        if blocks[0]:
            raise ApdslTypeError(
                "nl.dynamic_range inside a nl.no_reorder() block: NKI does not support a "
                "dynamic loop there", code="APK157",
                notes=["the NKI language reference: register-based dynamic loops are not "
                       "supported inside a no_reorder block; static loops are"],
                help="use nl.sequential_range (or range) inside the block, or move the "
                "dynamic loop out of it")
        return dynamic_range(start, stop, step)

    dynamic.__name__ = "dynamic_range"
    dynamic.__doc__ = dynamic_range.__doc__
    out: dict[str, Callable[..., Any]] = {"no_reorder": no_reorder, "dynamic_range": dynamic}
    out.update((name, _ranged(name)) for name in RANGES)
    return out
