"""`asc.lib.host`: pyasc's host-side tiling API (`MultiCoreMatmulTiling`,
`get_ascendc_platform`, ...), which computes `asc.adv.Matmul`'s tiling.  apdsl models neither
yet: every name is APK660 at the user's line, naming it."""

from __future__ import annotations

from typing import Any

from ..nki.locate import caller_span
from .errors import missing


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(f"lib.host.{name}", "the host tiling of asc.adv.Matmul is not in apdsl "
                  "yet").replace(span=caller_span(2))
