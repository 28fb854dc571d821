"""The operators of the language: Python's, with the size limits of SPEC section 15 checked
on what they build, tuples and lists compared by elements, and check mode's unknown values
absorbing every operation.  The hot binary operators are compiled into closures of their own
(`FAST_BINOPS`): the size limits checked on the result, by its type, without a call."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslError, ApdslTypeError, LimitError, Span
from ..tensor.view import Tensor
from . import limits
from .frames import Closure, Frame
from .limits import MAX_ELEMENTS, MAX_INT, MIN_INT
from .pyerrors import PY_ERRORS, limit_error, python_error
from .values import Absorbing

BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift}
UNARY: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos,
                                           "~": operator.invert, "not": operator.not_}


def eq(a: Any, b: Any) -> Any:
    # Tuples and lists compare by elements (`A.shape == [512, 512]`).
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        # identical elements are equal without a walk, as in Python's list comparison (a
        # structure that shares itself would otherwise cost exponential time)
        if a is b:
            return True
        if len(a) != len(b):
            return False
        unknown = None
        for x, y in zip(a, b):
            if x is y:
                continue
            same = eq(x, y)
            if isinstance(same, Absorbing):
                unknown = same  # a known difference still decides; else unknown
            elif not truth(same):
                return False
        return True if unknown is None else unknown
    return a == b


COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": eq, "!=": lambda a, b: not_(eq(a, b)),
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
    "is": operator.is_, "is not": operator.is_not}


def not_(x: Any) -> Any:
    return x if isinstance(x, Absorbing) else (~x if isinstance(x, np.ndarray) else not x)



def truth(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        if x.size != 1:
            raise ApdslTypeError("the truth value of a host array with several elements is "
                                 "ambiguous", code="APK120",
                                 help="use allclose(x, y), equal(x, y), or (x == y).all()")
        return bool(x)
    if isinstance(x, Tensor):
        raise ApdslTypeError("a tensor has no truth value", code="APK120",
                             help="compare host(t) values, or use allclose/equal")
    return bool(x)


def truth_or_absorb(x: Any) -> Any:
    return x if isinstance(x, Absorbing) else truth(x)




def absorbs(values: Any, depth: int = 0) -> bool:
    """True when a value check mode cannot know sits among `values` (nested tuples, lists,
    dicts and slices included)."""
    for v in values:
        if isinstance(v, Absorbing):
            return True
        if depth < 8:
            if isinstance(v, (tuple, list)) and absorbs(v, depth + 1):
                return True
            if isinstance(v, dict) and absorbs(list(v.values()), depth + 1):
                return True
            if isinstance(v, slice) and absorbs((v.start, v.stop, v.step), depth + 1):
                return True
    return False


def compare(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    # `in`, `is` and their negations ask Python for a bool, which an unknown value would
    # answer at random (`UNKNOWN in (1, 2)` is True): an unknown operand gives unknown.
    if isinstance(a, Absorbing):
        return a
    if isinstance(b, Absorbing):
        return b
    return op(a, b)



_SEQUENCES = (str, list, tuple)
RANGE_ITERATOR = type(iter(range(1)))  # (a range past sys.maxsize has another iterator type)


def _add(r: Any, span: Span, budget: limits.Budget) -> Any:
    t = type(r)
    if t is int:
        if r > MAX_INT or r < MIN_INT:
            raise limit_error(r, span)
    elif t is str or t is list or t is tuple:
        built(r, span, budget)
    return r


def built(r: Any, span: Span, budget: limits.Budget) -> None:
    """A string, list or tuple an operator built: within the size limit, and its copying paid
    for (a step per 64 elements), so `s = s + "ab"` in a long loop cannot run for ever."""
    n = len(r)
    if n > MAX_ELEMENTS:
        raise limit_error(r, span)
    if n >= limits.COPY_STEP:
        try:
            budget.charge(n // limits.COPY_STEP)
            if n >= limits.HOLD_MIN:  # in the memory budget while the program keeps it
                budget.made(r)
        except ApdslError as e:
            raise e.with_span(span) from None


def _fast_add(left: Closure, right: Closure, span: Span, budget: limits.Budget) -> Closure:
    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            r = a + b
        except PY_ERRORS as e:
            raise python_error(e, span) from None
        if type(r) is int:
            if r > MAX_INT or r < MIN_INT:
                raise limit_error(r, span)
            return r
        return _add(r, span, budget)
    return run


def _fast_sub(left: Closure, right: Closure, span: Span, budget: limits.Budget) -> Closure:
    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            r = a - b
        except PY_ERRORS as e:
            raise python_error(e, span) from None
        if type(r) is int and (r > MAX_INT or r < MIN_INT):
            raise limit_error(r, span)
        return r
    return run


def _mul(a: Any, b: Any, span: Span, budget: limits.Budget) -> Any:
    """A product with a sequence operand: refuses `"a" * 10**10` before building it."""
    try:
        return limits.mul(a, b, budget)
    except LimitError as e:
        raise e.with_span(span) from None
    except PY_ERRORS as e:
        raise python_error(e, span) from None


def _fast_mul(left: Closure, right: Closure, span: Span, budget: limits.Budget) -> Closure:
    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        ta = type(a)
        if ta is str or ta is list or ta is tuple or type(b) in _SEQUENCES:
            return _mul(a, b, span, budget)
        try:
            r = a * b
        except PY_ERRORS as e:
            raise python_error(e, span) from None
        if type(r) is int and (r > MAX_INT or r < MIN_INT):
            raise limit_error(r, span)
        return r
    return run


def _fast_mod(left: Closure, right: Closure, span: Span, budget: limits.Budget) -> Closure:
    # `"%0999999999d" % 1` builds a long string: checked like `+`
    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            if type(a) is str:  # its widths checked before it is built
                limits.pay_percent(a, b, budget)
            r = a % b
        except PY_ERRORS as e:
            raise python_error(e, span) from None
        except LimitError as e:
            raise e.with_span(span) from None
        if type(r) is str:
            built(r, span, budget)
        return r
    return run


def _plain(op: Callable[[Any, Any], Any]) -> Callable[..., Closure]:
    """Operators whose result is never larger than their operands."""
    def make(left: Closure, right: Closure, span: Span, budget: limits.Budget) -> Closure:
        def run(frame: Frame) -> Any:
            a = left(frame)
            b = right(frame)
            try:
                return op(a, b)
            except PY_ERRORS as e:
                raise python_error(e, span) from None
        return run
    return make


FAST_BINOPS: dict[str, Callable[..., Closure]] = {
    "+": _fast_add, "-": _fast_sub, "*": _fast_mul, "%": _fast_mod,
    **{op: _plain(BINOPS[op]) for op in ("/", "//", "@", "&", "|", "^", ">>")}}
