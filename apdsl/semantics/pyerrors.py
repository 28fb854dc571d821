"""Python exceptions from user code (1/0, "a" + 1, a call with the wrong arguments) turned
into located `ApdslError`s, so no traceback ever reaches a user."""

from __future__ import annotations

import re
from typing import Any

from ..errors import ApdslError, ApdslTypeError, Span
from . import limits

PY_ERRORS = (ZeroDivisionError, TypeError, ValueError, IndexError, KeyError, OverflowError,
              AttributeError, RecursionError, MemoryError)


def python_error(e: Exception, span: Span | None) -> ApdslError:
    if isinstance(e, ZeroDivisionError):
        err: ApdslError = ApdslTypeError("division by zero", code="APK121")
    elif isinstance(e, (IndexError, KeyError)):
        err = ApdslTypeError(f"index or key out of range: {e}", code="APK122")
    elif isinstance(e, RecursionError):
        # helper recursion is counted (APK123); what remains is an expression too deep
        err = limits.nested_too_deeply()
    elif isinstance(e, MemoryError):  # NumPy could not allocate, within the memory budget
        from ..tensor.budget import out_of_memory
        err = out_of_memory("the statement needs more memory than the machine could give", e)
    else:
        err = ApdslTypeError(f"invalid operation: {e}", code="APK120")
    return err.with_span(span)


def limit_error(r: Any, span: Span) -> ApdslError:
    if type(r) is int:
        return limits.int_too_large().with_span(span)
    return limits.too_long(limits._kind(r), len(r)).with_span(span)


# The hot operators are written out, with no call through `operator`, which pays for checking
# the size of their result (SPEC section 15).  Each comes in two forms: a constant right


_KEYWORD_ERRORS = ((re.compile(r"unexpected keyword argument '(\w+)'"), "name"),
                   (re.compile(r"multiple values for argument '(\w+)'"), "argument"))


def call_error(fn: Any, e: TypeError, span: Span,
                kw_where: dict[tuple[str, str], Span] | None = None) -> ApdslError:
    text = str(e)
    name = getattr(fn, "__name__", "function")
    for pattern, which in _KEYWORD_ERRORS:
        m = pattern.search(text)
        if m and kw_where and (m.group(1), which) in kw_where:
            span = kw_where[(m.group(1), which)]
            break
    if "argument" in text or "positional" in text or "keyword" in text:
        msg = text.replace("__call__()", f"{name}()").replace("call()", f"{name}()")
        help_ = None
        import inspect
        try:
            help_ = f"signature: {name}{inspect.signature(fn)}"
        except (TypeError, ValueError):
            pass
        return ApdslTypeError(msg, code="APK102", help=help_).with_span(span)
    return ApdslTypeError(f"invalid call of {name}: {text}", code="APK120").with_span(span)


def inside(inner: Span, outer: Span) -> bool:
    return inner.file == outer.file and (outer.line, outer.column) <= (inner.line, inner.column) \
        and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)


def argument_span(param: Any, arg_spans: list[Span], kw_spans: dict[str, Span]) -> Any:
    """The span of the argument an error names with `param=(keyword, position)`."""
    if not isinstance(param, tuple):
        return None
    keyword, position = param
    if keyword in kw_spans:
        return kw_spans[keyword]
    return arg_spans[position] if position < len(arg_spans) else None
