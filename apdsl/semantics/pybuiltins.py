"""Python builtins the NKI kernels use beyond the core ones of `builtins.py`, `import math` and
`import os` (for `os.environ`, see `environ.py`).

`isinstance`, `divmod`, `pow`, `any`, `all`, `set`, `slice` and the `math` module (SPEC section 3), each
within the step budget and the size limits of SPEC section 15: `pow` refuses a power past
2**1024 before computing it, `any`/`all`/`set` pay a step per element they walk.
"""

from __future__ import annotations

import builtins as py
import math as _math
from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError
from ..tensor.view import Tensor
from . import limits
from .environ import Environ
from .values import Module

NAMES = ("isinstance", "divmod", "pow", "any", "all", "set", "slice")
MODULES = ("math", "os")


def python_builtins(budget: limits.Budget, table: dict[str, Any]) -> dict[str, Any]:
    """The builtins of NAMES, bound to one interpreter's budget; `table` holds the builtins made
    so far (its `int`, `list`, ... are what `isinstance` takes as types)."""
    walk = limits.walk

    def any_(values: Any) -> bool:
        return py.any(walk(values, budget, build=False))

    def all_(values: Any) -> bool:
        return py.all(walk(values, budget, build=False))

    def set_(values: Any = ()) -> set:
        return budget.made(py.set(walk(values, budget, build=True)))

    def divmod_(a: Any, b: Any) -> tuple[Any, Any]:
        return py.divmod(a, b)

    def pow__(base: Any, exp: Any, mod: Any = None) -> Any:
        if mod is not None:  # bounded by the modulus
            return py.pow(base, exp, mod)
        return limits.pow_(base, exp)

    types = _types(table, set_)

    def isinstance_(value: Any, kinds: Any) -> bool:
        return py.isinstance(value, _python_types(kinds, types))

    out: dict[str, Any] = {"isinstance": isinstance_, "divmod": divmod_, "pow": pow__,
                           "any": any_, "all": all_, "set": set_}
    for name, fn in out.items():
        fn.__name__ = name
    out["slice"] = slice  # `i_p = slice(start, stop)` indexes as `start:stop` does
    return out


def _types(table: dict[str, Any], set_: Callable[..., Any]) -> dict[int, Any]:
    """The builtins that name a type, keyed by identity, with the Python type each names."""
    pairs = [("int", int), ("float", float), ("bool", bool), ("str", str), ("tuple", tuple),
             ("list", list), ("dict", dict), ("range", range), ("ndarray", Tensor)]
    types = {id(table[name]): kind for name, kind in pairs if name in table}
    types[id(set_)] = set
    types[id(slice)] = slice
    return types


def _python_types(kinds: Any, types: dict[int, Any]) -> Any:
    if type(kinds) is tuple:
        return tuple(_python_types(k, types) for k in kinds)
    kind = types.get(id(kinds))
    if kind is None:
        from .values import type_name
        raise ApdslTypeError(
            f"isinstance() takes a type or a tuple of types, not {type_name(kinds)}",
            code="APK191", param=("kinds", 1),
            notes=["types: int, float, bool, str, tuple, list, dict, set, range, "
                   "ndarray (nl.ndarray: a tensor)"])
    return kind


def _ceil(x: Any) -> int:
    return limits.check_int(_math.ceil(x))


def _floor(x: Any) -> int:
    return limits.check_int(_math.floor(x))


def _trunc(x: Any) -> int:
    return limits.check_int(_math.trunc(x))


def _lcm(*values: Any) -> int:
    out = 1
    for v in values:
        g = _math.gcd(out, v)
        out = limits.mul(out // g if g else 0, v)
    return py.abs(out)


def math_module(budget: limits.Budget) -> Module:
    """`import math`: the functions NKI kernels size their tiles with, and its constants."""

    def prod(values: Any, *, start: Any = 1) -> Any:
        out = start
        for v in limits.walk(values, budget, build=False):
            out = limits.mul(out, v)
        return out

    def fsum(values: Any) -> float:
        return _math.fsum(limits.walk(values, budget, build=False))

    functions: dict[str, Any] = {
        "ceil": _ceil, "floor": _floor, "trunc": _trunc, "prod": prod, "fsum": fsum,
        "gcd": _math.gcd, "lcm": _lcm, "isqrt": _math.isqrt, "sqrt": _math.sqrt,
        "log": _math.log, "log2": _math.log2, "log10": _math.log10, "exp": _math.exp,
        "fabs": _math.fabs, "isclose": _math.isclose, "isfinite": _math.isfinite,
        "isinf": _math.isinf, "isnan": _math.isnan, "copysign": _math.copysign,
        "inf": _math.inf, "nan": _math.nan, "pi": _math.pi, "e": _math.e,
    }
    return Module("math", "<builtin>", functions)


def builtin_module(name: str, budget: limits.Budget) -> Module | None:
    """The Python module `import NAME` gives a `.apk` program, or None when NAME is none."""
    if name == "math":
        return math_module(budget)
    if name == "os":  # only os.environ, the program's own (semantics/environ.py)
        return Module("os", "<builtin>", {"environ": Environ()})
    return None
