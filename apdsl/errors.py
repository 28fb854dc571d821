"""The error hierarchy: every mistake a user can make ends in one of these.

An error is raised where the fact is known, carrying a stable code, a one-line message and the
facts as structured fields; it is rendered in one place (`apdsl.surfaces.diagnostics`), which adds
the source span the interpreter attaches.  Codes are grouped by the layer that raises them:

    APK0xx syntax          APK1xx names, calls, language   APK2xx views and layouts
    APK3xx target rules    APK4xx runtime                  APK5xx Ascend formats, TLA
    APK6xx files, I/O      APK7xx rearrange patterns       APK9xx assertions

The explanation and example of every code live in `apdsl.catalogue`.
"""

from __future__ import annotations

from typing import Any

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


class ApdslError(Exception):
    """Base of every apdsl error.  `code` is stable; `facts` are structured values."""

    default_code = "APK000"
    severity = "error"

    def __init__(self, message: str, *, code: str | None = None, notes: list[str] | tuple = (),
                 help: str | None = None, span: Span | None = None,
                 labels: list[Label] | tuple = (), **facts: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.notes = list(notes)
        self.help = help
        self.span = span
        self.labels = list(labels)
        self.facts = facts

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def with_span(self, span: Span | None) -> ApdslError:
        """Attach the span of the statement that raised, unless a finer one is already set."""
        if span is not None and self.span is None:
            self.span = span
        return self

    def add_label(self, span: Span | None, message: str) -> ApdslError:
        if span is not None:
            self.labels.append(Label(span, message))
        return self


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
        self.pattern = pattern
        self.start = start
        self.end = end


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
