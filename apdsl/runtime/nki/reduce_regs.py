"""The Scalar Engine's `reduce_regs`, per device (`Machine.engine_state`): one 32-bit register
per compute lane, 128 in all, shared by `activation` and `activation_reduce` and kept across
instructions (NKI isa `activation`).

Lane `i` is the `i`-th partition an instruction processes (its data's partition `i`, wherever
the view starts).  A register starts unset, as on hardware, where it holds whatever ran before:
accumulating into it or reading it out before a `reset`/`reset_reduce` is an error while
init checking is on (with it off an unset register reads as 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor.machine import current

KEY = "reduce_regs"
LANES = 128


class ReduceRegs:
    """The register values (float32, as the activation arithmetic), which lanes are set, and
    which hold a sum of unwritten data (SPEC 4: it propagates; `origin` says where from)."""

    __slots__ = ("values", "set", "unwritten", "origin")

    def __init__(self) -> None:
        self.values = np.zeros(LANES, np.float32)
        self.set = np.zeros(LANES, bool)
        self.unwritten = np.zeros(LANES, bool)
        self.origin: Any = None


def regs() -> ReduceRegs:
    """The reduce_regs of the current device."""
    state = current().engine_state
    r = state.get(KEY)
    if r is None:
        r = state[KEY] = ReduceRegs()
    return r
