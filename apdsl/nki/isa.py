"""`nki.isa` (`nisa`): the NKI instructions and their enums, from the builtins table `.apk`
programs use (see `apdsl.nki.namespace`)."""

from __future__ import annotations

from typing import Any

from . import constants  # noqa: F401  # nki.isa.constants, also as an attribute
from .namespace import lookup, names


def __getattr__(name: str) -> Any:
    return lookup("isa", name)


def __dir__() -> list[str]:
    return sorted({*names("isa"), "constants"})
