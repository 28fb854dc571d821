"""Calling a table instruction from a pyasc name: the `.apk` builtin of the kernel call under
way, its tensors unwrapped from pyasc's Global/LocalTensor (`asc.add`, `asc.adv.quant`, ...)."""

from __future__ import annotations

from typing import Any

from ..nki.host import current
from .memory import unwrap


def call_builtin(key: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Builtin `key` (`"asc.add"`) on pyasc's arguments, at the user's line."""
    fn = current().builtins[key]
    return fn(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()})
