"""An exception raised by the user's own Python (a NameError in their helper): shown as a
traceback of their frames only, labelled as their code, not apdsl's.

Every exception the user's code raises is theirs, whatever its class: `BaseException`
subclasses, `GeneratorExit`, `SystemExit(n)` and a `KeyboardInterrupt` their code raises with
a `raise` statement (an interrupt from the keyboard, which arrives wherever the program happens
to be, stays an interrupt).  Reporting never calls into the exception more than Python's own
traceback printer does, and survives a `__str__` or `__repr__` that raises."""

from __future__ import annotations

import dis
import traceback
from types import TracebackType
from typing import Any

from ..errors import ApdslError, ApdslNameError
from .locate import is_user_file, traceback_span


class UserCodeError(ApdslError):
    """The user's Python raised `exc`; the notes hold the traceback of the user's frames."""

    default_code = "APK148"


def _safe(fn: Any, value: Any, what: str) -> str:
    """`fn(value)` as text, or what Python's traceback printer shows when it raises."""
    try:
        text = fn(value)
        if isinstance(text, str):
            return text
    except BaseException:  # noqa: BLE001 - the user's __str__/__repr__, whatever it raises
        pass
    return f"<{what} {fn.__name__}() failed>"


def _class_name(exc: BaseException) -> str:
    name = _safe(lambda c: c.__name__, type(exc), "exception class")
    return name if name.isidentifier() else "exception"


def from_exception(exc: BaseException) -> UserCodeError:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    lines = ["traceback of your code (most recent call last; apdsl's frames left out):"]
    for f in traceback.StackSummary.from_list(frames).format():
        lines.append(f.rstrip("\n"))
    try:  # (Python's printer guards str(); a raising __notes__ or class name may still fail)
        lines.extend(s.rstrip("\n") for s in traceback.format_exception_only(type(exc), exc))
    except BaseException:  # noqa: BLE001 - reported below from what is safe to read
        lines.append(f"{_class_name(exc)}: {_safe(str, exc, 'exception')}")
    message = _safe(str, exc, "exception")
    name = _class_name(exc)
    return UserCodeError(f"your Python code raised {name}" + (f": {message}" if message else ""),
                         code="APK148", notes=["\n".join(lines)],
                         help="this is an error in your program's Python, not an apdsl check",
                         span=traceback_span(exc.__traceback__))


def raised_by_user(exc: BaseException) -> bool:
    """Whether the user's code raised `exc` itself: the innermost frame of its traceback is
    theirs and stands on a `raise` statement.  A KeyboardInterrupt that Python delivers for
    Ctrl-C stands wherever the program was (not on a `raise`, nor necessarily in their code)."""
    tb: TracebackType | None = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None or not is_user_file(last.tb_frame.f_code.co_filename):
        return False
    return _opname(last.tb_frame.f_code, last.tb_lasti) in ("RAISE_VARARGS", "RERAISE")


def _opname(code: Any, offset: int) -> str:
    for ins in dis.get_instructions(code):
        if ins.offset == offset:
            return ins.opname
    return ""


def users(exc: BaseException) -> bool:
    """Whether `exc`, escaping the user's code, is reported as theirs (APK148): every
    exception but apdsl's own diagnostics and a real keyboard interrupt."""
    if isinstance(exc, ApdslError):
        return False
    if isinstance(exc, KeyboardInterrupt):
        return raised_by_user(exc)
    return True


# Names kernels read from a tensor that NkiTensor does not have, and whose they are: said in
# the diagnostic, since the kernel's authors took them for NkiTensor's.
_OTHERS = {"base_tensor": "nki-library's TensorView wrapper (nkilib.core.utils.tensor_view) "
                          "has `base_tensor`"}


def missing_attribute(exc: BaseException) -> ApdslError | None:
    """The diagnostic for a user line reading an attribute that apdsl's tensors lack
    (`weight.base_tensor`): APK103 located on that line, naming the attribute; None for any
    other exception.  The NKI reference documents NkiTensor's attributes; apdsl gives a tensor
    those and guesses no other, so the name is what the kernel still needs."""
    from ..semantics.values import TENSOR_ATTRS
    from ..tensor.view import Tensor
    name = getattr(exc, "name", None)
    if not isinstance(exc, AttributeError) or not isinstance(name, str) or \
            name.startswith("_") or not isinstance(getattr(exc, "obj", None), Tensor):
        return None
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or not is_user_file(tb.tb_frame.f_code.co_filename):
        return None  # apdsl's own code asking a tensor for a name: a defect, left bare
    from difflib import get_close_matches
    close = get_close_matches(name, sorted(TENSOR_ATTRS), n=3)
    notes = [f"the NKI reference documents no `{name}` on NkiTensor; a tensor's attributes "
             f"and methods: {', '.join(sorted(TENSOR_ATTRS))}"]
    if name in _OTHERS:
        notes.append(f"{_OTHERS[name]}; a tensor itself does not")
    return ApdslNameError(
        f"an NKI tensor has no attribute '{name}'", code="APK103", notes=notes,
        help=f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None,
        span=traceback_span(exc.__traceback__), attribute=name)
