"""Compiling displays and the Python expressions that build values: tuple, list, set and dict
displays (with `*xs` items), comprehensions and generator expressions, and lambdas.

A comprehension runs in a frame of its own (its loop names do not leak, as in Python 3) that
sees the enclosing names; each element it produces is a step (SPEC section 15) and a list or
set it builds is held to the size limit.  A generator expression is lazy: the builtin that
consumes it (`sum`, `any`, `list`, ...) draws its elements.  In check mode an iterable or a
condition check mode cannot know makes the whole value unknown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ApdslError, LimitError, Span
from ..syntax import ast
from . import limits
from .arith import truth
from .frames import Closure, Frame, ReturnSignal
from .iterations import mutated
from .pyerrors import PY_ERRORS, python_error
from .statements import closure_scope
from .values import Absorbing, Function


class _Unknowable(Exception):
    """Check mode: a comprehension met a value it cannot know (carried in `value`)."""

    def __init__(self, value: Any) -> None:
        self.value = value


class DisplayCompiler:
    """Display, comprehension and lambda compilers (a mixin of `Interpreter`)."""

    # ---- displays -----------------------------------------------------------------------

    def _items(self, items: tuple) -> Closure:
        """The values of display items, `*xs` spliced in, as a list."""
        compiled = [self.compile_expr(i) for i in items]
        if not any(type(i) is ast.Starred for i in items):
            return lambda frame: [c(frame) for c in compiled]
        starred = [type(i) is ast.Starred for i in items]
        spans = [i.span for i in items]
        budget = self.budget

        def run(frame: Frame) -> list:
            out: list = []
            for c, star, span in zip(compiled, starred, spans):
                value = c(frame)
                if not star:
                    out.append(value)
                    continue
                if isinstance(value, Absorbing):
                    raise _Unknowable(value)
                out.extend(splice(value, span, budget))
                if len(out) > limits.MAX_ELEMENTS:
                    raise limits.too_long("list", len(out)).with_span(span)
            return budget.made(out)
        return self._known(run)

    def _known(self, run: Closure) -> Closure:
        """`run`, giving check mode's unknown value when a spliced or iterated value is."""
        def known(frame: Frame) -> Any:
            try:
                return run(frame)
            except _Unknowable as u:
                return u.value
        return known

    def _expr_Starred(self, node: ast.Starred) -> Closure:
        # only reached where the builder lets a starred item stand and a caller splices it
        return self.compile_expr(node.value)

    def _expr_TupleExpr(self, node: ast.TupleExpr) -> Closure:
        if not any(type(i) is ast.Starred for i in node.items):
            if all(type(i) is ast.Const for i in node.items):  # `(128, 64)`: built once
                const = tuple(i.value for i in node.items)
                return lambda frame: const
            items = [self.compile_expr(i) for i in node.items]
            if len(items) == 2:
                first, second = items
                return lambda frame: (first(frame), second(frame))
            return lambda frame: tuple([i(frame) for i in items])
        values = self._items(node.items)
        return lambda frame: _cast(tuple, values(frame))

    def _expr_ListExpr(self, node: ast.ListExpr) -> Closure:
        if not any(type(i) is ast.Starred for i in node.items):
            items = [self.compile_expr(i) for i in node.items]
            return lambda frame: [i(frame) for i in items]
        return self._items(node.items)

    def _expr_SetExpr(self, node: ast.SetExpr) -> Closure:
        values = self._items(node.items)
        span = node.span

        def run(frame: Frame) -> Any:
            items = values(frame)
            if isinstance(items, Absorbing):
                return items
            try:
                return set(items)
            except PY_ERRORS as e:
                raise python_error(e, span) from None
        return run

    def _expr_DictExpr(self, node: ast.DictExpr) -> Closure:
        keys = [self.compile_expr(k) for k in node.keys]
        values = [self.compile_expr(v) for v in node.values]
        return lambda frame: {k(frame): v(frame) for k, v in zip(keys, values)}

    # ---- comprehensions -----------------------------------------------------------------

    def _elements(self, generators: tuple, produce: Closure) -> Any:
        """A function of a frame that yields `produce(child)` for each element of the
        comprehension's clauses, `child` being the comprehension's own frame."""
        clauses = [(self.compile_expr(g.iter), self.compile_target(g.target),
                    [self.compile_expr(c) for c in g.ifs], g.iter.span) for g in generators]
        budget = self.budget

        def loop(child: Frame, k: int, seq: Any = None) -> Iterator[Any]:
            it, setter, ifs, span = clauses[k]
            if seq is None:
                seq = it(child)
            if isinstance(seq, Absorbing):
                raise _Unknowable(seq)
            try:
                iterator = iter(seq)
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            last = k == len(clauses) - 1
            try:
                for value in iterator:
                    budget.left -= 1
                    if budget.left < 0:
                        try:
                            budget.overdrawn(1)
                        except LimitError as e:
                            raise e.with_span(span) from None
                    setter(child, value)
                    keep = True
                    for cond in ifs:
                        c = cond(child)
                        if isinstance(c, Absorbing):
                            raise _Unknowable(c)
                        if not truth(c):
                            keep = False
                            break
                    if not keep:
                        continue
                    if last:
                        yield produce(child)
                    else:
                        yield from loop(child, k + 1)
            except RuntimeError as e:  # the program changed the dict or set it walks
                raise mutated(e, span) from None

        def elements(frame: Frame, first: Any = None) -> Iterator[Any]:
            """`first`: the outermost iterable, when the caller evaluated it already."""
            return loop(Frame(dict(frame.vars), frame.glob), 0, first)
        return elements

    def _collect(self, node: Any, kind: type, produce: Closure) -> Closure:
        elements = self._elements(node.generators, produce)
        span = node.span
        budget = self.budget

        def run(frame: Frame) -> Any:
            out: list = []
            try:
                for item in elements(frame):
                    out.append(item)
                    if len(out) > limits.MAX_ELEMENTS:
                        raise limits.too_long("list", len(out))
                    if len(out) & 0xFFFFF == 0:  # a long one: within the memory budget so far
                        budget.made(out)
                return budget.made(out if kind is list else kind(out))
            except _Unknowable as u:
                return u.value
            except (ApdslError, LimitError) as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None
        return run

    def _expr_ListComp(self, node: ast.ListComp) -> Closure:
        return self._collect(node, list, self.compile_expr(node.elt))

    def _expr_SetComp(self, node: ast.SetComp) -> Closure:
        return self._collect(node, set, self.compile_expr(node.elt))

    def _expr_DictComp(self, node: ast.DictComp) -> Closure:
        key, value = self.compile_expr(node.key), self.compile_expr(node.value)
        return self._collect(node, dict, lambda child: (key(child), value(child)))

    def _expr_GeneratorExp(self, node: ast.GeneratorExp) -> Closure:
        """Lazy in run mode.  Check mode builds the elements at once: a consumer such as `any`
        would take an unknown element for a known one, while a list with one is seen for what
        it is (and the builtin given it skipped)."""
        elements = self._elements(node.generators, self.compile_expr(node.elt))
        first_iter = self.compile_expr(node.generators[0].iter)
        collect = self._collect(node, list, self.compile_expr(node.elt))
        span = node.generators[0].iter.span
        if self.dry:
            return collect

        def run(frame: Frame) -> Any:
            seq = first_iter(frame)  # evaluated at once, as in Python
            try:
                iter(seq)
            except PY_ERRORS as e:
                raise python_error(e, span) from None
            return elements(frame, seq)
        return run

    # ---- lambda -------------------------------------------------------------------------

    def _expr_Lambda(self, node: ast.Lambda) -> Closure:
        body_expr = self.compile_expr(node.body)
        defaults = [(p.name, self.compile_expr(p.default)) for p in node.params
                    if p.default is not None]
        params = list(node.params)
        span = node.span
        interp = self

        def body(frame: Frame) -> None:
            raise ReturnSignal(body_expr(frame))

        def run(frame: Frame) -> Function:
            return Function("<lambda>", params, body, closure_scope(frame), span,
                            defaults={k: ev(frame) for k, ev in defaults}, interpreter=interp)
        return run


def splice(value: Any, span: Span, budget: limits.Budget) -> Any:
    """The elements of `*value`, each a step."""
    try:
        return limits.walk(value, budget, build=True)
    except LimitError as e:
        raise e.with_span(span) from None
    except PY_ERRORS as e:
        raise python_error(e, span) from None


def _cast(kind: type, values: Any) -> Any:
    return values if isinstance(values, Absorbing) else kind(values)
