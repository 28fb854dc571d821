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

import re
import sys
import time
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
    """The steps a program may still take, and the processor time (SPEC section 15).

    `left` is what the compiled closures read and subtract directly.  Without a time budget it
    holds every step the program may take.  With one, it holds a grant of GRANT steps and the
    rest waits in `banked`: a closure that finds `left` below zero calls `overdrawn` (or
    `refill`), which looks at the clock once per grant and moves the next grant in, so the
    clock costs nothing per step and an endless loop stops within a grant of its deadline."""

    __slots__ = ("left", "limit", "banked", "seconds", "deadline", "held")

    def __init__(self, limit: int, seconds: float | None = None) -> None:
        self.limit = limit
        self.seconds = seconds  # processor seconds, None for no time budget
        self.left = limit
        self.banked = 0
        self.deadline: float | None = None
        self.held: Any = None  # the large Python values built (hostmemory.Held), once any is
        self.reset()

    def afford(self, nbytes: int, what: str) -> None:
        """APK430 unless `nbytes` more fit in the memory budget (before building a value)."""
        from ..tensor.budget import human, release, reserve
        release(reserve(nbytes, lambda: (what, f"a Python value of about {human(nbytes)}")),
                nbytes)

    def made(self, value: Any) -> Any:
        """`value`, built by the program: counted in the memory budget when it is large."""
        if len(value) >= HOLD_MIN:
            held = self.held
            if held is None:
                from .hostmemory import Held
                held = self.held = Held()
            held.hold(value)
        return value

    @property
    def used(self) -> int:
        return self.limit - self.banked - self.left

    def reset(self, limit: int | None = None) -> None:
        """The whole budget again (the REPL: for each input), its clock started now."""
        if limit is not None:
            self.limit = limit
        if self.seconds is None:
            self.deadline = None
            self.left, self.banked = self.limit, 0
        else:
            self.deadline = time.thread_time() + self.seconds
            self.left = min(self.limit, GRANT)
            self.banked = self.limit - self.left

    def refill(self, need: int) -> bool:
        """Whether `left` holds `need` steps, after moving the next grant in from the bank (at
        least `need`); past the deadline, the time-budget error."""
        deadline = self.deadline
        if deadline is not None and time.thread_time() > deadline:
            raise self.out_of_time()
        move = min(self.banked, max(need - self.left, GRANT))
        if move > 0:
            self.banked -= move
            self.left += move
        return self.left >= need

    def overdrawn(self, n: int) -> None:
        """A closure's `left -= n` went below zero: pay the `n` steps from the bank, or raise
        the step-budget (or time-budget) error with the `n` steps not taken."""
        self.left += n
        if not self.refill(n):
            raise self.exhausted()
        self.left -= n

    def charge(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            self.overdrawn(n)

    def exhausted(self) -> LimitError:
        return LimitError(
            f"step budget exhausted: the program ran more than {self.limit:,} steps",
            code="APK801", limit=self.limit,
            notes=["a step is a statement, an if or loop test, a loop iteration, a call, an "
                   "element a builtin walks (list, sum, sorted, print, ...), or 64 elements of "
                   "a string or list an operator builds"],
            help="raise the limit with --max-steps N (in Python, apdsl.options(max_steps=N)); "
                 "the default is 100,000,000")

    def out_of_time(self) -> LimitError:
        seconds = self.seconds
        return LimitError(
            f"time budget exhausted: the program ran more than {_seconds(seconds)} of "
            f"processor time ({self.used:,} steps)",
            code="APK804", limit=seconds, steps=self.used,
            notes=["a loop that never ends stops here; a long but finite program needs a "
                   "larger budget"],
            help="raise the limit with --max-time SECONDS (in Python, "
                 "apdsl.options(max_time=SECONDS)); `check` has a default of "
                 f"{DEFAULT_CHECK_SECONDS:g} seconds, the commands that move data none")


# Python values from this many elements (characters) on count in the memory budget
# (`Budget.made`, apdsl.semantics.hostmemory).
HOLD_MIN = 4096
# With a time budget, the steps between two looks at the clock (a fraction of a second of
# the fastest statements), and the most a loop may take at once without counting
# iterations (a few seconds of them).
GRANT = 100_000
MAX_GRANT = 10_000_000
# `check`'s time budget when none is given: it moves no data, so a correct program checks in
# far less; an endless loop ends in seconds instead of walking the step budget for minutes.
DEFAULT_CHECK_SECONDS = 10.0


def _seconds(seconds: float | None) -> str:
    return f"{seconds:g} second{'s' if seconds != 1 else ''}"


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
        budget.made(value)
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
            if len(seq) * n >= HOLD_MIN:  # within the memory budget before it is built
                from .hostmemory import repeated
                budget.afford(repeated(seq, n), f"repeating a {_kind(seq)} {n:,} times")
                return budget.made(a * b)
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


def mod(a: Any, b: Any, budget: Budget | None = None) -> Any:
    """`a % b`; for a template string, its widths checked before the text is built (the
    `%=` of a program, as its `%` operator does)."""
    if type(a) is str and budget is not None:
        pay_percent(a, b, budget)
    return _pay(check_size(a % b), budget)


CHECKED = {"+": add, "-": sub, "*": mul, "%": mod, "**": pow_, "<<": lshift}




# -- formatting: widths and precisions checked before the text is built -----------------------

_DIGITS = re.compile(r"\d+")


def spec_size(spec: str) -> int:
    """At least the characters a format spec's width and precision can make beyond the
    value's own text (every run of digits counted: a digit fill character too, harmlessly)."""
    return sum(int(d) if len(d) <= 12 else 10 ** 12 for d in _DIGITS.findall(spec))


def pay_spec(spec: str, budget: Budget, before: int = 0) -> None:
    """Before `format(value, spec)` adds to `before` characters built already: refuse a
    result past the size limit, and pay a step per 64 characters of its padding."""
    extra = spec_size(spec)
    if before + extra > MAX_ELEMENTS:
        raise too_long("string", before + extra)
    if extra >= COPY_STEP:
        budget.charge(extra // COPY_STEP)


# `%` directives: an optional mapping key, flags, a width and a precision (each digits or
# `*`, taken from the arguments), a length modifier and the conversion.
_PERCENT = re.compile(r"%(\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.?)", re.S)


def pay_percent(template: str, args: Any, budget: Budget) -> None:
    """Before `template % args` builds its text: the widths and precisions it asks for (`*`
    ones read from `args`) within the size limit, their padding paid a step per 64."""
    if "%" not in template:
        return
    values = args if type(args) is tuple else (args,)
    extra = 0
    at = 0  # the next positional argument
    for m in _PERCENT.finditer(template):
        key, width, precision, conversion = m.groups()
        for part in (width, precision):
            if part == "*":
                n = values[at] if at < len(values) else 0
                at += 1
                extra += abs(n) if type(n) is int else 0
            elif part is not None:
                extra += int(part) if len(part) <= 12 else 10 ** 12
        if key is None and conversion != "%":
            at += 1
    if extra > MAX_ELEMENTS:
        raise too_long("string", extra)
    if extra >= COPY_STEP:
        budget.charge(extra // COPY_STEP)


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





