"""The operators of the language: Python's, with the size limits of SPEC section 15 checked
on what they build, tuples and lists compared by elements, and check mode's unknown values
absorbing every operation.  The hot binary operators are compiled into closures of their own
(`FAST_BINOPS`), with a constant right operand read from the closure."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslTypeError, LimitError, Span
from ..syntax import ast
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
        except LimitError as e:
            raise e.with_span(span) from None


def _fast_add(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    if is_const:
        def run_const(frame: Frame) -> Any:
            a = left(frame)
            try:
                r = a + const
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            if type(r) is int:
                if r > MAX_INT or r < MIN_INT:
                    raise limit_error(r, span)
                return r
            return _add(r, span, budget)
        return run_const

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


def _fast_sub(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    if is_const:
        def run_const(frame: Frame) -> Any:
            a = left(frame)
            try:
                r = a - const
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            if type(r) is int and (r > MAX_INT or r < MIN_INT):
                raise limit_error(r, span)
            return r
        return run_const

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


def _fast_mul(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    if is_const:
        const_seq = type(const) in _SEQUENCES

        def run_const(frame: Frame) -> Any:
            a = left(frame)
            ta = type(a)
            if const_seq or ta is str or ta is list or ta is tuple:
                return _mul(a, const, span, budget)
            try:
                r = a * const
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            if type(r) is int and (r > MAX_INT or r < MIN_INT):
                raise limit_error(r, span)
            return r
        return run_const

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


def _fast_mod(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    # `"%0999999999d" % 1` builds a long string: checked like `+`
    if is_const:
        def run_const(frame: Frame) -> Any:
            a = left(frame)
            try:
                if type(a) is str:  # its widths checked before it is built
                    limits.pay_percent(a, const, budget)
                r = a % const
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            except LimitError as e:
                raise e.with_span(span) from None
            if type(r) is str:
                built(r, span, budget)
            return r
        return run_const

    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            if type(a) is str:
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
    def make(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
        if is_const:
            def run_const(frame: Frame) -> Any:
                try:
                    return op(left(frame), const)
                except PY_ERRORS as e:
                    raise python_error(e, span) from None
            return run_const

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


# Integer arithmetic on a name (`i * 64`, `x + 1`, `total + y`, `i % 7`), the statements of
# index computations and counters: the name is read from the frame's locals inline and, when
# both operands are ints, Python computes the result without the general closure's checks
# (none can fail for ints, but the int range of SPEC 15).  Anything else (a name that is not
# local, a float, a string, check mode's unknown) runs the general closure, which evaluates
# the operands again: reading a name has no effect, so that is the same computation.
INT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "%": operator.mod,
    "//": operator.floordiv}
_GROWS = frozenset({"+", "-", "*"})


def name_int_op(op_name: str, left: str, right: Any, right_is_name: bool, general: Closure,
                span: Span) -> Closure | None:
    """The closure for `left OP right` with `left` a name and `right` a name or an int
    constant; None where the general closure is all there is (a constant a division by
    zero or a non-int)."""
    op = INT_OPS.get(op_name)
    if op is None:
        return None
    grows = op_name in _GROWS
    if right_is_name:
        def run_names(frame: Frame) -> Any:
            local = frame.vars
            try:
                a = local[left]
                b = local[right]
            except KeyError:
                return general(frame)
            if type(a) is not int or type(b) is not int or (b == 0 and not grows):
                return general(frame)
            r = op(a, b)
            if grows and (r > MAX_INT or r < MIN_INT):
                raise limit_error(r, span)
            return r
        run_names.int_parts = (op, left, right, True, grows)  # type: ignore[attr-defined]
        return run_names
    if type(right) is not int or (right == 0 and not grows):
        return None

    def run_const(frame: Frame) -> Any:
        try:
            a = frame.vars[left]
        except KeyError:
            return general(frame)
        if type(a) is not int:
            return general(frame)
        r = op(a, right)
        if grows and (r > MAX_INT or r < MIN_INT):
            raise limit_error(r, span)
        return r
    run_const.int_parts = (op, left, right, False, grows)  # type: ignore[attr-defined]
    return run_const


def const_int_op(op_name: str, left: Any, right: str, general: Closure,
                 span: Span) -> Closure | None:
    """The closure for `left OP right` with `left` an int constant and `right` a name (`1 - i`):
    an int local computed inline; anything else runs the `general` closure."""
    op = INT_OPS.get(op_name)
    if op is None or op_name not in _GROWS or type(left) is not int:
        return None

    def run(frame: Frame) -> Any:
        try:
            b = frame.vars[right]
        except KeyError:
            return general(frame)
        if type(b) is not int:
            return general(frame)
        r = op(left, b)
        if r > MAX_INT or r < MIN_INT:
            raise limit_error(r, span)
        return r
    return run


_INT_COMPARE = frozenset({operator.lt, operator.le, operator.gt, operator.ge})


def name_int_compare(node: Any, op: Callable[[Any, Any], Any], general: Closure
                     ) -> Closure | None:
    """The closure for `name < 3` (`<`, `<=`, `>`, `>=` with an int constant): an int local
    compared inline; anything else runs the `general` closure."""
    left, right = node.left, node.comparators[0]
    if type(left) is not ast.Name or type(right) is not ast.Const or \
            type(right.value) is not int or op not in _INT_COMPARE:
        return None
    name, const = left.id, right.value

    def run(frame: Frame) -> Any:
        try:
            a = frame.vars[name]
        except KeyError:
            return general(frame)
        if type(a) is not int:
            return general(frame)
        return op(a, const)
    return run


def name_int_assign(value: Closure, target: str, general: Closure, span: Span) -> Closure | None:
    """`target = left OP right` for a `value` closure of `name_int_op`: the int result stored
    straight into the frame's locals; anything else runs the `general` statement."""
    parts = getattr(value, "int_parts", None)
    if parts is None:
        return None
    op, left, right, right_is_name, grows = parts
    if right_is_name:
        def assign_names(frame: Frame) -> None:
            local = frame.vars
            try:
                a = local[left]
                b = local[right]
            except KeyError:
                return general(frame)
            if type(a) is not int or type(b) is not int or (b == 0 and not grows):
                return general(frame)
            r = op(a, b)
            if grows and (r > MAX_INT or r < MIN_INT):
                raise limit_error(r, span)
            local[target] = r
        return assign_names

    def assign_const(frame: Frame) -> None:
        local = frame.vars
        try:
            a = local[left]
        except KeyError:
            return general(frame)
        if type(a) is not int:
            return general(frame)
        r = op(a, right)
        if grows and (r > MAX_INT or r < MIN_INT):
            raise limit_error(r, span)
        local[target] = r
    return assign_const
