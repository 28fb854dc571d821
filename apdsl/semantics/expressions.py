"""Compiling expressions other than calls: literals, names, operators, comparisons,
conditional expressions, attributes and subscripts."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslError, ApdslNameError, LimitError, Span
from ..syntax import ast
from ..tensor.view import Tensor
from . import limits
from .arith import (
    BINOPS,
    COMPARE,
    FAST_BINOPS,
    UNARY,
    absorbs,
    compare,
    not_,
    truth,
    truth_or_absorb,
)
from .frames import Closure, Frame
from .pyerrors import PY_ERRORS, python_error
from .values import POISON, UNKNOWN, Absorbing, get_attribute


class ExpressionCompiler:
    """Expression compilers of the interpreter (a mixin of `Interpreter`); `compile_expr`
    dispatches to the `_expr_<Node>` method of any mixin."""

    def compile_expr(self, node: ast.Expr) -> Closure:
        return getattr(self, "_expr_" + type(node).__name__)(node)

    def _expr_Const(self, node: ast.Const) -> Closure:
        value = node.value
        return lambda frame: value

    def _expr_Str(self, node: ast.Str) -> Closure:
        value = node.value
        return lambda frame: value

    def _expr_EllipsisLit(self, node: ast.EllipsisLit) -> Closure:
        return lambda frame: Ellipsis

    def _expr_Name(self, node: ast.Name) -> Closure:
        name = node.id
        builtins = self.builtins
        span = node.span
        interp = self

        if name in builtins:
            # A builtin's name (`dma_copy`, `ndarray`, `f32`) is usually not the program's: found
            # by membership tests, without the two KeyErrors the lookup below would raise, but
            # in the same order (locals, module, builtins), since a program may rebind it.
            def load_builtin(frame: Frame) -> Any:
                local = frame.vars
                if name in local:
                    return local[name]
                glob = frame.glob
                if name in glob:
                    return glob[name]
                try:
                    return builtins[name]
                except KeyError:
                    raise interp.unknown_name(name, frame, span) from None
            return load_builtin

        def load(frame: Frame) -> Any:
            try:
                return frame.vars[name]
            except KeyError:
                pass
            try:
                return frame.glob[name]
            except KeyError:
                pass
            try:
                return builtins[name]
            except KeyError:
                raise interp.unknown_name(name, frame, span) from None
        # a consumer may read `frame.vars[name]` itself and call `load` only when it misses
        load.local_name = name  # type: ignore[attr-defined]
        return load

    def _expr_NkiName(self, node: ast.NkiName) -> Closure:
        # `nl.X`: NKI's X, never a program's own name (builtins.nki_lookup)
        from .builtins import nki_lookup
        builtins, space, name, span = self.builtins, node.space, node.id, node.span
        return lambda frame: nki_lookup(builtins, space, name, span)

    def unknown_name(self, name: str, frame: Frame | None, span: Span | None) -> ApdslError:
        from difflib import get_close_matches
        pool = set(self.builtins)
        if frame is not None:
            pool |= set(frame.vars) | set(frame.glob)
        close = get_close_matches(name, sorted(pool), n=3)
        return ApdslNameError(f"unknown name '{name}'", code="APK101", span=span,
                              help=f"did you mean {' or '.join(map(repr, close))}?" if close
                              else None, name=name)

    def _expr_BinOp(self, node: ast.BinOp) -> Closure:
        left, right = self.compile_expr(node.left), self.compile_expr(node.right)
        span = node.span
        if node.op in FAST_BINOPS:
            return FAST_BINOPS[node.op](left, right, span, self.budget)
        # `**`, `<<` and `*` of sequences could build something huge: checked before they run
        op = limits.CHECKED.get(node.op) or BINOPS[node.op]
        if isinstance(node.right, ast.Const):
            const = node.right.value

            def run_const(frame: Frame) -> Any:
                try:
                    return op(left(frame), const)
                except LimitError as e:
                    raise e.with_span(span) from None
                except PY_ERRORS as e:
                    raise python_error(e, span) from None
            return run_const

        def run(frame: Frame) -> Any:
            a, b = left(frame), right(frame)
            try:
                return op(a, b)
            except LimitError as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None
        return run

    def _expr_UnaryOp(self, node: ast.UnaryOp) -> Closure:
        op = limits.invert if node.op == "~" else UNARY[node.op]
        ev = self.compile_expr(node.operand)
        if node.op == "not":
            return lambda frame: not_(truth_or_absorb(ev(frame)))
        return lambda frame: op(ev(frame))

    def _expr_BoolOp(self, node: ast.BoolOp) -> Closure:
        values = [self.compile_expr(v) for v in node.values]
        is_and = node.op == "and"
        if len(values) == 2:  # `k1 > 0 or k0 > 0`: unrolled, a bool tested as itself
            first, second = values

            def run2(frame: Frame) -> Any:
                result = first(frame)
                if type(result) is bool:
                    if result is not is_and:
                        return result
                elif isinstance(result, Absorbing) or truth(result) != is_and:
                    return result
                result = second(frame)
                if type(result) is not bool and not isinstance(result, Absorbing):
                    truth(result)  # (a tensor has no truth value, even last)
                return result
            return run2

        def run(frame: Frame) -> Any:
            result: Any = None
            for v in values:
                result = v(frame)
                if isinstance(result, Absorbing):
                    return result
                if truth(result) != is_and:
                    return result
            return result
        return run

    def _expr_Compare(self, node: ast.Compare) -> Closure:
        left = self.compile_expr(node.left)
        ops = [COMPARE[o] for o in node.ops]
        rights = [self.compile_expr(c) for c in node.comparators]
        span = node.span
        if len(ops) == 1:
            op, right = ops[0], rights[0]

            def run1(frame: Frame) -> Any:
                a, b = left(frame), right(frame)
                try:
                    return compare(op, a, b)
                except PY_ERRORS as e:
                    raise python_error(e, span) from None
            return run1

        def run(frame: Frame) -> Any:
            a = left(frame)
            for op, r in zip(ops, rights):
                b = r(frame)
                res = compare(op, a, b)
                if isinstance(res, Absorbing) or not truth(res):
                    return res
                a = b
            return True
        return run

    def _expr_IfExp(self, node: ast.IfExp) -> Closure:
        test, body, orelse = (self.compile_expr(node.test), self.compile_expr(node.body),
                              self.compile_expr(node.orelse))

        def run(frame: Frame) -> Any:
            c = test(frame)
            if isinstance(c, Absorbing):
                return c
            return body(frame) if truth(c) else orelse(frame)
        return run

    def _expr_Attribute(self, node: ast.Attribute) -> Closure:
        ev = self.compile_expr(node.value)
        attr = node.attr
        span = getattr(node, "attr_span", None) or node.span
        loaded = self.loaded_registers
        register_value = attr == "value" and self.dry
        budget = self.budget  # (pays for the methods that walk or build)

        def run(frame: Frame) -> Any:
            value = ev(frame)
            if register_value and id(value) in loaded and loaded[id(value)] is value:
                return UNKNOWN  # check mode: register_load read it from memory
            try:
                return get_attribute(value, attr, budget)
            except ApdslError as e:
                raise e.with_span(span) from None
        return run

    def _expr_Subscript(self, node: ast.Subscript) -> Closure:
        return self.compile_subscript(node)

    def compile_subscript(self, node: Any, record: bool = True) -> Closure:
        """`value[key]`; `record=False` leaves a resulting view's origin to the caller (an
        argument of a call: recorded there unless an instruction consumes it)."""
        ev = self.compile_expr(node.value)
        parts = [self._compile_index(i) for i in node.index]
        # one index, a slice too, is passed as itself: lists, tuples and strings take a slice,
        # not a 1-tuple of one (`a.shape[1:]`); tensors and host arrays take both
        single = len(parts) == 1
        span = node.span
        interp = self

        if single:
            key_of = parts[0]
        elif len(parts) == 2:
            first, second = parts

            def key_of(frame: Frame) -> Any:
                return first(frame), second(frame)
        else:
            def key_of(frame: Frame) -> Any:
                return tuple([p(frame) for p in parts])

        dry = interp.dry
        origins = interp.origins

        local_name = getattr(ev, "local_name", None)
        if local_name is not None:  # `A[...]`: the name read inline when it is a local
            load = ev

            def ev(frame: Frame) -> Any:
                try:
                    return frame.vars[local_name]
                except KeyError:
                    return load(frame)

        def run(frame: Frame) -> Any:
            value = ev(frame)
            key = key_of(frame)
            if dry and absorbs((key,)):
                return POISON  # an index check mode cannot know
            try:
                result = value[key]
            except ApdslError as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            if record and type(result) is Tensor:
                origins.setdefault(result, span)
            return result
        return run

    def _compile_index(self, node: Any) -> Closure:
        if not isinstance(node, ast.Slice):
            return self.compile_expr(node)
        bounds = (node.start, node.stop, node.step)
        if all(p is None or type(p) is ast.Const for p in bounds):
            whole = slice(*(None if p is None else p.value for p in bounds))  # `:`, `2:8`
            return lambda frame: whole
        start, stop, step = (self.compile_expr(p) if p is not None else None for p in bounds)
        # the parts evaluated left to right, as Python does, with no closure for a missing one
        if step is None and start is None:
            return lambda frame: slice(None, stop(frame))
        if step is None and stop is None:
            return lambda frame: slice(start(frame), None)
        if step is None:
            return lambda frame: slice(start(frame), stop(frame))
        parts = [p if p is not None else (lambda f: None) for p in (start, stop, step)]
        return lambda frame: slice(parts[0](frame), parts[1](frame), parts[2](frame))
