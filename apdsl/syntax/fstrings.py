"""Splitting an f-string literal into its literal text and its replacement fields.

`split(raw)` reads the source text of an f-string token (prefix and quotes included) and
returns `Text` and `Field` pieces with offsets into `raw`, so the builder can parse each
field's expression at its exact source position and an error can underline the characters at
fault.  The rules are Python's: `{{` and `}}` are literal braces, a field is
`{EXPR[=][!CONVERSION][:SPEC]}`, a spec may hold fields of its own, and an expression may not
hold a backslash or a comment.
"""

from __future__ import annotations

from .strings import BadEscape, decode_body, quote_length

MAX_SPEC_NESTING = 2  # as Python: a field in a format spec may not hold another spec's field


class FStringError(Exception):
    """A malformed f-string, at `raw[start:end]`."""

    def __init__(self, message: str, start: int, end: int) -> None:
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end


class Text:
    __slots__ = ("value", "start", "end")

    def __init__(self, value: str, start: int, end: int) -> None:
        self.value = value
        self.start = start
        self.end = end


class Field:
    """`{...}`: the expression at `raw[expr_start:expr_end]`; `debug` is the text `{x=}` shows
    before the value ("x="), else None; `spec` the format spec's pieces, or None."""

    __slots__ = ("expr_start", "expr_end", "conversion", "spec", "spec_start", "debug", "start",
                 "end")

    def __init__(self, expr_start: int, expr_end: int, conversion: str | None,
                 spec: list[Text | Field] | None, debug: str | None, start: int,
                 end: int) -> None:
        self.expr_start = expr_start
        self.expr_end = expr_end
        self.conversion = conversion
        self.spec = spec
        self.spec_start = end - 1  # where the spec's text starts (set by `_field`)
        self.debug = debug
        self.start = start
        self.end = end


def split(raw: str) -> list[Text | Field]:
    """The pieces of the f-string token `raw` (`f"..."`, `F'''...'''`)."""
    q = quote_length(raw[1:])
    pieces, end = _pieces(raw, 1 + q, len(raw) - q, 0)
    return pieces


def _pieces(raw: str, i: int, stop: int, nesting: int) -> tuple[list[Text | Field], int]:
    """Literal text and fields from `raw[i:]` up to `stop` or, in a format spec (`nesting` >
    0), up to the `}` that closes the field; returns them and where the scan stopped."""
    pieces: list[Text | Field] = []
    chunks: list[str] = []
    seg = start = i

    def flush(end: int) -> None:
        nonlocal chunks
        chunks.append(raw[seg:end])
        text = "".join(chunks)
        chunks = []
        if text:
            try:
                pieces.append(Text(decode_body(text), start, end))
            except BadEscape as e:
                raise FStringError(e.message, start + e.start, start + e.end) from None

    while i < stop:
        ch = raw[i]
        if ch == "{":
            if nesting == 0 and raw.startswith("{", i + 1):
                chunks.append(raw[seg:i + 1])
                i += 2
                seg = i
                continue
            flush(i)
            field, i = _field(raw, i, stop, nesting)
            pieces.append(field)
            seg = start = i
            continue
        if ch == "}":
            if nesting:
                break
            if raw.startswith("}", i + 1):
                chunks.append(raw[seg:i + 1])
                i += 2
                seg = i
                continue
            raise FStringError("a single '}' is not allowed in an f-string", i, i + 1)
        if ch == "\\":
            i += 2  # an escape: the character after it is never a brace of the f-string
            continue
        i += 1
    flush(min(i, stop))
    return pieces, i


def _field(raw: str, i: int, stop: int, nesting: int) -> tuple[Field, int]:
    """The field whose `{` is at `raw[i]`; returns it and the offset after its `}`."""
    j = i + 1
    depth = 0
    quote = ""
    while j < stop:
        ch = raw[j]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            raise FStringError("an f-string expression cannot hold a backslash", j, j + 1)
        elif ch == "#":
            raise FStringError("an f-string expression cannot hold a comment ('#')", j, j + 1)
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0 and ch == "}":
                break
            depth -= 1
        elif depth == 0 and (ch == ":" or ch == "!" and raw[j + 1:j + 2] != "="):
            break
        j += 1
    if j >= stop:
        raise FStringError("the f-string's '{' is never closed: expected '}'", i, i + 1)
    expr_end = j
    text = raw[i + 1:j]
    debug = None
    stripped = text.rstrip()
    if stripped.endswith("=") and not stripped.endswith(("==", "!=", "<=", ">=")):
        debug = text
        expr_end = i + 1 + len(stripped) - 1
    if not raw[i + 1:expr_end].strip():
        raise FStringError("an f-string field needs an expression", i, j + 1)
    conversion = None
    if raw[j] == "!":
        conversion = raw[j + 1:j + 2]
        if conversion not in ("r", "s", "a") or raw[j + 2:j + 3] not in (":", "}"):
            raise FStringError("an f-string conversion is !r, !s or !a, followed by ':' or "
                               "'}'", j, min(j + 2, stop))
        j += 2
    spec = None
    spec_start = j + 1
    if raw[j] == ":":
        if nesting >= MAX_SPEC_NESTING - 1 and nesting > 0:
            raise FStringError("f-string format specs nest too deeply", j, j + 1)
        spec, j = _pieces(raw, j + 1, stop, nesting + 1)
        if j >= stop or raw[j] != "}":
            raise FStringError("the f-string's '{' is never closed: expected '}'", i, i + 1)
    if debug is not None and conversion is None and spec is None:
        conversion = "r"  # as Python: `{x=}` shows repr(x)
    field = Field(i + 1, expr_end, conversion, spec, debug, i, j + 1)
    field.spec_start = spec_start
    return field, j + 1
