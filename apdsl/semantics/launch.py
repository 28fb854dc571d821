"""Launch on logical NeuronCores (SPEC section 11): the grid a kernel runs on and the program
id of the run under way, which `nl.program_id`, `nl.num_programs` and `nl.program_ndim` read.

A kernel launched without a grid (`kernel(a)`) has no grid dimensions: its program id is 0 and
there is one program, as the NKI docs say of a kernel without LNC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ApdslTypeError
from ..tensor.view import Tensor

if TYPE_CHECKING:
    from ..runtime.core.lnc_race import Races


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


class SharedHbm:
    """The shared tensors of one launch.  SPMD programs share the kernel's `shared_hbm`
    outputs (an Ascend launch's cores their `gm` allocations: GM is shared): every program
    allocates the same ones in the same order, and program k's i-th allocation is program 0's
    i-th tensor.  Mutable on purpose: it lives for one launch."""

    def __init__(self, buffer: str = "shared_hbm") -> None:
        self.buffer = buffer
        self.tensors: list[Tensor] = []
        self.counts: dict[Any, int] = {}  # program (or core) -> its allocations so far
        # an LNC=2 launch's race checker (`apdsl.runtime.core.lnc_race`): it checks them all
        self.races: Races | None = None

    def take(self, t: Tensor, program: Any) -> Tensor:
        """The tensor a program's shared allocation `t` stands for (APK145 when it differs
        from program 0's)."""
        i = self.counts.get(program, 0)
        self.counts[program] = i + 1
        if i == len(self.tensors):
            self.tensors.append(t)
            if self.races is not None:
                self.races.attach(t.storage)
            return t
        first = self.tensors[i]
        if tuple(first.shape) != tuple(t.shape) or first.dtype != t.dtype:
            what = "shared HBM" if self.buffer == "shared_hbm" else "GM"
            who = f"program {program}" if isinstance(program, int) else str(program)
            raise ApdslTypeError(
                f"{who} allocates {what} tensor {i} as {t.dtype}"
                f"{list(t.shape)}, the first {'program' if isinstance(program, int) else 'core'}"
                f" as {first.dtype}{list(first.shape)}",
                code="APK145", help=f"every {'program' if isinstance(program, int) else 'core'}"
                f" of a launch allocates the same {what} tensors, in the same order")
        return first


def same_results(a: Any, b: Any) -> bool:
    """Did two programs of a launch return the same results (the same tensors; equal plain
    values)?"""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_results(x, y) for x, y in zip(a, b))
    if a is b:
        return True
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return False
    try:
        return bool(np.all(np.asarray(a == b)))
    except (TypeError, ValueError):
        return False


def different_results(kernel: str, program: int) -> ApdslTypeError:
    """APK146: a program of a launch returned other tensors than program 0."""
    return ApdslTypeError(
        f"kernel {kernel}: program {program} returns other tensors than program 0",
        code="APK146", help="allocate outputs in shared HBM (nl.shared_hbm): every program of a "
        "launch writes the same shared HBM tensors")
