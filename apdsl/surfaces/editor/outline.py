"""What a file defines, read from its lines without parsing it: an editor's buffer is mostly
half-written, and go-to-definition, completion and the scope of a hover must still work.

Both `.apk` and Python kernel files are indentation-structured: a `kernel`/`def` block runs
until the next line indented no deeper than its header (blank and comment lines do not end
it).  Kernels are `kernel` blocks and `def`s under a decorator ending in `jit` (`@nki.jit`,
`@asc.jit`, `@jit`); other `def`s are helpers.
"""

from __future__ import annotations

import re

from ...errors import Span
from ...records import record

__all__ = ["Definition", "Import", "Outline", "outline", "word_at"]

_IDENT = r"[A-Za-z_]\w*"
_DEF = re.compile(rf"^(\s*)(?:async\s+)?(kernel|def)\s+({_IDENT})")
_DECORATOR = re.compile(r"^\s*@\s*([\w.]+)")
_IMPORT = re.compile(rf"^\s*import\s+({_IDENT}(?:\.{_IDENT})*)(?:\s+as\s+({_IDENT}))?")
_FROM = re.compile(rf"^\s*from\s+({_IDENT}(?:\.{_IDENT})*)\s+import\s+\(?([^#)]*)")
_DECLARED = re.compile(rf"^\s*({_IDENT})\s*:(?!=)")
_ASSIGNED = re.compile(rf"^\s*({_IDENT}(?:\s*,\s*{_IDENT})*)\s*(?:[-+*/%@&|^]|//|\*\*)?=(?!=)")
_LOOP = re.compile(rf"\bfor\s+\(?({_IDENT}(?:\s*,\s*{_IDENT})*)\)?\s+in\b")
_PARAMS = re.compile(r"\(([^)]*)\)?")
_KEYWORDS = frozenset({"if", "elif", "else", "for", "while", "try", "except", "finally", "with",
                       "def", "kernel", "return", "class", "lambda", "pass", "import", "from"})


@record
class Definition:
    """A kernel or helper: its name's span and the last line of its block."""

    name: str
    kind: str  # "kernel" or "def"
    span: Span
    end_line: int

    def holds(self, line: int) -> bool:
        return self.span.line <= line <= self.end_line


@record
class Import:
    """`import MODULE [as ALIAS]` or `from MODULE import NAME [as ALIAS], ...` (`names` maps
    each name bound to the name imported)."""

    module: str
    alias: str | None
    names: tuple[tuple[str, str], ...]
    span: Span  # the module's name as written


@record
class Outline:
    file: str
    definitions: tuple[Definition, ...]
    imports: tuple[Import, ...]
    names: tuple[str, ...]  # every name the file binds, in order of first binding

    def scope_at(self, line: int) -> Definition | None:
        """The innermost kernel or helper whose block holds `line` (1-based)."""
        inside = [d for d in self.definitions if d.holds(line)]
        return max(inside, key=lambda d: d.span.line) if inside else None


def outline(file: str, source: str) -> Outline:
    """The definitions, imports and bound names of `source` (the text of `file`)."""
    lines = source.splitlines()
    definitions: list[Definition] = []
    imports: list[Import] = []
    names: dict[str, None] = {}
    for i, text in enumerate(lines):
        code = _code(text)
        number = i + 1
        m = _DEF.match(code)
        if m:
            kind = "kernel" if m.group(2) == "kernel" or _jit_above(lines, i) else "def"
            start = m.start(3) + 1
            definitions.append(Definition(m.group(3), kind,
                                          Span(file, number, start, number,
                                               start + len(m.group(3))),
                                          _block_end(lines, i, len(m.group(1)))))
            names[m.group(3)] = None
            params = _PARAMS.search(code, m.end())
            if params:
                for p in params.group(1).split(","):
                    word = re.match(rf"\s*\**({_IDENT})", p)
                    if word:
                        names[word.group(1)] = None
            continue
        found = _import(code, file, number)
        if found is not None:
            imports.append(found)
            for bound, _ in found.names or ((found.alias or found.module.split(".")[0], ""),):
                names[bound] = None
            continue
        for pattern in (_DECLARED, _ASSIGNED, _LOOP):
            for m in pattern.finditer(code):
                for word in re.findall(_IDENT, m.group(1)):
                    if word not in _KEYWORDS:
                        names[word] = None
    return Outline(file, tuple(definitions), tuple(imports), tuple(names))


def _code(text: str) -> str:
    """The line without its comment (a `#` inside a string is rare enough on a definition
    line to ignore)."""
    quote = None
    for k, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return text[:k]
    return text


def _jit_above(lines: list[str], i: int) -> bool:
    k = i - 1
    while k >= 0:
        m = _DECORATOR.match(lines[k])
        if not m:
            return False
        if m.group(1).split(".")[-1] == "jit":
            return True
        k -= 1
    return False


def _block_end(lines: list[str], i: int, indent: int) -> int:
    """The last line (1-based) of the block whose header is line index `i`."""
    last = i
    for k in range(i + 1, len(lines)):
        text = lines[k]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(text) - len(text.lstrip()) <= indent:
            break
        last = k
    return last + 1


def _import(code: str, file: str, number: int) -> Import | None:
    m = _IMPORT.match(code)
    if m:
        start = m.start(1) + 1
        return Import(m.group(1), m.group(2), (),
                      Span(file, number, start, number, start + len(m.group(1))))
    m = _FROM.match(code)
    if m:
        start = m.start(1) + 1
        pairs = []
        for part in m.group(2).split(","):
            words = re.findall(_IDENT, part)
            if len(words) == 3 and words[1] == "as":
                pairs.append((words[2], words[0]))
            elif len(words) == 1:
                pairs.append((words[0], words[0]))
        return Import(m.group(1), None, tuple(pairs),
                      Span(file, number, start, number, start + len(m.group(1))))
    return None


def word_at(source: str, line: int, column: int) -> tuple[str, Span] | None:
    """The dotted name under 1-based (`line`, `column`) (the character there, or the one just
    before it: a cursor right after a word is on it), up to the end of the part that
    character is in (`nl.exp` on `exp`, `nl` on `nl`), with its span; an error code
    (`APK203`) is a name too."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1]
    index = column - 1
    for m in re.finditer(rf"{_IDENT}(?:[ \t]*\.[ \t]*{_IDENT})*", text):
        if not m.start() <= index <= m.end():
            continue
        end = m.end()
        for part in re.finditer(_IDENT, text[m.start():m.end()]):
            if part.start() <= index - m.start() <= part.end():
                end = m.start() + part.end()
                break
        word = re.sub(r"\s+", "", text[m.start():end])
        return word, Span("", line, m.start() + 1, line, end + 1)
    return None
