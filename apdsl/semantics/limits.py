"""The limits of SPEC section 15 that the language enforces: the step budget, integer and
sequence sizes, helper recursion and the depth of Python recursion the interpreter may use.

Steps are charged by the interpreter (see `Interpreter.compile_block`): a block whose statements
always all run charges them in one subtraction when it starts, so counting costs one operation
per block execution, not one per statement; only when that charge would exhaust the budget does
the block run statement by statement, to stop at the exact statement.  `Budget.left` is the
only state, read and written by the compiled closures directly.

Sizes are checked before an operation that could build something huge (`10 ** 10 ** 10`,
`"a" * 10 ** 10`), so an over-large result is an error, never a hang or a MemoryError.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any

from ..errors import LimitError

# The fixed limits live with the syntax (the parser needs them too); re-exported so that the
# semantics sees every limit under one name.
from ..syntax.limits import (  # noqa: F401
    COPY_STEP,
    MAX_CALL_DEPTH,
    MAX_ELEMENTS,
    MAX_INT,
    MAX_INT_BITS,
    MAX_NESTING,
    MIN_INT,
    RECURSION_LIMIT,
    int_literal,
    int_too_large,
    nested_too_deeply,
    recursion_too_deep,
    too_long,
)

_SEQUENCES = (str, list, tuple)


class Budget:
    """The steps a program may still take."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    @property
    def used(self) -> int:
        return self.limit - self.left

    def reset(self, limit: int | None = None) -> None:
        if limit is not None:
            self.limit = limit
        self.left = self.limit

    def charge(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            self.left += n
            raise self.exhausted()

    def exhausted(self) -> LimitError:
        return LimitError(
            f"step budget exhausted: the program ran more than {self.limit:,} steps",
            code="APK801", limit=self.limit,
            notes=["a step is a statement, an if or loop test, a loop iteration, a call, an "
                   "element a builtin walks (list, sum, sorted, print, ...), or 64 elements of "
                   "a string or list an operator builds"],
            help="raise the limit with --max-steps N (in Python, apdsl.options(max_steps=N)); "
                 "the default is 100,000,000")






def _kind(seq: Any) -> str:
    return {str: "string", list: "list", tuple: "tuple"}.get(type(seq), "sequence")


def check_int(value: Any) -> Any:
    """`value`, or a LimitError when it is an int beyond 2**1024."""
    if type(value) is int and (value > MAX_INT or value < MIN_INT):
        raise int_too_large()
    return value


def check_size(value: Any) -> Any:
    """`value`, or a LimitError when it is an int, string, list or tuple beyond the limits."""
    t = type(value)
    if t is int:
        if value > MAX_INT or value < MIN_INT:
            raise int_too_large()
    elif (t is str or t is list or t is tuple) and len(value) > MAX_ELEMENTS:
        raise too_long(_kind(value), len(value))
    return value


# -- the operators that can build a huge value, checked before they run ------------------------

def _pay(value: Any, budget: Budget | None) -> Any:
    if budget is not None and type(value) in _SEQUENCES and len(value) >= COPY_STEP:
        budget.charge(len(value) // COPY_STEP)
    return value


def add(a: Any, b: Any, budget: Budget | None = None) -> Any:
    return _pay(check_size(a + b), budget)


def sub(a: Any, b: Any, budget: Budget | None = None) -> Any:
    return check_int(a - b)


def mul(a: Any, b: Any, budget: Budget | None = None) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        if a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
            raise int_too_large()
        return check_int(a * b)
    if tb is int and ta in _SEQUENCES or ta is int and tb in _SEQUENCES:
        seq, n = (a, b) if tb is int else (b, a)
        if n > 0 and len(seq) * n > MAX_ELEMENTS:
            raise too_long(_kind(seq), len(seq) * n)
        if budget is not None and n > 0 and len(seq) * n >= COPY_STEP:
            budget.charge(len(seq) * n // COPY_STEP)
    return a * b


def pow_(a: Any, b: Any, budget: Budget | None = None) -> Any:
    if type(b) is int and b > 0 and isinstance(a, int) and not -1 <= a <= 1:
        # |a| ** b >= 2 ** ((bits(|a|) - 1) * b): refuse before computing a huge power
        if (abs(a).bit_length() - 1) * b > 1024:
            raise int_too_large()
        return check_int(a ** b)
    return a ** b


def lshift(a: Any, b: Any, budget: Budget | None = None) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a and b > 0 and \
            abs(a).bit_length() + b > MAX_INT_BITS:
        raise int_too_large()
    return a << b


def invert(a: Any) -> Any:
    return check_int(~a)


CHECKED = {"+": add, "-": sub, "*": mul, "**": pow_, "<<": lshift}




# -- builtins that walk a sequence ------------------------------------------------------------

def length(values: Any) -> int | None:
    """The number of elements, without walking them, or None when unknown."""
    if isinstance(values, range):
        step = values.step
        lo, hi = values.start, values.stop
        n = (hi - lo + step - (1 if step > 0 else -1)) // step
        return max(n, 0)
    try:
        return len(values)
    except (TypeError, OverflowError):
        return None


_CHUNK = 65_536


def walk(values: Any, budget: Budget, *, build: bool) -> Any:
    """What a builtin walking `values` may iterate: each element costs a step; when it builds a
    list or tuple (`build`), more than MAX_ELEMENTS is an error.  Sized values are charged
    up front; iterators (zip, enumerate, ...) are drawn in chunks, so an endless one stops at
    the budget."""
    n = length(values)
    if n is not None:
        if build and n > MAX_ELEMENTS:
            raise too_long("list", n)
        budget.charge(n)
        return values
    out: list[Any] = []
    it = iter(values)
    while True:
        chunk = list(islice(it, _CHUNK))
        budget.charge(len(chunk))
        out.extend(chunk)
        if build and len(out) > MAX_ELEMENTS:
            raise too_long("list", len(out))
        if len(chunk) < _CHUNK:
            return out


def walk_printed(value: Any, budget: Budget) -> None:
    """Before a value is turned into text (`print`, `str`): count the elements of its nested
    lists, tuples and dicts, a step each, so a structure that shares itself (`x = [x, x]` sixty
    times: 2**60 elements to print) is an error instead of a hang."""
    if type(value) not in (list, tuple, dict):
        return
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        t = type(item)
        if t is list or t is tuple:
            n = len(item)
            stack.extend(x for x in item if type(x) in (list, tuple, dict))
        elif t is dict:
            n = len(item)
            stack.extend(x for x in item.values() if type(x) in (list, tuple, dict))
        else:
            continue
        seen += n
        budget.charge(n)
        if seen > MAX_ELEMENTS:
            raise too_long("string", seen)


def clamp_digits(ndigits: Any) -> Any:
    """`round(x, ndigits)` with |ndigits| beyond 400 (past every float and every integer within
    2**1024) rounds the same as at 400, but Python would compute 10**ndigits first."""
    if type(ndigits) is int:
        return max(-400, min(400, ndigits))
    return ndigits


@contextmanager
def deep_stack() -> Iterator[None]:
    """Allow the interpreter RECURSION_LIMIT Python frames for the block (never fewer than the
    caller allowed), so 1,000 helper calls and deep expressions fit."""
    before = sys.getrecursionlimit()
    if before < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        if sys.getrecursionlimit() != before:
            sys.setrecursionlimit(before)





