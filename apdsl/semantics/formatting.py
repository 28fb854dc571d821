"""Compiling f-strings: each field's value converted (`!r`, `!s`, `!a`) and formatted with its
spec as Python's `format` does, a value without either shown as `print` shows it.

A spec's width and precision are checked before formatting, so `f"{x:999999999999}"` is the
size-limit error of SPEC section 15 rather than a huge allocation, and a built string pays a
step per 64 characters as other string building does.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApdslTypeError, LimitError, Span
from ..syntax import ast
from . import limits
from .arith import built
from .frames import Closure, Frame
from .pyerrors import PY_ERRORS
from .values import Absorbing, show

_PLAIN = (str, int, float, bool, type(None))


def convert(value: Any, conversion: str | None, budget: limits.Budget) -> Any:
    if conversion is None:
        return value
    limits.walk_printed(value, budget)
    if conversion == "s":
        return show(value)
    text = repr(value) if _plain_structure(value) else show(value)
    return text if conversion == "r" else text.encode("ascii", "backslashreplace").decode()


def _plain_structure(value: Any, depth: int = 0) -> bool:
    """Scalars, and tuples, lists and dicts of them: Python's repr is what a user expects."""
    if type(value) in _PLAIN:
        return True
    if depth < 20 and type(value) in (tuple, list):
        return all(_plain_structure(v, depth + 1) for v in value)
    if depth < 20 and type(value) is dict:
        return all(_plain_structure(k, depth + 1) and _plain_structure(v, depth + 1)
                   for k, v in value.items())
    return False


def format_value(value: Any, spec: str, span: Span, budget: limits.Budget) -> str:
    """`format(value, spec)` within the size limits, as a located error when it fails."""
    if not spec:
        if type(value) is str:
            return value
        limits.walk_printed(value, budget)
        return show(value)
    try:
        limits.pay_spec(spec, budget)  # before the text is built
    except LimitError as e:
        raise e.with_span(span) from None
    try:
        return format(value, spec)
    except PY_ERRORS as e:
        raise ApdslTypeError(f"cannot format {_kind(value)} with the spec '{spec}': {e}",
                             code="APK044", help="a format spec is Python's: `{x:8.3f}`, "
                             "`{n:>6}`, `{n:#x}`; a tensor or host array is shown with "
                             "`{x}` or `{x!r}`", span=span) from None


def _kind(value: Any) -> str:
    from .values import type_name
    return type_name(value)


class FormattingCompiler:
    """The f-string compiler (a mixin of `Interpreter`)."""

    def _expr_JoinedStr(self, node: ast.JoinedStr) -> Closure:
        parts = [self._compile_part(p) for p in node.parts]
        span = node.span
        budget = self.budget

        def run(frame: Frame) -> Any:
            pieces = []
            for p in parts:
                piece = p(frame)
                if isinstance(piece, Absorbing):
                    return piece  # check mode: a value it cannot know
                pieces.append(piece)
            text = "".join(pieces)
            try:
                built(text, span, budget)
            except LimitError as e:
                raise e.with_span(span) from None
            return text
        return run

    def _compile_part(self, part: Any) -> Closure:
        if type(part) is str:
            return lambda frame: part
        return self._expr_FormattedValue(part)

    def _expr_FormattedValue(self, node: ast.FormattedValue) -> Closure:
        value = self.compile_expr(node.value)
        spec = self.compile_expr(node.spec) if node.spec is not None else (lambda frame: "")
        conversion = node.conversion
        span = node.span
        budget = self.budget

        def run(frame: Frame) -> Any:
            v = value(frame)
            s = spec(frame)
            if isinstance(v, Absorbing):
                return v
            if isinstance(s, Absorbing):
                return s
            try:
                return format_value(convert(v, conversion, budget), s, span, budget)
            except LimitError as e:
                raise e.with_span(span) from None
        return run
