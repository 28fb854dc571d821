"""`asc.language` (and its `basic`, `core`, `fwk` parts): the same names as `asc` itself."""

from __future__ import annotations

from typing import Any

from . import adv  # noqa: F401 - asc.language.adv
from .auto import LocalTensorAuto  # noqa: F401
from .dtypes import TYPES as _TYPES
from .kernel import jit  # noqa: F401 - asc.language's names are asc's
from .memory import GlobalAddress, GlobalTensor, LocalTensor  # noqa: F401
from .names import (  # noqa: F401
    ConstExpr,
    ceildiv,
    get_block_idx,
    get_block_num,
    property,
    range,
    static_range,
)
from .queues import TBuf, TPipe, TQue, TQueBind  # noqa: F401

globals().update(_TYPES)


def __getattr__(name: str) -> Any:
    from .names import lookup
    return lookup(name)
