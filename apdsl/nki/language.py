"""`nki.language` (`nl`): dtypes, buffers, allocation, loops and launch queries, from the
builtins table `.apk` programs use (see `apdsl.nki.namespace`)."""

from __future__ import annotations

from typing import Any

from .namespace import lookup, names


def __getattr__(name: str) -> Any:
    return lookup("language", name)


def __dir__() -> list[str]:
    return names("language")
