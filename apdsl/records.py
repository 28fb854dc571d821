"""`record`: immutable value classes, like frozen dataclasses, made cheaply.

`dataclasses` generates and compiles several methods per class when a module is imported; on
the path of a cold `apdsl check` that came to a tenth of the start-up time.  A record gets one
generated `__init__` (fields from the class annotations, defaults from class attributes) and
shares the rest: structural equality and hashing over its fields, a repr, and immutability.
It is apdsl's one idiom for immutable values (`tests/test_architecture.py` holds the few frozen
dataclasses left); dataclasses remain for mutable state (options, a trace, a run's result).
"""

from __future__ import annotations

from types import CodeType, FunctionType
from typing import Any, TypeVar

T = TypeVar("T")

_MISSING = object()


class Record:
    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, n) for n in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name}")

    def __reduce__(self) -> tuple:
        return (type(self), self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"


def record(cls: type[T] | None = None, *, identity: bool = False, weak: bool = False) -> Any:
    """Turn a class with annotated fields (and optional defaults) into a slotted `Record`.
    With `identity=True` instances compare and hash by identity (syntax nodes, tensors);
    `weak=True` lets them be weakly referenced."""
    if cls is None:
        return lambda c: record(c, identity=identity, weak=weak)
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    body = {k: v for k, v in cls.__dict__.items()
            if k not in ("__dict__", "__weakref__") and k not in defaults}
    body["__slots__"] = names + (("__weakref__",) if weak else ())
    body["_fields"] = names
    if identity:
        body["__eq__"], body["__hash__"] = object.__eq__, object.__hash__
    bases = cls.__bases__ if Record in cls.__mro__ else (Record,) + tuple(
        b for b in cls.__bases__ if b is not object)
    new = type(cls.__name__, bases, body)
    # `__init__(self, <fields>)` storing each argument through its slot: the code of one
    # template per field count, its parameters renamed (compiling one per class cost a cold
    # start ~2 ms); the defaults are a suffix of the fields, as in a dataclass.
    kept = [n for n in names if n in defaults]
    if kept and tuple(kept) != names[len(names) - len(kept):]:
        raise TypeError(f"{cls.__name__}: a field without a default follows one with a default")
    code = _init_template(len(names)).replace(co_varnames=("self", *names))
    scope = {f"_s{i}": getattr(new, n).__set__ for i, n in enumerate(names)}
    init = FunctionType(code, scope, "__init__", tuple(defaults[n] for n in kept) or None)
    new.__init__ = init  # type: ignore[misc]
    new.__qualname__ = cls.__qualname__
    new.__module__ = cls.__module__
    new.__doc__ = cls.__doc__
    return new  # type: ignore[return-value]


_TEMPLATES: dict[int, CodeType] = {}  # field count -> code (internal memo, never observable)


def _init_template(n: int) -> CodeType:
    code = _TEMPLATES.get(n)
    if code is None:
        params = "".join(f", a{i}" for i in range(n))
        stores = "".join(f"    _s{i}(self, a{i})\n" for i in range(n)) or "    pass\n"
        scope: dict[str, Any] = {}
        exec(f"def __init__(self{params}):\n{stores}", scope)  # noqa: S102
        code = _TEMPLATES[n] = scope["__init__"].__code__
    return code


def replace(obj: T, **changes: Any) -> T:
    """A copy of record `obj` with some fields changed."""
    return type(obj)(**{n: changes.get(n, getattr(obj, n)) for n in obj._fields})  # type: ignore
