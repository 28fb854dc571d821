"""An exception raised by the user's own Python (a NameError in their helper): shown as a
traceback of their frames only, labelled as their code, not apdsl's."""

from __future__ import annotations

import traceback

from ..errors import ApdslError
from .locate import is_user_file, traceback_span


class UserCodeError(ApdslError):
    """The user's Python raised `exc`; the notes hold the traceback of the user's frames."""

    default_code = "APK148"


def from_exception(exc: BaseException) -> UserCodeError:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    lines = ["traceback of your code (most recent call last; apdsl's frames left out):"]
    for f in traceback.StackSummary.from_list(frames).format():
        lines.append(f.rstrip("\n"))
    lines.extend(s.rstrip("\n") for s in traceback.format_exception_only(type(exc), exc))
    return UserCodeError(f"your Python code raised {type(exc).__name__}: {exc}",
                         code="APK148", notes=["\n".join(lines)],
                         help="this is an error in your program's Python, not an apdsl check",
                         span=traceback_span(exc.__traceback__))
