"""The excerpt of a diagnostic: spans placed on the lines of a file (clamped to the text),
each shown line cut to its start and a window around its underlines, carets under the primary span, dashes
under the labels, and the labels' messages hung below when they do not fit on the underline
row."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import Span
from .diagnostics_cells import Line, Row
from .diagnostics_style import token_types

__all__ = ["Mark", "place", "shown_lines", "gutter_row", "append_segment", "block_rows",
           "MAX_SPAN_LINES", "MIN_CODE_WIDTH", "LEFT_CONTEXT"]

MAX_SPAN_LINES = 4  # longer multi-line spans show their first and last two lines
MIN_CODE_WIDTH = 24  # never squeeze a source excerpt narrower than this
LEFT_CONTEXT = 12  # columns kept left of the span when a long line is cut
HEAD = 20  # columns of a statement's start kept when a long line is cut in the middle


class Mark(NamedTuple):
    line: int
    column: int
    end_line: int
    end_column: int  # exclusive
    primary: bool
    message: str | None


def place(span: Span | None, lines: list[str], primary: bool, message: str | None) -> Mark | None:
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


class _Window(NamedTuple):
    """The parts of a long line shown: display-column ranges [lo, hi) in order, `...` before,
    between and after them where text is left out."""

    pieces: tuple[tuple[int, int], ...]
    width: int  # the whole line's

    def starts(self) -> list[int]:
        """Where each piece starts in the output row (after the markers before it)."""
        out, pos = [], 3 if self.pieces[0][0] > 0 else 0
        for lo, hi in self.pieces:
            out.append(pos)
            pos += hi - lo + 3
        return out

    @property
    def end(self) -> int:
        """The output column after the last piece."""
        lo, hi = self.pieces[-1]
        return self.starts()[-1] + hi - lo


def _head_end(line: Line, start: int) -> int:
    """Where the head of a statement ends, from display column `start`: after its first `(`
    (`nisa.dma_copy(`), when that is near, else HEAD columns on."""
    for i, ch in enumerate(line.text):
        col = line.starts[i]
        if col < start:
            continue
        if col - start > 2 * HEAD:
            break
        if ch == "(":
            return line.starts[i + 1]
    end = min(start + HEAD, line.width)
    for i in range(len(line.text) - 1, -1, -1):  # back to the end of a word
        if start < line.starts[i] <= end and line.text[i] == " ":
            return line.starts[i]
    return end


def _word_start(line: Line, lo: int, limit: int) -> int:
    """`lo` moved right to where a word starts (after a blank, `,` or a bracket), so a cut
    does not show half a name; `limit` at most."""
    for i, col in enumerate(line.starts[:-1]):
        if col < lo:
            continue
        if col >= limit:
            break
        if i == 0 or line.text[i - 1] in " \t,([{":
            return col
    return max(lo, min(limit, line.width))


def _window(line: Line, underlines: list[_Underline], room: int) -> _Window:
    """The parts of a line to show: all of it when it fits; else from its start when the
    underlines fit there; else the statement's head (`nisa.dma_copy(`) and a window around
    the underlines (around the primary one when not all of them fit), so the reader sees both
    what is called and where."""
    width = line.width
    if width <= room or not underlines:
        return _Window(((0, width),), width)
    first = min(u.start for u in underlines)
    last = max(u.end for u in underlines)
    if last <= room - 3:
        return _Window(((0, room - 3),), width)
    s0 = line.display(line.first_nonspace())
    if last - s0 <= room - 6:
        return _Window(((s0, min(s0 + room - 6, width)),), width)
    head = _head_end(line, s0)
    tail = room - 9 - (head - s0)
    if tail < MIN_CODE_WIDTH:  # no room for a head: a window around the primary span
        head, s0, tail = 0, 0, max(room - 6, MIN_CODE_WIDTH)
    if last - first <= tail:
        lo = max(first - LEFT_CONTEXT, last - tail)
    else:  # not everything fits: keep the primary span's start in view
        anchor = min((u.start for u in underlines if u.primary), default=first)
        lo = anchor - LEFT_CONTEXT
    lo = max(lo, head)
    hi = min(lo + tail, width)
    if hi == width:
        lo = max(head, min(lo, hi - tail))
    lo = _word_start(line, lo, min(first, hi))
    if lo <= head:  # the window reaches back to the head: one piece
        return _Window(((s0, hi),), width)
    return _Window(((s0, head), (lo, hi)) if head > s0 else ((lo, hi),), width)


def append_segment(row: Row, text: str, style: Any) -> None:
    """Add text to a row, extending the last segment when the style is the same."""
    if row and row[-1][1] == style and row[-1][1] != "gutter":
        row[-1] = (row[-1][0] + text, style)
    else:
        row.append((text, style))


def _code_row(line: Line, window: _Window, tokens: list[Any] | None, gutter: int) -> Row:
    row: Row = gutter_row(gutter, line.number)
    row.append((" ", None))
    for k, (lo, hi) in enumerate(window.pieces):
        if lo > 0 or k > 0:
            row.append(("...", "elided"))
        for i, (shown, w) in enumerate(line.cells):
            start = line.starts[i]
            end = start + w
            if end <= lo or start >= hi:
                continue
            if start < lo or end > hi:
                shown = " " * (min(end, hi) - max(start, lo))  # a wide char cut by the window
            append_segment(row, shown, tokens[i] if tokens is not None else None)
    if window.pieces[-1][1] < line.width:
        row.append(("...", "elided"))
    return row


def _placed(u: _Underline, window: _Window) -> _Underline:
    """An underline moved to the output columns of `window`: drawn over the parts of it that
    are shown (and the `...` between them); one wholly left out points at the `...` where it
    is."""
    starts = window.starts()
    shown = [(k, lo, hi) for k, (lo, hi) in enumerate(window.pieces) if u.start < hi and u.end > lo]
    if shown:
        k0, lo0, _ = shown[0]
        k1, lo1, hi1 = shown[-1]
        start = starts[k0] + max(u.start, lo0) - lo0
        end = starts[k1] + min(u.end, hi1) - lo1
        return _Underline(start, max(end, start + 1), u.primary, u.message)
    if u.end <= window.pieces[0][0]:
        at = 0  # the leading "..."
    else:  # the "..." after the last piece it is right of
        k = max(k for k, (lo, _) in enumerate(window.pieces) if lo < u.end)
        at = starts[k] + window.pieces[k][1] - window.pieces[k][0]
    return _Underline(at, at + 3, u.primary, u.message)


def _mark_style(primary: bool, severity: str) -> str:
    return severity if primary else "secondary"


def _annotation_rows(placed: list[_Underline], gutter: int, severity: str) -> list[Row]:
    """Underline row (carets, dashes, the rightmost message) and rows hanging the others;
    `placed`: the underlines in output columns."""
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
        window = _window(line, underlines, room)
        tokens = token_types(line.text) if highlight else None
        rows.append(_code_row(line, window, tokens, gutter))
        if underlines:
            rows.extend(_annotation_rows([_placed(u, window) for u in underlines], gutter,
                                         severity))
    return rows
