"""The methods of lists, tuples, dicts, sets and strings a `.apk` program may call.

An allow-list (SPEC section 3): only the methods named here are reachable, never a dunder, and
each one that can build something big or walk many elements obeys the size limits and pays
the step budget of SPEC section 15, as the operators and builtins do (`"".join(...)`,
`.extend(...)`, `.replace(...)`, `.format(...)` are checked before they build).  Methods that
only read or change one element are Python's own bound methods.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError
from . import limits
from .environ import METHODS as ENVIRON_METHODS
from .environ import Environ
from .limits import MAX_ELEMENTS

# Methods that do a bounded amount of work per call: Python's own.
_PLAIN = {
    list: frozenset({"append", "insert", "pop", "remove", "index", "count", "clear", "reverse",
                     "copy"}),
    tuple: frozenset({"index", "count"}),
    dict: frozenset({"keys", "values", "items", "get", "setdefault", "pop", "popitem", "clear",
                     "copy"}),
    set: frozenset({"add", "discard", "remove", "pop", "clear", "copy", "isdisjoint",
                    "issubset", "issuperset"}),
    frozenset: frozenset({"copy", "isdisjoint", "issubset", "issuperset"}),
    str: frozenset({"startswith", "endswith", "find", "rfind", "index", "rindex", "count",
                    "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower",
                    "isidentifier", "isnumeric", "isdecimal", "lower", "upper", "strip",
                    "lstrip", "rstrip", "title", "capitalize", "swapcase", "casefold",
                    "split", "rsplit", "splitlines", "partition", "rpartition",
                    "removeprefix", "removesuffix"}),
}
# Methods that may build a value of any size or walk any number of elements: checked here.
_CHECKED = {
    list: frozenset({"extend", "sort"}),
    dict: frozenset({"update"}),
    set: frozenset({"update", "union", "intersection", "difference", "symmetric_difference"}),
    frozenset: frozenset({"union", "intersection", "difference", "symmetric_difference"}),
    str: frozenset({"join", "replace", "format", "zfill", "center", "ljust", "rjust",
                    "expandtabs"}),
}
# Plain methods that cost O(1) (or the size of their arguments): every other plain method
# walks the value it is called on, so a call on a long value pays a step per 64 elements.
_CONSTANT = frozenset({"append", "pop", "get", "keys", "values", "items", "setdefault", "add",
                       "discard", "popitem", "clear", "startswith", "endswith",
                       "removeprefix", "removesuffix"})


def names(value: Any) -> frozenset[str]:
    """The method names `value` exposes (empty for a value that is no list, dict, ...)."""
    kind = type(value)
    if kind is Environ:
        return ENVIRON_METHODS
    return _PLAIN.get(kind, frozenset()) | _CHECKED.get(kind, frozenset())


def method(value: Any, attr: str, budget: limits.Budget | None,
           show: Callable[[Any], str] = str) -> Callable[..., Any] | None:
    """The bound method `value.attr` if the allow-list has it, else None.  `show` turns a
    value other than a number or string into the text `str.format` puts in (print's)."""
    kind = type(value)
    if kind not in _PLAIN:
        if kind is Environ and attr in ENVIRON_METHODS:  # os.environ: reading only
            return getattr(value, attr)
        return None
    if budget is None:  # (a caller outside the interpreter: the default budget)
        budget = limits.Budget(100_000_000)
    if attr in _PLAIN[kind]:
        bound = getattr(value, attr)
        if attr in _CONSTANT or len(value) < limits.COPY_STEP:
            return bound
        return _charged(bound, len(value) // limits.COPY_STEP, budget)
    if attr in _CHECKED.get(kind, ()):
        if attr == "format":
            return _format(value, budget, show)
        make = _MAKERS.get((kind.__name__, attr)) or _MAKERS[("*", attr)]
        return make(value, budget)
    return None


def _charged(bound: Callable[..., Any], steps: int, budget: limits.Budget) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        budget.charge(steps)
        return bound(*args, **kwargs)
    call.__name__ = bound.__name__
    return call


# -- the checked methods -----------------------------------------------------------------------

def _extend(lst: list, budget: limits.Budget) -> Callable[..., None]:
    def extend(values: Any) -> None:
        items = limits.walk(values, budget, build=True)
        n = limits.length(items)
        if n is not None and len(lst) + n > MAX_ELEMENTS:
            raise limits.too_long("list", len(lst) + n)
        lst.extend(items)
        budget.made(lst)
    return extend


def _sort(lst: list, budget: limits.Budget) -> Callable[..., None]:
    def sort(*, key: Any = None, reverse: bool = False) -> None:
        budget.charge(len(lst))
        lst.sort(key=key, reverse=reverse)
    return sort


def _update(target: Any, budget: limits.Budget) -> Callable[..., None]:
    def update(*others: Any, **kwargs: Any) -> None:
        for other in others:
            items = limits.walk(other.items() if isinstance(other, dict) else other, budget,
                                build=True)
            if len(target) + (limits.length(items) or 0) > MAX_ELEMENTS:
                raise limits.too_long(type(target).__name__, len(target) + len(items))
            target.update(items)
        budget.charge(len(kwargs))
        target.update(**kwargs)
        budget.made(target)
    return update


def _set_op(name: str) -> Callable[[Any, limits.Budget], Callable[..., Any]]:
    def make(target: Any, budget: limits.Budget) -> Callable[..., Any]:
        bound = getattr(target, name)

        def op(*others: Any) -> Any:
            budget.charge(len(target))
            return budget.made(bound(*(limits.walk(o, budget, build=True) for o in others)))
        op.__name__ = name
        return op
    return make


def _join(sep: str, budget: limits.Budget) -> Callable[[Any], str]:
    def join(values: Any) -> str:
        items = limits.walk(values, budget, build=True)
        items = list(items)
        total = len(sep) * max(len(items) - 1, 0) + sum(
            len(x) if type(x) is str else 0 for x in items)
        if total > MAX_ELEMENTS:
            raise limits.too_long("string", total)
        budget.charge(total // limits.COPY_STEP)
        return budget.made(sep.join(items))
    return join


def _replace(s: str, budget: limits.Budget) -> Callable[..., str]:
    def replace(old: Any, new: Any, count: int = -1) -> str:
        if type(old) is str and type(new) is str:
            hits = s.count(old) if old else len(s) + 1
            if count >= 0:
                hits = min(hits, count)
            total = len(s) + hits * (len(new) - len(old))
            if total > MAX_ELEMENTS:
                raise limits.too_long("string", total)
            budget.charge(max(total, len(s)) // limits.COPY_STEP)
        return budget.made(s.replace(old, new, count))
    return replace


def _padding(name: str) -> Callable[[str, limits.Budget], Callable[..., str]]:
    def make(s: str, budget: limits.Budget) -> Callable[..., str]:
        bound = getattr(s, name)

        def pad(width: Any, *rest: Any) -> str:
            if type(width) is int and width > MAX_ELEMENTS:
                raise limits.too_long("string", width)
            if type(width) is int:
                budget.charge(max(width, 0) // limits.COPY_STEP)
            return budget.made(bound(width, *rest))
        pad.__name__ = name
        return pad
    return make


def _expandtabs(s: str, budget: limits.Budget) -> Callable[..., str]:
    def expandtabs(tabsize: Any = 8) -> str:
        if type(tabsize) is int and s.count("\t") * max(tabsize, 0) + len(s) > MAX_ELEMENTS:
            raise limits.too_long("string", s.count("\t") * tabsize + len(s))
        return s.expandtabs(tabsize)
    return expandtabs


_FORMATTER = string.Formatter()


def check_format(template: str) -> None:
    """A `str.format` template may name its arguments and give format specs, but reach into
    no argument (`{0.attr}`, `{0[key]}` would read what the sandbox hides), and no width or
    precision may build a string past the size limit."""
    for _, field, spec, _ in _FORMATTER.parse(template):
        if field is None:
            continue
        if "." in field or "[" in field:
            raise ApdslTypeError(
                f"format field '{{{field}}}' reads an attribute or item of its argument",
                code="APK192", notes=["a .apk format field names an argument ({}, {0}, "
                                      "{name}) and may give a format spec ({:>8.3f})"],
                help="compute the value first and format it: "
                     "'{}'.format(x.shape[0]) instead of '{0.shape[0]}'.format(x)")
        for part in (spec or "", field):
            if "{" in part:
                check_format(part)
        _check_widths(spec or "")


def _check_widths(spec: str) -> None:
    digits = ""
    for ch in spec + " ":
        if ch.isdigit():
            digits += ch
            continue
        if digits and int(digits) > MAX_ELEMENTS:
            raise limits.too_long("string", int(digits))
        digits = ""


def _format(template: str, budget: limits.Budget,
            show: Callable[[Any], str]) -> Callable[..., str]:
    def format(*args: Any, **kwargs: Any) -> str:
        check_format(template)
        for v in (*args, *kwargs.values()):
            limits.walk_printed(v, budget)
        shown_args = [a if isinstance(a, (int, float, str)) else _Shown(show(a)) for a in args]
        shown_kwargs = {k: v if isinstance(v, (int, float, str)) else _Shown(show(v))
                        for k, v in kwargs.items()}
        formatter = _Sized(budget, 0)
        return budget.made(limits.check_size(formatter.vformat(template, shown_args,
                                                                shown_kwargs)))
    return format


class _Sized(string.Formatter):
    """`str.format` (the same fields, numbering and specs), each field's width and precision
    checked and paid for before its text is built (the spec complete: `{:>{}}` reads its width
    from an argument first), with the text built so far counted against the size limit."""

    def __init__(self, budget: limits.Budget, size: int) -> None:
        self.budget = budget
        self.size = size  # characters of the fields built so far

    def format_field(self, value: Any, format_spec: str) -> Any:
        limits.pay_spec(format_spec, self.budget, self.size)
        text = format(value, format_spec)
        self.size += len(text)
        if self.size > MAX_ELEMENTS:
            raise limits.too_long("string", self.size)
        return text


class _Shown(str):
    """A value formatted by `show` (how print shows it), so `'{}'.format(t)` says what print
    says and never a Python repr of apdsl's internals."""

    __slots__ = ()


_MAKERS: dict[tuple[str, str], Callable[[Any, limits.Budget], Callable[..., Any]]] = {
    ("list", "extend"): _extend,
    ("list", "sort"): _sort,
    ("*", "update"): _update,
    ("*", "union"): _set_op("union"),
    ("*", "intersection"): _set_op("intersection"),
    ("*", "difference"): _set_op("difference"),
    ("*", "symmetric_difference"): _set_op("symmetric_difference"),
    ("str", "join"): _join,
    ("str", "replace"): _replace,
    ("str", "zfill"): _padding("zfill"),
    ("str", "center"): _padding("center"),
    ("str", "ljust"): _padding("ljust"),
    ("str", "rjust"): _padding("rjust"),
    ("str", "expandtabs"): _expandtabs,
}
