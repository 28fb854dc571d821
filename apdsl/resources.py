"""Where the data folders live: `grammar/` and `stdlib/`.

In a source checkout (and an editable install) they are top-level folders next to the package;
a wheel force-includes them as `apdsl/_data/grammar` and `apdsl/_data/stdlib`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# (os.path, not pathlib: importing pathlib costs a cold `apdsl check` 2 ms)
_PACKAGE = os.path.dirname(os.path.realpath(__file__))


def _data_dir(name: str) -> str:
    installed = os.path.join(_PACKAGE, "_data", name)
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(_PACKAGE), name)


def grammar_path() -> Path:
    """The folder holding the grammar (`apk.lark`)."""
    from pathlib import Path
    return Path(_data_dir("grammar"))


def grammar_file() -> Path:
    """The Lark grammar of the language."""
    from pathlib import Path
    return Path(grammar_filename())


def grammar_filename() -> str:
    """`grammar_file()` as a string."""
    return os.path.join(_data_dir("grammar"), "apk.lark")


def stdlib_path() -> Path:
    """The folder of the standard library's `.apk` modules."""
    from pathlib import Path
    return Path(_data_dir("stdlib"))
