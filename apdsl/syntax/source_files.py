"""Reading an `.apk` file's text, with the errors a user sees for a missing or unreadable one."""

from __future__ import annotations

from pathlib import Path

from ..errors import ApdslIOError


def read_source(path: str | Path, shown: str | None = None) -> str:
    """The text of an `.apk` file; a missing, unreadable or non-UTF-8 file is an ApdslIOError
    that names it as `shown` (default: the path)."""
    p, shown = Path(path), shown or str(path)
    if not p.is_file():
        what = "it is a folder" if p.is_dir() else "no such file"
        raise ApdslIOError(f"cannot read '{shown}': {what}", code="APK601", path=shown)
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ApdslIOError(f"'{shown}' is not UTF-8 text", code="APK605", path=shown) from None
    except OSError as e:
        raise ApdslIOError(f"cannot read '{shown}': {e.strerror}", code="APK601",
                           path=shown) from None
