"""Rendering of diagnostics: the text a user reads when a kernel is wrong.

Every `ApdslError` is rendered here and only here, in the compiler style of SPEC section 7:

    FILE:LINE:COLUMN: error[APK203]: slice end 80 is past the end of dimension 1 (size 64)
       |
     2 | t: f32[128, 64] @ sbuf
       | ---------------------- t declared here
     3 |
     4 | u = t.slice(1, 8, 80)
       |                   ^^ end must be <= 64
       |
       = note: t.shape = (128, 64)
       = help: use an end of at most 64

The primary span is underlined with `^`, secondary labels with `-`.  A label whose span equals the
error's own span supplies the message printed next to the carets.  Labels in other files get a
`--> FILE:LINE:COLUMN` line of their own; labels whose source is not available are listed as that
line followed by their message.

A report is first built as rows of styled segments, then either joined as plain text or printed
through rich with ANSI colour.  Plain output never imports rich or Pygments, and the coloured
path imports them lazily, because the CLI's cold start is a product target.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

__all__ = ["render", "to_json", "use_color", "render_explain", "render_list"]

# A styled piece of output: its text and a style, either a key of `_UI_STYLES` or a Pygments
# token type (for highlighted source code).  A row is one output line.
Segment = tuple[str, Any]
Row = list[Segment]

TAB = "    "  # tabs are shown as four spaces, so carets and text line up whatever the tab stops
MAX_SPAN_LINES = 4  # longer multi-line spans show their first and last two lines
MIN_CODE_WIDTH = 24  # never squeeze a source excerpt narrower than this
LEFT_CONTEXT = 12  # columns kept left of the span when a long line is cut

_UI_STYLES = {
    "error": "bold red",
    "warning": "bold yellow",
    "secondary": "bold blue",
    "gutter": "bold blue",
    "message": "bold",
    "location": "bold",
    "note": "bold",
    "help": "bold cyan",
    "code": "bold",
    "elided": "dim",
}


# --- text cells ------------------------------------------------------------------------------

def _cell(ch: str) -> tuple[str, int]:
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


def _clean(text: object) -> str:
    """A message made safe for one line of a terminal."""
    return "".join(_cell(ch)[0] for ch in str(text).replace("\r\n", "\n").replace("\n", " "))


def _clean_block(text: object) -> list[str]:
    """A note or help text made safe, one entry per line it has."""
    return [_clean(line) for line in str(text).replace("\r\n", "\n").split("\n")]


class _Line(NamedTuple):
    """A source line prepared for display: its cells and the display column of each char."""

    number: int
    text: str
    cells: tuple[tuple[str, int], ...]
    starts: tuple[int, ...]  # display column where char i starts; starts[len(text)] = width

    @classmethod
    def of(cls, number: int, text: str) -> _Line:
        cells = tuple(_cell(ch) for ch in text)
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
def _split_lines(source: str) -> list[str]:
    # Only "\n" ends a line, as for the parser; "\r" of CRLF files is dropped.  Cached: `check`
    # renders every error of a file against the same (possibly long) text.
    return [line[:-1] if line.endswith("\r") else line for line in source.split("\n")]


# --- marks: spans placed on the lines of a file ---------------------------------------------

class _Mark(NamedTuple):
    line: int
    column: int
    end_line: int
    end_column: int  # exclusive
    primary: bool
    message: str | None


def _place(span: Any, lines: list[str], primary: bool, message: str | None) -> _Mark | None:
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
    return _Mark(line, column, end_line, end_column, primary, message)


def _shown_lines(mark: _Mark) -> list[int]:
    if mark.end_line - mark.line + 1 <= MAX_SPAN_LINES:
        return list(range(mark.line, mark.end_line + 1))
    return [mark.line, mark.line + 1, mark.end_line - 1, mark.end_line]


class _Underline(NamedTuple):
    start: int  # display columns, end exclusive, end > start
    end: int
    primary: bool
    message: str | None


def _underline(mark: _Mark, line: _Line) -> _Underline | None:
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

def _gutter(width: int, number: int | None = None) -> Row:
    label = str(number).rjust(width) if number is not None else " " * width
    return [(label + " |", "gutter")]


def _window(line: _Line, underlines: list[_Underline], room: int) -> tuple[int, int]:
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


def _append(row: Row, text: str, style: Any) -> None:
    """Add text to a row, extending the last segment when the style is the same."""
    if row and row[-1][1] == style and row[-1][1] != "gutter":
        row[-1] = (row[-1][0] + text, style)
    else:
        row.append((text, style))


def _code_row(line: _Line, lo: int, hi: int, tokens: list[Any] | None, gutter: int) -> Row:
    row: Row = _gutter(gutter, line.number)
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
        _append(row, shown, tokens[i] if tokens is not None else None)
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

    first: Row = _gutter(gutter)
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

    connector: Row = _gutter(gutter)
    connector.append((" ", None))
    connector.extend(_runs(*bars(width, hanging)))
    rows.append(connector)
    for i, u in enumerate(hanging):
        row: Row = _gutter(gutter)
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


def _block_rows(lines: list[str], marks: list[_Mark], gutter: int, severity: str, width: int,
                highlight: bool) -> list[Row]:
    """The excerpt of one file: each shown line with its underlines, gaps elided."""
    shown = sorted({n for m in marks for n in _shown_lines(m)})
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
        line = _Line.of(n, lines[n - 1])
        underlines = [u for u in (_underline(m, line) for m in marks) if u is not None]
        lo, hi = _window(line, underlines, room)
        tokens = _token_types(line.text) if highlight else None
        rows.append(_code_row(line, lo, hi, tokens, gutter))
        if underlines:
            shift = (3 if lo > 0 else 0) - lo
            rows.extend(_annotation_rows(underlines, shift, lo, hi, hi < line.width, gutter,
                                         severity))
    return rows


def _location(span: Any) -> str:
    return f"{span.file}:{span.line}:{span.column}"


def _note_rows(kind: str, text: object, gutter: int) -> list[Row]:
    lines = _clean_block(text)
    pad = " " * gutter
    rows: list[Row] = [[(pad + " = ", "gutter"), (kind, kind), (": " + lines[0], None)]]
    indent = " " * (gutter + 3 + len(kind) + 2)
    rows.extend([[(indent + more, None)] for more in lines[1:]])
    return rows


def _severity(err: Any) -> str:
    return "warning" if getattr(err, "severity", "error") == "warning" else "error"


def _header(err: Any) -> Row:
    severity = _severity(err)
    code = _clean(getattr(err, "code", None) or "APK000")
    message = _clean(getattr(err, "message", None) or str(err))
    span = getattr(err, "span", None)
    facts = getattr(err, "facts", None) or {}
    header: Row = []
    if span is not None:
        header.append((_clean(_location(span)) + ": ", "location"))
    elif facts.get("file"):
        header.append((_clean(facts["file"]) + ": ", "location"))
    header += [(f"{severity}[{code}]", severity), (": " + message, "message")]
    return header


def _notes(err: Any, gutter: int) -> list[Row]:
    rows: list[Row] = []
    for note in getattr(err, "notes", None) or ():
        rows.extend(_note_rows("note", note, gutter))
    help_text = getattr(err, "help", None)
    if help_text:
        rows.extend(_note_rows("help", help_text, gutter))
    return rows


def _report_rows(err: Any, sources: Mapping[str, str], width: int, highlight: bool) -> list[Row]:
    severity = _severity(err)
    span = getattr(err, "span", None)
    header = _header(err)

    # Marks grouped by file, primary file first; a label on the primary span gives its message.
    primary_message = None
    labels = []
    for label in getattr(err, "labels", None) or ():
        label_span = getattr(label, "span", None)
        text = _clean(getattr(label, "message", "") or "") or None
        if label_span is None:
            continue
        if span is not None and primary_message is None and label_span == span and text:
            primary_message = text
        else:
            labels.append((label_span, text))

    wanted: dict[str, list[tuple[Any, bool, str | None]]] = {}
    if span is not None:
        wanted[span.file] = [(span, True, primary_message)]
    for label_span, text in labels:
        wanted.setdefault(label_span.file, []).append((label_span, False, text))

    blocks: list[tuple[str, list[str], list[_Mark]]] = []
    unplaced: list[tuple[Any, str | None]] = []
    for file, entries in wanted.items():
        source = sources.get(file)
        lines = _split_lines(source) if isinstance(source, str) and source else []
        marks = []
        for entry_span, primary, text in entries:
            mark = _place(entry_span, lines, primary, text)
            if mark is not None:
                marks.append(mark)
            elif not primary:
                unplaced.append((entry_span, text))
        if marks:
            blocks.append((file, lines, marks))

    last_line = max((n for _, _, marks in blocks for m in marks for n in _shown_lines(m)),
                    default=0)
    gutter = max(len(str(last_line)), 1)
    rows = [header]
    for i, (file, lines, marks) in enumerate(blocks):
        if span is None or file != span.file:
            first = min(marks, key=lambda m: (m.line, m.column))
            if i > 0:
                rows.append(_gutter(gutter))
            rows.append([(" " * gutter + "--> ", "gutter"),
                         (_clean(f"{file}:{first.line}:{first.column}"), None)])
        rows.append(_gutter(gutter))
        rows.extend(_block_rows(lines, marks, gutter, severity, width, highlight))
    if unplaced and blocks:
        rows.append(_gutter(gutter))
    for label_span, text in unplaced:
        rows.append([(" " * gutter + "--> ", "gutter"),
                     (_clean(_location(label_span)) + (": " + text if text else ""), None)])
    notes = _notes(err, gutter)
    if notes and blocks:
        rows.append(_gutter(gutter))
    return rows + notes


# --- output ----------------------------------------------------------------------------------

def _plain(rows: list[Row]) -> str:
    return "\n".join("".join(text for text, _ in row).rstrip() for row in rows)


def _ansi(rows: list[Row], width: int) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.text import Text

    buffer = StringIO()
    console = Console(file=buffer, force_terminal=True, no_color=False, color_system="standard",
                      width=max(width, 20), highlight=False, markup=False, emoji=False,
                      soft_wrap=True, force_jupyter=False, legacy_windows=False)
    text = Text()
    for i, row in enumerate(rows):
        line = Text()
        for piece, style in row:
            line.append(piece, _rich_style(style))
        line.rstrip()
        if i:
            text.append("\n")
        text.append_text(line)
    console.print(text)
    return buffer.getvalue().rstrip("\n")


def _rich_style(style: Any) -> str:
    if style is None:
        return ""
    if isinstance(style, str):
        return _UI_STYLES.get(style, "")
    return _token_style(style)


_CODE_STYLES: dict[tuple[str, ...], str] = {
    ("Comment",): "dim",
    ("Keyword",): "magenta",
    ("Keyword", "Type"): "cyan",
    ("Name", "Builtin"): "blue",
    ("Name", "Function"): "green",
    ("Name", "Variable"): "bold",
    ("Name", "Constant"): "yellow",
    ("Name", "Class"): "bright_yellow",
    ("Name", "Namespace"): "dim",
    ("Punctuation", "Marker"): "yellow",
    ("Literal", "String"): "bright_green",
    ("Literal", "String", "Escape"): "bright_magenta",
    ("Literal", "Number"): "bright_cyan",
    ("Error",): "underline red",
}


def _token_style(token: Any) -> str:
    # Pygments token types are tuples of names; the nearest styled ancestor wins.
    key = tuple(token)
    while key:
        if key in _CODE_STYLES:
            return _CODE_STYLES[key]
        key = key[:-1]
    return ""


_LEXER = None


def _token_types(text: str) -> list[Any] | None:
    """The Pygments token type of each character of one source line.

    Lines are lexed one at a time: an excerpt shows a few lines of a possibly huge file, and a
    string literal spanning lines (the only construct this misreads) is rare in kernels.
    """
    global _LEXER
    try:
        if _LEXER is None:
            from .lexer import ApkLexer

            _LEXER = ApkLexer()
        types: list[Any] = [None] * len(text)
        for index, token, value in _LEXER.get_tokens_unprocessed(text):
            types[index:index + len(value)] = [token] * len(value)
        return types[:len(text)]
    except Exception:  # highlighting is decoration: a lexer failure must not hide the error
        return None


# --- public API ------------------------------------------------------------------------------

def render(err: Any, sources: Mapping[str, str] | str | None, *, color: bool,
           width: int = 100) -> str:
    """The report for one diagnostic, without a trailing newline.

    `sources` maps file names (as in the spans) to their text; a plain string is taken as the
    text of the primary span's file.  Missing sources, spans past the end of a file and odd
    characters degrade to less excerpt, never to an exception.
    """
    if isinstance(sources, str):
        span = getattr(err, "span", None)
        sources = {span.file: sources} if span is not None else {}
    elif not isinstance(sources, Mapping):
        sources = {}
    try:
        width = int(width)
    except (TypeError, ValueError):
        width = 100
    # A renderer bug (or a malformed error object) must not swallow the user's diagnostic:
    # degrade to the header and notes, then to the header alone.
    try:
        rows = _report_rows(err, sources, width, highlight=color)
    except Exception:
        try:
            rows = [_header(err), *_notes(err, 1)]
        except Exception:
            rows = [_header(err)]
    return _ansi(rows, width) if color else _plain(rows)


def to_json(err: Any) -> dict[str, Any]:
    """The SPEC section 7 JSON object of a diagnostic, plus its secondary `labels`."""
    span = getattr(err, "span", None)
    facts = getattr(err, "facts", None) or {}

    def where(s: Any) -> dict[str, Any]:
        if s is None:
            return {"file": facts.get("file"), "line": None, "column": None,
                    "end_line": None, "end_column": None}
        return {"file": s.file, "line": s.line, "column": s.column, "end_line": s.end_line,
                "end_column": s.end_column}

    return {
        "severity": getattr(err, "severity", "error"),
        "code": getattr(err, "code", None),
        "message": getattr(err, "message", None) or str(err),
        **where(span),
        "notes": [str(n) for n in getattr(err, "notes", None) or ()],
        "help": getattr(err, "help", None),
        "labels": [{"message": label.message, **where(label.span)}
                   for label in getattr(err, "labels", None) or ()
                   if getattr(label, "span", None) is not None],
    }


def use_color(stream: Any) -> bool:
    """Colour only on a terminal, and not when NO_COLOR is set (no-color.org: any non-empty
    value) or the terminal is dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed or fake streams
        return False


def render_explain(entry: Any, *, color: bool) -> str:
    """`apdsl explain CODE`: the code and title, the explanation, the example highlighted."""
    rows: list[Row] = [[(_clean(entry.code), "code"), (": " + _clean(entry.title), "message")],
                       []]
    rows.extend([[(_clean(line), None)] for line in str(entry.explanation).split("\n")])
    example = str(entry.example or "")
    if example.strip():
        rows += [[], [("Example:", "note")], []]
        for text in _split_lines(example):
            line = _Line.of(0, text)
            row: Row = [(TAB, None)]
            tokens = _token_types(text) if color else None
            for i, (shown, _) in enumerate(line.cells):
                _append(row, shown, tokens[i] if tokens else None)
            rows.append(row)
    return _ansi(rows, 100) if color else _plain(rows)


def render_list(entries: Mapping[str, Any] | Iterable[Any], *, color: bool) -> str:
    """`apdsl explain --list`: one line per code, its code and title."""
    items = list(entries.values() if isinstance(entries, Mapping) else entries)
    pad = max((len(str(e.code)) for e in items), default=0)
    rows: list[Row] = [[(_clean(e.code).ljust(pad), "code"), ("  " + _clean(e.title), None)]
                       for e in items]
    return _ansi(rows, 100) if color else _plain(rows)
