"""`apdsl profile`: where a kernel's time would go on the target, estimated (SPEC section 14).

The program runs with the instruction trace on; every executed instruction is then scheduled
on its engine, DMA queue or Ascend pipe (`schedule`) with durations from the target's cost
model (`model`, numbers and sources in `costs`).  `apdsl.profile(...)` is also callable as
the module itself, so `import apdsl.profile` and `apdsl.profile(source)` both work.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from .result import ProfileResult

__all__ = ["ProfileResult", "profile", "profile_run"]


def profile_run(result: Any, *, serial_order: bool = False) -> ProfileResult:
    """Schedule the trace of a finished `Program.run(trace=True)` on the target it ran on.
    `serial_order`: every instruction waits for all earlier ones (as with `--sync off`)."""
    from ..runtime.core.trace import EVENT_ROW, PART, Trace
    from ..tensor.machine import current
    from .model import Model
    from .schedule import Scheduler
    trace = result.trace if result.trace is not None else Trace()
    family = "nki"
    parts = trace.parts
    for row in trace.rows:  # the first instruction with operands says (events have none)
        if len(row) != EVENT_ROW:
            aps = next(iter(parts[row[PART]][0].values()), None)
            if aps:
                if aps[0].buffer in ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt"):
                    family = "ascend"
                break
    # (a Python file that launched no kernel ran on no machine of its own: the current one's)
    machine = result.machine if result.machine is not None else current()
    target = machine.targets[family]
    model = Model(target)
    scheduler = Scheduler(model, serial_order)
    scheduler.run(trace)
    if family == "ascend":
        tracks = _ascend_tracks(scheduler)
        notes = ["Ascend pipes are ordered across pipes by the kernel's set_flag/wait_flag "
                 "events and barriers"]
        if scheduler.unordered:
            notes.append("instructions the synchronisation checker did not see (--sync off, "
                         "top-level statements) run one after another")
    else:
        tracks = [f"DMA q{i}" for i in range(int(model.v("dma_queues")))] + [
            "Tensor", "Vector", "Scalar", "GpSimd"]
        notes = ["tensor_copy and memset without engine= are placed on Vector (assumed)"]
    # (every part of the trace is some scheduled instruction's: its pieces are the slots')
    if any(_has_registers(ap) for ap in {id(ap): ap for part in parts for piece in part[1]
                                         for ap in piece.values()}.values()):
        notes.append("some patterns hold registers: they are sized with each register's "
                     "last value")
    return ProfileResult(target, scheduler.table, tracks, result.kernel, notes, trace)


def _ascend_tracks(scheduler: Any) -> list[str]:
    """The rows of an Ascend profile: one core's seven pipes; on several cores, the pipes
    that ran something, core by core (a pipe nobody has is no row)."""
    from .model import ASCEND_PIPES
    if not scheduler.cores:
        return list(ASCEND_PIPES)
    used = {row[7] for row in scheduler.table.rows}

    def place(track: str) -> tuple[int, int]:
        prefix, _, pipe = track.rpartition(": ")
        core = scheduler.cores.get(f"{prefix}: ", -1) if prefix else -1
        return core, ASCEND_PIPES.index(pipe) if pipe in ASCEND_PIPES else len(ASCEND_PIPES)
    return sorted(used, key=place)


def _has_registers(ap: Any) -> bool:
    return not isinstance(ap.offset, int) or any(not isinstance(x, int) for p in ap.pattern
                                                 for x in p)


def profile(source_or_path: str | os.PathLike, kernel: str | None = None,
            inputs: dict[str, Any] | None = None) -> ProfileResult:
    """Run a program (a `.apk` path or source text) and estimate its time on the target.

    >>> source = '''
    ... kernel copy(A: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    ...     t = ndarray((128, 512), f32, sbuf)
    ...     out = ndarray((128, 512), f32, hbm)
    ...     dma_copy(t, A)
    ...     dma_copy(out, t)
    ...     return out
    ... '''
    >>> p = apdsl.profile(source)
    >>> len(p.slots), p.slots[0].track, p.slots[1].start >= p.slots[0].end
    (2, 'DMA q0', True)
    """
    from ..semantics.api import program_of
    result = program_of(source_or_path).run(kernel, inputs, trace=True)
    return profile_run(result)


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> ProfileResult:
        return profile(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
