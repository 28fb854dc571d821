"""Where the program made each view (`interp.origins`): the span an error labels ("A[0:64]
made here") and `show` prints.  Weakly held: a dead view must not lend its span, nor be kept
alive by it.

A `weakref.WeakKeyDictionary` did this at ~0.45 us a `setdefault`, even when the view was
already there (it makes a weak reference per call); a GEMM step records ~9 views.  Here an
entry is (weak reference, span) under the view's id, checked to be the same live view when
read, so an id a dead view left behind is never confused with a new one.  Dead entries are
swept when the table has doubled since the last sweep, so it stays bounded by the live views.
"""

from __future__ import annotations

from typing import Any
from weakref import ref

from ..errors import Span


class Origins:
    """tensor -> span, weakly keyed, first recording kept (`setdefault`)."""

    __slots__ = ("spans", "_sweep_at")

    def __init__(self) -> None:
        self.spans: dict[int, tuple[Any, Span]] = {}  # id -> (weak ref to the view, span)
        self._sweep_at = 1024

    def get(self, view: Any, default: Any = None) -> Any:
        entry = self.spans.get(id(view))
        if entry is not None and entry[0]() is view:
            return entry[1]
        return default

    def setdefault(self, view: Any, span: Span) -> Span:
        entry = self.spans.get(id(view))
        if entry is not None and entry[0]() is view:
            return entry[1]
        self[view] = span
        return span

    def __setitem__(self, view: Any, span: Span) -> None:
        spans = self.spans
        spans[id(view)] = (ref(view), span)
        if len(spans) > self._sweep_at:
            for key in [k for k, (r, _) in spans.items() if r() is None]:
                del spans[key]
            self._sweep_at = max(1024, 2 * len(spans))

    def __getitem__(self, view: Any) -> Span:
        entry = self.spans.get(id(view))
        if entry is None or entry[0]() is not view:
            raise KeyError(view)
        return entry[1]

    def __contains__(self, view: Any) -> bool:
        entry = self.spans.get(id(view))
        return entry is not None and entry[0]() is view

    def __len__(self) -> int:
        return sum(1 for r, _ in self.spans.values() if r() is not None)
