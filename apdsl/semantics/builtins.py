"""The names every `.apk` program starts with: the tensor model's constructors and instructions,
dtypes, buffers, host helpers and a few safe Python builtins.  `nl.`/`nisa.` prefixes are
resolved by the parser, so NKI documentation code finds the same names."""

from __future__ import annotations

import builtins as py
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from ..errors import ApdslAssertionError, ApdslTypeError
from ..tensor import targets
from ..tensor.dtypes import ALIASES, DTYPES
from ..tensor.view import Tensor
from .values import UNKNOWN, Unknown

INSTRUCTIONS = ("dma_copy", "tensor_copy", "memset", "iota", "nc_matmul", "mmad",
                "register_alloc", "register_load")
TLA = ("make_layout", "make_tensor", "get_tile", "tile_view", "make_tensor_like")


def host_value(x: Any, interp: Any = None) -> Any:
    """A host copy of a tensor's logical contents (NumPy array); host values pass through."""
    if isinstance(x, Tensor):
        if interp is not None and interp.dry and x.storage not in interp.known_values:
            return UNKNOWN
        return x.numpy()
    if isinstance(x, (Unknown,)):
        return x
    if isinstance(x, (list, tuple, int, float)):
        return np.asarray(x)
    if isinstance(x, np.ndarray):
        return x
    raise ApdslTypeError(f"host() takes a tensor, not {type(x).__name__}", code="APK110")


def _pair(x: Any, y: Any, interp: Any) -> tuple[Any, Any]:
    return host_value(x, interp), host_value(y, interp)


def make_builtins(interp: Any) -> dict[str, Any]:
    """Builtins bound to one interpreter (host() and friends need its mode)."""
    from ..runtime import instructions as ins

    def host(t: Any) -> Any:
        return host_value(t, interp)

    def allclose(x: Any, y: Any, rtol: float = 1e-5, atol: float = 1e-8) -> Any:
        a, b = _pair(x, y, interp)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise ApdslAssertionError(f"allclose: shapes differ: {a.shape} vs {b.shape}",
                                      code="APK902")
        return bool(np.allclose(a, b, rtol=rtol, atol=atol))

    def equal(x: Any, y: Any) -> Any:
        a, b = _pair(x, y, interp)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    def ndarray(shape: Any, dtype: Any = "float32", buffer: Any = "sbuf", format: str = "ND",
                name: str = "") -> Tensor:
        return interp.allocate(shape, dtype, buffer, format, name, span=interp.call_span)

    def print_(*values: Any, sep: str = " ") -> None:
        interp.print(*values, sep=sep)

    def load(path: str) -> Any:
        return interp.load_npy(path)

    def save(value: Any, path: str) -> None:
        interp.save_npy(value, path)

    def cdiv(a: int, b: int) -> int:
        return -(-a // b)

    def instruction(name: str) -> Callable[..., Any]:
        if hasattr(ins, name):
            fn = getattr(ins, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                return interp.instruction(name, fn, args, kwargs)

            call.__wrapped__ = fn  # type: ignore[attr-defined]  # inspect.signature follows it
        else:  # Ascend instructions load on first use

            loaded: list[Callable[..., Any]] = []

            def call(*args: Any, **kwargs: Any) -> Any:
                if not loaded:
                    loaded.append(_ascend(name))
                return interp.instruction(name, loaded[0], args, kwargs)
        call.__name__ = name
        return call

    table: dict[str, Any] = {
        "host": host, "allclose": allclose, "equal": equal, "ndarray": ndarray,
        "print": print_, "load": load, "save": save, "cdiv": cdiv,
        "range": py.range, "affine_range": py.range, "sequential_range": py.range,
        "static_range": py.range, "len": py.len, "min": py.min, "max": py.max, "abs": py.abs,
        "int": py.int, "float": py.float, "bool": py.bool, "str": py.str, "tuple": py.tuple,
        "list": py.list, "dict": py.dict, "enumerate": py.enumerate, "zip": py.zip,
        "sorted": py.sorted, "round": py.round, "sum": py.sum, "reversed": py.reversed,
        "prod": _prod, "set_target": _set_target, "zeros_like": _no_host_alloc,
    }
    for name in INSTRUCTIONS:
        table[name] = instruction(name)
    for name in TLA:
        table[name] = _tla(name)
    table.update(DTYPES)
    for alias, real in ALIASES.items():
        table[alias] = DTYPES[real]
    for b in targets.BUFFERS:
        table[b] = b
    return table


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _set_target(name: str) -> None:
    targets.set_target(name)


def _no_host_alloc(*_: Any) -> None:
    raise ApdslTypeError("zeros_like is not available: declare a tensor with '= zeros'",
                         code="APK110")


def _ascend(name: str) -> Callable[..., Any]:
    from ..runtime import ascend
    return getattr(ascend, name)


def _tla(name: str) -> Callable[..., Any]:
    fn: list[Callable[..., Any]] = []  # the TLA module loads on first use, then stays bound

    def call(*args: Any, **kwargs: Any) -> Any:
        if not fn:
            from ..tensor import tla
            fn.append(getattr(tla, name))
        return fn[0](*args, **kwargs)

    call.__name__ = name
    return call


@cache
def builtin_names() -> frozenset[str]:
    """Every builtin name (for the checker and completion), without building bound builtins."""
    names = {"host", "allclose", "equal", "ndarray", "print", "load", "save", "cdiv", "range",
             "affine_range", "sequential_range", "static_range", "len", "min", "max", "abs",
             "int", "float", "bool", "str", "tuple", "list", "dict", "enumerate", "zip",
             "sorted", "round", "sum", "reversed", "prod", "set_target", "zeros_like",
             "True", "False", "None"}
    names.update(INSTRUCTIONS, TLA, DTYPES, ALIASES, targets.BUFFERS)
    return frozenset(names)
