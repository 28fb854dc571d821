"""Builds the AST during the LALR parse: one method per grammar rule or alias.

Lark calls these as it reduces, so no parse tree is ever built.  The statement rules are in
`build_statements`, displays, comprehensions, lambdas and strings in `build_displays`.  Each method receives the rule's
children (AST nodes and the named tokens the grammar keeps; optional parts are None) and
returns a node.  Constructs that parse but are malformed (assigning to a call, a declaration
whose type is not `DTYPE[...] @ BUFFER`) are rejected here, where the node is known.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import ApdslSyntaxError, Span
from . import ast as A
from .build_displays import DisplayBuilder
from .build_statements import StatementBuilder
from .lalr import Token
from .limits import int_literal
from .node_text import dotted

# Dotted prefixes that name NKI's own modules: `nl.X` is NKI's `X` (its own meaning where
# NKI's and the .apk builtin's differ, `nl.max`; otherwise the builtin `X`).
_PREFIXES = frozenset({"nl", "nisa", "asc"})
_SPACES = {"language": "nl", "isa": "nisa"}
_NKI_MODULES = frozenset({"language", "isa"})
_CONSTS = {"True": True, "False": False, "None": None}
_COMPARISONS = frozenset({"<", ">", "==", ">=", "<=", "!=", "in", "not in", "is", "is not"})
# Python's binding strength of the binary operators below `**` (higher binds tighter).
_PRECEDENCE = {"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5,
               "*": 6, "/": 6, "//": 6, "%": 6, "@": 6}


class Builder(StatementBuilder, DisplayBuilder):
    """Turns reductions into `apdsl.syntax.ast` nodes (the parsers call the method named by
    each rule or alias, as Lark calls an inline transformer's)."""

    def __init__(self) -> None:
        self.file = "<string>"

    # ---- spans --------------------------------------------------------------------------

    def _tok(self, tok: Token) -> Span:
        return Span(self.file, tok.line, tok.column, tok.end_line, tok.end_column)

    def _from_tok(self, tok: Token, last: Span) -> Span:
        return Span(self.file, tok.line, tok.column, last.end_line, last.end_column)

    def _between(self, first: Span, last: Span) -> Span:
        return Span(self.file, first.line, first.column, last.end_line, last.end_column)

    def _error(self, message: str, span: Span, code: str = "APK006", **kwargs: Any) -> NoReturn:
        raise ApdslSyntaxError(message, code=code, span=span, **kwargs)

    # ---- atoms --------------------------------------------------------------------------

    def name(self, c: list) -> A.Name:
        tok = c[0]
        return A.Name(tok.value, Span(self.file, tok.line, tok.column, tok.end_line,
                                      tok.end_column))

    def int_lit(self, c: list) -> A.Const:
        tok = c[0]
        try:
            value = int_literal(tok.value)
        except ValueError:
            self._error(f"leading zeros are not allowed in the integer {tok.value}",
                        self._tok(tok), code="APK007",
                        help=f"write {tok.value.lstrip('0_') or '0'} "
                             f"(or 0o{tok.value.lstrip('0_')} for an octal number)")
        if value is None:
            digits = len(tok.value)
            self._error(f"integer literal too large: its {digits:,} digits exceed 2**1024",
                        self._tok(tok), code="APK802", limit="2**1024",
                        help="apdsl integers are limited to 2**1024 (about 1.8e308) in "
                             "magnitude; the limit is fixed")
        return A.Const(value, Span(self.file, tok.line, tok.column, tok.end_line,
                                   tok.end_column))

    def float_lit(self, c: list) -> A.Const:
        tok = c[0]
        return A.Const(float(tok.value), self._tok(tok))

    def const(self, c: list) -> A.Const:
        tok = c[0]
        return A.Const(_CONSTS[tok.value], self._tok(tok))

    def ellipsis(self, c: list) -> A.EllipsisLit:
        return A.EllipsisLit(self._tok(c[0]))

    def paren(self, c: list) -> A.Expr:
        inner = c[1]
        return A.replace(inner, span=Span(self.file, c[0].line, c[0].column, c[2].end_line,
                                        c[2].end_column))

    # ---- trailers -----------------------------------------------------------------------

    def getattr(self, c: list) -> A.Expr:
        value, tok = c
        vs = value.span
        span = Span(self.file, vs.line, vs.column, tok.end_line, tok.end_column)
        kind = type(value)
        if kind is A.Name:
            if value.id in _PREFIXES:
                return A.NkiName(tok.value, span, value.id)
        elif kind is A.Attribute and value.attr in _NKI_MODULES and _is_nki(value.value):
            return A.NkiName(tok.value, span, _SPACES[value.attr])
        return A.Attribute(value, tok.value, self._tok(tok), span)

    def call(self, c: list) -> A.Call:
        func = c[0]
        close = c[-1]
        args = []
        keywords = []
        for item in c[1:-1]:
            if type(item) is A.Keyword:
                if item.name is not None and any(k.name == item.name for k in keywords):
                    self._error(f"keyword argument '{item.name}' is repeated", item.name_span,
                                code="APK007")
                keywords.append(item)
            elif keywords and type(item) is not A.Starred:
                self._error("positional argument follows a keyword argument", item.span,
                            code="APK007",
                            help="put positional arguments before keyword arguments")
            elif type(item) is A.Starred and any(k.name is None for k in keywords):
                self._error("'*' argument follows a '**' argument", item.span, code="APK007",
                            help="put '*' arguments before '**' arguments")
            else:
                args.append(item)
        fs = func.span
        return A.Call(func, tuple(args), tuple(keywords),
                      Span(self.file, fs.line, fs.column, close.end_line, close.end_column))

    def keyword(self, c: list) -> A.Keyword:
        tok, value = c
        name_span = self._tok(tok)
        return A.Keyword(tok.value, value, name_span, self._between(name_span, value.span))

    def subscript(self, c: list) -> A.Subscript:
        value = c[0]
        close = c[-1]
        vs = value.span
        return A.Subscript(value, tuple(c[1:-1]),
                           Span(self.file, vs.line, vs.column, close.end_line,
                                close.end_column))

    def slice(self, c: list) -> A.Slice:
        start, colon, stop, colon2, step = c
        first = start.span if start is not None else self._tok(colon)
        last = next(p for p in (step, colon2, stop, colon, start) if p is not None)
        last_span = last.span if isinstance(last, A.Node) else self._tok(last)
        return A.Slice(start, stop, step, self._between(first, last_span))

    # ---- operators ----------------------------------------------------------------------

    def expr(self, c: list) -> A.Expr:
        """A flat run `operand (op operand)*`: chain the comparisons, climb the rest."""
        operands = [c[0]]
        ops = []
        i, n = 1, len(c)
        while i < n:
            op = c[i].value
            if isinstance(c[i + 1], Token):  # the two-word operators `not in`, `is not`
                i += 1
                op = f"{op} {c[i].value}"
            ops.append(op)
            operands.append(c[i + 1])
            i += 2
        if not any(op in _COMPARISONS for op in ops):
            return self._climb(operands, ops)
        segments = [[operands[0]]]
        seg_ops: list[list[str]] = [[]]
        comparisons = []
        for op, right in zip(ops, operands[1:]):
            if op in _COMPARISONS:
                comparisons.append(op)
                segments.append([right])
                seg_ops.append([])
            else:
                segments[-1].append(right)
                seg_ops[-1].append(op)
        left, *rest = (self._climb(s, o) for s, o in zip(segments, seg_ops))
        return A.Compare(left, tuple(comparisons), tuple(rest),
                         self._between(left.span, rest[-1].span))

    def _climb(self, operands: list, ops: list[str]) -> A.Expr:
        """Apply binary operator precedence (all left-associative) by shunting-yard."""
        if not ops:
            return operands[0]
        file = self.file
        out = [operands[0]]
        pending: list[str] = []

        def fold() -> None:
            right = out.pop()
            left = out.pop()
            ls, rs = left.span, right.span
            out.append(A.BinOp(pending.pop(), left, right,
                               Span(file, ls.line, ls.column, rs.end_line, rs.end_column)))

        for op, right in zip(ops, operands[1:]):
            level = _PRECEDENCE[op]
            while pending and _PRECEDENCE[pending[-1]] >= level:
                fold()
            pending.append(op)
            out.append(right)
        while pending:
            fold()
        return out[0]

    def power(self, c: list) -> A.BinOp:
        base, exponent = c
        return A.BinOp("**", base, exponent, self._between(base.span, exponent.span))

    def unary(self, c: list) -> A.UnaryOp:
        op, operand = c
        return A.UnaryOp(op.value, operand, self._from_tok(op, operand.span))

    def not_op(self, c: list) -> A.UnaryOp:
        op, operand = c
        return A.UnaryOp("not", operand, self._from_tok(op, operand.span))

    def and_test(self, c: list) -> A.BoolOp:
        return A.BoolOp("and", tuple(c), self._between(c[0].span, c[-1].span))

    def or_test(self, c: list) -> A.BoolOp:
        return A.BoolOp("or", tuple(c), self._between(c[0].span, c[-1].span))

    def ifexp(self, c: list) -> A.IfExp:
        body, test, orelse = c
        return A.IfExp(test, body, orelse, self._between(body.span, orelse.span))

    def fexpr(self, c: list) -> A.Expr:
        return c[0]

    def start(self, c: list) -> tuple:
        return tuple(c)


def _is_nki(node: A.Expr) -> bool:
    """True for `nki` and any dotted path ending in it (`neuronxcc.nki`)."""
    if type(node) is A.Name:
        return node.id == "nki"
    return type(node) is A.Attribute and node.attr == "nki" and dotted(node.value) is not None
