"""Compiling a block of statements: the statements in order, the span of the one that failed
attached once per block, the step budget charged (SPEC section 15), the tensors the block
declared freed when it ends, and check mode's reporting of each failing statement."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslAssertionError, ApdslError, LimitError, Span
from ..syntax import ast
from . import limits
from .callsites import straight_block
from .frames import Closure, Frame, Reported, ReturnSignal, free_owned, may_jump, scoped
from .pyerrors import PY_ERRORS, python_error
from .values import POISON


class BlockCompiler:
    """The `compile_block` part of the interpreter (a mixin of `Interpreter`)."""

    def compile_block(self, body: list[Any], top: bool = False) -> Closure:
        """A block runs its statements in order.  The span of the statement that raised is
        attached here, once per block, rather than by a wrapper around every statement: the
        loop variable still holds the failing statement's span when the exception arrives.

        Steps: a *straight* block (no statement but the last can leave it early with break,
        continue or return) charges all its statements when it starts, one subtraction; when
        that would exhaust the budget it runs `counted`, which charges statement by statement
        and so stops at the exact statement.  Other blocks always run `counted`.  The returned
        closure carries `n`, `counted` and, for a straight block, `inner` (no charging), so a
        loop can charge an iteration and its body together."""
        if top:
            pairs = [(self._compile_top(s), s.span) for s in body]
        else:
            pairs = [(self.compile_stmt(s), s.span) for s in body]
        frees = any(isinstance(s, ast.Decl) for s in body) and not top
        interp = self
        budget = self.budget
        n = len(pairs)

        if interp.dry:
            nodes = list(body)

            def run_dry(frame: Frame) -> None:
                mark = len(frame.owned)
                try:
                    for (st, span), node in zip(pairs, nodes):
                        budget.left -= 1
                        if budget.left < 0:
                            try:
                                budget.overdrawn(1)
                            except LimitError as e:
                                raise e.with_span(span) from None
                        try:
                            st(frame)
                            continue
                        except LimitError as e:
                            raise e.with_span(span) from None
                        except ApdslAssertionError as e:
                            interp.report(e.with_span(span))
                            if not top:  # top-level asserts are independent checks
                                raise Reported from None
                        except ApdslError as e:
                            interp.report(e.with_span(span))
                        except PY_ERRORS as e:
                            err = python_error(e, span)
                            if isinstance(err, LimitError):
                                raise err from None
                            interp.report(err)
                        except Reported:
                            if not top:
                                raise
                        interp.failures += 1
                        for name in ast.bound_names(node):
                            frame.vars[name] = POISON
                except ReturnSignal as r:  # the returned tensors outlive their block
                    if frees:
                        free_owned(frame, mark, keep=r.value)
                    raise
                except BaseException:
                    if frees:
                        free_owned(frame, mark)
                    raise
                if frees:
                    free_owned(frame, mark)
            run_dry.n = n  # type: ignore[attr-defined]
            run_dry.counted = run_dry  # type: ignore[attr-defined]
            return run_dry

        def counted(frame: Frame) -> None:
            span = None
            try:
                for st, span in pairs:  # noqa: B007 - `span` names the failing statement
                    budget.left -= 1
                    if budget.left < 0:
                        budget.overdrawn(1)
                    st(frame)
            except ApdslError as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None

        straight = not any(may_jump(s) for s in body[:-1])
        if not straight:
            run = scoped_counted = scoped(counted, frees)
            run.n = n  # type: ignore[attr-defined]
            run.counted = scoped_counted  # type: ignore[attr-defined]
            return run

        # run mode: the statements' code in one function (callsites); with the `plans` option
        # off, or a block too long to compile, the statements in a plain loop
        inner = (straight_block(pairs, _located, _CAUGHT) if self.plans else None) or \
            _in_order(pairs)

        def charged(frame: Frame) -> None:
            budget.left -= n
            if budget.left < 0:
                budget.left += n
                if not budget.refill(n):  # the budget's last steps: counted one by one
                    return counted(frame)
                budget.left -= n
            inner(frame)

        run = scoped(charged, frees)
        run.n = n  # type: ignore[attr-defined]
        run.counted = scoped(counted, frees)  # type: ignore[attr-defined]
        run.inner = scoped(inner, frees)  # type: ignore[attr-defined]
        return run

    def _compile_top(self, node: Any) -> Closure:
        """A top-level statement; one too deep to compile is an error of its own (run: when
        it is reached; check: reported with the others)."""
        try:
            return self.compile_stmt(node)
        except RecursionError:
            span = node.span

            def refuse(frame: Frame) -> None:
                raise limits.nested_too_deeply().with_span(span)
            return refuse


_CAUGHT = (ApdslError, *PY_ERRORS)


def _located(e: BaseException, span: Span | None) -> ApdslError:
    """The error a statement raised, located at the statement (as `counted` does)."""
    if isinstance(e, ApdslError):
        return e.with_span(span)
    return python_error(e, span)  # type: ignore[arg-type]


def _in_order(pairs: list[tuple[Closure, Any]]) -> Closure:
    """Run the statements in order, the failing one's span attached."""
    def inner(frame: Frame) -> None:
        span = None
        try:
            for st, span in pairs:  # noqa: B007 - `span` names the failing statement
                st(frame)
        except ApdslError as e:
            raise e.with_span(span) from None
        except PY_ERRORS as e:
            raise python_error(e, span) from None
    return inner
