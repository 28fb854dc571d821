"""The builder's statement rules (a mixin of `Builder`): simple and compound statements,
parameters and annotations.

An annotation is a tensor type (`f32[M, K] @ hbm`, kept) or a type hint (`int`, `list[int]`,
`nl.ndarray`: accepted and dropped), so NKI kernels written with type hints parse unchanged.
"""

from __future__ import annotations

from typing import NoReturn

from ..errors import Span
from . import ast as A
from .lalr import Token
from .node_text import PYTHON_FRONTEND, describe, dotted, looks_like_tensor_type

_TARGETS = (A.Name, A.Subscript, A.Attribute)


class Hint:
    """An annotation that is a type hint, not a tensor type (dropped by the rule using it)."""

    __slots__ = ("expr",)

    def __init__(self, expr: A.Expr) -> None:
        self.expr = expr


class StatementBuilder:
    """Statement rules of the builder; `Builder` provides the span helpers."""

    # `Builder` provides `file`, `_tok`, `_from_tok`, `_between` and `_error`.

    # ---- simple statements --------------------------------------------------------------

    def _not_starred(self, node: A.Expr) -> A.Expr:
        if type(node) is A.Starred:
            self._error("a starred expression is only allowed inside a tuple, list, set or "
                        "call", node.span, code="APK007",
                        help="write `a, *rest = ...` or `[*a, *b]`")
        return node

    def expr_stmt(self, c: list) -> A.ExprStmt:
        return A.ExprStmt(self._not_starred(c[0]), c[0].span)

    def assign(self, c: list) -> A.Assign:
        targets = c[:-1]
        for target in targets:
            if type(target) is A.Starred:
                self._error("a starred assignment target must be in a tuple or list",
                            target.span, help="write `a, *rest = ...` or `*rest, = ...`")
            self._check_target(target)
        return A.Assign(tuple(targets), self._not_starred(c[-1]),
                        self._between(c[0].span, c[-1].span))

    def aug_assign(self, c: list) -> A.AugAssign:
        target, op, value = c
        if type(target) not in _TARGETS:
            self._error(f"'{op.value}' needs a single name or element to update"
                        if type(target) in (A.TupleExpr, A.ListExpr)
                        else f"cannot update {describe(target)} with '{op.value}'",
                        target.span)
        return A.AugAssign(target, op.value[:-1], self._not_starred(value),
                           self._between(target.span, value.span))

    def _check_target(self, target: A.Expr) -> None:
        kind = type(target)
        if kind in _TARGETS:
            return
        if kind in (A.TupleExpr, A.ListExpr) and target.items:
            starred = [i for i in target.items if type(i) is A.Starred]
            if len(starred) > 1:
                self._error("an assignment takes one starred target per tuple",
                            starred[1].span, help="only one name may take the rest: "
                                                  "`a, *rest = ...`")
            for item in target.items:
                self._check_target(item.value if type(item) is A.Starred else item)
            return
        self._error(f"cannot assign to {describe(target)}", target.span,
                    help="the left of '=' must be a name, an element `t[i]` or a tuple of them",
                    **({"notes": ["write into a tensor with an instruction, for example "
                                  "`dma_copy(dst=..., src=...)`"]}
                       if kind is A.Call else {}))

    def decl(self, c: list) -> A.Stmt:
        tok, spec, init = c
        name_span = self._tok(tok)
        if type(spec) is Hint:
            # `n: int = 4` assigns; a bare `n: int` binds nothing, as in Python
            target = A.Name(tok.value, name_span)
            if init is None:
                return A.Pass(self._between(name_span, spec.expr.span))
            return A.Assign((target,), self._not_starred(init),
                            self._between(name_span, init.span))
        end = init.span if init is not None else spec.span
        return A.Decl(tok.value, spec, self._not_starred(init) if init is not None else None,
                      name_span, self._between(name_span, end))

    def type_ann(self, c: list) -> A.TypeSpec | Hint:
        expr, fmt = c
        example = "for example `f32[128, 64] @ sbuf`"
        if fmt is None and not (type(expr) is A.BinOp and expr.op == "@"):
            if looks_like_tensor_type(expr):
                self._error("invalid type: expected DTYPE[D0, D1, ...] @ BUFFER", expr.span,
                            notes=["the tensor type has no `@ BUFFER`"], help=example)
            return Hint(expr)
        if type(expr) is not A.BinOp or expr.op != "@":
            self._error("invalid type: expected DTYPE[D0, D1, ...] @ BUFFER", expr.span,
                        help=f"a declaration or parameter type names a dtype, dimensions and a "
                             f"buffer, {example}")
        shape, buffer = expr.left, expr.right
        if type(shape) is not A.Subscript:
            self._error("invalid type: the dtype needs its dimensions in brackets", shape.span,
                        help=example)
        dtype = dotted(shape.value)
        if dtype is None:
            self._error("invalid type: expected a dtype name such as f32 or nl.bfloat16",
                        shape.value.span, help=example)
        for dim in shape.index:
            if type(dim) in (A.Slice, A.EllipsisLit):
                self._error("invalid dimension: expected a number or a name", dim.span,
                            help=example)
        buffer_name = dotted(buffer)
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
        return A.Return(self._not_starred(value) if value is not None else None, span)

    def del_stmt(self, c: list) -> A.Del:
        tok, *targets = c
        for t in targets:
            if type(t) not in _TARGETS:
                self._error(f"cannot delete {describe(t)}", t.span,
                            help="`del` takes names, elements `x[i]` and slices `x[i:j]`")
        return A.Del(tuple(targets), self._from_tok(tok, targets[-1].span))

    def raise_stmt(self, c: list) -> A.Raise:
        tok, exc, cause = c
        last = cause or exc
        return A.Raise(exc, cause, self._from_tok(tok, last.span) if last is not None
                       else self._tok(tok))

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
        tok, target, iterable, body, orelse = c
        self._check_loop_target(target)
        orelse = orelse or ()
        return A.For(target, iterable, body, orelse,
                     self._from_tok(tok, (orelse or body)[-1].span))

    def while_stmt(self, c: list) -> A.While:
        tok, test, body, orelse = c
        orelse = orelse or ()
        return A.While(test, body, orelse, self._from_tok(tok, (orelse or body)[-1].span))

    def _check_loop_target(self, target: A.Expr) -> None:
        kind = type(target)
        if kind is A.Name:
            return
        if kind in (A.TupleExpr, A.ListExpr) and target.items:
            for item in target.items:
                self._check_loop_target(item)
            return
        self._error(f"cannot use {describe(target)} as a loop variable", target.span,
                    help="write `for i in ...:` or `for a, b in ...:`")

    def param(self, c: list) -> A.Param:
        tok, spec, default = c
        name_span = self._tok(tok)
        if type(spec) is Hint:
            spec = None
        last = default or spec
        return A.Param(tok.value, spec, default,
                       self._between(name_span, last.span) if last is not None else name_span)

    def lambda_param(self, c: list) -> A.Param:
        tok, default = c
        name_span = self._tok(tok)
        return A.Param(tok.value, None, default,
                       self._between(name_span, default.span) if default is not None
                       else name_span)

    def star_param(self, c: list) -> NoReturn:
        tok, name = c
        span = self._from_tok(tok, self._tok(name)) if name is not None else self._tok(tok)
        what = f"'{tok.value}{name.value}' parameters are" if name is not None else \
            "a bare '*' (keyword-only parameters) is"
        self._error(f"{what} not part of .apk", span, code="APK007",
                    help="give every parameter a name (and a default where it may be left "
                         "out); " + PYTHON_FRONTEND)

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

    lambda_params = params

    def kernel_def(self, c: list) -> A.Kernel:
        tok, name, params, returns, body = c
        params = params or ()
        for p in params:
            if p.type is None and p.default is None:
                self._error(f"kernel parameter '{p.name}' needs a type", p.span,
                            help=f"write `{p.name}: DTYPE[DIMS] @ BUFFER`, for example "
                                 f"`{p.name}: f32[128, 512] @ hbm`")
        if type(returns) is Hint:
            returns = None
        return A.Kernel(name.value, params, returns, body, (), self._tok(name),
                        self._from_tok(tok, body[-1].span))

    def func_def(self, c: list) -> A.FunctionDef:
        tok, name, params, returns, body = c
        if type(returns) is Hint:
            returns = None
        return A.FunctionDef(name.value, params or (), returns, body, (), self._tok(name),
                             self._from_tok(tok, body[-1].span))

    def decorator(self, c: list) -> tuple[A.Expr, Token]:
        return c[1], c[0]

    def decorated(self, c: list) -> A.Stmt:
        node = c[-1]
        return A.replace(node, decorators=tuple(e for e, _ in c[:-1]),
                         span=self._from_tok(c[0][1], node.span))
