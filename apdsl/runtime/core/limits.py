"""The size limits of an instruction's table entry (`apdsl.runtime.table.spec.Limit`), evaluated
for one call: each bound is a function of the call (target, dtypes, the call's tiling), so the
rule lives in the entry and every executor refuses a size the same way (APK314)."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import TargetError
from ..table.spec import Call, Instruction, Limit


def bounds(entry: Instruction, call: Call) -> dict[str, int]:
    """Every `Limit` of the entry, evaluated for this call, in the entry's order."""
    return {what: lim.bound(call) for what, lim in entry.limits.items() if isinstance(lim, Limit)}


def check_limits(entry: Instruction, label: str, call: Call, values: Mapping[str, int]) -> None:
    """APK314 for the first of `values` (size name -> the call's size) over its bound."""
    limits = bounds(entry, call)
    tgt = call.target
    for what, val in values.items():
        lim = limits[what]
        if val > lim:
            limit = entry.limits[what]
            tiled = " with this tile_size" if limit.tiled and lim < tgt.partitions else ""
            raise TargetError(f"{label}: {what} = {val} exceeds {lim} on {tgt.name}{tiled}",
                              code="APK314",
                              notes=[f"limits on {tgt.name}: "
                                     + ", ".join(f"{w} <= {b}" for w, b in limits.items())],
                              help=f"split {what} into tiles of at most {lim}" + limit.advice,
                              dim=what, value=val, limit=lim)
