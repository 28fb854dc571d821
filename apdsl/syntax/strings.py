"""String literals: decoding escapes, and mapping value characters back to source offsets.

The map lets an error found inside a string value (a rearrange pattern, say) point at the exact
source characters even when escapes make value and source differ in length.
"""

from __future__ import annotations

import re

_SIMPLE = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "a": "\a",
           "b": "\b", "f": "\f", "v": "\v"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"


class BadEscape(Exception):
    """An invalid escape sequence at `raw[start:end]`."""

    def __init__(self, message: str, start: int, end: int) -> None:
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end


def quote_length(raw: str) -> int:
    """1 for a '...' or "..." literal, 3 for a triple-quoted one."""
    return 3 if len(raw) >= 6 and raw[:3] in ('"""', "'''") else 1


# The escapes `_escape` accepts, and CRLF; a backslash matching none of them is invalid.
_VALID = re.compile(r"\\(?:[\\'\"ntrabfv\n]|\r\n?|[0-7]{1,3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}"
                    r"|U[0-9a-fA-F]{8})|\r\n|\\")


class _Invalid(Exception):
    pass


def _replace(m: re.Match) -> str:
    text = m.group()
    if text == "\r\n":
        return "\n"
    if len(text) == 1:  # a lone backslash: an invalid escape
        raise _Invalid
    c = text[1]
    if c in _SIMPLE:
        return _SIMPLE[c]
    if c in "\r\n":
        return ""
    if c in _OCTAL:
        return chr(int(text[1:], 8))
    code = int(text[2:], 16)
    if code > 0x10FFFF:
        raise _Invalid
    return chr(code)


def decode(raw: str) -> str:
    """The value of the literal `raw` (quotes included).  Raises BadEscape.

    One regular-expression substitution, so a long literal with many escapes costs a few
    bytes an escape; an invalid escape is located by `_scan`, which maps every character."""
    q = quote_length(raw)
    body = raw[q:len(raw) - q]
    if "\\" not in body and "\r" not in body:
        return body
    try:
        return _VALID.sub(_replace, body)
    except _Invalid:
        return _scan(raw)[0]  # raises BadEscape at the invalid escape


def decode_body(body: str) -> str:
    """The value of the text between a literal's quotes (an f-string's literal part).  Raises
    BadEscape with offsets into `body`."""
    if "\\" not in body and "\r" not in body:
        return body
    try:
        return _VALID.sub(_replace, body)
    except _Invalid:
        try:
            value, _, _, _ = _scan('"' + body + '"', 1)
        except BadEscape as e:  # offsets into `body`, not the quoted text
            raise BadEscape(e.message, e.start - 1, e.end - 1) from None
        return value


def raw_offsets(raw: str) -> tuple[list[int], list[int], int]:
    """For each value character, its start and end offsets in `raw`; and the closing quote's."""
    _, starts, ends, closing = _scan(raw)
    return starts, ends, closing


def position(line: int, column: int, raw: str, offset: int) -> tuple[int, int]:
    """Line and column of `raw[offset]` when `raw` starts at (`line`, `column`)."""
    newlines = raw.count("\n", 0, offset)
    if newlines == 0:
        return line, column + offset
    return line + newlines, offset - raw.rfind("\n", 0, offset)


def _scan(raw: str, q: int | None = None) -> tuple[str, list[int], list[int], int]:
    q = quote_length(raw) if q is None else q
    stop = len(raw) - q
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = q
    while i < stop:
        c = raw[i]
        if c == "\\":
            value, j = _escape(raw, i, stop)
        elif c == "\r" and raw.startswith("\n", i + 1):
            value, j = "\n", i + 2  # a CRLF inside a triple-quoted string reads as "\n"
        else:
            value, j = c, i + 1
        if value:
            chars.append(value)
            starts.append(i)
            ends.append(j)
        i = j
    return "".join(chars), starts, ends, stop


def _escape(raw: str, i: int, stop: int) -> tuple[str, int]:
    """Decode the escape starting at the backslash `raw[i]`; return its value and end offset."""
    c = raw[i + 1] if i + 1 < stop else ""
    if c in _SIMPLE and c:
        return _SIMPLE[c], i + 2
    if c == "\n":
        return "", i + 2  # backslash-newline continues the line
    if c == "\r":
        return "", i + 3 if raw.startswith("\n", i + 2) else i + 2
    if c and c in _OCTAL:
        j = i + 1
        while j < min(i + 4, stop) and raw[j] in _OCTAL:
            j += 1
        return chr(int(raw[i + 1:j], 8)), j
    if c in _HEX_DIGITS and c:
        width = _HEX_DIGITS[c]
        digits = raw[i + 2:min(i + 2 + width, stop)]
        n = 0
        while n < len(digits) and digits[n] in _HEX:
            n += 1
        if n < width:
            raise BadEscape(f"truncated '\\{c}' escape: it needs {width} hex digits",
                            i, i + 2 + n)
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise BadEscape(f"'\\{c}{digits}' is not a valid character", i, i + 2 + width)
        return chr(code), i + 2 + width
    shown = c if c.isprintable() else repr(c)[1:-1]
    raise BadEscape(f"invalid escape sequence '\\{shown}'", i, i + 2)
