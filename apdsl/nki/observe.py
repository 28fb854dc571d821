"""Watching kernel calls from outside: `observing(observer)` tells an observer of every
top-level kernel call made in the block (started, finished, failed with its error).  The corpus
runner (`apdsl corpus`) uses it to learn whether a repository's own test reached a kernel and
ran it to the end, without changing the kernel or the test.

The observer is a context variable: a block that observes changes nothing for its caller."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class KernelObserver(Protocol):
    def started(self, fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any],
                launch: tuple[int, ...]) -> None:
        """`fn` is called with `args` and `kwargs` on `launch` (NKI: the grid, () without
        one; pyasc: (cores,)); it has not run yet."""

    def finished(self, fn: Callable[..., Any], result: Any) -> None: ...

    def failed(self, fn: Callable[..., Any], error: BaseException) -> None: ...


_OBSERVER: ContextVar[KernelObserver | None] = ContextVar("apdsl_nki_observer", default=None)


@contextmanager
def observing(observer: KernelObserver) -> Iterator[KernelObserver]:
    """Report every top-level kernel call in the block to `observer`."""
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


def observer() -> KernelObserver | None:
    """The observer of the block under way, None outside `observing`."""
    return _OBSERVER.get()
