"""Source text as a terminal shows it, for the diagnostic renderer: one character's cell
(control and bidirectional characters replaced by visible stand-ins, wide characters two
columns), a message made safe for one line, a source line with the display column of each
character."""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Any, NamedTuple

__all__ = ["Segment", "Row", "TAB", "cell", "clean", "clean_block", "Line", "split_lines"]

# A styled piece of output: its text and a style, either a key of `_UI_STYLES` or a Pygments
# token type (for highlighted source code).  A row is one output line.
Segment = tuple[str, Any]
Row = list[Segment]

TAB = "    "  # tabs are shown as four spaces, so carets and text line up whatever the tab stops


def cell(ch: str) -> tuple[str, int]:
    """How one character is shown and how many terminal columns it takes.

    Control and format characters are replaced by visible stand-ins: an escape byte in a source
    file must not reach the terminal, and bidirectional overrides must not reorder the excerpt.
    """
    if ch == "\t":
        return TAB, len(TAB)
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code), 1  # Unicode "control pictures"
    if code == 0x7F:
        return "\u2421", 1
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Cs", "Zl", "Zp"):
        return "\ufffd", 1
    if unicodedata.combining(ch):
        return ch, 0
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return ch, 2
    return ch, 1


def clean(text: object) -> str:
    """A message made safe for one line of a terminal."""
    return "".join(cell(ch)[0] for ch in str(text).replace("\r\n", "\n").replace("\n", " "))


def clean_block(text: object) -> list[str]:
    """A note or help text made safe, one entry per line it has."""
    return [clean(line) for line in str(text).replace("\r\n", "\n").split("\n")]


class Line(NamedTuple):
    """A source line prepared for display: its cells and the display column of each char."""

    number: int
    text: str
    cells: tuple[tuple[str, int], ...]
    starts: tuple[int, ...]  # display column where char i starts; starts[len(text)] = width

    @classmethod
    def of(cls, number: int, text: str) -> Line:
        cells = tuple(cell(ch) for ch in text)
        starts = [0]
        for _, w in cells:
            starts.append(starts[-1] + w)
        return cls(number, text, cells, tuple(starts))

    @property
    def width(self) -> int:
        return self.starts[-1]

    def first_nonspace(self) -> int:
        """1-based column of the first non-blank char (len + 1 for a blank line)."""
        stripped = len(self.text) - len(self.text.lstrip(" \t\f"))
        return stripped + 1

    def display(self, column: int) -> int:
        """Display column (0-based) where 1-based char column `column` starts."""
        return self.starts[min(max(column, 1), len(self.text) + 1) - 1]


@lru_cache(maxsize=8)
def split_lines(source: str) -> list[str]:
    # Only "\n" ends a line, as for the parser; "\r" of CRLF files is dropped.  Cached: `check`
    # renders every error of a file against the same (possibly long) text.
    return [line[:-1] if line.endswith("\r") else line for line in source.split("\n")]
