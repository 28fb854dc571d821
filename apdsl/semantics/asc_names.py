"""The `asc.` names of `.apk` programs besides the instructions: pyasc's enums and parameter
objects (`asc.RoundMode.CAST_RINT`, `asc.BinaryRepeatParams(1, 1, 1, 8, 8, 8)`, ...), filed
in the builtins table under their prefixed keys (`"asc.RoundMode"`).  The instructions are the
table's `asc.NAME` entries; any other `asc.NAME` falls back to the bare builtin (`asc.set_flag`,
`asc.pipe_barrier`, `asc.float16`), as `nl.`/`nisa.` names do."""

from __future__ import annotations

from typing import Any

from ..runtime.ascend.vector.params import ENUMS, PARAMS
from .values import Module


def names() -> tuple[str, ...]:
    """The prefixed keys `make` files, without building them."""
    return tuple(f"asc.{n}" for n in (*ENUMS, *PARAMS))


def make() -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name, enum in ENUMS.items():
        table[f"asc.{name}"] = Module(f"asc.{name}", "<builtin>",
                                      {m.name: m for m in enum})  # type: ignore[attr-defined]
    for name, cls in PARAMS.items():
        table[f"asc.{name}"] = cls
    return table
