"""Warnings (`apdsl.errors.Warning_`): they go to the current machine's list, located at the
statement under way; the command line prints and clears it, and `collect_warnings()` scopes a
fresh list.  Below both the trace and the synchronisation checker, which warn."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import Warning_
from ...tensor.machine import current

__all__ = ["warn", "take_warnings", "collect_warnings"]


def warn(w: Warning_, *, key: tuple[Any, ...] | None = None) -> None:
    """Add a warning to the current machine's list.  With `key`, a warning is given once per
    key and source location (an instruction in a loop warns once, not on every iteration)."""
    m = current()
    if key is not None:
        k = (m.location, *key)
        if k in m.warned:
            return
        m.warned.add(k)
    w = w.with_span(m.span)
    if m.location is not None:
        w = w.with_facts(location=m.location)
    m.warnings.append(w)


def take_warnings() -> list[Warning_]:
    """Return and clear the collected warnings."""
    m = current()
    out = list(m.warnings)
    m.warnings.clear()
    m.warned.clear()
    return out


@contextmanager
def collect_warnings() -> Iterator[list[Warning_]]:
    """Collect the warnings raised inside the block into a fresh list (the outer list is
    restored afterwards, unchanged)."""
    m = current()
    saved, saved_keys = m.warnings, m.warned
    m.warnings, m.warned = [], set()
    got: list[Warning_] = []
    try:
        yield got
    finally:
        got.extend(m.warnings)
        m.warnings, m.warned = saved, saved_keys
