"""The builder's display and Python-expression rules (a mixin of `Builder`): tuple, list, set
and dict displays, comprehensions and generator expressions, starred items, lambdas, and
string literals (adjacent literals joined, f-strings split into their fields)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import records
from ..errors import Span
from . import ast as A
from .fstrings import Field, FStringError, Text, split
from .lalr import Token
from .strings import BadEscape, decode, position


class DisplayBuilder:
    """Display rules of the builder; `Builder` provides `file`, the span helpers and
    `parse_field` (parses an f-string field's expression text)."""

    parse_field: Callable[[str], A.Expr] | None = None

    def _brackets(self, c: list) -> Span:
        return Span(self.file, c[0].line, c[0].column, c[-1].end_line, c[-1].end_column)

    # ---- displays -----------------------------------------------------------------------

    def tuple_lit(self, c: list) -> A.TupleExpr:
        return A.TupleExpr(tuple(c[1:-1]), self._brackets(c))

    def list_lit(self, c: list) -> A.ListExpr:
        return A.ListExpr(tuple(c[1:-1]), self._brackets(c))

    def set_lit(self, c: list) -> A.SetExpr:
        return A.SetExpr(tuple(c[1:-1]), self._brackets(c))

    def dict_lit(self, c: list) -> A.DictExpr:
        return A.DictExpr(tuple(c[1:-1:2]), tuple(c[2:-1:2]), self._brackets(c))

    def bare_tuple(self, c: list) -> A.TupleExpr:
        return A.TupleExpr(tuple(c), self._between(c[0].span, c[-1].span))

    def star_expr(self, c: list) -> A.Starred:
        tok, value = c
        return A.Starred(value, self._from_tok(tok, value.span))

    def star_arg(self, c: list) -> A.Node:
        """`*xs` in a call is a Starred argument, `**kw` a Keyword without a name."""
        tok, value = c
        span = self._from_tok(tok, value.span)
        if tok.value == "*":
            return A.Starred(value, span)
        return A.Keyword(None, value, self._tok(tok), span)

    # ---- comprehensions -----------------------------------------------------------------

    def comp_if(self, c: list) -> A.Expr:
        return c[0]

    def comp_for(self, c: list) -> tuple[A.CompFor, ...]:
        """One `for ... in ... if ...` clause and the clauses nested after it."""
        tok, target, iterable, *rest = c
        self._check_loop_target(target)
        inner: tuple[A.CompFor, ...] = ()
        if rest and type(rest[-1]) is tuple:
            inner = rest.pop()
        last = rest[-1].span if rest else iterable.span
        clause = A.CompFor(target, iterable, tuple(rest), self._from_tok(tok, last))
        return (clause,) + inner

    def list_comp(self, c: list) -> A.ListComp:
        return A.ListComp(c[1], c[2], self._brackets(c))

    def set_comp(self, c: list) -> A.SetComp:
        return A.SetComp(c[1], c[2], self._brackets(c))

    def dict_comp(self, c: list) -> A.DictComp:
        return A.DictComp(c[1], c[2], c[3], self._brackets(c))

    def generator_exp(self, c: list) -> A.GeneratorExp:
        return A.GeneratorExp(c[1], c[2], self._brackets(c))

    def generator(self, c: list) -> A.GeneratorExp:
        """A generator expression as a call's argument, without parentheses of its own."""
        elt, clauses = c
        return A.GeneratorExp(elt, clauses, self._between(elt.span, clauses[-1].span))

    def lambda_expr(self, c: list) -> A.Lambda:
        tok, params, body = c
        return A.Lambda(params or (), body, self._from_tok(tok, body.span))

    # ---- strings ------------------------------------------------------------------------

    def strings(self, c: list) -> A.Expr:
        """One string literal, or adjacent ones joined as in Python (`"a" "b"`); any f-string
        among them makes the whole a `JoinedStr`."""
        if len(c) == 1 and c[0].type != "FSTRING":
            return self._plain_string(c[0])
        span = Span(self.file, c[0].line, c[0].column, c[-1].end_line, c[-1].end_column)
        parts: list[Any] = []
        for tok in c:
            if tok.type == "FSTRING":
                parts.extend(self._fstring_parts(tok))
            else:
                parts.append(self._plain_string(tok).value)
        parts = _merge(parts)
        if all(type(p) is str for p in parts):
            value = "".join(parts)
            # the joined literals' source text: `char_span` falls back to the whole span
            return A.Str(value, _source_text(c), span, span)
        return A.JoinedStr(tuple(parts), span)

    def _plain_string(self, tok: Token) -> A.Str:
        raw = tok.value
        span = self._tok(tok)
        try:
            value = decode(raw)
        except BadEscape as e:
            self._error(e.message, Span(self.file, *position(span.line, span.column, raw, e.start),
                                        *position(span.line, span.column, raw, e.end)),
                        code="APK007", help="write a backslash as '\\\\'")
        return A.Str(value, raw, span, span)

    def _fstring_parts(self, tok: Token) -> list[Any]:
        raw = tok.value
        try:
            pieces = split(raw)
        except FStringError as e:
            self._error(e.message, self._raw_span(tok, e.start, e.end), code="APK041",
                        help="an f-string field is `{expression}`, `{expression!r}` or "
                             "`{expression:spec}`; write a literal brace as '{{' or '}}'")
        return self._convert(tok, pieces)

    def _convert(self, tok: Token, pieces: list[Text | Field]) -> list[Any]:
        parts: list[Any] = []
        for piece in pieces:
            if type(piece) is Text:
                parts.append(piece.value)
                continue
            if piece.debug is not None:
                parts.append(piece.debug)
            value = self._field_expr(tok, piece)
            spec = None
            if piece.spec is not None:
                spec_parts = _merge(self._convert(tok, piece.spec))
                spec = A.JoinedStr(tuple(spec_parts), self._raw_span(tok, piece.spec_start,
                                                                    piece.end - 1))
            parts.append(A.FormattedValue(value, piece.conversion, spec,
                                          self._raw_span(tok, piece.start, piece.end)))
        return parts

    def _field_expr(self, tok: Token, field: Field) -> A.Expr:
        raw = tok.value
        start = field.expr_start
        text = raw[start:field.expr_end]
        lead = len(text) - len(text.lstrip())
        start += lead
        span = self._raw_span(tok, start, field.expr_end)
        if self.parse_field is None:  # pragma: no cover - the parser always sets it
            self._error("f-strings need the apk parser", span, code="APK041")
        try:
            node = self.parse_field(text[lead:])
        except FieldSyntaxError as e:
            self._error(f"invalid expression in an f-string: {e.message}", span,
                        code="APK041", help="a field holds one expression, as in "
                                            "`f\"{x + 1}\"`")
        return relocate(node, span.line, span.column)

    def _raw_span(self, tok: Token, start: int, end: int) -> Span:
        raw = tok.value
        line, column = tok.line, tok.column
        end = max(end, start + 1)
        return Span(self.file, *position(line, column, raw, start),
                    *position(line, column, raw, min(end, len(raw))))


class FieldSyntaxError(Exception):
    """The expression of an f-string field does not parse (raised by `parse_field`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _merge(parts: list[Any]) -> list[Any]:
    """Adjacent literal strings joined into one."""
    out: list[Any] = []
    for p in parts:
        if type(p) is str and out and type(out[-1]) is str:
            out[-1] += p
        elif type(p) is not str or p:
            out.append(p)
    return out


def _source_text(tokens: list[Token]) -> str:
    return " ".join(t.value for t in tokens)


def relocate(node: Any, line: int, column: int) -> Any:
    """`node` parsed from text on its own (line 1, column 1) with every span moved to where that
    text starts in the file (`line`, `column`)."""
    if isinstance(node, Span):
        def at(ln: int, col: int) -> tuple[int, int]:
            return (line, column + col - 1) if ln == 1 else (line + ln - 1, col)
        return Span(node.file, *at(node.line, node.column), *at(node.end_line, node.end_column))
    if isinstance(node, tuple):
        return tuple(relocate(x, line, column) for x in node)
    if isinstance(node, A.Node):
        return records.replace(node, **{f: relocate(getattr(node, f), line, column)
                                        for f in node._fields})
    return node
