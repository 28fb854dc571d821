"""A repository's own `assert` of a result's values, counted as a comparison.

NumPy's and torch's comparison functions report themselves (`watch.comparisons_watched`), but
many scripts check a result with a plain assertion that calls none of them:
`assert np.all(out == ref)`, `match = (out == ref).all()` then `assert match`,
`self.assertTrue(np.all(a >= 0))`.  Such a statement is found by reading the repository's
source (`value_checks`), and seen to pass by tracing, line by line, only the frames of the
repository's code that hold one, and only between the kernel's return and its next call.
A failing one raises `AssertionError`, which the verdict already reads as a mismatch.

A check of a shape (`assert out.shape == ref.shape`) compares no values: it does not count.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, Protocol

# calls whose result says whether values agree: `np.all(a == b)`, `(a == b).all()`,
# `np.isclose(...)`, `np.array_equal(...)`, `torch.equal(...)`, `allclose(...)`
_VALUE_CALLS = frozenset({"all", "isclose", "allclose", "array_equal", "array_equiv", "equal"})
_ASSERT_CALLS = frozenset({"assertTrue", "assert_"})


class Reporter(Protocol):
    """What the tracer tells: a value check at `where` (file:line from the checkout's top)
    passed."""

    def compared(self, ok: bool, boolean: bool = False, detail: str = "",
                 where: str = "") -> None: ...


def _checks_values(node: ast.AST, bound: dict[str, ast.AST]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else \
                func.id if isinstance(func, ast.Name) else ""
            if name in _VALUE_CALLS:
                return True
        elif isinstance(sub, ast.Name) and sub.id in bound and bound[sub.id] is not node:
            if _checks_values(bound[sub.id], {}):
                return True
    return False


def _asserted(stmt: ast.stmt) -> ast.AST | None:
    """The expression a statement asserts, if it is an assertion."""
    if isinstance(stmt, ast.Assert):
        return stmt.test
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in _ASSERT_CALLS and stmt.value.args:
            return stmt.value.args[0]
    return None


def _scope_lines(body: list[ast.stmt]) -> set[int]:
    """The lines of the value-checking assertions of one function (or module) body; a name an
    assertion tests is looked up among the body's own assignments."""
    bound: dict[str, ast.AST] = {}
    found: set[int] = set()
    nested: list[ast.AST] = []
    for node in _statements(body, nested):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = node.value
        test = _asserted(node)
        if test is not None and _checks_values(test, bound):
            found.add(node.lineno)
    for fn in nested:
        found |= _scope_lines(fn.body)  # type: ignore[attr-defined]
    return found


def _statements(body: list[ast.stmt], nested: list[ast.AST]) -> list[ast.stmt]:
    """Every statement of a body, in blocks included, but not in nested functions or classes
    (collected into `nested`: each is its own scope)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested.append(stmt)
            continue
        if isinstance(stmt, ast.ClassDef):
            out.extend(_statements(stmt.body, nested))
            continue
        out.append(stmt)
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                out.extend(_statements([s for s in inner if isinstance(s, ast.stmt)]
                                       + [s for h in inner if isinstance(h, ast.excepthandler)
                                          for s in h.body], nested))
    return out


@functools.lru_cache(maxsize=512)
def value_checks(path: str) -> frozenset[int]:
    """The lines of `path` holding an assertion of a result's values."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return frozenset()
    return frozenset(_scope_lines(tree.body))


class AssertTracer:
    """Traces the repository's frames that hold a value check, while armed."""

    def __init__(self, root: str, report: Reporter) -> None:
        self.base = os.path.realpath(root) + os.sep
        self.report = report
        self.armed = False
        self._previous: Any = None
        self._pending: dict[int, int] = {}  # id(frame) -> the check's line, not yet passed
        self._codes: dict[CodeType, frozenset[int]] = {}

    def _lines(self, code: CodeType) -> frozenset[int]:
        got = self._codes.get(code)
        if got is None:
            path = os.path.realpath(code.co_filename)
            lines = value_checks(path) if path.startswith(self.base) else frozenset()
            span = {line for _, _, line in code.co_lines() if line is not None}
            got = self._codes[code] = frozenset(lines & span)
        return got

    def arm(self) -> None:
        """From the kernel's return: the frames on the stack and every new one."""
        if self.armed:
            return
        self.armed = True
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            lines = self._lines(frame.f_code)
            if lines:
                frame.f_trace_lines = True
                frame.f_trace = self._local
                if frame.f_lineno in lines:  # `assert np.all(kernel(x) == y)`: under way
                    self._pending[id(frame)] = frame.f_lineno
            frame = frame.f_back

    def disarm(self) -> None:
        """At the kernel's next call, and when the driver ends."""
        if not self.armed:
            return
        self.armed = False
        sys.settrace(self._previous)
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if frame.f_trace is self._local:
                frame.f_trace = None
            frame = frame.f_back
        self._pending.clear()

    def _call(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        return self._local if self._lines(frame.f_code) else None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        key = id(frame)
        if event == "exception":
            self._pending.pop(key, None)  # an AssertionError: the verdict reads it
        elif event in ("line", "return"):
            line = self._pending.get(key)
            if line is not None and (event == "return" or frame.f_lineno != line):
                del self._pending[key]  # (an assertion may span several line events)
                where = os.path.relpath(os.path.realpath(frame.f_code.co_filename),
                                        self.base)
                # (the statement passed: `assert not ...` included, so no negation to read)
                self.report.compared(True, where=f"{where}:{line}")
            if event == "line" and frame.f_lineno in self._lines(frame.f_code):
                self._pending[key] = frame.f_lineno
        return self._local
