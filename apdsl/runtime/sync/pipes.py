"""Ascend pipes and hard events (SPEC section 13): which pipe runs each instruction, and the
names the event builtins accept.

Sources (research/ascend_pipes.md): the pipe of each data path is the AscendC PipeBarrier
docs' pipe table (MTE2: GM -> L1/L0A/L0B/UB; MTE1: L1 -> L0A/L0B; M: Mmad; FIX: L0C -> GM/L1;
MTE3: UB -> GM; V: vector work), the CCE `vcopy`/`vector_dup` pages (UB -> UB and Duplicate on
V) and the CCE `set_l1_2d`/`set_l0a_2d`/`set_l0b_2d` pages (InitConstValue on MTE1).  The event
names are AscendC's `HardEvent` enum in the SetFlag/WaitFlag docs, in documented order; the
event ids are 0-7 on Atlas A2 (same page).

The pipe of each instruction is declared in the instruction table (`apdsl.runtime.table`);
`pipe_of` reads it for the synchronisation checker.
"""

from __future__ import annotations

from typing import Any

# PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX (CCE pipe_t order)
PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
PIPE_INDEX = {p: i for i, p in enumerate(PIPES)}
BARRIER_PIPES = PIPES + ("ALL",)

# AscendC HardEvent, as the SetFlag/WaitFlag docs list it: SRC_DST, the source pipe sets and
# the destination pipe waits.
HARD_EVENTS = (
    "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3",
    "M_V", "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2",
    "V_MTE1", "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S", "S_MTE2",
    "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3",
)

# Event ids a target accepts (SetFlag docs, "data range": 0-7 on Atlas A2).
EVENT_IDS = {"ascend-a2": 8}

ASCEND_BUFFERS = frozenset({"gm", "l1", "l0a", "l0b", "l0c", "ub", "bt"})


def split_event(event: str) -> tuple[str, str]:
    """(source pipe, destination pipe) of a HardEvent name."""
    src, dst = event.split("_")
    return src, dst


def pipe_of(op: str, operands: dict[str, Any]) -> str | None:
    """The pipe that runs an Ascend instruction (None: not an Ascend instruction), from the
    instruction table (`apdsl.runtime.table`).  `operands` maps roles to tensors, as
    `apdsl.runtime.core.trace.record` receives them."""
    if not operands or next(iter(operands.values())).buffer not in ASCEND_BUFFERS:
        return None
    from ..table import engine_of
    pipe = engine_of(op, operands)
    return pipe if pipe in PIPE_INDEX else None
