"""Where an input typed or piped into `apdsl repl` ends, read without parsing it.

Interactively a line ending in `:` opens a block that a blank line ends (`continuation`); piped
in, inputs are cut with file semantics, a block ending at the first line back at column 0
(`ScriptReader`).
"""

from __future__ import annotations

import re

from ..records import record

__all__ = ["Scan", "scan", "continuation", "ScriptReader", "indent_of", "INDENT",
           "BLOCK_CONTINUERS"]

INDENT = "    "
BLOCK_CONTINUERS = ("elif", "else")


@record
class Scan:
    """What the text typed so far leaves open."""

    depth: int  # brackets still open
    in_string: bool  # inside a triple-quoted string
    continued: bool  # ends with a backslash line continuation
    opens_block: bool  # some logical line ends with ':' (a block header)
    last_colon: bool  # the last non-empty logical line ends with ':'
    decorator: bool  # the last non-empty logical line is a decorator ('@...')

    @property
    def open(self) -> bool:
        return self.depth > 0 or self.in_string or self.continued


def scan(text: str) -> Scan:
    """Brackets, strings, comments and line ends of `.apk` text, without parsing it."""
    depth, quote, i, n = 0, "", 0, len(text)
    last, first = "", ""  # last and first significant characters of the logical line
    opens_block = last_colon = decorator = False
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote, last = "", "'"
                continue
            if ch == "\n" and len(quote) == 1:
                quote = ""  # an unterminated one-line string ends with its line
            else:
                i += 1
                continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            first = first or ch
            continue
        if ch == "\n":
            if depth == 0 and last != "\\":
                if last:
                    last_colon, decorator = last == ":", first == "@"
                    opens_block = opens_block or last_colon
                last, first = "", ""
            i += 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if not ch.isspace():
            last = ch
            first = first or ch
        i += 1
    if last and depth == 0 and not quote:
        last_colon, decorator = last == ":", first == "@"
        opens_block = opens_block or last_colon
    return Scan(depth, len(quote) == 3, last == "\\" and not quote, opens_block, last_colon,
                decorator)


def indent_of(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def continuation(text: str) -> str | None:
    """Interactive Enter: None when `text` is a complete input, else the indentation the next
    line starts with.  A block (some line ends with ':') goes on until an empty line."""
    if text.lstrip().startswith(":") and "\n" not in text.strip():
        return None
    s = scan(text)
    lines = text.split("\n")
    last = lines[-1]
    if s.open:
        return indent_of(last)
    if not last.strip():
        return None
    if s.last_colon:
        return indent_of(last) + INDENT
    if s.decorator or s.opens_block:
        return indent_of(last)
    return None


class ScriptReader:
    """Cuts piped-in lines into complete inputs with file semantics (see the module
    docstring).  `feed` returns the inputs a line completes, with their first line number."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.start = 0
        self.lineno = 0

    def _flush(self) -> tuple[str, int]:
        text = "".join(self.pending)
        self.pending = []
        return text, self.start

    def feed(self, line: str) -> list[tuple[str, int]]:
        self.lineno += 1
        out: list[tuple[str, int]] = []
        if self.pending:
            s = scan("".join(self.pending))
            significant = line.strip() and not line.lstrip().startswith("#")
            if (not s.open and s.opens_block and not s.decorator and significant
                    and not line[0].isspace() and not _continues_block(line)):
                out.append(self._flush())
        if not self.pending:
            if not line.strip() or line.lstrip().startswith("#"):
                return out
            if line.startswith(":"):
                out.append((line.rstrip("\n"), self.lineno))
                return out
            self.start = self.lineno
        self.pending.append(line if line.endswith("\n") else line + "\n")
        s = scan("".join(self.pending))
        if not s.open and not s.opens_block and not s.decorator:
            out.append(self._flush())
        return out

    def finish(self) -> list[tuple[str, int]]:
        return [self._flush()] if self.pending else []


def _continues_block(line: str) -> bool:
    word = re.match(r"[A-Za-z_]\w*", line)
    return word is not None and word.group(0) in BLOCK_CONTINUERS
