"""Calls: compiling a call expression (a step each, errors located at the argument or keyword
they name, the view a failing method was called on labelled), and calling a `def` or kernel
(arguments bound, helper recursion limited)."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslError, ApdslTypeError, LimitError, PatternError
from ..syntax import ast
from ..tensor.machine import current
from ..tensor.view import Tensor
from . import limits
from .arith import absorbs
from .callsites import builtin_site
from .displays import splice
from .frames import Closure, Frame, ReturnSignal
from .pyerrors import PY_ERRORS, argument_span, call_error, inside, python_error
from .values import POISON, Absorbing, Function, type_name


class CallCompiler:
    """Call compilation and function calls of the interpreter (a mixin of `Interpreter`)."""

    def call_function(self, fn: Function, args: tuple, kwargs: dict,
                      bound: dict[str, Any] | None = None) -> Any:
        """Call a def or kernel; `bound` adds locals (a kernel's named dimensions)."""
        names = fn.names
        if not kwargs and bound is None and len(args) == len(names):
            # every parameter given by position, the common call: no binding checks to make
            local: dict[str, Any] = dict(zip(names, args))
        else:
            local = self._bind(fn, args, kwargs, bound)
        frame = Frame(local, fn.globals)
        failures = self.failures
        if self.depth >= limits.MAX_CALL_DEPTH:
            raise limits.recursion_too_deep(fn.name)
        self.depth += 1
        try:
            fn.body(frame)
            value = frame.ret  # (a `return` ending the body leaves its value there)
        except ReturnSignal as r:
            value = r.value
        finally:
            self.depth -= 1
        # Check mode goes on past a failing statement; a call that did so has no value to
        # give (run mode would have stopped), so its caller sees POISON, not a made-up None.
        return POISON if self.failures != failures else value

    def _bind(self, fn: Function, args: tuple, kwargs: dict,
              bound: dict[str, Any] | None) -> dict[str, Any]:
        """A call's locals: its arguments bound to `fn`'s parameters, defaults filled in."""
        params = fn.params
        if len(args) > len(params):
            raise ApdslTypeError(f"{fn.name}() takes {len(params)} arguments, got {len(args)}",
                                 code="APK102")
        local: dict[str, Any] = dict(bound or {})
        for p, a in zip(params, args):
            local[p.name] = a
        for k, v in kwargs.items():
            if k not in {p.name for p in params}:
                raise ApdslTypeError(f"{fn.name}() has no parameter '{k}'", code="APK102",
                                     keyword=(k, "name"))
            if k in local:
                raise ApdslTypeError(f"{fn.name}() got '{k}' twice", code="APK102",
                                     keyword=(k, "argument"))
            local[k] = v
        for p in params:
            if p.name not in local:
                if p.name in fn.defaults:
                    local[p.name] = fn.defaults[p.name]
                else:
                    raise ApdslTypeError(f"{fn.name}() is missing argument '{p.name}'",
                                         code="APK102")
        return local

    # -- compilation: statements --------------------------------------------------------------

    def _spread_arguments(self, node: Any) -> Any:
        """For a call with `*xs` or `**kw` arguments, a closure giving its positional list and
        keyword dict (None, None when check mode cannot know them); else None."""
        if not any(type(a) is ast.Starred for a in node.args) and \
                all(k.name is not None for k in node.keywords):
            return None
        positional = [(type(a) is ast.Starred, self.compile_expr(a), a.span) for a in node.args]
        keywords = [(k.name, self.compile_expr(k.value), k.span) for k in node.keywords]
        budget = self.budget

        def spread(frame: Frame) -> tuple[Any, Any]:
            a: list = []
            for star, ev, span in positional:
                value = ev(frame)
                if not star:
                    a.append(value)
                elif isinstance(value, Absorbing):
                    return None, None
                else:
                    a.extend(splice(value, span, budget))
            kw: dict = {}
            for name, ev, span in keywords:
                value = ev(frame)
                if name is not None:
                    items = [(name, value)]
                elif isinstance(value, Absorbing):
                    return None, None
                elif type(value) is not dict or any(type(k) is not str for k in value):
                    raise ApdslTypeError(f"'**' needs a dict with string keys, not "
                                         f"{type_name(value)}", code="APK102", span=span)
                else:
                    items = list(value.items())
                for k, v in items:
                    if k in kw:
                        raise ApdslTypeError(f"keyword argument '{k}' is given twice",
                                             code="APK102", span=span)
                    kw[k] = v
            return a, kw
        return spread

    def _expr_Call(self, node: ast.Call) -> Closure:
        func = self.compile_expr(node.func)
        spread = self._spread_arguments(node)
        # A view made in an argument (`dma_copy(t, A[:, 0:64])`) has its origin recorded
        # here, before a call that could name it (a helper, a method), and not at all when a
        # builtin instruction consumes it: no error or `show` can ask where it was made.
        unrecorded = [(i, a.span) for i, a in enumerate(node.args)
                      if type(a) is ast.Subscript] if spread is None else []
        args = [self.compile_subscript(a, record=False) if type(a) is ast.Subscript and
                spread is None else self.compile_expr(a) for a in node.args]
        kwargs = [(k.name, self.compile_expr(k.value)) for k in node.keywords]
        span = node.span
        interp = self
        pattern_node = _pattern_literal(node)
        receiver_text = (node.func.value.id if isinstance(node.func, ast.Attribute)
                         and isinstance(node.func.value, ast.Name) else "the view")
        arg_spans = [a.span for a in node.args]
        kw_spans = {k.name: k.span for k in node.keywords if k.name is not None}
        # where a keyword error points (as the static checker does): a keyword the callee
        # does not have at its name, one given twice at the whole argument
        kw_where = {**{(k.name, "name"): k.name_span for k in node.keywords},
                    **{(k.name, "argument"): k.span for k in node.keywords}}
        budget = self.budget
        origins = self.origins
        dry = self.dry
        positional = _positional(args)
        keywords = _keywords(kwargs)
        location = (span.file, span.line)

        def run(frame: Frame) -> Any:
            budget.left -= 1
            if budget.left < 0:
                try:
                    budget.overdrawn(1)
                except LimitError as e:
                    raise e.with_span(span) from None
            fn = func(frame)
            if spread is None:
                a = positional(frame)
                kw = keywords(frame)
            else:
                a, kw = spread(frame)
                if a is None:
                    return POISON  # check mode: `*xs` or `**kw` it cannot know
            if type(fn) is Function and not dry:  # a def (run mode): no wrapper call
                for i, made in unrecorded:
                    if type(a[i]) is Tensor:
                        origins.setdefault(a[i], made)
                interp.call_span = span
                try:
                    result = interp.call_function(fn, a, kw)
                except CALL_ERRORS as e:
                    raise failed(fn, e) from None
                if type(result) is Tensor:
                    origins.setdefault(result, span)
                return result
            if isinstance(fn, Absorbing):
                return fn
            # Check mode: a builtin given a value it cannot know (a host value, or a name
            # whose definition failed), even inside a tuple or list, is skipped: its checks
            # would only report the unknown.  A helper is still entered, so its body is
            # checked as far as the known arguments allow.
            if dry and type(fn) is not Function and (
                    absorbs(a) or absorbs(list(kw.values()))):
                return POISON
            if not callable(fn):
                raise ApdslTypeError(f"{type_name(fn)} is not callable",
                                     code="APK109").with_span(span)
            for i, made in unrecorded:
                if type(a[i]) is Tensor:
                    origins.setdefault(a[i], made)
            interp.call_span = span
            if getattr(fn, "located", False) or hasattr(getattr(fn, "__self__", None),
                                                        "APK_ATTRS"):
                # a runtime method that acts on the device (t.get_value, que.enque): it is
                # located as instructions are (diagnostics, `lower`)
                m = current()
                m.location = location
                m.span = span
            helper = dry and type(fn) is Function
            if helper:
                interp.calls.append((fn.name, span))
            try:
                result = fn(*a, **kw)
            except CALL_ERRORS as e:
                raise failed(fn, e) from None
            finally:
                if helper:
                    interp.calls.pop()
            if type(result) is Tensor:
                origins.setdefault(result, span)
            return result

        def failed(fn: Any, e: BaseException) -> BaseException:
            """The located error for what the call of `fn` raised."""
            if isinstance(e, PatternError):
                if pattern_node is not None and e.start is not None and e.span is None:
                    e = e.replace(span=pattern_node.char_span(e.start, e.end))
                return e.with_span(span)
            if isinstance(e, ApdslError):
                if type(fn) is Function and e.span is not None and not inside(e.span, span):
                    e = e.with_label(span, f"in this call of {fn.name}")  # the caller's view
                if e.span is None:
                    e = e.replace(span=kw_where.get(e.facts.get("keyword")) or argument_span(
                        e.facts.get("param"), arg_spans, kw_spans))
                receiver = getattr(fn, "__self__", None)
                if type(receiver) is Tensor and not e.labels:
                    made = origins.get(receiver)
                    if made is not None and made != span:
                        how = "declared" if made == receiver.storage.span else "made"
                        e = e.with_label(made, f"{receiver_text} {how} here")
                return e.with_span(span)
            if isinstance(e, TypeError):
                return call_error(fn, e, span, kw_where)
            return python_error(e, span)  # type: ignore[arg-type]

        # run mode, a builtin named by the call: a closure made for this call (callsites)
        site = None if spread is not None or not self.plans else builtin_site(
            self, node, args, kwargs, run, failed, unrecorded, CALL_ERRORS)
        return site or run




# what a call's closure turns into a located error (`failed`); anything else passes through
CALL_ERRORS = (ApdslError, *PY_ERRORS)


def _positional(args: list[Closure]) -> Closure:
    """A closure giving the positional argument values (a tuple), left to right; unrolled
    for the common counts, since a comprehension is a call of its own."""
    n = len(args)
    if n == 0:
        return lambda frame: ()
    if n == 1:
        a0, = args
        return lambda frame: (a0(frame),)
    if n == 2:
        a0, a1 = args
        return lambda frame: (a0(frame), a1(frame))
    if n == 3:
        a0, a1, a2 = args
        return lambda frame: (a0(frame), a1(frame), a2(frame))
    return lambda frame: tuple([x(frame) for x in args])


def _keywords(kwargs: list[tuple[str, Closure]]) -> Closure:
    """A closure giving the keyword argument dict (a fresh one each call: a callee may keep
    it), evaluated after the positional arguments, left to right."""
    if not kwargs:
        return lambda frame: {}
    if len(kwargs) == 1:
        (k0, v0), = kwargs
        return lambda frame: {k0: v0(frame)}
    return lambda frame: {k: v(frame) for k, v in kwargs}


def _pattern_literal(node: Any) -> Any:
    """The string literal holding an einops pattern in `x.rearrange("...")`, if any."""
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr == "rearrange" and node.args and \
            isinstance(node.args[0], ast.Str):
        return node.args[0]
    return None
