"""Values the interpreter handles besides Python scalars, tuples, lists, dicts and strings.

Attribute access is sandboxed: each kind of value exposes a fixed set of attributes, so a
program can never reach Python internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import ApdslNameError, Span
from ..tensor.dtypes import DType
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.registers import VirtualRegister
from ..tensor.view import Tensor
from .tile_size import TileSize

if TYPE_CHECKING:
    from .limits import Budget

TENSOR_ATTRS = frozenset({
    "ap", "broadcast", "expand_dim", "flatten_dims", "get_pattern", "indirect", "is_contiguous",
    "is_indirect", "permute", "rearrange", "reinterpret_cast", "reshape", "reshape_dim", "select",
    "slice", "squeeze_dim", "vector_select", "view",
    "buffer", "dtype", "name", "ndim", "offset", "shape", "size", "strides", "format",
    "coord", "origin_shape", "layout"})
SCALAR_METHODS = frozenset({"get_value", "set_value"})
HOST_ATTRS = frozenset({"shape", "dtype", "T", "astype", "sum", "reshape", "max", "min", "mean",
                        "size", "ndim", "transpose", "flatten", "tolist", "copy", "any", "all",
                        "argmax", "argmin", "ravel", "cumsum"})
DTYPE_ATTRS = frozenset({"name", "bits"})
REGISTER_ATTRS = frozenset({"name", "value"})
LAYOUT_ATTRS = frozenset({"shape", "stride", "origin_shape"})
TILE_SIZE_ATTRS = TileSize.FIELDS  # nl.tile_size


class Absorbing:
    """A value that absorbs every operation: arithmetic, comparison, indexing, calls and
    attributes all give the value back.  Two kinds exist, both singletons."""

    _instances: dict[type, Absorbing] = {}

    def __new__(cls) -> Absorbing:
        if cls not in cls._instances:
            cls._instances[cls] = super().__new__(cls)
        return cls._instances[cls]

    def _self(self, *_: Any, **__: Any) -> Absorbing:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _self
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _self
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __invert__ = _self
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _self
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _self
    __lt__ = __le__ = __gt__ = __ge__ = _self
    __getitem__ = __call__ = _self

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return self

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return self

    __hash__ = object.__hash__


class Unknown(Absorbing):
    """A host value that check mode cannot know, because it moves no data."""

    def __repr__(self) -> str:
        return "<unknown in check mode>"


class Poison(Absorbing):
    """The value of a name whose defining statement failed in check mode: using it raises no
    further errors, so `check` reports only independent errors."""

    def __repr__(self) -> str:
        return "<error>"


UNKNOWN = Unknown()
POISON = Poison()


@dataclass
class Module:
    """An imported `.apk` module, or a builtin namespace such as `nisa.engine`."""

    name: str
    file: str
    namespace: dict[str, Any]

    def __repr__(self) -> str:
        return f"<module {self.name}>"

    def __getattr__(self, name: str) -> Any:
        # Python code (apdsl.nki kernels) reads members as attributes: `nisa.engine.gpsimd`
        if name.startswith("_") or name == "namespace":
            raise AttributeError(name)
        try:
            return self.namespace[name]
        except KeyError:
            raise AttributeError(f"{self.name} has no attribute {name!r}") from None


class Caller(Protocol):
    """The interpreter a function was defined in, which calls it and launches it (a mixin of
    `semantics.interpreter.Interpreter`: `calls` and `spmd`)."""

    def call_function(self, fn: Function, args: tuple, kwargs: dict,
                      bound: dict[str, Any] | None = None) -> Any: ...

    def launch_kernel(self, fn: Function, grid: Any) -> Any: ...


@dataclass
class Function:
    """A `def` helper or a `kernel`."""

    name: str
    params: list[Any]  # ast.Param
    body: Any  # compiled block
    globals: dict[str, Any]
    span: Span | None
    is_kernel: bool = False
    returns: Any = None  # ast.TypeSpec of a kernel
    defaults: dict[str, Any] = field(default_factory=dict)
    interpreter: Caller | None = None
    names: tuple[str, ...] = ()  # the parameters' names (made from `params`)

    def __post_init__(self) -> None:
        self.names = tuple(p.name for p in self.params)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.interpreter.call_function(self, args, kwargs)

    def __getitem__(self, grid: Any) -> Any:
        # `kernel[n]`: the kernel on n logical NeuronCores (apdsl.semantics.spmd)
        return self.interpreter.launch_kernel(self, grid)

    def __repr__(self) -> str:
        return f"<{'kernel' if self.is_kernel else 'def'} {self.name}>"


def wrap_dtype_arg(x: Any) -> Any:
    return x.np if isinstance(x, DType) else x


class HostMethod:
    """A bound method of a host array that takes dtypes as apdsl names."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(to_dtype(a).np if isinstance(a, (str, DType)) and self.fn.__name__ ==
                     "astype" else wrap_dtype_arg(a) for a in args)
        return self.fn(*args, **{k: wrap_dtype_arg(v) for k, v in kwargs.items()})


def get_attribute(value: Any, attr: str, budget: Budget | None = None) -> Any:
    """Sandboxed attribute access.  `budget` (the interpreter's step budget) pays for the
    list, dict and string methods that walk or build (`apdsl.semantics.methods`)."""
    if attr.startswith("_"):
        raise ApdslNameError(f"attribute '{attr}' is not accessible", code="APK103",
                             help="names starting with '_' are private")
    if isinstance(value, Tensor):
        if attr in SCALAR_METHODS:  # get_value/set_value: the scalar unit (pipe S)
            from functools import partial

            from ..runtime.ascend import scalar
            bound = partial(getattr(scalar, attr), value)
            bound.located = True  # type: ignore[attr-defined]  # (calls.py)
            return bound
        allowed = TENSOR_ATTRS | SCALAR_METHODS
    elif isinstance(value, np.ndarray):
        if attr in HOST_ATTRS:
            got = getattr(value, attr)
            return HostMethod(got) if callable(got) else got
        allowed = HOST_ATTRS
    elif isinstance(value, Module):
        if attr in value.namespace:
            return value.namespace[attr]
        allowed = frozenset(k for k in value.namespace if not k.startswith("_"))
    elif isinstance(value, DType):
        allowed = DTYPE_ATTRS
    elif isinstance(value, VirtualRegister):
        allowed = REGISTER_ATTRS
    elif type(value).__name__ in ("Layout", "TlaLayout"):
        allowed = LAYOUT_ATTRS if hasattr(value, "origin_shape") else LAYOUT_ATTRS - {
            "origin_shape"}
    elif isinstance(value, Absorbing):
        return value
    elif isinstance(value, TileSize):
        allowed = TILE_SIZE_ATTRS
    elif type(value).__module__ in ("apdsl.runtime.ascend.vector.params",
                                    "apdsl.runtime.ascend.cube_params") \
            and hasattr(type(value), "_fields"):
        allowed = frozenset(type(value)._fields)  # pyasc's parameter objects: their fields
    elif getattr(type(value), "APK_ATTRS", None) is not None:
        allowed = type(value).APK_ATTRS  # a runtime object's public names (asc.TQue, ...)
    else:
        from . import methods
        bound = methods.method(value, attr, budget, show)
        if bound is not None:
            return bound
        allowed = methods.names(value)
    if attr in allowed:
        return getattr(value, attr)
    from difflib import get_close_matches
    close = get_close_matches(attr, sorted(allowed), n=3)
    kind = type_name(value)
    raise ApdslNameError(f"{kind} has no attribute '{attr}'", code="APK103",
                         help=f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                         else None, attribute=attr)


def type_name(value: Any) -> str:
    if isinstance(value, Tensor):
        return "a tensor"
    if isinstance(value, np.ndarray):
        return "a host array"
    if isinstance(value, Module):
        return f"module {value.name}"
    if isinstance(value, Function):
        return f"function {value.name}"
    if isinstance(value, DType):
        return "a dtype"
    if value is None:
        return "None"
    return {int: "an int", float: "a float", str: "a string", bool: "a bool", tuple: "a tuple",
            list: "a list", dict: "a dict"}.get(type(value), type(value).__name__)


def show(value: Any) -> str:
    """How print() shows a value."""
    if isinstance(value, Tensor):
        return (f"{value.name}: {value.dtype}{list(value.shape)} @ {value.buffer}"
                + (f" as {value.format}" if value.format != "ND" else ""))
    if isinstance(value, np.ndarray):
        return np.array2string(value, threshold=64, edgeitems=3)
    if isinstance(value, (tuple, list)):
        # inside a tuple or list a string shows quoted, as Python prints it
        inner = ", ".join(repr(v) if type(v) is str else show(v) for v in value)
        if isinstance(value, tuple):
            return f"({inner}{',' if len(value) == 1 else ''})"
        return f"[{inner}]"
    return str(value)
