"""The excerpt of a diagnostic: spans placed on the lines of a file (clamped to the text),
each shown line cut to a window around its underlines, carets under the primary span, dashes
under the labels, and the labels' messages hung below when they do not fit on the underline
row."""

from __future__ import annotations

from typing import Any, NamedTuple

from .diagnostics_cells import Line, Row
from .diagnostics_style import token_types

__all__ = ["Mark", "place", "shown_lines", "gutter_row", "append_segment", "block_rows",
           "MAX_SPAN_LINES", "MIN_CODE_WIDTH", "LEFT_CONTEXT"]

MAX_SPAN_LINES = 4  # longer multi-line spans show their first and last two lines
MIN_CODE_WIDTH = 24  # never squeeze a source excerpt narrower than this
LEFT_CONTEXT = 12  # columns kept left of the span when a long line is cut


class Mark(NamedTuple):
    line: int
    column: int
    end_line: int
    end_column: int  # exclusive
    primary: bool
    message: str | None


def place(span: Any, lines: list[str], primary: bool, message: str | None) -> Mark | None:
    """Clamp a span to the text it points into; None when its first line does not exist."""
    try:
        line, column = int(span.line), int(span.column)
        end_line, end_column = int(span.end_line), int(span.end_column)
    except (AttributeError, TypeError, ValueError):
        return None
    count = len(lines)
    if not 1 <= line <= count:
        return None

    def eol(n: int) -> int:
        return len(lines[n - 1]) + 1

    column = min(max(column, 1), eol(line))
    if end_line < line or (end_line == line and end_column < column):
        end_line, end_column = line, column
    if end_line > count:
        end_line, end_column = count, eol(count)
    # A span that ends at column 1 of a later line stops at the end of the line before it.
    if end_line > line and end_column <= 1:
        end_line -= 1
        end_column = eol(end_line)
    end_column = min(max(end_column, 1), eol(end_line))
    return Mark(line, column, end_line, end_column, primary, message)


def shown_lines(mark: Mark) -> list[int]:
    if mark.end_line - mark.line + 1 <= MAX_SPAN_LINES:
        return list(range(mark.line, mark.end_line + 1))
    return [mark.line, mark.line + 1, mark.end_line - 1, mark.end_line]


class _Underline(NamedTuple):
    start: int  # display columns, end exclusive, end > start
    end: int
    primary: bool
    message: str | None


def _underline(mark: Mark, line: Line) -> _Underline | None:
    """The part of `mark` drawn under `line` (message only on the mark's last line)."""
    n = line.number
    if not mark.line <= n <= mark.end_line:
        return None
    message = mark.message if n == mark.end_line else None
    eol = len(line.text) + 1
    if mark.line == mark.end_line:
        first, last = mark.column, mark.end_column
    elif n == mark.line:
        first, last = mark.column, eol
    elif n == mark.end_line:
        first, last = line.first_nonspace(), mark.end_column
        if first >= last:
            first = max(1, last - 1)
    else:
        first, last = line.first_nonspace(), eol
        if first >= last:
            return None  # a blank line inside the span
    start, end = line.display(first), line.display(last)
    if end <= start:
        end = start + 1  # empty spans and zero-width chars still get one caret
    return _Underline(start, end, mark.primary, message)


# --- rows ------------------------------------------------------------------------------------

def gutter_row(width: int, number: int | None = None) -> Row:
    label = str(number).rjust(width) if number is not None else " " * width
    return [(label + " |", "gutter")]


def _window(line: Line, underlines: list[_Underline], room: int) -> tuple[int, int]:
    """The display columns [lo, hi) of a line to show: all of it when it fits, else a window
    around the primary underline (or the first one), leaving room for the `...` markers."""
    if line.width <= room or not underlines:
        return 0, line.width
    room = max(room - 6, MIN_CODE_WIDTH)
    first = min(u.start for u in underlines)
    last = max(u.end for u in underlines)
    if last - first <= room:
        lo = max(0, first - LEFT_CONTEXT)
        if lo + room < last:
            lo = last - room
    else:  # not everything fits: keep the primary span in view
        anchor = min((u.start for u in underlines if u.primary), default=first)
        lo = max(0, anchor - LEFT_CONTEXT)
    hi = lo + room
    if hi >= line.width:
        hi = line.width
        lo = max(0, min(lo, hi - room))
    return lo, hi


def append_segment(row: Row, text: str, style: Any) -> None:
    """Add text to a row, extending the last segment when the style is the same."""
    if row and row[-1][1] == style and row[-1][1] != "gutter":
        row[-1] = (row[-1][0] + text, style)
    else:
        row.append((text, style))


def _code_row(line: Line, lo: int, hi: int, tokens: list[Any] | None, gutter: int) -> Row:
    row: Row = gutter_row(gutter, line.number)
    row.append((" ", None))
    if lo > 0:
        row.append(("...", "elided"))
    for i, (shown, w) in enumerate(line.cells):
        start = line.starts[i]
        end = start + w
        if end <= lo or start >= hi:
            continue
        if start < lo or end > hi:
            shown = " " * (min(end, hi) - max(start, lo))  # a wide char cut by the window
        append_segment(row, shown, tokens[i] if tokens is not None else None)
    if hi < line.width:
        row.append(("...", "elided"))
    return row


def _mark_style(primary: bool, severity: str) -> str:
    return severity if primary else "secondary"


def _annotation_rows(underlines: list[_Underline], shift: int, lo: int, hi: int, trimmed: bool,
                     gutter: int, severity: str) -> list[Row]:
    """Underline row (carets, dashes, the rightmost message) and rows hanging the others."""
    placed = []
    for u in underlines:
        if lo > 0 and u.end <= lo:
            start, end = 0, 3  # wholly left of the window: point at the leading "..."
        elif trimmed and u.start >= hi:
            start, end = hi + shift, hi + shift + 3  # at the trailing "..."
        else:
            start = max(u.start, lo) + shift
            end = min(u.end, hi) + shift if u.end > lo else start + 1
        placed.append(_Underline(start, max(end, start + 1), u.primary, u.message))

    width = max(u.end for u in placed)
    chars = [" "] * width
    styles: list[str | None] = [None] * width
    # Secondary dashes first so a primary caret wins where they overlap.
    for u in sorted(placed, key=lambda u: u.primary):
        for col in range(u.start, u.end):
            chars[col] = "^" if u.primary else "-"
            styles[col] = _mark_style(u.primary, severity)

    # Only the underline that reaches furthest right can carry its message on the same row;
    # every other message hangs below on its own row, joined to its underline by a bar.
    rightmost = max(placed, key=lambda u: (u.end, bool(u.message), u.primary, u.start))
    inline = rightmost if rightmost.message else None
    hanging = sorted((u for u in placed if u.message and u is not inline),
                     key=lambda u: u.start, reverse=True)

    first: Row = gutter_row(gutter)
    first.append((" ", None))
    first.extend(_runs(chars, styles))
    if inline is not None:
        first.append((" " + inline.message, _mark_style(inline.primary, severity)))
    rows = [first]
    if not hanging:
        return rows

    def bars(upto: int, pending: list[_Underline]) -> tuple[list[str], list[str | None]]:
        cols = [" "] * upto
        col_styles: list[str | None] = [None] * upto
        for u in pending:
            if u.start < upto:
                cols[u.start] = "|"
                col_styles[u.start] = _mark_style(u.primary, severity)
        return cols, col_styles

    connector: Row = gutter_row(gutter)
    connector.append((" ", None))
    connector.extend(_runs(*bars(width, hanging)))
    rows.append(connector)
    for i, u in enumerate(hanging):
        row: Row = gutter_row(gutter)
        row.append((" ", None))
        row.extend(_runs(*bars(u.start, hanging[i + 1:])))
        row.append((u.message, _mark_style(u.primary, severity)))
        rows.append(row)
    return rows


def _runs(chars: list[str], styles: list[str | None]) -> Row:
    """Group consecutive characters of one style into segments."""
    row: Row = []
    for ch, style in zip(chars, styles):
        if row and row[-1][1] == style:
            row[-1] = (row[-1][0] + ch, style)
        else:
            row.append((ch, style))
    return row


def block_rows(lines: list[str], marks: list[Mark], gutter: int, severity: str, width: int,
                highlight: bool) -> list[Row]:
    """The excerpt of one file: each shown line with its underlines, gaps elided."""
    shown = sorted({n for m in marks for n in shown_lines(m)})
    # A gap of a single line is cheaper to show than to elide.
    filled: list[int] = []
    for n in shown:
        if filled and n - filled[-1] == 2:
            filled.append(n - 1)
        filled.append(n)

    rows: list[Row] = []
    room = max(width - gutter - 3, MIN_CODE_WIDTH)
    previous = None
    for n in filled:
        if previous is not None and n - previous > 1:
            rows.append([("...", "elided")])
        previous = n
        line = Line.of(n, lines[n - 1])
        underlines = [u for u in (_underline(m, line) for m in marks) if u is not None]
        lo, hi = _window(line, underlines, room)
        tokens = token_types(line.text) if highlight else None
        rows.append(_code_row(line, lo, hi, tokens, gutter))
        if underlines:
            shift = (3 if lo > 0 else 0) - lo
            rows.extend(_annotation_rows(underlines, shift, lo, hi, hi < line.width, gutter,
                                         severity))
    return rows
