"""Where the data folders live: `grammar/` and `stdlib/`.

In a source checkout (and an editable install) they are top-level folders next to the package;
a wheel force-includes them as `apdsl/_data/grammar` and `apdsl/_data/stdlib`.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def grammar_path() -> Path:
    """The folder holding the grammar (`apk.lark`)."""
    return _data_dir("grammar")


def grammar_file() -> Path:
    """The Lark grammar of the language."""
    return grammar_path() / "apk.lark"


def stdlib_path() -> Path:
    """The folder of the standard library's `.apk` modules."""
    return _data_dir("stdlib")
