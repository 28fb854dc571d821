"""Reading an `.apk` file's text, with the errors a user sees for a missing or unreadable one."""

from __future__ import annotations

import os

from ..errors import ApdslIOError


def read_source(path: str | os.PathLike, shown: str | None = None) -> str:
    """The text of an `.apk` file; a missing, unreadable or non-UTF-8 file is an ApdslIOError
    that names it as `shown` (default: the path)."""
    shown = shown or str(path)
    if not os.path.isfile(path):
        what = "it is a folder" if os.path.isdir(path) else "no such file"
        raise ApdslIOError(f"cannot read '{shown}': {what}", code="APK601", path=shown)
    try:
        with open(path, encoding="utf-8") as f:  # (universal newlines, as Path.read_text)
            return f.read()
    except UnicodeDecodeError:
        raise ApdslIOError(f"'{shown}' is not UTF-8 text", code="APK605", path=shown) from None
    except OSError as e:
        raise ApdslIOError(f"cannot read '{shown}': {e.strerror}", code="APK601",
                           path=shown) from None
