"""Turns Lark's lexer and parser exceptions into `ApdslSyntaxError`s that say, in words, what
was expected where (`expected ')' or ','`), with a span and a stable code.

The expected set comes from Lark's interactive parser (`UnexpectedToken.accepts`), which replays
the terminals the parser could take, so it is exact even where LALR merged states.  After a
complete expression every operator would be accepted too; those are dropped so the message names
what actually ends or continues the construct.
"""

from __future__ import annotations

from collections.abc import Iterable

from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import ApdslSyntaxError, Label, Span
from .indent import ScanState
from .lalr import Token
from .node_text import PYTHON_FRONTEND

_NAMED = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "STRING": "a string",
    "LONG_STRING": "a string", "FSTRING": "a string", "_NEWLINE": "end of line", "_INDENT": "an indented block",
    "_DEDENT": "the end of the block", "$END": "end of file",
    "AUGOP": "an assignment operator such as '+='",
}
# Terminals (by their text, or name) that can begin an expression, and those that can only
# continue one.
_EXPR_START = {"NAME", "INT", "FLOAT", "STRING", "LONG_STRING", "FSTRING", "(", "[", "{", "-",
               "+", "~", "not", "True", "False", "None", "...", "lambda", "*", "**"}
_CONTINUE = {".", "(", "[", "if", "for", "and", "or", "not", "in", "is", "**", "*", "/", "//", "%",
             "@", "+", "-", "<<", ">>", "&", "|", "^", "<", ">", "==", ">=", "<=", "!=",
             "AUGOP"}
_STMT_START = _EXPR_START | {"if", "for", "while", "kernel", "def", "import", "from", "assert",
                             "pass", "break", "continue", "return", "del", "raise", "@",
                             "_NEWLINE", "$END", "_DEDENT"}
# Punctuation first, as in "expected ')' or ','", then other symbols and keywords, then
# descriptions.
_ORDER = [")", "]", "}", ",", ":", "=", "->", "(", "import", "in", "as", "else"]
_DESCRIPTIONS = ["a name", "a number", "a string", "an expression", "a statement",
                 "an indented block", "the end of the block", "end of line", "end of file"]
_CLOSERS = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}


class SyntaxReporter:
    """Knows the grammar's terminals; builds the error for one failed parse."""

    def __init__(self, terminals: Iterable) -> None:
        # Terminal name -> the text a user would type ("(" for LPAR), or the name itself.
        self.text = {"$END": "$END"}
        for t in terminals:
            pattern = t.pattern
            self.text[t.name] = pattern.value if pattern.type == "str" else t.name

    def error(self, exc: LarkError, source: str, state: ScanState) -> ApdslSyntaxError:
        file = state.file
        if isinstance(exc, UnexpectedCharacters):
            return _bad_character(exc, source, file)
        if isinstance(exc, UnexpectedToken):
            return self._unexpected(exc, source, state)
        line = getattr(exc, "line", 1) if isinstance(exc, UnexpectedInput) else 1
        column = getattr(exc, "column", 1) if isinstance(exc, UnexpectedInput) else 1
        line, column = (line, column) if isinstance(line, int) and line > 0 else (1, 1)
        return ApdslSyntaxError("invalid syntax", code="APK001",
                                span=Span(file, line, column, line, column + 1))

    # ---- unexpected token ---------------------------------------------------------------

    def _unexpected(self, exc: UnexpectedToken, source: str, state: ScanState
                    ) -> ApdslSyntaxError:
        file = state.file
        tok = exc.token
        kind = tok.type
        try:
            accepts = set(exc.accepts or exc.expected)
        except LarkError:  # pragma: no cover - replay failing is Lark's bug, not the user's
            accepts = set(exc.expected)
        texts = {self.text.get(name, name) for name in accepts}
        expected = _expected_words(texts)
        notes = [f"found {self._found(tok)}"]
        labels: list[Label] = []
        if kind == "$END":
            span = _end_of_file(source, file)
            if state.brackets:
                opener = state.brackets[-1]
                labels.append(Label(_tok_span(opener, file), f"this '{opener.value}' is never "
                                                             "closed"))
            return ApdslSyntaxError("unexpected end of file", code="APK005", span=span,
                                    notes=[f"expected {expected}"] if expected else [],
                                    labels=labels, expected=expected)
        span = _tok_span(tok, file)
        if kind == "_INDENT":
            return ApdslSyntaxError("unexpected indent", code="APK003", span=span,
                                    help="indent only the body of a block (after a line "
                                         "ending in ':')")
        if texts == {"_INDENT"}:
            return ApdslSyntaxError("expected an indented block", code="APK003", span=span,
                                    notes=notes,
                                    help="indent the statements of the block under the line "
                                         "ending in ':'")
        if kind == "_NEWLINE":
            span = Span(file, tok.line, tok.column, tok.line, tok.column + 1)
        if kind in _CLOSERS and _CLOSERS[kind] not in [b.value for b in state.brackets[-1:]]:
            if not state.brackets:
                return ApdslSyntaxError(f"unmatched '{tok.value}'", code="APK001", span=span,
                                        help="remove it or add the opening bracket")
            opener = state.brackets[-1]
            return ApdslSyntaxError(
                f"closing '{tok.value}' does not match '{opener.value}'", code="APK001",
                span=span, labels=[Label(_tok_span(opener, file), "opened here")],
                notes=[f"expected {expected}"] if expected else [])
        if state.brackets and state.brackets[-1].line < tok.line:
            opener = state.brackets[-1]
            labels.append(Label(_tok_span(opener, file), f"'{opener.value}' opened here is "
                                                         "not closed"))
        from .python_syntax import python_construct
        construct = python_construct(source, tok.line, tok.column,
                                     state.brackets[0].line if state.brackets else None)
        if construct is not None:
            return ApdslSyntaxError(
                f"{construct} not part of .apk", code="APK007", span=span,
                notes=[f"apk expected {expected} here" if expected else notes[0]],
                labels=labels, help=PYTHON_FRONTEND)
        if not expected:
            return ApdslSyntaxError(f"unexpected {self._found(tok)}", code="APK001", span=span,
                                    labels=labels)
        return ApdslSyntaxError(f"expected {expected}", code="APK001", span=span, notes=notes,
                                labels=labels, expected=expected, found=self._found(tok))

    def _found(self, tok: Token) -> str:
        kind = tok.type
        if kind in ("_NEWLINE", "$END"):
            return _NAMED[kind]
        if kind == "_INDENT":
            return "an indent"
        if kind == "_DEDENT":
            return "the end of the block"
        text = str(tok.value)
        if len(text) > 24:
            text = text[:20] + "..."
        if kind == "NAME":
            return f"name '{text}'"
        if kind in ("INT", "FLOAT"):
            return f"number {text}"
        if kind in ("STRING", "LONG_STRING"):
            return f"string {text}"
        return f"'{text}'"


def _expected_words(texts: set[str]) -> str:
    """`expected` sets as words: "')' or ','", "an expression", "end of line"."""
    texts = set(texts)
    if "." in texts:  # a complete expression precedes: drop what would only continue it
        structural_in = "in" in texts and "<" not in texts  # the `in` of a for loop
        texts -= _CONTINUE
        if structural_in:
            texts.add("in")
        if "_NEWLINE" in texts:
            texts = {"_NEWLINE"}
        elif ")" in texts:
            texts.discard("=")  # `f(a b)` wants a comma, not a keyword argument
    words = []
    if {"if", "NAME", "kernel"} <= texts:
        words.append("a statement")
        texts -= _STMT_START
    elif {"NAME", "INT", "("} <= texts:
        words.append("an expression")
        texts -= _EXPR_START
    words += [_NAMED.get(t) or f"'{t}'" for t in texts]
    words = sorted(set(words), key=_rank)
    if len(words) > 6:
        words = words[:5] + ["..."]
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _rank(word: str) -> tuple[int, str]:
    if word in _DESCRIPTIONS:
        return 2000 + _DESCRIPTIONS.index(word), word
    bare = word[1:-1]
    return (_ORDER.index(bare) if bare in _ORDER else 1000), word


def _bad_character(exc: UnexpectedCharacters, source: str, file: str) -> ApdslSyntaxError:
    line, column = exc.line, exc.column
    pos = exc.pos_in_stream
    char = exc.char
    if char in "\"'":
        end = source.find("\n", pos)
        end = len(source) if end < 0 else end
        if source[pos - 2:pos] == char * 2 and source[pos - 3:pos - 2] != char:
            # The lexer read `""` as an empty string before failing on the third quote.
            column -= 2
            message = "unterminated triple-quoted string"
        else:
            message = "unterminated string"
        end_column = column + max(1, len(source[pos:end].rstrip("\r")))
        if message == "unterminated triple-quoted string":
            end_column += 2
        return ApdslSyntaxError(message, code="APK004",
                                span=Span(file, line, column, line, end_column),
                                help=f"close the string with {char}" if "triple" not in message
                                else f"close the string with {char * 3}")
    shown = char if char.isprintable() else repr(char)[1:-1]
    help_text = None
    if char in "\u201c\u201d\u2018\u2019":
        help_text = "use straight quotes (\" or ') around strings"
    elif char == ";":
        help_text = "put each statement on its own line"
    return ApdslSyntaxError(f"unexpected character '{shown}'", code="APK002",
                            span=Span(file, line, column, line, column + 1), help=help_text,
                            character=char)


def _tok_span(tok: Token, file: str) -> Span:
    end_line = tok.end_line if tok.end_line is not None else tok.line
    end_column = tok.end_column if tok.end_column is not None else tok.column + 1
    if (end_line, end_column) <= (tok.line, tok.column):
        end_line, end_column = tok.line, tok.column + 1
    return Span(file, tok.line, tok.column, end_line, end_column)


def _end_of_file(source: str, file: str) -> Span:
    """The position just after the last non-blank character."""
    text = source.rstrip()
    line = text.count("\n") + 1
    column = len(text) - (text.rfind("\n") + 1) + 1
    return Span(file, line, column, line, column + 1)
