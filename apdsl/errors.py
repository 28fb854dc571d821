"""The error hierarchy: every mistake a user can make ends in one of these.

An error is raised where the fact is known, carrying a stable code, a one-line message and the
facts as structured fields; it is rendered in one place (`apdsl.surfaces.diagnostics`).  An
error is an immutable value: context known only further out (the statement's span, "in this call
of f", the program's sources) is added by the boundary that knows it, which raises a new error
made with `with_span`, `with_label` or `replace`; nothing changes an error after it is raised.
Codes are grouped by the layer that raises them:

    APK0xx syntax          APK1xx names, calls, language   APK2xx views and layouts
    APK3xx target rules    APK4xx runtime                  APK5xx Ascend formats, TLA
    APK6xx files, I/O      APK7xx rearrange patterns       APK9xx assertions

The explanation and example of every code live in `apdsl.catalogue`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from .records import record


@record
class Span:
    """A source range: 1-based lines and columns, end column exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def shifted(self, line_delta: int = 0, column_delta: int = 0) -> Span:
        return Span(self.file, self.line + line_delta, self.column + column_delta,
                    self.end_line + line_delta, self.end_column + column_delta)


@record
class Label:
    """A secondary span with a short message ("view made here")."""

    span: Span
    message: str


E = TypeVar("E", bound="ApdslError")

_NO_SOURCES: Mapping[str, str] = MappingProxyType({})
_MAPPINGS = ("facts", "sources")


class ApdslError(Exception):
    """Base of every apdsl error.  `code` is stable; `facts` are structured values.

    Immutable: its fields are set once, when it is made (`replace` and the `with_` methods make
    a changed copy).  `sources` and `trace` are the context a program run adds at its boundary
    (the source texts to render it against; the instructions that executed before it)."""

    default_code = "APK000"
    severity = "error"
    sources: Mapping[str, str] = _NO_SOURCES
    trace: Any = None

    def __init__(self, message: str, *, code: str | None = None, notes: list[str] | tuple = (),
                 help: str | None = None, span: Span | None = None,
                 labels: list[Label] | tuple = (), **facts: Any) -> None:
        super().__init__(message)
        self._set(message=message, code=code or self.default_code, notes=tuple(notes),
                  help=help, span=span, labels=tuple(labels),
                  facts=MappingProxyType(dict(facts)))

    def _set(self, **fields: Any) -> None:
        """Store fields while the error is made (bypassing the immutability guard)."""
        self.__dict__.update(fields)

    def __setattr__(self, name: str, value: Any) -> None:
        # Python itself sets the dunders (__traceback__, __cause__, __notes__ ...) and the
        # fields of its own exception types (an AttributeError's name and obj).
        if name.startswith("__") or _python_field(type(self), name):
            super().__setattr__(name, value)
            return
        raise AttributeError(f"{type(self).__name__} is an immutable value: cannot set {name} "
                             "(make a changed copy with replace(), with_span() or with_label())")

    def __delattr__(self, name: str) -> None:
        if name.startswith("__"):
            super().__delattr__(name)
            return
        raise AttributeError(f"{type(self).__name__} is an immutable value: cannot delete {name}")

    def __reduce__(self) -> tuple:
        # read-only mappings do not pickle: send their contents, `_restore` wraps them again
        fields = {k: dict(v) if isinstance(v, MappingProxyType) else v
                  for k, v in self.__dict__.items()}
        return (_restore, (type(self), self.args, fields))

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def replace(self: E, **changes: Any) -> E:
        """A copy of this error with some fields changed (`facts=` replaces all facts)."""
        fields = dict(self.__dict__)
        for name, value in changes.items():
            if name in ("notes", "labels"):
                value = tuple(value)
            elif name in _MAPPINGS:
                value = MappingProxyType(dict(value))
            fields[name] = value
        return _restore(type(self), self.args, fields)

    def with_span(self: E, span: Span | None) -> E:
        """This error located at `span` (the statement that raised), unless a finer span is
        already set."""
        if span is None or self.span is not None:
            return self
        return self.replace(span=span)

    def with_label(self: E, span: Span | None, message: str) -> E:
        """This error with a secondary label ("in this call of f") added."""
        if span is None:
            return self
        return self.replace(labels=(*self.labels, Label(span, message)))

    def with_facts(self: E, **facts: Any) -> E:
        """This error with facts added; a fact it already has keeps its value."""
        return self.replace(facts={**facts, **self.facts})


def _python_field(cls: type, name: str) -> bool:
    return any(name in vars(base) for base in cls.__mro__ if base.__module__ == "builtins")


def _restore(cls: type[E], args: tuple, fields: dict[str, Any]) -> E:
    err = cls.__new__(cls, *args)
    err.__dict__.update({k: MappingProxyType(v) if k in _MAPPINGS and isinstance(v, dict) else v
                         for k, v in fields.items()})
    return err


class ApdslSyntaxError(ApdslError):
    default_code = "APK001"


class ApdslNameError(ApdslError):
    """Unknown names, wrong calls, wrong argument types (APK1xx)."""

    default_code = "APK101"


class ApdslTypeError(ApdslError):
    default_code = "APK110"


class ViewError(ApdslError):
    """A view primitive's constraint is violated (APK2xx)."""

    default_code = "APK200"


class TargetError(ApdslError):
    """A hardware rule of the target is violated (APK3xx)."""

    default_code = "APK300"


class ApdslRuntimeError(ApdslError):
    """Raised while an instruction executes (APK4xx)."""

    default_code = "APK400"


class FormatError(ApdslError):
    """Ascend formats, fractal layouts and TLA tiles (APK5xx)."""

    default_code = "APK500"


class ApdslIOError(ApdslError):
    """Missing or unreadable files (APK6xx)."""

    default_code = "APK600"


class PatternError(ApdslError):
    """A rearrange pattern is malformed or does not fit the tensor (APK7xx).

    `pattern` is the pattern text and `start`/`end` the character range inside it that is wrong,
    so the language can point inside the string literal.
    """

    default_code = "APK700"

    def __init__(self, message: str, *, pattern: str | None = None, start: int | None = None,
                 end: int | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self._set(pattern=pattern, start=start, end=end)


class ApdslAssertionError(ApdslError):
    default_code = "APK900"


class Warning_(ApdslError):
    """A warning: rendered like an error but does not stop the program."""

    default_code = "APK450"
    severity = "warning"


class LimitError(ApdslError):
    """A limit of SPEC section 15 was reached: the step budget, an integer, string or list
    size, helper recursion or nesting depth (APK8xx, APK123, APK125-APK126).  It ends the
    program (and a check) at once: what follows from it would only repeat it."""

    default_code = "APK801"
