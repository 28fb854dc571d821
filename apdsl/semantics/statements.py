"""Compiling the statements that are neither assignments, loops nor imports: expression
statements, `pass`, `break`/`continue`/`return`, `if`, `assert`, and `def`/`kernel`."""

from __future__ import annotations

from collections import ChainMap
from typing import Any

from ..errors import ApdslAssertionError, ApdslError, ApdslNameError, ApdslTypeError, Span
from ..syntax import ast
from ..syntax.node_text import EXCEPTIONS, PYTHON_FRONTEND
from .arith import COMPARE, compare, truth
from .frames import BreakSignal, Closure, ContinueSignal, Frame, ReturnSignal
from .kernels import is_kernel
from .pyerrors import PY_ERRORS, python_error
from .values import Absorbing, Function, show, type_name


class StatementCompiler:
    """Statement compilers of the interpreter (a mixin of `Interpreter`); `compile_stmt`
    dispatches to the `_stmt_<Node>` method of any mixin."""

    def compile_stmt(self, node: ast.Stmt) -> Closure:
        return getattr(self, "_stmt_" + type(node).__name__)(node)

    def _stmt_ExprStmt(self, node: ast.ExprStmt) -> Closure:
        # the expression's closure is the statement's: a block ignores what a statement
        # returns, and a call statement (`dma_copy(...)`) is one Python call fewer
        return self.compile_expr(node.expr)

    def _stmt_Pass(self, node: ast.Pass) -> Closure:
        return lambda frame: None

    def _outside(self, what: str, where: str, span: Span) -> Closure:
        def run(frame: Frame) -> None:
            raise ApdslNameError(f"'{what}' outside {where}", code="APK124", span=span)
        return run

    def _stmt_Break(self, node: ast.Break) -> Closure:
        return self._jump("break", BreakSignal, node.span)

    def _stmt_Continue(self, node: ast.Continue) -> Closure:
        return self._jump("continue", ContinueSignal, node.span)

    def _jump(self, what: str, signal: type[Exception], span: Span) -> Closure:
        if not self._loops:
            return self._outside(what, "a loop", span)

        def run(frame: Frame) -> None:
            raise signal
        return run

    def _stmt_Return(self, node: ast.Return) -> Closure:
        if not self._functions:
            return self._outside("return", "a kernel or function", node.span)
        ev = self.compile_expr(node.value) if node.value is not None else (lambda f: None)
        span = node.span
        if node is getattr(self, "_tail_return", None):
            # the last statement of a function's body: its value is left in the frame, and the
            # body ends as a block does (raising ReturnSignal costs ~1 us a call)
            def run_tail(frame: Frame) -> None:
                try:
                    frame.ret = ev(frame)
                except ApdslError as e:
                    raise e.with_span(span) from None
            return run_tail

        def run(frame: Frame) -> None:
            try:
                value = ev(frame)
            except ApdslError as e:
                raise e.with_span(span) from None
            raise ReturnSignal(value)
        return run


    def _stmt_If(self, node: ast.If) -> Closure:
        test = self.compile_expr(node.test)
        body = self.compile_block(node.body)
        orelse = self.compile_block(node.orelse) if node.orelse else None
        span = node.test.span

        interp = self

        def run(frame: Frame) -> None:
            try:
                cond = test(frame)
                if isinstance(cond, Absorbing):
                    interp.unknown_tests += 1  # check mode: a `while` around stops here
                    return
                cond = truth(cond)
            except ApdslError as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            if cond:
                body(frame)
            elif orelse is not None:
                orelse(frame)
        return run


    def _stmt_Assert(self, node: ast.Assert) -> Closure:
        msg = self.compile_expr(node.msg) if node.msg is not None else None
        sides = self._assert_sides(node.test)
        if sides is None:
            test = self.compile_expr(node.test)

            def evaluate(frame: Frame) -> tuple[Any, Any]:
                return test(frame), None
        else:
            # `assert a == b` evaluates each side once and shows both when it fails (evaluating
            # them again for the note would repeat a helper's effects)
            left, op, right, span = sides

            def evaluate(frame: Frame) -> tuple[Any, Any]:
                a, b = left(frame), right(frame)
                try:
                    return compare(op, a, b), (a, b)
                except PY_ERRORS as e:
                    raise python_error(e, span) from None

        def run(frame: Frame) -> None:
            cond, both = evaluate(frame)
            if isinstance(cond, Absorbing):
                return
            if not truth(cond):
                text = show(msg(frame)) if msg is not None else "assertion failed"
                notes = [] if both is None else [f"left:  {brief(both[0])}",
                                                 f"right: {brief(both[1])}"]
                raise ApdslAssertionError(text, code="APK901", notes=notes)
        return run

    def _assert_sides(self, test: Any) -> tuple[Closure, Any, Closure, Span] | None:
        """The compiled sides and operator of a single comparison, else None."""
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return None
        return (self.compile_expr(test.left), COMPARE[test.ops[0]],
                self.compile_expr(test.comparators[0]), test.span)

    def _stmt_FunctionDef(self, node: ast.FunctionDef) -> Closure:
        return self._define(node, kernel=False)

    def _stmt_Kernel(self, node: ast.Kernel) -> Closure:
        return self._define(node, kernel=True)

    def _define(self, node: Any, kernel: bool) -> Closure:
        saved, self._loops = self._loops, 0
        self._functions += 1
        # run mode: a body ending in `return` returns without ReturnSignal, unless the body
        # declares tensors (the returned ones must outlive the block that frees the others)
        last = node.body[-1] if node.body else None
        tail, self._tail_return = getattr(self, "_tail_return", None), (
            last if type(last) is ast.Return and not self.dry and
            not any(type(s) is ast.Decl for s in node.body) else None)
        try:
            body = self.compile_block(node.body)
        finally:
            self._functions -= 1
            self._loops = saved
            self._tail_return = tail
        defaults = [(p.name, self.compile_expr(p.default)) for p in node.params
                    if p.default is not None]
        interp = self

        def run(frame: Frame) -> None:
            fn = Function(node.name, list(node.params), body, closure_scope(frame), node.span,
                          is_kernel=kernel or is_kernel(node),
                          returns=getattr(node, "returns", None),
                          defaults={k: ev(frame) for k, ev in defaults}, interpreter=interp)
            fn.node = node  # type: ignore[attr-defined]
            frame.vars[node.name] = fn
        return run

    def _stmt_Raise(self, node: ast.Raise) -> Closure:
        """`raise ValueError("...")`: the program stops with a located error carrying the
        exception's name and message (in check mode, reported like a failing assert)."""
        exc = node.exc
        if exc is None:
            def bare(frame: Frame) -> None:
                raise ApdslAssertionError(
                    "a bare 'raise' re-raises the exception being handled, and .apk has no "
                    "'try'", code="APK040", help=f"raise an exception with a message: `raise "
                    f"ValueError(\"...\")`; {PYTHON_FRONTEND}")
            return bare
        name, args = exception_call(exc)
        if name is None:
            ev = self.compile_expr(exc)

            def other(frame: Frame) -> None:
                value = ev(frame)
                if isinstance(value, Absorbing):
                    return
                raise ApdslTypeError(f"cannot raise {type_name(value)}", code="APK040",
                                     help="raise an exception such as `ValueError(\"...\")`",
                                     span=exc.span)
            return other
        compiled = [self.compile_expr(a) for a in args]
        cause = self.compile_expr(node.cause) if node.cause is not None else None

        def run(frame: Frame) -> None:
            values = [a(frame) for a in compiled]
            if cause is not None:
                cause(frame)
            if any(isinstance(v, Absorbing) for v in values):
                return  # check mode: a message it cannot know; run mode raises it
            if not values:
                text = name
            elif len(values) == 1:
                text = f"{name}: {show(values[0])}"
            else:
                text = f"{name}: {show(tuple(values))}"
            raise ApdslAssertionError(text, code="APK040", exception=name)
        return run


def closure_scope(frame: Frame) -> Any:
    """The names a `def` or `lambda` made in `frame` sees besides its own: the module's, and
    inside a function the function's too (read when used, as Python's closures are)."""
    if frame.vars is frame.glob:
        return frame.glob
    return ChainMap(frame.vars, frame.glob)


def exception_call(node: Any) -> tuple[str | None, tuple]:
    """`ValueError(...)` or `ValueError`: the exception's name and arguments; (None, ()) for
    an expression that is not one of Python's exception classes."""
    if type(node) is ast.Call and type(node.func) is ast.Name and node.func.id in EXCEPTIONS \
            and not node.keywords:
        return node.func.id, node.args
    if type(node) is ast.Name and node.id in EXCEPTIONS:
        return node.id, ()
    return None, ()


def brief(v: Any) -> str:
    text = show(v)
    return text if len(text) < 200 else text[:200] + " ..."
