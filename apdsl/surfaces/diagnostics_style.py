"""Output of the diagnostic renderer's rows: plain text, or ANSI colour through rich with the
source code highlighted by the ApkLexer (both imported lazily: plain output never loads them,
because the CLI's cold start is a product target)."""

from __future__ import annotations

from typing import Any

from .diagnostics_cells import Row

__all__ = ["plain", "ansi", "html_block", "token_types", "UI_STYLES"]

UI_STYLES = {
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


def plain(rows: list[Row]) -> str:
    return "\n".join("".join(text for text, _ in row).rstrip() for row in rows)


def ansi(rows: list[Row], width: int) -> str:
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
        return UI_STYLES.get(style, "")
    return _token_style(style)


# CSS of the rich styles the rows use (a notebook shows diagnostics as HTML)
_CSS_COLOURS = {"red": "#cd3131", "yellow": "#b58900", "blue": "#2a6fdb", "cyan": "#0f8f9f",
                "magenta": "#a626a4", "green": "#3a8a16", "bright_yellow": "#8c6d00",
                "bright_green": "#2b9348", "bright_magenta": "#c23bb4",
                "bright_cyan": "#0b7285"}


def _css(style: str) -> str:
    out = []
    for word in style.split():
        if word == "bold":
            out.append("font-weight:bold")
        elif word == "dim":
            out.append("opacity:0.65")
        elif word == "underline":
            out.append("text-decoration:underline")
        elif word in _CSS_COLOURS:
            out.append(f"color:{_CSS_COLOURS[word]}")
    return ";".join(out)


def html_block(rows: list[Row]) -> str:
    """The rows as an HTML `<pre>` block, styled as `ansi` colours them (for notebooks)."""
    from html import escape
    lines = []
    for row in rows:
        parts = []
        for piece, style in row:
            css = _css(_rich_style(style))
            text = escape(piece)
            parts.append(f'<span style="{css}">{text}</span>' if css and text else text)
        lines.append("".join(parts).rstrip())
    return ('<pre class="apdsl-diagnostic" style="font-family:monospace;line-height:1.3;'
            'white-space:pre;overflow-x:auto;padding:0.5em 0.75em;margin:0">'
            + "\n".join(lines) + "</pre>")


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


def token_types(text: str) -> list[Any] | None:
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
