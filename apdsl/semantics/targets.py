"""Compiling what a value is stored into or removed from: assignment targets (names, elements
and slices of lists, dicts and host arrays, tuples of targets with one starred), augmented
assignment (`x += 1`, `a[i] += 1`, lists and host arrays updated in place as in Python) and
`del`.

Only lists, dicts and host arrays have elements a program may set: a tensor's elements are
written by instructions, and no value has attributes a program may set.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslError, ApdslNameError, ApdslTypeError, LimitError, Span
from ..syntax import ast
from ..tensor.view import Tensor
from . import limits
from .arith import BINOPS, absorbs
from .frames import Closure, Frame
from .pyerrors import PY_ERRORS, python_error
from .values import UNKNOWN, Absorbing, type_name

Setter = Callable[[Frame, Any], None]

# Python's in-place operators, for the values it updates in place (lists, host arrays).
_INPLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
            "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow,
            "@": operator.imatmul, "&": operator.iand, "|": operator.ior, "^": operator.ixor,
            "<<": operator.ilshift, ">>": operator.irshift}


def no_elements(container: Any, what: str) -> ApdslError:
    """APK042: `container` has no elements a program may set or delete (APK107 for a tensor,
    the code that error always had)."""
    if isinstance(container, Tensor):
        return ApdslTypeError(
            f"cannot {what} an element of a tensor", code="APK107",
            help="a tensor's data moves by instructions: write it with dma_copy, tensor_copy "
                 "or memset (or compute on host(t), a host copy)")
    return ApdslTypeError(f"cannot {what} an element of {type_name(container)}",
                          code="APK042", help="lists, dicts and host arrays have elements a "
                                              "program may set; build a new value instead")


def no_attributes(value: Any, attr: str) -> ApdslError:
    """APK043: no value has attributes a program may set."""
    return ApdslNameError(f"cannot set attribute '{attr}' of {type_name(value)}", code="APK043",
                          help="values in .apk have no attributes a program can set; keep the "
                               "value in a name or a dict entry instead")


def store_item(container: Any, key: Any, value: Any, budget: limits.Budget) -> None:
    """`container[key] = value` for the values that allow it, within the size limits."""
    t = type(container)
    if t is list:
        if type(key) is slice:
            items = value if type(value) is list else list(
                limits.walk(value, budget, build=True))
            old = len(range(*key.indices(len(container))))
            if len(container) - old + len(items) > limits.MAX_ELEMENTS:
                raise limits.too_long("list", len(container) - old + len(items))
            budget.charge(len(items) // limits.COPY_STEP)
            container[key] = items
            if len(items) >= limits.HOLD_MIN:
                budget.made(container)
            return
        container[key] = value
    elif isinstance(container, dict):  # dicts, and the program's os.environ
        container[key] = value
    elif isinstance(container, np.ndarray):
        if isinstance(value, Tensor):
            raise ApdslTypeError("a host array takes host values, not a tensor", code="APK042",
                                 help="read the tensor's contents with host(t)")
        container[key] = value
    else:
        raise no_elements(container, "assign to")


def delete_item(container: Any, key: Any) -> None:
    if type(container) is list or isinstance(container, dict):
        del container[key]
    else:
        raise no_elements(container, "delete")


class TargetCompiler:
    """Target, augmented assignment and `del` compilers (a mixin of `Interpreter`)."""

    def compile_target(self, target: Any) -> Setter:
        kind = type(target)
        if kind is ast.Name:
            name = target.id

            def set_name(frame: Frame, value: Any) -> None:
                frame.vars[name] = value
            return set_name
        if kind is ast.TupleExpr or kind is ast.ListExpr:
            return self._unpacking(target)
        if kind is ast.Subscript:
            return self._item_target(target)
        if kind is ast.Attribute:
            get = self.compile_expr(target.value)
            attr, span = target.attr, target.attr_span

            def set_attribute(frame: Frame, value: Any) -> None:
                raise no_attributes(get(frame), attr).with_span(span)
            return set_attribute
        span = target.span

        def refuse(frame: Frame, value: Any) -> None:
            raise ApdslNameError("cannot assign to this expression", code="APK107",
                                 help="assign to a name, an element or a tuple of them; "
                                 "views are made by methods, data moves by instructions",
                                 span=span)
        return refuse

    def _unpacking(self, target: Any) -> Setter:
        """`a, b = v` and `a, *rest, z = v` (the builder allows one starred item)."""
        items = target.items
        star = next((i for i, t in enumerate(items) if type(t) is ast.Starred), None)
        subs = [self.compile_target(t.value if type(t) is ast.Starred else t) for t in items]
        n = len(subs)
        span = target.span
        budget = self.budget

        def set_tuple(frame: Frame, value: Any) -> None:
            if isinstance(value, Absorbing):
                for s in subs:
                    s(frame, value)
                return
            try:
                values = value if type(value) in (list, tuple) else list(
                    limits.walk(value, budget, build=True))
            except TypeError:
                raise ApdslTypeError(f"cannot unpack {type_name(value)}",
                                     code="APK120").with_span(span) from None
            except LimitError as e:
                raise e.with_span(span) from None
            got = len(values)
            if star is None:
                if got != n:
                    raise ApdslTypeError(f"cannot unpack {got} values into {n} names",
                                         code="APK120").with_span(span)
                for s, v in zip(subs, values):
                    s(frame, v)
                return
            if got < n - 1:
                raise ApdslTypeError(f"cannot unpack {got} values into at least {n - 1} names",
                                     code="APK120").with_span(span)
            after = n - 1 - star
            rest = list(values[star:got - after])
            for k, s in enumerate(subs):
                if k < star:
                    s(frame, values[k])
                elif k == star:
                    s(frame, rest)
                else:
                    s(frame, values[got - (n - k)])
        return set_tuple

    def _item_target(self, target: Any) -> Setter:
        container = self.compile_expr(target.value)
        key = self._compile_key(target)
        span = target.span
        budget = self.budget
        interp = self
        base = target.value.id if type(target.value) is ast.Name else None

        def set_item(frame: Frame, value: Any) -> None:
            c = container(frame)
            k = key(frame)
            if isinstance(c, Absorbing):
                return
            if interp.dry and absorbs((k,)):
                if base is not None:  # which element changed is unknown: the whole is
                    frame.vars[base] = UNKNOWN
                return
            try:
                store_item(c, k, value, budget)
            except (ApdslError, LimitError) as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None
        return set_item

    def _compile_key(self, target: Any) -> Closure:
        parts = [self._compile_index(i) for i in target.index]
        if len(parts) == 1:
            return parts[0]
        return lambda frame: tuple(p(frame) for p in parts)

    def _stmt_AugAssign(self, node: ast.AugAssign) -> Closure:
        op = BINOPS[node.op]
        budget = self.budget
        if node.op in limits.CHECKED:
            checked = limits.CHECKED[node.op]

            def op(a: Any, b: Any) -> Any:
                return checked(a, b, budget)
        inplace = _INPLACE[node.op]
        ev = self.compile_expr(node.value)
        target = node.target
        span = target.span

        def update(current: Any, operand: Any) -> Any:
            # lists and host arrays change in place, as in Python (`b = a; a += [1]` shows in
            # b); the checked operator refuses an over-large list first
            if isinstance(current, np.ndarray):
                return inplace(current, operand)
            result = op(current, operand)
            if type(current) is list and type(result) is list:
                current[:] = result
                if len(current) >= limits.HOLD_MIN:  # grown in place: counted anew
                    budget.made(current)
                return current
            return result

        if type(target) is ast.Subscript:
            container = self.compile_expr(target.value)
            key = self._compile_key(target)
            interp = self

            def run_item(frame: Frame) -> None:
                c = container(frame)
                k = key(frame)
                if isinstance(c, Absorbing) or interp.dry and isinstance(k, Absorbing):
                    return
                if type(c) is not list and not isinstance(c, (dict, np.ndarray)):
                    raise no_elements(c, "update").with_span(span)
                try:
                    store_item(c, k, update(c[k], ev(frame)), budget)
                except (ApdslError, LimitError) as e:
                    raise e.with_span(span) from None
                except PY_ERRORS as e:
                    raise python_error(e, span) from None
            return run_item
        if type(target) is ast.Attribute:
            get = self.compile_expr(target.value)
            attr, attr_span = target.attr, target.attr_span

            def run_attribute(frame: Frame) -> None:
                raise no_attributes(get(frame), attr).with_span(attr_span)
            return run_attribute
        get = self.compile_expr(target)
        setter = self.compile_target(target)

        def run(frame: Frame) -> None:
            setter(frame, update(get(frame), ev(frame)))
        return run

    def _stmt_Del(self, node: ast.Del) -> Closure:
        deleters = [self._deleter(t) for t in node.targets]

        def run(frame: Frame) -> None:
            for d in deleters:
                d(frame)
        return run

    def _deleter(self, target: Any) -> Closure:
        span: Span = target.span
        if type(target) is ast.Name:
            name = target.id
            interp = self

            def del_name(frame: Frame) -> None:
                if name not in frame.vars:
                    raise interp.unknown_name(name, frame, span)
                del frame.vars[name]
            return del_name
        if type(target) is ast.Attribute:
            get = self.compile_expr(target.value)
            attr = target.attr

            def del_attribute(frame: Frame) -> None:
                raise no_attributes(get(frame), attr).with_span(span)
            return del_attribute
        container = self.compile_expr(target.value)
        key = self._compile_key(target)
        base = target.value.id if type(target.value) is ast.Name else None

        def del_item(frame: Frame) -> None:
            c = container(frame)
            k = key(frame)
            if isinstance(c, Absorbing):
                return
            if isinstance(k, Absorbing):
                if base is not None:
                    frame.vars[base] = UNKNOWN
                return
            try:
                delete_item(c, k)
            except ApdslError as e:
                raise e.with_span(span) from None
            except PY_ERRORS as e:
                raise python_error(e, span) from None
        return del_item
