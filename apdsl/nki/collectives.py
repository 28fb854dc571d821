"""`nki.collectives`: communication between ranks (`all_reduce`, `all_gather`,
`reduce_scatter`, `all_to_all`, `ReplicaGroup`, ...).  The module imports; each of its names
is a located diagnostic naming it (APK921) until apdsl simulates groups of ranks."""

from __future__ import annotations

from typing import Any

from .namespace import missing


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(
        f"apdsl does not run nki.collectives.{name} yet", code="APK921", name=name,
        notes=["collective communication between ranks needs a simulated group of ranks, "
               "which apdsl does not provide yet"])


def __dir__() -> list[str]:
    return []
