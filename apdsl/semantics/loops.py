"""Compiling loops: each iteration charged to the step budget with its body (a range loop
whose body never leaves early is charged in one subtraction), `break` and `continue`."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslError
from ..syntax import ast
from .frames import BreakSignal, Closure, ContinueSignal, Frame, may_jump
from .pyerrors import PY_ERRORS, python_error
from .values import Absorbing

RANGE_ITERATOR = type(iter(range(1)))  # (a range past sys.maxsize has another iterator type)


class LoopCompiler:
    """Loop compilers of the interpreter (a mixin of `Interpreter`)."""

    def _stmt_For(self, node: Any) -> Closure:
        it = self.compile_expr(node.iter)
        setter = self.compile_target(node.target)
        self._loops += 1
        try:
            body = self.compile_block(node.body)
        finally:
            self._loops -= 1
        span = node.iter.span
        name = None
        if isinstance(node.target, ast.Name):
            name = node.target.id

            def fast_set(frame: Frame, value: Any) -> None:
                frame.vars[name] = value
            setter = fast_set

        budget = self.budget
        inner = getattr(body, "inner", None)  # a straight body: charged with its iteration
        counted = body.counted  # type: ignore[attr-defined]
        per = body.n + 1  # type: ignore[attr-defined]
        # A body that never leaves early runs every statement of every iteration, so a loop
        # over a range can charge all its iterations at once when the budget has room.
        pure = inner is not None and not any(may_jump(s) for s in node.body)

        def start(frame: Frame) -> Any:
            try:
                seq = it(frame)
                if isinstance(seq, Absorbing):
                    return None
                return iter(seq)
            except ApdslError as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None

        def exhausted() -> ApdslError:
            return budget.exhausted().with_span(span)

        if inner is None:
            def run(frame: Frame) -> None:
                iterator = start(frame)
                if iterator is None:
                    return
                for value in iterator:
                    budget.left -= 1
                    if budget.left < 0:
                        budget.left += 1
                        raise exhausted()
                    setter(frame, value)
                    try:
                        body(frame)
                    except BreakSignal:
                        break
                    except ContinueSignal:
                        continue
            return run

        def run_straight(frame: Frame) -> None:
            iterator = start(frame)
            if iterator is None:
                return
            if pure and type(iterator) is RANGE_ITERATOR:
                charge = iterator.__length_hint__() * per
                if charge <= budget.left:
                    budget.left -= charge
                    if name is None:
                        for value in iterator:
                            setter(frame, value)
                            inner(frame)
                        return
                    local = frame.vars  # `for i in range(n)`: the name stored directly
                    for value in iterator:
                        local[name] = value
                        inner(frame)
                    return
            for value in iterator:
                budget.left -= per
                if budget.left < 0:  # near the end of the budget: count statement by statement
                    budget.left += per - 1
                    if budget.left < 0:
                        budget.left += 1
                        raise exhausted()
                    run_one = counted
                else:
                    run_one = inner
                setter(frame, value)
                try:
                    run_one(frame)
                except BreakSignal:
                    break
                except ContinueSignal:
                    continue
        return run_straight
