"""The Vector Engine's accumulator registers, per device (`Machine.engine_state`).

NKI's Vector Engine keeps one accumulator per partition lane across instructions; the
instructions that reduce into it (`select_reduce`, `range_select` here; `exponential`,
`tensor_scalar_reduce`, `tensor_scalar_cumulative` in the reference) share it, and `reduce_cmd`
controls it (isa docstrings): `reset_reduce` resets the lanes to -inf and accumulates the
instruction's result, `reduce` accumulates onto what is there, `idle` accumulates nothing.  The
docs warn that even `idle` may modify the accumulators and say to `reset_reduce` after it, so
after an `idle` instruction the touched lanes hold nothing apdsl can know: a `reduce` onto them
is an error (APK465), as is a `reduce` onto lanes nothing reset.  `load_reduce` loads a value
the docs do not specify for these instructions: refused (APK464).

The state lives in the current machine, so a program run starts with undefined lanes and
cannot change another device's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.machine import current

KEY = "vector_acc"
LANES = 128
COMMANDS = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")


def reduce_cmd_arg(value: Any, label: str) -> str:
    """`reduce_cmd=` as a command name: `nisa.reduce_cmd.X`, its name, or its enum value."""
    name = getattr(value, "name", value)
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool) and \
            0 <= int(name) < len(COMMANDS):
        name = COMMANDS[int(name)]
    if not isinstance(name, str) or name not in COMMANDS:
        raise ApdslRuntimeError(f"{label}: reduce_cmd must be one of {', '.join(COMMANDS)}, "
                                f"got {value!r}", code="APK464",
                                help="for example reduce_cmd=nisa.reduce_cmd.reset_reduce")
    return name


def _state() -> tuple[np.ndarray, np.ndarray]:
    """(values, defined) of the current device's lanes."""
    st = current().engine_state.get(KEY)
    if st is None:
        st = current().engine_state[KEY] = (np.full(LANES, -np.inf, np.float32),
                                            np.zeros(LANES, bool))
    return st


def accumulate_max(label: str, cmd: str, start: int, row_max: np.ndarray | None,
                   count: int = 0) -> np.ndarray | None:
    """Apply `cmd` with this instruction's per-partition maxima `row_max` (float32, one a
    lane from lane `start`); returns the lanes' values afterwards (None for `idle`).  Check
    mode passes no maxima but the lane `count`: which lanes are known does not depend on data,
    so check reports APK465 as run does."""
    values, defined = _state()
    lanes = slice(start, start + (count if row_max is None else row_max.shape[0]))
    if cmd == "idle":
        defined[lanes] = False  # "the accumulator state may still be modified"
        return None
    if cmd == "reset":
        values[lanes], defined[lanes] = -np.inf, True
        return None if row_max is None else values[lanes].copy()
    if cmd == "reduce" and not defined[lanes].all():
        lane = start + int(np.argmin(defined[lanes]))
        raise ApdslRuntimeError(
            f"{label}: reduce_cmd=reduce accumulates onto the Vector Engine's accumulator of "
            f"partition {lane}, which holds nothing known (never reset, or an instruction with "
            "reduce_cmd=idle ran since)", code="APK465",
            notes=["the NKI docs: even reduce_cmd=idle may modify the accumulators; use "
                   "reset_reduce after any operations that ran with idle"],
            help="start the accumulation with reduce_cmd=nisa.reduce_cmd.reset_reduce",
            lane=lane)
    if row_max is None:
        defined[lanes] = True
        return None
    if cmd == "reset_reduce":
        values[lanes] = -np.inf
    values[lanes] = np.maximum(values[lanes], row_max.reshape(-1).astype(np.float32))
    defined[lanes] = True
    return values[lanes].copy()


def check_cmd(label: str, cmd: str, has_result: bool) -> None:
    """The commands these instructions can model (APK464)."""
    if cmd == "load_reduce":
        raise ApdslRuntimeError(f"{label}: reduce_cmd=load_reduce loads a value the NKI docs do "
                                "not give for this instruction", code="APK464",
                                help="use reset_reduce or reduce")
    if cmd == "idle" and has_result:
        raise ApdslRuntimeError(f"{label}: reduce_res is given but reduce_cmd is idle, so no "
                                "reduction runs", code="APK464",
                                notes=["the NKI docs do not say what reduce_res receives "
                                       "without a reduction"],
                                help="pass reduce_cmd=nisa.reduce_cmd.reset_reduce, or drop "
                                "reduce_res")


# -- the accumulating instructions of any reduce operator ----------------------------------------
# tensor_scalar_reduce, tensor_scalar_cumulative and exponential reduce with add, multiply,
# maximum or minimum (subtract too for the cumulative one); their docstrings give the value a
# reset puts in the lanes: the operator's identity.

IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf,
            "minimum": np.inf}


def starting_lanes(label: str, cmd: str, start: int, count: int, op: str,
                   init: np.ndarray | None = None) -> np.ndarray | None:
    """The lanes `start`..`start+count` an instruction accumulates onto under `cmd` (float32,
    one a lane): the identity of `op` after a reset, what the lanes hold for `reduce` (APK465
    when that is unknown), `init` for `load_reduce`; None for `idle` (which leaves the lanes
    unknown, as the docs warn)."""
    values, defined = _state()
    lanes = slice(start, start + count)
    if cmd == "idle":
        defined[lanes] = False
        return None
    if cmd in ("reset", "reset_reduce"):
        return np.full(count, IDENTITY[op], np.float32)
    if cmd == "load_reduce":
        return np.broadcast_to(np.asarray(init, np.float32).reshape(-1), (count,)).copy()
    if not defined[lanes].all():
        accumulate_max(label, "reduce", start, None, count=count)  # raises APK465
    return values[lanes].copy()


def keep_lanes(start: int, lanes: np.ndarray | None, count: int = 0) -> None:
    """The lanes' values after the instruction (None in check mode: only known from now)."""
    values, defined = _state()
    n = count if lanes is None else lanes.shape[0]
    if lanes is not None:
        values[start:start + n] = lanes.astype(np.float32)
    defined[start:start + n] = True
