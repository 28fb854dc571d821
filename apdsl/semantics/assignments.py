"""Compiling assignments: `=` to names, elements and tuples of them, augmented assignment,
and declarations `NAME: DTYPE[...] @ BUFFER [= INIT]`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ApdslError, ApdslTypeError
from ..syntax import ast
from ..tensor.view import Tensor
from .arith import absorbs
from .callsites import assign_emitter, value_emitter
from .frames import Closure, Frame
from .values import POISON, Absorbing


class AssignmentCompiler:
    """Assignment and declaration compilers of the interpreter (a mixin of `Interpreter`)."""

    def _stmt_Assign(self, node: ast.Assign) -> Closure:
        ev = self.compile_expr(node.value)
        setters = [self.compile_target(t) for t in node.targets]
        value_span = node.value.span
        origins = self.origins
        # a call records the view it returns at its own span, this value's (`t = ndarray(...)`)
        recorded = type(node.value) is ast.Call
        if len(setters) == 1:
            setter = setters[0]

            target_name = node.targets[0].id if isinstance(node.targets[0], ast.Name) else None
            if target_name is not None:
                def store(frame: Frame, value: Any) -> None:
                    if type(value) is Tensor:
                        if not recorded:
                            origins.setdefault(value, value_span)
                        if value.storage.name.startswith("%"):
                            value.storage.name = target_name  # `x = ndarray(...)` is called x
                    frame.vars[target_name] = value

                def run_name(frame: Frame) -> None:
                    # the common `name = expr`, stored here rather than through a setter call
                    value = ev(frame)
                    if type(value) is Tensor:
                        if not recorded:
                            origins.setdefault(value, value_span)
                        if value.storage.name.startswith("%"):
                            value.storage.name = target_name  # `x = ndarray(...)` is called x
                    frame.vars[target_name] = value
                closure = run_name
                # run mode: code a block may inline, `a0 = make_tensor_like(...)`, `i = 1 - i`
                if not self.dry and self.plans:
                    emit = assign_emitter(ev, target_name) if recorded else value_emitter(
                        self, node.value, ev, target_name, store)
                    if emit is not None:
                        closure.emit = emit  # type: ignore[attr-defined]
                return closure

            def run1(frame: Frame) -> None:
                value = ev(frame)
                if type(value) is Tensor:
                    origins.setdefault(value, value_span)
                    if target_name and value.storage.name.startswith("%"):
                        value.storage.name = target_name  # `x = ndarray(...)` is called x
                setter(frame, value)
            return run1

        def run(frame: Frame) -> None:
            value = ev(frame)
            for s in setters:
                s(frame, value)
        return run

    def _stmt_Decl(self, node: ast.Decl) -> Closure:
        spec = node.type
        dims = [self.compile_expr(d) for d in spec.dims]
        init = self._compile_init(node.init) if node.init is not None else None
        name, span = node.name, node.span
        interp = self

        # errors about the type's parts point at that part
        part_spans = {"APK104": spec.dtype_span, "APK105": spec.buffer_span,
                      "APK501": spec.format_span, "APK502": spec.format_span,
                      "APK510": spec.format_span}

        def run(frame: Frame) -> None:
            shape = tuple(d(frame) for d in dims)
            if interp.dry and absorbs(shape):
                frame.vars[name] = POISON  # a size check mode cannot know: not checkable
                return
            try:
                t = interp.allocate(shape, spec.dtype, spec.buffer, spec.format or "ND", name,
                                    span=span)
            except ApdslError as e:
                raise e.with_span(part_spans.get(e.code)) from None
            frame.owned.append(t.storage)
            interp.origins[t] = span
            if init is not None:
                init(frame, t)
            frame.vars[name] = t
        return run

    def _compile_init(self, node: Any) -> Callable[[Frame, Tensor], None]:
        """`= 0.5`, `= zeros`, `= arange`, `= random(seed)`, `= load("x.npy")`."""
        from ..runtime.core.init import initialise
        interp = self
        if isinstance(node, ast.Name) and node.id in ("zeros", "arange", "random", "ones"):
            kind, args = node.id, []
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("random", "load", "arange", "zeros", "ones"):
            kind = node.func.id
            args = [self.compile_expr(a) for a in node.args]
        else:
            kind, args = "value", [self.compile_expr(node)]

        def run(frame: Frame, t: Tensor) -> None:
            values = [a(frame) for a in args]
            if interp.dry and absorbs(values):
                return  # a value, seed or file name check mode cannot know
            if kind == "load":
                if len(values) != 1:
                    raise ApdslTypeError("load takes one file name", code="APK102")
                data = interp.load_npy(values[0])
                if isinstance(data, Absorbing):
                    return
                initialise(t, "array", data)
                return
            initialise(t, kind, *values)
        return run
