"""Builds the AST during the LALR parse: one method per grammar rule or alias.

Lark calls these as it reduces, so no parse tree is ever built.  Each method receives the rule's
children (AST nodes and the named tokens the grammar keeps; optional parts are None) and
returns a node.  Constructs that parse but are malformed (assigning to a call, a declaration
whose type is not `DTYPE[...] @ BUFFER`) are rejected here, where the node is known.
"""

from __future__ import annotations

from typing import Any, NoReturn

from lark import Token, Transformer

from ..errors import ApdslSyntaxError, Span
from . import ast as A
from .limits import int_literal
from .strings import BadEscape, decode, position

# Dotted prefixes that name NKI's own modules: `nl.X` is NKI's `X` (its own meaning where
# NKI's and the .apk builtin's differ, `nl.max`; otherwise the builtin `X`).
_PREFIXES = frozenset({"nl", "nisa"})
_SPACES = {"language": "nl", "isa": "nisa"}
_NKI_MODULES = frozenset({"language", "isa"})
_CONSTS = {"True": True, "False": False, "None": None}
_TARGETS = (A.Name, A.Subscript, A.Attribute)
_COMPARISONS = frozenset({"<", ">", "==", ">=", "<=", "!=", "in", "not in", "is", "is not"})
# Python's binding strength of the binary operators below `**` (higher binds tighter).
_PRECEDENCE = {"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5,
               "*": 6, "/": 6, "//": 6, "%": 6, "@": 6}


def _describe(node: A.Node) -> str:
    """How an error message names a kind of expression."""
    return {
        A.Call: "a function call", A.Const: "a literal", A.Str: "a string literal",
        A.EllipsisLit: "'...'", A.BinOp: "an operator expression",
        A.UnaryOp: "an operator expression", A.BoolOp: "a boolean expression",
        A.Compare: "a comparison", A.IfExp: "a conditional expression",
        A.DictExpr: "a dict literal", A.TupleExpr: "an empty tuple",
        A.ListExpr: "an empty list", A.NkiName: "an NKI name",
    }.get(type(node), "this expression")


class Builder(Transformer):
    """The Lark transformer that turns reductions into `apdsl.syntax.ast` nodes."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
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

    def string(self, c: list) -> A.Str:
        tok = c[0]
        raw = tok.value
        span = self._tok(tok)
        try:
            value = decode(raw)
        except BadEscape as e:
            self._error(e.message, Span(self.file, *position(span.line, span.column, raw, e.start),
                                        *position(span.line, span.column, raw, e.end)),
                        code="APK007", help="write a backslash as '\\\\'")
        return A.Str(value, raw, span, span)

    def const(self, c: list) -> A.Const:
        tok = c[0]
        return A.Const(_CONSTS[tok.value], self._tok(tok))

    def ellipsis(self, c: list) -> A.EllipsisLit:
        return A.EllipsisLit(self._tok(c[0]))

    def paren(self, c: list) -> A.Expr:
        inner = c[1]
        return A.replace(inner, span=Span(self.file, c[0].line, c[0].column, c[2].end_line,
                                        c[2].end_column))

    def tuple_lit(self, c: list) -> A.TupleExpr:
        return A.TupleExpr(tuple(c[1:-1]), Span(self.file, c[0].line, c[0].column,
                                                c[-1].end_line, c[-1].end_column))

    def list_lit(self, c: list) -> A.ListExpr:
        return A.ListExpr(tuple(c[1:-1]), Span(self.file, c[0].line, c[0].column,
                                               c[-1].end_line, c[-1].end_column))

    def dict_lit(self, c: list) -> A.DictExpr:
        return A.DictExpr(tuple(c[1:-1:2]), tuple(c[2:-1:2]),
                          Span(self.file, c[0].line, c[0].column, c[-1].end_line,
                               c[-1].end_column))

    def bare_tuple(self, c: list) -> A.TupleExpr:
        return A.TupleExpr(tuple(c), self._between(c[0].span, c[-1].span))

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
                if any(k.name == item.name for k in keywords):
                    self._error(f"keyword argument '{item.name}' is repeated", item.name_span,
                                code="APK007")
                keywords.append(item)
            elif keywords:
                self._error("positional argument follows a keyword argument", item.span,
                            code="APK007",
                            help="put positional arguments before keyword arguments")
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

    # ---- simple statements --------------------------------------------------------------

    def expr_stmt(self, c: list) -> A.ExprStmt:
        return A.ExprStmt(c[0], c[0].span)

    def assign(self, c: list) -> A.Assign:
        targets = c[:-1]
        for target in targets:
            self._check_target(target)
        return A.Assign(tuple(targets), c[-1], self._between(c[0].span, c[-1].span))

    def aug_assign(self, c: list) -> A.AugAssign:
        target, op, value = c
        if type(target) not in _TARGETS:
            self._error(f"'{op.value}' needs a single name or element to update"
                        if type(target) in (A.TupleExpr, A.ListExpr)
                        else f"cannot update {_describe(target)} with '{op.value}'",
                        target.span)
        return A.AugAssign(target, op.value[:-1], value, self._between(target.span, value.span))

    def _check_target(self, target: A.Expr) -> None:
        kind = type(target)
        if kind in _TARGETS:
            return
        if kind in (A.TupleExpr, A.ListExpr) and target.items:
            for item in target.items:
                self._check_target(item)
            return
        self._error(f"cannot assign to {_describe(target)}", target.span,
                    help="the left of '=' must be a name, an element `t[i]` or a tuple of them",
                    **({"notes": ["write into a tensor with an instruction, for example "
                                  "`dma_copy(dst=..., src=...)`"]}
                       if kind is A.Call else {}))

    def decl(self, c: list) -> A.Decl:
        tok, spec, init = c
        name_span = self._tok(tok)
        end = init.span if init is not None else spec.span
        return A.Decl(tok.value, spec, init, name_span, self._between(name_span, end))

    def type_ann(self, c: list) -> A.TypeSpec:
        expr, fmt = c
        example = "for example `f32[128, 64] @ sbuf`"
        if type(expr) is not A.BinOp or expr.op != "@":
            self._error("invalid type: expected DTYPE[D0, D1, ...] @ BUFFER", expr.span,
                        help=f"a declaration or parameter type names a dtype, dimensions and a "
                             f"buffer, {example}")
        shape, buffer = expr.left, expr.right
        if type(shape) is not A.Subscript:
            self._error("invalid type: the dtype needs its dimensions in brackets", shape.span,
                        help=example)
        dtype = _dotted(shape.value)
        if dtype is None:
            self._error("invalid type: expected a dtype name such as f32 or nl.bfloat16",
                        shape.value.span, help=example)
        for dim in shape.index:
            if type(dim) in (A.Slice, A.EllipsisLit):
                self._error("invalid dimension: expected a number or a name", dim.span,
                            help=example)
        buffer_name = _dotted(buffer)
        if buffer_name is None:
            self._error("invalid type: expected a buffer name such as sbuf or hbm", buffer.span,
                        help=example)
        format_span = self._tok(fmt) if fmt is not None else None
        end = format_span or expr.span
        return A.TypeSpec(dtype, shape.index, buffer_name, fmt.value if fmt is not None else None,
                          shape.value.span, buffer.span, format_span,
                          self._between(expr.span, end))

    def assert_stmt(self, c: list) -> A.Assert:
        tok, test, msg = c
        return A.Assert(test, msg, self._from_tok(tok, (msg or test).span))

    def pass_stmt(self, c: list) -> A.Pass:
        return A.Pass(self._tok(c[0]))

    def break_stmt(self, c: list) -> A.Break:
        return A.Break(self._tok(c[0]))

    def continue_stmt(self, c: list) -> A.Continue:
        return A.Continue(self._tok(c[0]))

    def return_stmt(self, c: list) -> A.Return:
        tok, value = c
        span = self._from_tok(tok, value.span) if value is not None else self._tok(tok)
        return A.Return(value, span)

    def dotted_name(self, c: list) -> tuple[str, Span]:
        return ".".join(t.value for t in c), self._from_tok(c[0], self._tok(c[-1]))

    def import_as(self, c: list) -> tuple[str, str | None, Span]:
        tok, alias = c
        last = alias if alias is not None else tok
        return tok.value, alias.value if alias is not None else None, \
            self._from_tok(tok, self._tok(last))

    def import_stmt(self, c: list) -> A.Import:
        tok, (module, module_span), alias = c
        end = self._tok(alias) if alias is not None else module_span
        return A.Import(module, alias.value if alias is not None else None,
                        self._from_tok(tok, end))

    def from_import(self, c: list) -> A.FromImport:
        tok, (module, _) = c[0], c[1]
        items = [x for x in c[2:] if type(x) is tuple]
        end = c[-1]
        end_span = self._tok(end) if isinstance(end, Token) else end[2]
        return A.FromImport(module, tuple((n, a) for n, a, _ in items),
                            tuple(s for _, _, s in items), self._from_tok(tok, end_span))

    # ---- compound statements ------------------------------------------------------------

    def suite(self, c: list) -> tuple:
        return tuple(c)

    def if_stmt(self, c: list) -> A.If:
        orelse = c[-1] or ()
        end = (orelse or c[-2])[-1].span
        for i in range(len(c) - 4, -1, -3):  # (IF|ELIF, test, suite) triples, last first
            node = A.If(c[i + 1], c[i + 2], orelse, self._from_tok(c[i], end))
            orelse = (node,)
        return node

    def for_stmt(self, c: list) -> A.For:
        tok, target, iterable, body = c
        self._check_loop_target(target)
        return A.For(target, iterable, body, self._from_tok(tok, body[-1].span))

    def _check_loop_target(self, target: A.Expr) -> None:
        kind = type(target)
        if kind is A.Name:
            return
        if kind in (A.TupleExpr, A.ListExpr) and target.items:
            for item in target.items:
                self._check_loop_target(item)
            return
        self._error(f"cannot use {_describe(target)} as a loop variable", target.span,
                    help="write `for i in ...:` or `for a, b in ...:`")

    def param(self, c: list) -> A.Param:
        tok, spec, default = c
        name_span = self._tok(tok)
        last = default or spec
        return A.Param(tok.value, spec, default,
                       self._between(name_span, last.span) if last is not None else name_span)

    def params(self, c: list) -> tuple:
        seen: set[str] = set()
        defaulted = False
        for p in c:
            if p.name in seen:
                self._error(f"parameter '{p.name}' is repeated", p.span, code="APK007")
            seen.add(p.name)
            if p.default is not None:
                defaulted = True
            elif defaulted:
                self._error(f"parameter '{p.name}' without a default follows one with a default",
                            p.span, code="APK007", help=f"give '{p.name}' a default or move it "
                                                        f"before the defaulted parameters")
        return tuple(c)

    def kernel_def(self, c: list) -> A.Kernel:
        tok, name, params, returns, body = c
        params = params or ()
        for p in params:
            if p.type is None and p.default is None:
                self._error(f"kernel parameter '{p.name}' needs a type", p.span,
                            help=f"write `{p.name}: DTYPE[DIMS] @ BUFFER`, for example "
                                 f"`{p.name}: f32[128, 512] @ hbm`")
        return A.Kernel(name.value, params, returns, body, (), self._tok(name),
                        self._from_tok(tok, body[-1].span))

    def func_def(self, c: list) -> A.FunctionDef:
        tok, name, params, body = c
        return A.FunctionDef(name.value, params or (), body, (), self._tok(name),
                             self._from_tok(tok, body[-1].span))

    def decorator(self, c: list) -> tuple[A.Expr, Token]:
        return c[1], c[0]

    def decorated(self, c: list) -> A.Stmt:
        node = c[-1]
        return A.replace(node, decorators=tuple(e for e, _ in c[:-1]),
                       span=self._from_tok(c[0][1], node.span))

    def start(self, c: list) -> tuple:
        return tuple(c)


def _is_nki(node: A.Expr) -> bool:
    """True for `nki` and any dotted path ending in it (`neuronxcc.nki`)."""
    if type(node) is A.Name:
        return node.id == "nki"
    return type(node) is A.Attribute and node.attr == "nki" and _dotted(node.value) is not None


def _dotted(node: A.Expr) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    parts = []
    while type(node) is A.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not A.Name and not (type(node) is A.NkiName and not parts):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
