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
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import Span
from .diagnostics_cells import TAB, Line, Row, clean, clean_block, split_lines
from .diagnostics_excerpt import Mark, append_segment, block_rows, gutter_row, place, shown_lines
from .diagnostics_style import ansi, html_block, plain, token_types

__all__ = ["render", "render_html", "to_json", "use_color", "width_for", "explain_hint", "render_explain",
           "render_list"]


def _location(span: Span) -> str:
    return f"{span.file}:{span.line}:{span.column}"


def _note_rows(kind: str, text: object, gutter: int) -> list[Row]:
    lines = clean_block(text)
    pad = " " * gutter
    rows: list[Row] = [[(pad + " = ", "gutter"), (kind, kind), (": " + lines[0], None)]]
    indent = " " * (gutter + 3 + len(kind) + 2)
    rows.extend([[(indent + more, None)] for more in lines[1:]])
    return rows


def _severity(err: Any) -> str:
    return "warning" if getattr(err, "severity", "error") == "warning" else "error"


def _header(err: Any) -> Row:
    severity = _severity(err)
    code = clean(getattr(err, "code", None) or "APK000")
    message = clean(getattr(err, "message", None) or str(err))
    span = getattr(err, "span", None)
    facts = getattr(err, "facts", None) or {}
    header: Row = []
    if span is not None:
        header.append((clean(_location(span)) + ": ", "location"))
    elif facts.get("file"):
        header.append((clean(facts["file"]) + ": ", "location"))
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
        text = clean(getattr(label, "message", "") or "") or None
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

    blocks: list[tuple[str, list[str], list[Mark]]] = []
    unplaced: list[tuple[Any, str | None]] = []
    for file, entries in wanted.items():
        source = sources.get(file)
        lines = split_lines(source) if isinstance(source, str) and source else []
        marks = []
        for entry_span, primary, text in entries:
            mark = place(entry_span, lines, primary, text)
            if mark is not None:
                marks.append(mark)
            elif not primary:
                unplaced.append((entry_span, text))
        if marks:
            blocks.append((file, lines, marks))

    last_line = max((n for _, _, marks in blocks for m in marks for n in shown_lines(m)),
                    default=0)
    gutter = max(len(str(last_line)), 1)
    rows = [header]
    for i, (file, lines, marks) in enumerate(blocks):
        if span is None or file != span.file:
            first = min(marks, key=lambda m: (m.line, m.column))
            if i > 0:
                rows.append(gutter_row(gutter))
            rows.append([(" " * gutter + "--> ", "gutter"),
                         (clean(f"{file}:{first.line}:{first.column}"), None)])
        rows.append(gutter_row(gutter))
        rows.extend(block_rows(lines, marks, gutter, severity, width, highlight))
    if unplaced and blocks:
        rows.append(gutter_row(gutter))
    for label_span, text in unplaced:
        rows.append([(" " * gutter + "--> ", "gutter"),
                     (clean(_location(label_span)) + (": " + text if text else ""), None)])
    notes = _notes(err, gutter)
    if notes and blocks:
        rows.append(gutter_row(gutter))
    return rows + notes


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
    return ansi(rows, width) if color else plain(rows)


def render_html(err: Any, sources: Mapping[str, str] | None, width: int = 100) -> str:
    """The report for one diagnostic as an HTML block, coloured as on a terminal (a notebook
    shows `%%apk`'s diagnostics so); falls back as `render` does."""
    sources = sources if isinstance(sources, Mapping) else {}
    try:
        rows = _report_rows(err, sources, width, highlight=True)
    except Exception:
        rows = [_header(err)]
    return html_block(rows)


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


def width_for(stream: Any) -> int:
    """The width diagnostics are rendered to on `stream`: `$COLUMNS`, else the terminal's,
    never less than 100 (a long source line is cut to it, SPEC section 7)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(columns, 100)


def explain_hint(errors: Iterable[Any]) -> str | None:
    """The line that ends a run's report, as rustc's `--explain` line: where to read more
    about the errors' codes (`apdsl explain CODE`); None when no error has an explanation."""
    from ..catalogue import all_entries
    known = all_entries()
    codes = sorted({str(e.code) for e in errors
                    if _severity(e) == "error" and getattr(e, "code", None) in known})
    if not codes:
        return None
    if len(codes) == 1:
        return f"For more information about this error, try `apdsl explain {codes[0]}`."
    return (f"Some errors have detailed explanations: {', '.join(codes)}.\n"
            f"For more information about an error, try `apdsl explain {codes[0]}`.")


def render_explain(entry: Any, *, color: bool) -> str:
    """`apdsl explain CODE`: the code and title, the explanation, the example highlighted."""
    rows: list[Row] = [[(clean(entry.code), "code"), (": " + clean(entry.title), "message")],
                       []]
    rows.extend([[(clean(line), None)] for line in str(entry.explanation).split("\n")])
    example = str(entry.example or "")
    if example.strip():
        rows += [[], [("Example:", "note")], []]
        for text in split_lines(example):
            line = Line.of(0, text)
            row: Row = [(TAB, None)]
            tokens = token_types(text) if color else None
            for i, (shown, _) in enumerate(line.cells):
                append_segment(row, shown, tokens[i] if tokens else None)
            rows.append(row)
    return ansi(rows, 100) if color else plain(rows)


def render_list(entries: Mapping[str, Any] | Iterable[Any], *, color: bool) -> str:
    """`apdsl explain --list`: one line per code, its code and title."""
    items = list(entries.values() if isinstance(entries, Mapping) else entries)
    pad = max((len(str(e.code)) for e in items), default=0)
    rows: list[Row] = [[(clean(e.code).ljust(pad), "code"), ("  " + clean(e.title), None)]
                       for e in items]
    return ansi(rows, 100) if color else plain(rows)
