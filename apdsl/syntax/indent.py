"""The post-lexer: turns line breaks and indentation into _NEWLINE/_INDENT/_DEDENT tokens.

Unlike Lark's stock Indenter it reports every problem as an `ApdslSyntaxError` with a span
(tabs, an indented first line, an unindent to an unknown level, Python keywords apk lacks) and
keeps the stack of open brackets so a parse error can point at the bracket left open.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import ApdslSyntaxError, Span
from .lalr import Token
from .limits import MAX_NESTING
from .node_text import PYTHON_FRONTEND

_CLOSING = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}

# What each Python keyword `.apk` lacks is for, in `.apk` terms (the help then names the Python
# frontend, which runs any Python).
_UNSUPPORTED_HELP = {
    "class": "`.apk` has no classes; use `def` helpers, dicts and tensors",
    "try": "a failing check stops the program; test conditions with `assert` or `if`",
    "except": "a failing check stops the program; test conditions with `assert` or `if`",
    "finally": "a failing check stops the program; test conditions with `assert` or `if`",
    "with": "`.apk` has no context managers",
    "global": "helpers share data through parameters and return values",
    "nonlocal": "helpers share data through parameters and return values",
    "yield": "`.apk` has no generator functions; build a list and return it",
    "async": "`.apk` programs run in order; there is no async",
    "await": "`.apk` programs run in order; there is no async",
    ":=": "assign on a line of its own: `name = value`",
}


class ScanState:
    """What the indenter knows about the text scanned so far (read by the error reporter)."""

    __slots__ = ("file", "brackets")

    def __init__(self, file: str) -> None:
        self.file = file
        self.brackets: list[Token] = []


class ApkIndenter:
    """The post-lexer of both parsers (`lalr.LalrParser` and Lark, which reads the class
    attributes below as its `Indenter` would)."""

    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8  # unused: a tab in indentation is an error
    # Keep UNSUPPORTED in the lexer although no rule uses it (Lark drops unused terminals).
    always_accept = ("_NEWLINE", "UNSUPPORTED")

    def __init__(self) -> None:
        self.file = "<string>"
        self.state = ScanState(self.file)

    def process(self, stream: Iterable[Token]) -> Iterator[Token]:
        # Lark calls this once per parse; `state` stays readable after an error.
        self.state = ScanState(self.file)
        return self._scan(stream, self.state)

    def _scan(self, stream: Iterable[Token], state: ScanState) -> Iterator[Token]:
        brackets = state.brackets
        levels = [0]
        first = True
        last: Token | None = None
        for tok in stream:
            kind = tok.type
            if kind == "_NEWLINE":
                first = False
                if brackets:
                    continue
                yield tok
                yield from self._indentation(tok, levels, state)
                continue
            if first:
                first = False
                if tok.column > 1:
                    raise _indent_error("unexpected indent", state.file, tok.line, 1,
                                        tok.column)
            if kind == "UNSUPPORTED":
                raise _unsupported(tok, state.file)
            yield tok
            last = tok
            if kind in _CLOSING:
                if brackets and brackets[-1].type == _CLOSING[kind]:
                    brackets.pop()
            elif kind in ("LPAR", "LSQB", "LBRACE"):
                brackets.append(tok)
                if len(brackets) + len(levels) - 1 > MAX_NESTING:
                    raise _too_deep(tok, state.file, len(levels) - 1, len(brackets))
        line = last.end_line if last is not None else 1
        column = last.end_column if last is not None else 1
        for _ in levels[1:]:
            yield Token("_DEDENT", "", 0, line, column, line, column, 0)

    def _indentation(self, tok: Token, levels: list[int], state: ScanState) -> Iterator[Token]:
        text = tok.value
        cut = text.rfind("\n")
        if cut < 0:
            return
        indent_text = text[cut + 1:]
        line = tok.end_line
        width = len(indent_text)
        if "\t" in indent_text:
            raise _indent_error("indentation contains a tab", state.file, line, 1, width + 1,
                                help="indent with spaces only")
        if width > levels[-1]:
            levels.append(width)
            if len(levels) - 1 > MAX_NESTING:
                raise _too_deep(tok, state.file, len(levels) - 1, 0, line=line, end=width + 1)
            yield Token("_INDENT", indent_text, 0, line, 1, line, width + 1, 0)
            return
        if width not in levels:
            *outer, inner = (str(n) for n in levels)
            raise _indent_error("unindent does not match any outer indentation level",
                                state.file, line, 1, width + 1,
                                notes=[f"this line is indented by {width} spaces; the open "
                                       f"blocks by {', '.join(outer)} and {inner}"],
                                help="line the statement up with the block it belongs to")
        while width < levels[-1]:
            levels.pop()
            yield Token("_DEDENT", indent_text, 0, line, width + 1, line, width + 1, 0)


def _indent_error(message: str, file: str, line: int, column: int, end_column: int,
                  **kwargs) -> ApdslSyntaxError:
    end_column = max(end_column, column + 1)
    return ApdslSyntaxError(message, code="APK003",
                            span=Span(file, line, column, line, end_column), **kwargs)


def _too_deep(tok: Token, file: str, blocks: int, brackets: int, line: int | None = None,
              end: int | None = None) -> ApdslSyntaxError:
    """Source nesting past MAX_NESTING (SPEC section 15), as CPython refuses too many nested
    parentheses or blocks; `tok` is the bracket or the indentation that goes one level too
    deep."""
    if line is None:
        span = Span(file, tok.line, tok.column, tok.end_line, tok.end_column)
    else:
        span = Span(file, line, 1, line, max(end or 2, 2))
    return ApdslSyntaxError(
        f"too deeply nested: more than {MAX_NESTING} levels of blocks and brackets",
        code="APK125", span=span, limit=MAX_NESTING,
        notes=[f"here {blocks} blocks and {brackets} brackets are open"],
        help=f"source nesting is limited to {MAX_NESTING} levels and the limit is fixed; move "
             "inner parts into helpers or intermediate names")


def _unsupported(tok: Token, file: str) -> ApdslSyntaxError:
    word = str(tok.value)
    what = "generators ('yield')" if word == "yield" else (
        "assignment expressions (':=')" if word == ":=" else f"'{word}'")
    verb = "are" if word in ("yield", ":=") else "is"
    return ApdslSyntaxError(
        f"{what} {verb} not part of .apk", code="APK007",
        span=Span(file, tok.line, tok.column, tok.end_line, tok.end_column),
        help=f"{_UNSUPPORTED_HELP.get(word, 'apk has only some of Python')}; {PYTHON_FRONTEND}",
        keyword=word)
