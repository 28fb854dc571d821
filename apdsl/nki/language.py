"""`nki.language` (`nl`): dtypes, buffers, allocation, loops and launch queries, from the
builtins table `.apk` programs use (see `apdsl.nki.namespace`)."""

from __future__ import annotations

from typing import Any

from ..tensor.view import Tensor as NkiTensor  # noqa: F401  # nl.NkiTensor: a kernel tensor's type
from .namespace import lookup, names
from .nkiobject import NKIObject  # noqa: F401  # nl.NKIObject: NKI's data-class base


def static_cast(input_data: Any, dtype: Any) -> Any:
    """`nl.static_cast(x, dtype)` (the legacy API's host-side cast): a scalar or array as
    `dtype`, by apdsl's one cast rule (through float32, round to nearest even; integers
    saturate)."""
    import numpy as np

    from ..tensor.dtypes import cast_array
    from ..tensor.dtypes import dtype as to_dtype
    out = cast_array(np.asarray(input_data), to_dtype(dtype))
    return out if np.ndim(input_data) else out[()]


def __getattr__(name: str) -> Any:
    return lookup("language", name)


def __dir__() -> list[str]:
    return sorted({*names("language"), "NKIObject", "NkiTensor", "static_cast"})
