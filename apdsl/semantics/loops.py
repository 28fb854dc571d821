"""Compiling loops: each iteration charged to the step budget with its body (a range loop
whose body never leaves early is charged in one subtraction), `break` and `continue`."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslError, LimitError
from ..syntax import ast
from .arith import truth
from .frames import BreakSignal, Closure, ContinueSignal, Frame, may_jump
from .iterations import in_iteration, mutated
from .limits import MAX_GRANT
from .pyerrors import PY_ERRORS, python_error
from .values import Absorbing

RANGE_ITERATOR = type(iter(range(1)))  # (a range past sys.maxsize has another iterator type)


class LoopCompiler:
    """Loop compilers of the interpreter (a mixin of `Interpreter`)."""

    def _stmt_For(self, node: ast.For) -> Closure:
        it = self.compile_expr(node.iter)
        setter = self.compile_target(node.target)
        self._loops += 1
        try:
            body = self.compile_block(node.body)
        finally:
            self._loops -= 1
        # the `else:` block runs when the loop ends without `break` (its own break and
        # continue belong to an enclosing loop)
        orelse = self.compile_block(node.orelse) if node.orelse else None
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
        # the loop variables an error in the body names (`in the iteration i = 2`)
        names = tuple(ast.target_names(node.target))
        interp = self

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

        def located(e: ApdslError) -> ApdslError:
            return e.with_span(span)

        if self.dry:
            walking = self.walking.loops

            def run_dry(frame: Frame) -> None:
                """Check mode: an iteration in which statements failed but reported nothing
                new ends the loop: the iterations after it would only repeat it."""
                iterator = start(frame)
                if iterator is None:
                    return
                walking.append((names, frame))
                try:
                    for value in iterator:
                        budget.left -= 1
                        if budget.left < 0:
                            budget.overdrawn(1)
                        setter(frame, value)
                        failures, reported = interp.failures, len(interp.errors)
                        try:
                            body(frame)
                        except BreakSignal:
                            return
                        except ContinueSignal:
                            pass
                        if interp.failures != failures and len(interp.errors) == reported:
                            return
                except ApdslError as e:
                    raise located(in_iteration(e, names, frame)) from None
                except RuntimeError as e:
                    raise mutated(e, span) from None
                finally:
                    walking.pop()
                if orelse is not None:
                    orelse(frame)
            return run_dry

        if inner is None:
            def run(frame: Frame) -> None:
                iterator = start(frame)
                if iterator is None:
                    return
                try:
                    for value in iterator:
                        budget.left -= 1
                        if budget.left < 0:
                            budget.overdrawn(1)
                        setter(frame, value)
                        try:
                            body(frame)
                        except BreakSignal:
                            return
                        except ContinueSignal:
                            continue
                except ApdslError as e:
                    raise located(in_iteration(e, names, frame)) from None
                except RuntimeError as e:
                    raise mutated(e, span) from None
                if orelse is not None:
                    orelse(frame)
            return run

        def run_straight(frame: Frame) -> None:
            iterator = start(frame)
            if iterator is None:
                return
            try:
                if pure and type(iterator) is RANGE_ITERATOR:
                    charge = iterator.__length_hint__() * per
                    if charge <= budget.left or charge <= MAX_GRANT and budget.refill(charge):
                        budget.left -= charge
                        if name is None:
                            for value in iterator:
                                setter(frame, value)
                                inner(frame)
                        else:
                            local = frame.vars  # `for i in range(n)`: the name stored directly
                            for value in iterator:
                                local[name] = value
                                inner(frame)
                        if orelse is not None:
                            orelse(frame)
                        return
                for value in iterator:
                    budget.left -= per
                    if budget.left < 0:
                        budget.left += per
                        if budget.refill(per):
                            budget.left -= per
                            run_one = inner
                        else:  # the budget's last steps: count statement by statement
                            budget.charge(1)  # the iteration, and then its statements
                            run_one = counted
                    else:
                        run_one = inner
                    setter(frame, value)
                    try:
                        run_one(frame)
                    except BreakSignal:
                        return
                    except ContinueSignal:
                        continue
            except ApdslError as e:
                raise located(in_iteration(e, names, frame)) from None
            except RuntimeError as e:
                raise mutated(e, span) from None
            if orelse is not None:
                orelse(frame)
        return run_straight

    def _stmt_While(self, node: ast.While) -> Closure:
        """Each test is a step; the body charges its own statements.  In check mode a test
        whose value is unknown ends the loop (as an `if` skips its block), and so does an
        iteration that met such a test: the rest of the loop depends on values check mode
        cannot know, and following it could only spin to the step budget."""
        test = self.compile_expr(node.test)
        self._loops += 1
        try:
            body = self.compile_block(node.body)
        finally:
            self._loops -= 1
        orelse = self.compile_block(node.orelse) if node.orelse else None
        span = node.test.span
        budget = self.budget
        interp = self
        dry = self.dry

        def run(frame: Frame) -> None:
            while True:
                budget.left -= 1
                if budget.left < 0:
                    try:
                        budget.overdrawn(1)
                    except LimitError as e:
                        raise e.with_span(span) from None
                try:
                    cond = test(frame)
                    if isinstance(cond, Absorbing):
                        interp.unknown_tests += 1
                        return
                    cond = truth(cond)
                except ApdslError as e:
                    raise e.with_span(span) from None
                except PY_ERRORS as e:
                    raise python_error(e, span) from None
                if not cond:
                    if orelse is not None:
                        orelse(frame)
                    return
                unknown, failures = interp.unknown_tests, interp.failures
                reported = len(interp.errors)
                try:
                    body(frame)
                except BreakSignal:
                    return
                except ContinueSignal:
                    pass
                # check mode: an iteration that met an unknown test, or one whose failing
                # statements reported nothing new, ends the loop (what follows would spin to
                # the budget, or repeat what is reported)
                if dry and (interp.unknown_tests != unknown or interp.failures != failures
                            and len(interp.errors) == reported):
                    return
        return run
