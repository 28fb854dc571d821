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

MAX_INT = 2 ** 1024  # integers beyond this magnitude are errors
MIN_INT = -MAX_INT
MAX_INT_BITS = 1025  # bit length of MAX_INT; a larger bit length is beyond it
MAX_ELEMENTS = 100_000_000  # characters of a string, elements of a list or tuple
MAX_CALL_DEPTH = 1_000  # helper calls under way at once
MAX_NESTING = 200  # open blocks and brackets in the source
# The Python recursion the interpreter may use: about 7 frames per helper call (so 1,000
# helper calls fit) plus deep expressions.  Measured safe for CPython's C stack at 8 MiB.
RECURSION_LIMIT = 20_000

_SEQUENCES = (str, list, tuple)
COPY_STEP = 64  # building a string, list or tuple costs a step per this many elements


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


def int_too_large(what: str = "integer") -> LimitError:
    return LimitError(f"{what} too large: its magnitude exceeds 2**1024", code="APK802",
                      help="apdsl integers are limited to 2**1024 (about 1.8e308) in magnitude; "
                           "the limit is fixed", limit="2**1024")


def too_long(kind: str, n: int) -> LimitError:
    unit = "characters" if kind == "string" else "elements"
    return LimitError(f"{kind} too long: {n:,} {unit}, more than the limit of "
                      f"{MAX_ELEMENTS:,}", code="APK803", length=n,
                      help=f"strings, lists and tuples are limited to {MAX_ELEMENTS:,} elements "
                           f"(characters of a string); the limit is fixed (keep large data in "
                           f"tensors)")


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


def int_literal(text: str) -> int | None:
    """The value of an integer literal, or None when it is beyond 2**1024 (checked on the
    digits first, so a 5,000-digit literal costs nothing).  ValueError for a decimal literal
    with leading zeros, which Python does not allow either."""
    body = text.replace("_", "")
    base = {"0x": 16, "0o": 8, "0b": 2}.get(body[:2].lower(), 10)
    if base == 10 and body[0] == "0" and body.strip("0"):
        raise ValueError("leading zeros")
    digits = (body[2:] if base != 10 else body).lstrip("0") or "0"
    bits_per_digit = {16: 4, 8: 3, 2: 1, 10: 3.33}[base]
    if len(digits) * bits_per_digit > MAX_INT_BITS + 8:
        return None
    value = int(digits, base)
    return None if value > MAX_INT else value


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


def recursion_too_deep(name: str) -> LimitError:
    return LimitError(f"recursion too deep: more than {MAX_CALL_DEPTH:,} calls of helpers under "
                      f"way (in {name})", code="APK123", limit=MAX_CALL_DEPTH,
                      help="helper recursion is limited to 1,000 calls and the limit is fixed; "
                           "check the recursion's base case, or write it as a loop")


def nested_too_deeply() -> LimitError:
    return LimitError("expression nested too deeply for apdsl to evaluate", code="APK126",
                      help="split it into several statements with intermediate names")

