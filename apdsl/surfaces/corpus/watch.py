"""What a corpus worker watches while a repository's own code runs: the calls of the one
kernel it measures (through `apdsl.nki.observe`), the comparisons the code makes of results
with NumPy's comparison functions, and where each test of a pytest driver ends.  From that
record, `verdict_of` says what the run came to (see `verdict` for the vocabulary)."""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...records import record
from .asserts import AssertTracer
from .timing import timing_failure
from .verdict import Verdict, classify


@record
class Event:
    """`kind`: "start", "end", "fail" (of the kernel: `error`), "compare" (`ok`, `where`),
    "test" (a test or `__main__` block ended: `name`, `ok`, `error`)."""

    kind: str
    ok: bool = True
    where: str = ""
    name: str = ""
    error: Any = None
    detail: str = ""  # of a failed comparison apdsl made itself: which output, how far off


class Watch:
    """The record of one driver's run.  A KernelObserver for the target kernel (its source
    file and qualified name)."""

    def __init__(self, file: str, qualname: str, root: str,
                 noted: Callable[[Watch], None] | None = None) -> None:
        self.file = os.path.realpath(file)
        self.qualname = qualname
        self.root = root
        self.events: list[Event] = []
        self._comparing = 0
        self.others = 0  # calls of other kernels (a test running several)
        self._noted = noted  # told of each event (the worker keeps an interim verdict)
        self.asserts = AssertTracer(root, self)  # plain `assert`s of values, after a return

    def _add(self, event: Event) -> None:
        self.events.append(event)
        if self._noted is not None:
            self._noted(self)

    def is_target(self, fn: Callable[..., Any]) -> bool:
        """Is `fn` the kernel measured?"""
        return self._target(fn)

    def _target(self, fn: Callable[..., Any]) -> bool:
        code = getattr(fn, "__code__", None)
        return code is not None and getattr(fn, "__qualname__", "") == self.qualname and \
            os.path.realpath(code.co_filename) == self.file

    def started(self, fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any],
                launch: tuple[int, ...]) -> None:
        if self._target(fn):
            self.asserts.disarm()
            self._add(Event("start"))
        else:
            self.others += 1

    def finished(self, fn: Callable[..., Any], result: Any) -> None:
        if self._target(fn):
            self._add(Event("end"))
            from ...nki.host import active
            if active() is None:  # (not inside a kernel calling it: that one runs on)
                self.asserts.arm()

    def failed(self, fn: Callable[..., Any], error: BaseException) -> None:
        if self._target(fn):
            self._add(Event("fail", ok=False, error=error))

    # the same events for the target called from another kernel (a kernel the test's kernel
    # calls: it ran with the test's inputs, and the test compares what it contributed to)
    def inner_started(self, fn: Callable[..., Any]) -> None:
        self.started(fn, (), {}, ())

    def inner_finished(self, fn: Callable[..., Any]) -> None:
        self.finished(fn, None)

    def inner_failed(self, fn: Callable[..., Any], error: BaseException) -> None:
        self.failed(fn, error)

    def test_ended(self, name: str, error: BaseException | None) -> None:
        self.asserts.disarm()
        self._add(Event("test", ok=error is None, name=name, error=error))

    @property
    def reached(self) -> bool:
        return any(e.kind == "start" for e in self.events)

    def compared(self, ok: bool, boolean: bool = False, detail: str = "",
                 where: str = "") -> None:
        """A comparison after the kernel returned: `boolean` when it returned its outcome
        (`np.allclose`) rather than raising (`assert_allclose`); `detail` says what differed;
        `where` (file:line) when the caller knows it, else the repository's innermost frame."""
        from ...nki.host import active
        if active() is not None or not self._ended_in_segment():
            return
        where = where or _caller(self.root)
        # `assertFalse(np.allclose(out, zeros))`: a comparison meant to come out False
        expected_false = boolean and _negated(self.root, where)
        self._add(Event("compare", ok=ok != expected_false, where=where, detail=detail))

    def _ended_in_segment(self) -> bool:
        for e in reversed(self.events):
            if e.kind == "test":
                return False
            if e.kind == "end":
                return True
        return False

    @contextmanager
    def comparing(self) -> Iterator[bool]:
        """Inside one wrapped comparison (a comparison calling another is one)."""
        self._comparing += 1
        try:
            yield self._comparing == 1
        finally:
            self._comparing -= 1


_NEGATED = re.compile(r"assertFalse\s*\(|\bassert\s+not\b")


def _negated(root: str, where: str) -> bool:
    """Is the repository's line `where` (file:line) asserting that a comparison is False?"""
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        return False
    text = linecache.getline(os.path.join(root, path), int(line))
    return bool(_NEGATED.search(text))


def _caller(root: str) -> str:
    frame = sys._getframe(2)
    base = os.path.realpath(root) + os.sep
    while frame is not None:
        path = os.path.realpath(frame.f_code.co_filename)
        if path.startswith(base):
            return f"{os.path.relpath(path, base)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


_APDSL = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))) + os.sep


def _called_by_apdsl() -> bool:
    """Is the caller of a watched comparison apdsl's own code (not the repository's test)?
    The kernel's call compares each input with what the kernel left in it, for instance;
    that is no comparison of a result."""
    return os.path.realpath(sys._getframe(2).f_code.co_filename).startswith(_APDSL)


BOOL_COMPARISONS = ("allclose", "array_equal", "array_equiv")
ASSERT_COMPARISONS = ("assert_allclose", "assert_array_equal", "assert_array_almost_equal",
                      "assert_almost_equal", "assert_equal", "assert_array_max_ulp",
                      "assert_array_almost_equal_nulp")


TORCH_BOOL = ("allclose", "equal")
TORCH_ASSERT = ("assert_close", "assert_allclose")


def _torch() -> Any:
    """torch, when the environment has it (the repository's code may compare with it)."""
    import importlib.util
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken torch install compares nothing
        return None
    return torch


@contextmanager
def comparisons_watched(watch: Watch) -> Iterator[None]:
    """NumPy's comparison functions (and torch's, where torch is installed) report their
    outcome to `watch` inside the block."""
    import numpy as np
    import numpy.testing as npt
    saved: list[tuple[Any, str, Any]] = []

    def boolean(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*a: Any, **k: Any) -> Any:
            if _called_by_apdsl():  # apdsl's own bookkeeping (an input written back)
                return f(*a, **k)
            with watch.comparing() as outer:
                result = f(*a, **k)
                if outer:
                    watch.compared(bool(result), boolean=True)
            return result
        return wrapper

    def asserting(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*a: Any, **k: Any) -> Any:
            if _called_by_apdsl():
                return f(*a, **k)
            with watch.comparing() as outer:
                try:
                    result = f(*a, **k)
                except AssertionError:
                    if outer:
                        watch.compared(False)
                    raise
                if outer:
                    watch.compared(True)
            return result
        return wrapper

    for name in BOOL_COMPARISONS:
        saved.append((np, name, getattr(np, name)))
        setattr(np, name, boolean(getattr(np, name)))
    for name in ASSERT_COMPARISONS:
        if hasattr(npt, name):
            saved.append((npt, name, getattr(npt, name)))
            setattr(npt, name, asserting(getattr(npt, name)))
    torch = _torch()
    if torch is not None:  # pyasc's tutorials compare with torch.allclose
        for owner, names, wrap in ((torch, TORCH_BOOL, boolean),
                                   (torch.testing, TORCH_ASSERT, asserting)):
            for name in names:
                if hasattr(owner, name):
                    saved.append((owner, name, getattr(owner, name)))
                    setattr(owner, name, wrap(getattr(owner, name)))
    try:
        yield
    finally:
        watch.asserts.disarm()
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def verdict_of(watch: Watch, driver: str) -> Verdict | None:
    """What the run came to for the target kernel; None when the driver never reached it."""
    ended = compared = False
    segment: list[Event] = []
    timings: list[str] = []  # failed assertions of wall-clock time, not of values
    expected: list[Event] = []  # stops of the kernel its test expected (xfail, pytest.raises)
    for e in [*watch.events, Event("test", name="(end)")]:
        if e.kind != "test":
            segment.append(e)
            continue
        fails = [s for s in segment if s.kind == "fail"]
        ends = [s for s in segment if s.kind == "end"]
        if fails and not (e.ok and e.name != "(end)") and not ends:
            return classify(fails[0].error, watch.root).by(driver)
        if fails and not ends:
            expected.append(fails[0])
        # (apdsl's own comparison first: it names the output; a test's validator may make
        # comparisons of its own inside it)
        bad = sorted((s for s in segment if s.kind == "compare" and not s.ok),
                     key=lambda s: not s.detail)
        if bad:
            return Verdict("mismatch", "", bad[0].where,
                           "the repository's comparison of the kernel's result failed"
                           + (f": {bad[0].detail}" if bad[0].detail else ""), driver)
        timed = timing_failure(e.error, watch.root) if ends and e.error is not None else None
        if ends and isinstance(e.error, AssertionError) and timed is None:
            return Verdict("mismatch", "AssertionError", _where_of(e.error, watch.root),
                           f"the test's assertion failed after the kernel returned: "
                           f"{str(e.error).strip()[:120]}", driver)
        if fails and not e.ok and ends:
            return classify(fails[0].error, watch.root).by(driver)
        if timed is not None and timed not in timings:
            timings.append(timed)
        ended = ended or bool(ends)
        compared = compared or any(s.kind == "compare" for s in segment)
        segment = []
    if not ended:
        if not expected:
            return None
        # the kernel was called and stopped; its test passed because it expected that (an
        # xfail mark, pytest.raises): the stop is still the kernel's outcome here, not "no
        # driver called it"
        why = classify(expected[0].error, watch.root)
        return Verdict(why.status, why.code, why.where, why.detail +
                       " (its test expected the kernel to fail: an xfail mark or an expected "
                       "exception)", driver)
    timed = (f"; its assertion of host wall-clock time failed at {', '.join(timings)} (the "
             "simulation's time, not the kernel's: not a comparison of values)"
             if timings else "")
    if compared:
        return Verdict("matches", driver=driver,
                       detail="ran to the end; the repository's comparisons agree" + timed)
    return Verdict("runs", driver=driver,
                   detail="ran to the end; nothing compared its result" + timed)


def _where_of(error: BaseException, root: str) -> str:
    v = classify(error, root)
    return v.where
