"""`nl.NKIObject`: the base of NKI's user-defined classes.  NKI treats every such class like a
Python data class (the NKI language guide, "Class Support"): its fields are its class-level
names, annotated or not (`x: int`, `y: bool = False`, `section_idx = None`), in the order the
class body gives them, after those of its NKIObject bases; unless the class writes its own,
the constructor takes each field positionally or by keyword, a field without a default taking
None, and then calls `__post_init__` when the class has one.  `@dataclass` on top changes
nothing of that (it keeps an `__init__` the class already has)."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, ClassVar

from ..errors import ApdslTypeError
from .locate import caller_span

_MISSING = object()


def _is_field(name: str, value: Any) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return False
    return not (inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod,
                                                                property, type)))


def _own_fields(cls: type) -> list[str]:
    """The fields the class body itself declares, in its order."""
    names: list[str] = list(cls.__dict__.get("__annotations__", {}))
    for name, value in cls.__dict__.items():
        if name not in names and _is_field(name, value):
            names.append(name)
    return [n for n in names if not n.startswith("__")]


def _default(cls: type, name: str) -> Any:
    declared = getattr(cls, "__dataclass_fields__", {}).get(name)
    if declared is not None:
        if declared.default is not dataclasses.MISSING:
            return declared.default
        if declared.default_factory is not dataclasses.MISSING:
            return declared.default_factory()
    value = getattr(cls, name, _MISSING)
    if isinstance(value, dataclasses.Field):
        return None if value.default is dataclasses.MISSING else value.default
    return None if value is _MISSING else value


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    fields = cls.__nki_fields__
    if len(args) > len(fields):
        raise ApdslTypeError(
            f"{cls.__name__}() takes {len(fields)} fields ({', '.join(fields)}), "
            f"{len(args)} were given", code="APK922", span=caller_span(1))
    unknown = [k for k in kwargs if k not in fields]
    if unknown:
        raise ApdslTypeError(
            f"{cls.__name__}() has no field {unknown[0]!r}", code="APK922", span=caller_span(1),
            notes=[f"the fields of {cls.__name__}: {', '.join(fields) or '(none)'}"],
            help="an NKIObject's fields are the names its class body declares")
    given = dict(zip(fields, args))
    twice = [k for k in kwargs if k in given]
    if twice:
        raise ApdslTypeError(f"{cls.__name__}() got field {twice[0]!r} twice",
                             code="APK922", span=caller_span(1))
    given.update(kwargs)
    for name in fields:
        object.__setattr__(self, name, given[name] if name in given else _default(cls, name))
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


class NKIObject:
    """The base class of NKI kernel data classes and configuration objects (see the module
    docstring for the field rules)."""

    __nki_fields__: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inherited: list[str] = []
        for base in reversed(cls.__mro__[1:]):
            for name in base.__dict__.get("__nki_fields__", ()):
                if name not in inherited:
                    inherited.append(name)
        own = [n for n in _own_fields(cls) if n not in inherited]
        cls.__nki_fields__ = (*inherited, *own)
        if cls.__init__ in (NKIObject.__init__, _init):  # no class of its own writes one
            cls.__init__ = _init  # type: ignore[misc]

    def __init__(self, **kwargs: Any) -> None:
        _init(self, **kwargs)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n, None)!r}" for n in type(self).__nki_fields__)
        return f"{type(self).__name__}({inner})"
