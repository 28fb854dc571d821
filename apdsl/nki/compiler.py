"""`nki.compiler`: directives to the Neuron compiler.  They change how the compiler schedules
and allocates, not what a kernel computes, so on apdsl each returns the kernel as it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _directive(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    if func is None:
        return lambda f: f
    return func


skip_middle_end_transformations = _directive
enable_stack_allocator = _directive
force_auto_alloc = _directive
