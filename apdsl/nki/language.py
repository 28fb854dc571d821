"""`nki.language` (`nl`): dtypes, buffers, allocation, loops and launch queries, from the
builtins table `.apk` programs use (see `apdsl.nki.namespace`)."""

from __future__ import annotations

from typing import Any

from ..tensor.view import Tensor as NkiTensor  # noqa: F401  # nl.NkiTensor: a kernel tensor's type
from .namespace import lookup, names


class NKIObject:
    """The base class NKI library code derives its kernel-side helper objects from (tile
    iterators, configs).  On apdsl such an object is an ordinary Python object the kernel's
    Python code uses while it issues instructions."""


def __getattr__(name: str) -> Any:
    return lookup("language", name)


def __dir__() -> list[str]:
    return sorted({*names("language"), "NKIObject", "NkiTensor"})
