"""Launch on logical NeuronCores (SPEC section 11): the grid a kernel runs on and the program
id of the run under way, which `nl.program_id`, `nl.num_programs` and `nl.program_ndim` read.

A kernel launched without a grid (`kernel(a)`) has no grid dimensions: its program id is 0 and
there is one program, as the NKI docs say of a kernel without LNC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ApdslTypeError


@dataclass(frozen=True)
class Launch:
    """`grid` is the launch shape (`()` without a grid); `ids` the program id on each axis."""

    grid: tuple[int, ...] = ()
    ids: tuple[int, ...] = ()


NO_GRID = Launch()


def _axis(axis: Any, launch: Launch, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ApdslTypeError(f"{what}: the axis must be an int, not {type(axis).__name__}",
                             code="APK142")
    # without a grid, axis 0 is the single program (the docs: "no LNC: 0")
    ndim = max(len(launch.grid), 1)
    if not 0 <= axis < ndim:
        raise ApdslTypeError(
            f"{what}: axis {axis} is outside the launch grid, which has {ndim} "
            f"dimension{'s' if ndim != 1 else ''}", code="APK142",
            notes=[f"launch grid: {list(launch.grid) or 'none (one program)'}"],
            help="launch with kernel[n](...) (n logical cores) and ask for axis 0")
    return axis


def program_id(launch: Launch, axis: Any = 0) -> int:
    """The program's index along `axis` (0 without a grid)."""
    axis = _axis(axis, launch, "program_id")
    return launch.ids[axis] if launch.ids else 0


def num_programs(launch: Launch, axes: Any = None) -> int:
    """The number of programs along `axes` (an int or a tuple of them); all of them when
    `axes` is None."""
    if axes is None:
        axes = tuple(range(len(launch.grid)))
    elif not isinstance(axes, (tuple, list)):
        axes = (axes,)
    total = 1
    for a in axes:
        a = _axis(a, launch, "num_programs")
        total *= launch.grid[a] if launch.grid else 1
    return total


def program_ndim(launch: Launch) -> int:
    """The number of launch grid dimensions (0 without a grid)."""
    return len(launch.grid)
