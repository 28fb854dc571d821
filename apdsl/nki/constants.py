"""`nki.isa.constants` (also `from nki.isa import constants`): the enumerations of the ISA's
instruction options, the same objects as `nisa.<name>`."""

from __future__ import annotations

from typing import Any

from .namespace import lookup, missing

ENUMS = ("dge_mode", "dma_engine", "engine", "matmul_perf_mode", "nc_version", "oob_mode",
         "reduce_cmd")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in ENUMS:
        return lookup("isa", name)
    raise missing(f"apdsl.nki has no nki.isa.constants.{name}", code="APK144", name=name,
                       notes=[f"nki.isa.constants offers: {', '.join(ENUMS)}"])


def __dir__() -> list[str]:
    return list(ENUMS)
