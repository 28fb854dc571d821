"""The interpreter: compiles the AST once into Python closures and runs them over the tensor model.

Every closure that can fail attaches its node's span to the `ApdslError` the model raises, so
errors are located at the finest node that knows them (the call, the argument, the characters
inside a rearrange pattern).  Python exceptions from user arithmetic (1/0, "a" + 1) are turned
into located `ApdslError`s too: no traceback ever reaches a user.

Two modes: run (instructions move data) and dry (check mode: instructions validate their
operands and lower them, host values are `UNKNOWN`, and a failing statement poisons the names it
defines instead of stopping, so `check` reports every independent error).
"""

from __future__ import annotations

import operator
import re
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import (
    ApdslAssertionError,
    ApdslError,
    ApdslIOError,
    ApdslNameError,
    ApdslTypeError,
    LimitError,
    PatternError,
    Span,
)
from ..gcpause import paused_gc
from ..runtime import trace as _trace
from ..syntax import ast
from ..tensor.view import Tensor
from . import limits
from .limits import MAX_ELEMENTS, MAX_INT, MIN_INT
from .values import POISON, UNKNOWN, Absorbing, Function, Module, get_attribute, show, type_name

Closure = Callable[["Frame"], Any]

BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift}
UNARY: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos,
                                           "~": operator.invert, "not": operator.not_}


def _eq(a: Any, b: Any) -> Any:
    # Tuples and lists compare by elements (`A.shape == [512, 512]`).
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        # identical elements are equal without a walk, as in Python's list comparison (a
        # structure that shares itself would otherwise cost exponential time)
        if a is b:
            return True
        if len(a) != len(b):
            return False
        unknown = None
        for x, y in zip(a, b):
            if x is y:
                continue
            same = _eq(x, y)
            if isinstance(same, Absorbing):
                unknown = same  # a known difference still decides; else unknown
            elif not _truth(same):
                return False
        return True if unknown is None else unknown
    return a == b


COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": _eq, "!=": lambda a, b: _not(_eq(a, b)),
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
    "is": operator.is_, "is not": operator.is_not}


def _not(x: Any) -> Any:
    return x if isinstance(x, Absorbing) else (~x if isinstance(x, np.ndarray) else not x)


class Frame:
    __slots__ = ("vars", "glob", "owned")

    def __init__(self, vars: dict[str, Any], glob: dict[str, Any]) -> None:
        self.vars = vars
        self.glob = glob
        self.owned: list[Any] = []


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class Reported(Exception):
    """Check mode: an assertion failed and was reported; the rest of its block is not run (it
    would only report what follows from the failure), and callers poison what it defined."""


class _Continue(Exception):
    pass


_PY_ERRORS = (ZeroDivisionError, TypeError, ValueError, IndexError, KeyError, OverflowError,
              AttributeError, RecursionError, MemoryError)


def _python_error(e: Exception, span: Span | None) -> ApdslError:
    if isinstance(e, ZeroDivisionError):
        err: ApdslError = ApdslTypeError("division by zero", code="APK121")
    elif isinstance(e, (IndexError, KeyError)):
        err = ApdslTypeError(f"index or key out of range: {e}", code="APK122")
    elif isinstance(e, RecursionError):
        # helper recursion is counted (APK123); what remains is an expression too deep
        err = limits.nested_too_deeply()
    elif isinstance(e, MemoryError):  # NumPy could not allocate, within the memory budget
        from ..tensor.budget import out_of_memory
        err = out_of_memory("the statement needs more memory than the machine could give", e)
    else:
        err = ApdslTypeError(f"invalid operation: {e}", code="APK120")
    return err.with_span(span)


def _limit_error(r: Any, span: Span) -> ApdslError:
    if type(r) is int:
        return limits.int_too_large().with_span(span)
    return limits.too_long(limits._kind(r), len(r)).with_span(span)


# The hot operators are written out, with no call through `operator`, which pays for checking
# the size of their result (SPEC section 15).  Each comes in two forms: a constant right
# operand (`i * 3`) is read from the closure instead of calling its closure.
_SEQUENCES = (str, list, tuple)
_RANGE_ITERATOR = type(iter(range(1)))  # (a range past sys.maxsize has another iterator type)


def _add(r: Any, span: Span, budget: limits.Budget) -> Any:
    t = type(r)
    if t is int:
        if r > MAX_INT or r < MIN_INT:
            raise _limit_error(r, span)
    elif t is str or t is list or t is tuple:
        _built(r, span, budget)
    return r


def _built(r: Any, span: Span, budget: limits.Budget) -> None:
    """A string, list or tuple an operator built: within the size limit, and its copying paid
    for (a step per 64 elements), so `s = s + "ab"` in a long loop cannot run for ever."""
    n = len(r)
    if n > MAX_ELEMENTS:
        raise _limit_error(r, span)
    if n >= limits.COPY_STEP:
        try:
            budget.charge(n // limits.COPY_STEP)
        except LimitError as e:
            raise e.with_span(span) from None


def _fast_add(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    if is_const:
        def run_const(frame: Frame) -> Any:
            a = left(frame)
            try:
                r = a + const
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            if type(r) is int:
                if r > MAX_INT or r < MIN_INT:
                    raise _limit_error(r, span)
                return r
            return _add(r, span, budget)
        return run_const

    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            r = a + b
        except _PY_ERRORS as e:
            raise _python_error(e, span) from None
        if type(r) is int:
            if r > MAX_INT or r < MIN_INT:
                raise _limit_error(r, span)
            return r
        return _add(r, span, budget)
    return run


def _fast_sub(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    if is_const:
        def run_const(frame: Frame) -> Any:
            a = left(frame)
            try:
                r = a - const
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            if type(r) is int and (r > MAX_INT or r < MIN_INT):
                raise _limit_error(r, span)
            return r
        return run_const

    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            r = a - b
        except _PY_ERRORS as e:
            raise _python_error(e, span) from None
        if type(r) is int and (r > MAX_INT or r < MIN_INT):
            raise _limit_error(r, span)
        return r
    return run


def _mul(a: Any, b: Any, span: Span, budget: limits.Budget) -> Any:
    """A product with a sequence operand: refuses `"a" * 10**10` before building it."""
    try:
        return limits.mul(a, b, budget)
    except LimitError as e:
        raise e.with_span(span) from None
    except _PY_ERRORS as e:
        raise _python_error(e, span) from None


def _fast_mul(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    if is_const:
        const_seq = type(const) in _SEQUENCES

        def run_const(frame: Frame) -> Any:
            a = left(frame)
            ta = type(a)
            if const_seq or ta is str or ta is list or ta is tuple:
                return _mul(a, const, span, budget)
            try:
                r = a * const
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            if type(r) is int and (r > MAX_INT or r < MIN_INT):
                raise _limit_error(r, span)
            return r
        return run_const

    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        ta = type(a)
        if ta is str or ta is list or ta is tuple or type(b) in _SEQUENCES:
            return _mul(a, b, span, budget)
        try:
            r = a * b
        except _PY_ERRORS as e:
            raise _python_error(e, span) from None
        if type(r) is int and (r > MAX_INT or r < MIN_INT):
            raise _limit_error(r, span)
        return r
    return run


def _fast_mod(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
    # `"%0999999999d" % 1` builds a long string: checked like `+`
    if is_const:
        def run_const(frame: Frame) -> Any:
            a = left(frame)
            try:
                r = a % const
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            if type(r) is str:
                _built(r, span, budget)
            return r
        return run_const

    def run(frame: Frame) -> Any:
        a = left(frame)
        b = right(frame)
        try:
            r = a % b
        except _PY_ERRORS as e:
            raise _python_error(e, span) from None
        if type(r) is str:
            _built(r, span, budget)
        return r
    return run


def _plain(op: Callable[[Any, Any], Any]) -> Callable[..., Closure]:
    """Operators whose result is never larger than their operands."""
    def make(left: Closure, right: Closure, span: Span, const: Any, is_const: bool,
              budget: limits.Budget) -> Closure:
        if is_const:
            def run_const(frame: Frame) -> Any:
                try:
                    return op(left(frame), const)
                except _PY_ERRORS as e:
                    raise _python_error(e, span) from None
            return run_const

        def run(frame: Frame) -> Any:
            a = left(frame)
            b = right(frame)
            try:
                return op(a, b)
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
        return run
    return make


_FAST: dict[str, Callable[..., Closure]] = {
    "+": _fast_add, "-": _fast_sub, "*": _fast_mul, "%": _fast_mod,
    **{op: _plain(BINOPS[op]) for op in ("/", "//", "@", "&", "|", "^", ">>")}}


class Interpreter:
    """Runs one program (a file and the modules it imports)."""

    def __init__(self, *, dry: bool = False, out: Any = None, base_dir: str | None = None,
                 stdlib_dir: str | None = None) -> None:
        from ..tensor.machine import current
        from .builtins import make_builtins
        # The simulated device the program runs on: a child of the caller's, so what the
        # program sets (target, options) stays in it; check mode is its `check` flag.  The
        # caller enters it (`with interp.machine.active():`) around the run.
        self.machine = current().child(check=dry)
        # The step budget (SPEC section 15), shared by every closure this interpreter compiles
        # and by the builtins; the REPL resets it for each input.
        self.budget = limits.Budget(self.machine.options.max_steps)
        self.depth = 0  # helper and kernel calls under way
        self.out = out if out is not None else sys.stdout
        self.base_dir = Path(base_dir or ".")
        self.stdlib_dir = stdlib_dir
        self.builtins = make_builtins(self)
        self.modules: dict[str, Module] = {}
        self.errors: list[ApdslError] = []  # dry mode: collected, deduplicated
        self._seen: set[tuple[str, Any]] = set()
        # tensor -> span where the view was made (weak: dead views must not lend their span)
        self.origins: weakref.WeakKeyDictionary[Tensor, Span] = weakref.WeakKeyDictionary()
        self.importing: list[str] = []
        self.sources: dict[str, str] = {}
        self.call_span: Span | None = None  # the call being evaluated (instructions record it)
        self.calls: list[tuple[str, Span]] = []  # check mode: the calls of helpers under way
        self.failures = 0  # check mode: statements that failed (reported or deduplicated)
        # check mode: storage holding `-i` input values that no instruction has written since,
        # so host() can read them (a data-dependent kernel checks with its inputs' values)
        self.known_values: weakref.WeakSet[Any] = weakref.WeakSet()
        # check mode: registers register_load set (by id; kept alive so ids stay theirs), whose
        # value check mode cannot know
        self.loaded_registers: dict[int, Any] = {}
        self._loops = 0  # compile-time nesting, so break/continue/return outside are errors
        self._functions = 0

    @property
    def dry(self) -> bool:
        """Check mode (`apdsl check`): the machine's flag, the one place it is kept."""
        return self.machine.check

    # -- errors -------------------------------------------------------------------------------
    def report(self, err: ApdslError) -> None:
        # One report per code and line: the static checker and the dry run often find the
        # same mistake, one at the argument and one at the call.  Unknown names are keyed by
        # the name too, so `foo + bar` reports both.
        s = err.span
        name = err.facts.get("name")
        key = (err.code, None if s is None else (s.file, s.line),
               name if isinstance(name, str) else None)
        # A kept error keeps no frames: their tensors would stay allocated and count against
        # the capacity of what check mode runs next (the next kernel).
        err.__traceback__ = err.__context__ = err.__cause__ = None
        if key not in self._seen:
            # appended before it is labelled: nothing after `_seen` may fail and lose it
            self.errors.append(err)
            self._seen.add(key)
            # inside a helper (check mode reports there), show where the program called it
            if self.calls and s is not None and not err.labels:
                helper, call = self.calls[0]
                if not _inside(s, call):
                    err.add_label(call, f"in this call of {helper}")

    # -- services used by builtins ------------------------------------------------------------
    def allocate(self, shape: Any, dtype: Any, buffer: Any, format: str = "ND", name: str = "",
                 span: Span | None = None) -> Tensor:
        from ..tensor.view import ndarray
        return ndarray(shape, dtype, buffer, format or "ND", name=name, span=span)

    def instruction(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        span = self.call_span
        if span is not None:
            _trace.set_location(span.file, span.line, span)
        if not self.dry:
            return fn(*args, **kwargs)
        from .dryrun import run_dry
        return run_dry(self, name, fn, args, kwargs)

    def print(self, *values: Any, sep: str = " ") -> None:
        if self.dry:
            return
        print(sep.join(show(v) for v in values), file=self.out)

    def _safe_path(self, path: Any) -> Path:
        if not isinstance(path, str):
            raise ApdslTypeError("file names are strings", code="APK110")
        from ..runtime.files import confined
        return confined(self.base_dir, path)

    def load_npy(self, path: str) -> Any:
        full = self._safe_path(path)
        from ..runtime.files import read_npy
        if self.dry:  # the header is checked; the data waits for the run
            read_npy(full, shown=path, regular_only=True, header_only=True)
            return UNKNOWN
        return read_npy(full, shown=path, regular_only=True)

    def save_npy(self, value: Any, path: str) -> None:
        if isinstance(path, str) and not path.endswith(".npy"):
            raise ApdslIOError(f"save writes .npy files, not '{path}'", code="APK613",
                               help="give the file name a .npy suffix: save(x, \"out.npy\")")
        full = self._safe_path(path)
        from .builtins import host_value
        data = host_value(value, self)
        if self.dry:
            # nothing is written, but a folder that is not there is known without data
            if not full.parent.is_dir():
                raise ApdslIOError(f"cannot write '{path}': folder {full.parent} does not "
                                   "exist", code="APK606", path=path)
            return
        from ..runtime.files import widen_for_npy, write_npy
        write_npy(full, widen_for_npy(np.asarray(data)), shown=path, regular_only=True)

    # -- running ------------------------------------------------------------------------------
    def exec_module(self, module: ast.Module, namespace: dict[str, Any]) -> None:
        self.sources[module.file] = module.source
        with limits.deep_stack():
            with paused_gc():
                block = self.compile_block(module.body, top=True)
            frame = Frame(namespace, namespace)
            try:
                block(frame)
            except _Return:
                pass

    def call_function(self, fn: Function, args: tuple, kwargs: dict,
                      bound: dict[str, Any] | None = None) -> Any:
        """Call a def or kernel; `bound` adds locals (a kernel's named dimensions)."""
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
        frame = Frame(local, fn.globals)
        failures = self.failures
        if self.depth >= limits.MAX_CALL_DEPTH:
            raise limits.recursion_too_deep(fn.name)
        self.depth += 1
        try:
            fn.body(frame)
            value = None
        except _Return as r:
            value = r.value
        finally:
            self.depth -= 1
        # Check mode goes on past a failing statement; a call that did so has no value to
        # give (run mode would have stopped), so its caller sees POISON, not a made-up None.
        return POISON if self.failures != failures else value

    # -- compilation: statements --------------------------------------------------------------
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
                            budget.left += 1
                            raise budget.exhausted().with_span(span)
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
                        except _PY_ERRORS as e:
                            err = _python_error(e, span)
                            if isinstance(err, LimitError):
                                raise err from None
                            interp.report(err)
                        except Reported:
                            if not top:
                                raise
                        interp.failures += 1
                        for name in ast.bound_names(node):
                            frame.vars[name] = POISON
                except _Return as r:  # the returned tensors outlive their block
                    if frees:
                        _free(frame, mark, keep=r.value)
                    raise
                except BaseException:
                    if frees:
                        _free(frame, mark)
                    raise
                if frees:
                    _free(frame, mark)
            run_dry.n = n  # type: ignore[attr-defined]
            run_dry.counted = run_dry  # type: ignore[attr-defined]
            return run_dry

        def counted(frame: Frame) -> None:
            span = None
            try:
                for st, span in pairs:  # noqa: B007 - `span` names the failing statement
                    budget.left -= 1
                    if budget.left < 0:
                        budget.left += 1
                        raise budget.exhausted()
                    st(frame)
            except ApdslError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None

        straight = not any(_may_jump(s) for s in body[:-1])
        if not straight:
            run = scoped_counted = _scoped(counted, frees)
            run.n = n  # type: ignore[attr-defined]
            run.counted = scoped_counted  # type: ignore[attr-defined]
            return run

        def inner(frame: Frame) -> None:
            span = None
            try:
                for st, span in pairs:  # noqa: B007
                    st(frame)
            except ApdslError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None

        def charged(frame: Frame) -> None:
            budget.left -= n
            if budget.left < 0:
                budget.left += n
                return counted(frame)
            span = None
            try:
                for st, span in pairs:  # noqa: B007
                    st(frame)
            except ApdslError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None

        run = _scoped(charged, frees)
        run.n = n  # type: ignore[attr-defined]
        run.counted = _scoped(counted, frees)  # type: ignore[attr-defined]
        run.inner = _scoped(inner, frees)  # type: ignore[attr-defined]
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

    def compile_stmt(self, node: Any) -> Closure:
        return getattr(self, "_stmt_" + type(node).__name__)(node)

    def _stmt_ExprStmt(self, node: Any) -> Closure:
        ev = self.compile_expr(node.expr)

        def run(frame: Frame) -> None:
            ev(frame)
        return run

    def _stmt_Pass(self, node: Any) -> Closure:
        return lambda frame: None

    def _outside(self, what: str, where: str, span: Span) -> Closure:
        def run(frame: Frame) -> None:
            raise ApdslNameError(f"'{what}' outside {where}", code="APK124", span=span)
        return run

    def _stmt_Break(self, node: Any) -> Closure:
        return self._jump("break", _Break, node.span)

    def _stmt_Continue(self, node: Any) -> Closure:
        return self._jump("continue", _Continue, node.span)

    def _jump(self, what: str, signal: type[Exception], span: Span) -> Closure:
        if not self._loops:
            return self._outside(what, "a loop", span)

        def run(frame: Frame) -> None:
            raise signal
        return run

    def _stmt_Return(self, node: Any) -> Closure:
        if not self._functions:
            return self._outside("return", "a kernel or function", node.span)
        ev = self.compile_expr(node.value) if node.value is not None else (lambda f: None)
        span = node.span

        def run(frame: Frame) -> None:
            try:
                value = ev(frame)
            except ApdslError as e:
                raise e.with_span(span) from None
            raise _Return(value)
        return run

    def _stmt_Assign(self, node: Any) -> Closure:
        ev = self.compile_expr(node.value)
        setters = [self.compile_target(t) for t in node.targets]
        value_span = node.value.span
        origins = self.origins
        if len(setters) == 1:
            setter = setters[0]

            target_name = node.targets[0].id if isinstance(node.targets[0], ast.Name) else None
            if target_name is not None:
                def run_name(frame: Frame) -> None:
                    # the common `name = expr`, stored here rather than through a setter call
                    value = ev(frame)
                    if type(value) is Tensor:
                        origins.setdefault(value, value_span)
                        if value.storage.name.startswith("%"):
                            value.storage.name = target_name  # `x = ndarray(...)` is called x
                    frame.vars[target_name] = value
                return run_name

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

    def _stmt_AugAssign(self, node: Any) -> Closure:
        op = BINOPS[node.op]
        if node.op in limits.CHECKED:
            checked, budget = limits.CHECKED[node.op], self.budget

            def op(a: Any, b: Any) -> Any:
                return checked(a, b, budget)
        get = self.compile_expr(node.target)
        setter = self.compile_target(node.target)
        ev = self.compile_expr(node.value)

        def run(frame: Frame) -> None:
            setter(frame, op(get(frame), ev(frame)))
        return run

    def compile_target(self, target: Any) -> Callable[[Frame, Any], None]:
        if isinstance(target, ast.Name):
            name = target.id

            def set_name(frame: Frame, value: Any) -> None:
                frame.vars[name] = value
            return set_name
        if isinstance(target, (ast.TupleExpr, ast.ListExpr)):
            subs = [self.compile_target(t) for t in target.items]
            n = len(subs)
            span = target.span

            def set_tuple(frame: Frame, value: Any) -> None:
                if isinstance(value, Absorbing):
                    for s in subs:
                        s(frame, value)
                    return
                try:
                    items = list(value)
                except TypeError:
                    raise ApdslTypeError(f"cannot unpack {type_name(value)}",
                                         code="APK120").with_span(span) from None
                if len(items) != n:
                    raise ApdslTypeError(f"cannot unpack {len(items)} values into {n} names",
                                         code="APK120").with_span(span)
                for s, v in zip(subs, items):
                    s(frame, v)
            return set_tuple
        span = target.span

        def refuse(frame: Frame, value: Any) -> None:
            raise ApdslNameError("cannot assign to this expression", code="APK107",
                                 help="assign to a name or a tuple of names; views are made by "
                                 "methods, data moves by instructions", span=span)
        return refuse

    def _stmt_Decl(self, node: Any) -> Closure:
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
            if interp.dry and _absorbs(shape):
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
        from ..runtime.init import initialise
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
            if interp.dry and _absorbs(values):
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

    def _stmt_If(self, node: Any) -> Closure:
        test = self.compile_expr(node.test)
        body = self.compile_block(node.body)
        orelse = self.compile_block(node.orelse) if node.orelse else None
        span = node.test.span

        def run(frame: Frame) -> None:
            try:
                cond = test(frame)
                if isinstance(cond, Absorbing):
                    return
                cond = _truth(cond)
            except ApdslError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            if cond:
                body(frame)
            elif orelse is not None:
                orelse(frame)
        return run

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
        pure = inner is not None and not any(_may_jump(s) for s in node.body)

        def start(frame: Frame) -> Any:
            try:
                seq = it(frame)
                if isinstance(seq, Absorbing):
                    return None
                return iter(seq)
            except ApdslError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None

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
                    except _Break:
                        break
                    except _Continue:
                        continue
            return run

        def run_straight(frame: Frame) -> None:
            iterator = start(frame)
            if iterator is None:
                return
            if pure and type(iterator) is _RANGE_ITERATOR:
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
                except _Break:
                    break
                except _Continue:
                    continue
        return run_straight

    def _stmt_Assert(self, node: Any) -> Closure:
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
                    return _compare(op, a, b), (a, b)
                except _PY_ERRORS as e:
                    raise _python_error(e, span) from None

        def run(frame: Frame) -> None:
            cond, both = evaluate(frame)
            if isinstance(cond, Absorbing):
                return
            if not _truth(cond):
                text = show(msg(frame)) if msg is not None else "assertion failed"
                notes = [] if both is None else [f"left:  {_brief(both[0])}",
                                                 f"right: {_brief(both[1])}"]
                raise ApdslAssertionError(text, code="APK901", notes=notes)
        return run

    def _assert_sides(self, test: Any) -> tuple[Closure, Any, Closure, Span] | None:
        """The compiled sides and operator of a single comparison, else None."""
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return None
        return (self.compile_expr(test.left), COMPARE[test.ops[0]],
                self.compile_expr(test.comparators[0]), test.span)

    def _stmt_FunctionDef(self, node: Any) -> Closure:
        return self._define(node, kernel=False)

    def _stmt_Kernel(self, node: Any) -> Closure:
        return self._define(node, kernel=True)

    def _define(self, node: Any, kernel: bool) -> Closure:
        saved, self._loops = self._loops, 0
        self._functions += 1
        try:
            body = self.compile_block(node.body)
        finally:
            self._functions -= 1
            self._loops = saved
        defaults = [(p.name, self.compile_expr(p.default)) for p in node.params
                    if p.default is not None]
        interp = self

        def run(frame: Frame) -> None:
            fn = Function(node.name, list(node.params), body, frame.glob, node.span,
                          is_kernel=kernel, returns=getattr(node, "returns", None),
                          defaults={k: ev(frame) for k, ev in defaults}, interpreter=interp)
            fn.node = node  # type: ignore[attr-defined]
            frame.vars[node.name] = fn
        return run

    def _stmt_Import(self, node: Any) -> Closure:
        interp = self

        def run(frame: Frame) -> None:
            if _is_nki_module(node.module):
                return
            mod = interp.import_module(node.module, node.span)
            frame.vars[node.alias or node.module.split(".")[0]] = mod
        return run

    def _stmt_FromImport(self, node: Any) -> Closure:
        interp = self

        def run(frame: Frame) -> None:
            if _is_nki_module(node.module):
                return
            mod = interp.import_module(node.module, node.span)
            for name, alias in node.names:
                if name not in mod.namespace or name.startswith("_"):
                    from difflib import get_close_matches
                    close = get_close_matches(name, list(mod.namespace), n=3)
                    raise ApdslNameError(f"module {mod.name} has no name '{name}'",
                                         code="APK108", help=f"did you mean "
                                         f"{' or '.join(map(repr, close))}?" if close else None)
                frame.vars[alias or name] = mod.namespace[name]
        return run

    def import_module(self, dotted: str, span: Span | None) -> Module:
        from ..resources import stdlib_path
        from ..syntax.parser import parse
        if dotted in self.modules:
            return self.modules[dotted]
        rel = Path(*dotted.split(".")).with_suffix(".apk")
        search = [(self.base_dir / rel, str(self.base_dir / rel))]
        std = Path(self.stdlib_dir) if self.stdlib_dir else stdlib_path()
        search.append((std / rel, f"<stdlib>/{rel.as_posix()}"))
        for path, shown in search:  # noqa: B007 - the hit is used after the loop
            if path.is_file():
                break
        else:
            raise ApdslIOError(f"no module named '{dotted}'", code="APK602",
                               notes=[f"searched {self.base_dir / rel} and <stdlib>/{rel}"],
                               help="put the module next to the importing file or in stdlib/")
        if dotted in self.importing:
            raise ApdslIOError(f"circular import of '{dotted}'", code="APK604")
        from ..syntax.source_files import read_source
        tree = parse(read_source(path, shown), shown)
        namespace: dict[str, Any] = {}
        module = Module(dotted, shown, namespace)
        self.importing.append(dotted)
        saved_base = self.base_dir
        try:
            self.base_dir = path.parent
            self.exec_module(tree, namespace)
        finally:
            self.base_dir = saved_base
            self.importing.pop()
        self.modules[dotted] = module
        return module

    # -- compilation: expressions -------------------------------------------------------------
    def compile_expr(self, node: Any) -> Closure:
        return getattr(self, "_expr_" + type(node).__name__)(node)

    def _expr_Const(self, node: Any) -> Closure:
        value = node.value
        return lambda frame: value

    def _expr_Str(self, node: Any) -> Closure:
        value = node.value
        return lambda frame: value

    def _expr_EllipsisLit(self, node: Any) -> Closure:
        return lambda frame: Ellipsis

    def _expr_Name(self, node: Any) -> Closure:
        name = node.id
        builtins = self.builtins
        span = node.span
        interp = self

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
        return load

    def unknown_name(self, name: str, frame: Frame | None, span: Span | None) -> ApdslError:
        from difflib import get_close_matches
        pool = set(self.builtins)
        if frame is not None:
            pool |= set(frame.vars) | set(frame.glob)
        close = get_close_matches(name, sorted(pool), n=3)
        return ApdslNameError(f"unknown name '{name}'", code="APK101", span=span,
                              help=f"did you mean {' or '.join(map(repr, close))}?" if close
                              else None, name=name)

    def _expr_TupleExpr(self, node: Any) -> Closure:
        items = [self.compile_expr(i) for i in node.items]
        return lambda frame: tuple(i(frame) for i in items)

    def _expr_ListExpr(self, node: Any) -> Closure:
        items = [self.compile_expr(i) for i in node.items]
        return lambda frame: [i(frame) for i in items]

    def _expr_DictExpr(self, node: Any) -> Closure:
        keys = [self.compile_expr(k) for k in node.keys]
        values = [self.compile_expr(v) for v in node.values]
        return lambda frame: {k(frame): v(frame) for k, v in zip(keys, values)}

    def _expr_BinOp(self, node: Any) -> Closure:
        left, right = self.compile_expr(node.left), self.compile_expr(node.right)
        span = node.span
        if node.op in _FAST:
            is_const = isinstance(node.right, ast.Const)
            return _FAST[node.op](left, right, span, node.right.value if is_const else None,
                                  is_const, self.budget)
        # `**`, `<<` and `*` of sequences could build something huge: checked before they run
        op = limits.CHECKED.get(node.op) or BINOPS[node.op]
        if isinstance(node.right, ast.Const):
            const = node.right.value

            def run_const(frame: Frame) -> Any:
                try:
                    return op(left(frame), const)
                except LimitError as e:
                    raise e.with_span(span) from None
                except _PY_ERRORS as e:
                    raise _python_error(e, span) from None
            return run_const

        def run(frame: Frame) -> Any:
            a, b = left(frame), right(frame)
            try:
                return op(a, b)
            except LimitError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
        return run

    def _expr_UnaryOp(self, node: Any) -> Closure:
        op = limits.invert if node.op == "~" else UNARY[node.op]
        ev = self.compile_expr(node.operand)
        if node.op == "not":
            return lambda frame: _not(_truth_or_absorb(ev(frame)))
        return lambda frame: op(ev(frame))

    def _expr_BoolOp(self, node: Any) -> Closure:
        values = [self.compile_expr(v) for v in node.values]
        is_and = node.op == "and"

        def run(frame: Frame) -> Any:
            result: Any = None
            for v in values:
                result = v(frame)
                if isinstance(result, Absorbing):
                    return result
                if _truth(result) != is_and:
                    return result
            return result
        return run

    def _expr_Compare(self, node: Any) -> Closure:
        left = self.compile_expr(node.left)
        ops = [COMPARE[o] for o in node.ops]
        rights = [self.compile_expr(c) for c in node.comparators]
        span = node.span
        if len(ops) == 1:
            op, right = ops[0], rights[0]

            def run1(frame: Frame) -> Any:
                a, b = left(frame), right(frame)
                try:
                    return _compare(op, a, b)
                except _PY_ERRORS as e:
                    raise _python_error(e, span) from None
            return run1

        def run(frame: Frame) -> Any:
            a = left(frame)
            for op, r in zip(ops, rights):
                b = r(frame)
                res = _compare(op, a, b)
                if isinstance(res, Absorbing) or not _truth(res):
                    return res
                a = b
            return True
        return run

    def _expr_IfExp(self, node: Any) -> Closure:
        test, body, orelse = (self.compile_expr(node.test), self.compile_expr(node.body),
                              self.compile_expr(node.orelse))

        def run(frame: Frame) -> Any:
            c = test(frame)
            if isinstance(c, Absorbing):
                return c
            return body(frame) if _truth(c) else orelse(frame)
        return run

    def _expr_Attribute(self, node: Any) -> Closure:
        ev = self.compile_expr(node.value)
        attr = node.attr
        span = getattr(node, "attr_span", None) or node.span
        loaded = self.loaded_registers
        register_value = attr == "value" and self.dry

        def run(frame: Frame) -> Any:
            value = ev(frame)
            if register_value and id(value) in loaded and loaded[id(value)] is value:
                return UNKNOWN  # check mode: register_load read it from memory
            try:
                return get_attribute(value, attr)
            except ApdslError as e:
                raise e.with_span(span) from None
        return run

    def _expr_Subscript(self, node: Any) -> Closure:
        ev = self.compile_expr(node.value)
        parts = [self._compile_index(i) for i in node.index]
        single = len(parts) == 1 and not isinstance(node.index[0], ast.Slice)
        span = node.span
        interp = self

        def run(frame: Frame) -> Any:
            value = ev(frame)
            key = parts[0](frame) if single else tuple(p(frame) for p in parts)
            if interp.dry and _absorbs((key,)):
                return POISON  # an index check mode cannot know
            try:
                result = value[key]
            except ApdslError as e:
                raise e.with_span(span) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            if type(result) is Tensor:
                interp.origins.setdefault(result, span)
            return result
        return run

    def _compile_index(self, node: Any) -> Closure:
        if isinstance(node, ast.Slice):
            parts = [self.compile_expr(p) if p is not None else (lambda f: None)
                     for p in (node.start, node.stop, node.step)]
            return lambda frame: slice(*(p(frame) for p in parts))
        return self.compile_expr(node)

    def _expr_Call(self, node: Any) -> Closure:
        func = self.compile_expr(node.func)
        args = [self.compile_expr(a) for a in node.args]
        kwargs = [(k.name, self.compile_expr(k.value)) for k in node.keywords]
        span = node.span
        interp = self
        pattern_node = _pattern_literal(node)
        receiver_text = (node.func.value.id if isinstance(node.func, ast.Attribute)
                         and isinstance(node.func.value, ast.Name) else "the view")
        arg_spans = [a.span for a in node.args]
        kw_spans = {k.name: k.span for k in node.keywords}
        # where a keyword error points (as the static checker does): a keyword the callee
        # does not have at its name, one given twice at the whole argument
        kw_where = {**{(k.name, "name"): k.name_span for k in node.keywords},
                    **{(k.name, "argument"): k.span for k in node.keywords}}
        budget = self.budget

        def run(frame: Frame) -> Any:
            budget.left -= 1
            if budget.left < 0:
                budget.left += 1
                raise budget.exhausted().with_span(span)
            fn = func(frame)
            a = [x(frame) for x in args]
            kw = {k: v(frame) for k, v in kwargs}
            if isinstance(fn, Absorbing):
                return fn
            # Check mode: a builtin given a value it cannot know (a host value, or a name
            # whose definition failed), even inside a tuple or list, is skipped: its checks
            # would only report the unknown.  A helper is still entered, so its body is
            # checked as far as the known arguments allow.
            if interp.dry and type(fn) is not Function and (
                    _absorbs(a) or _absorbs(list(kw.values()))):
                return POISON
            if not callable(fn):
                raise ApdslTypeError(f"{type_name(fn)} is not callable",
                                     code="APK109").with_span(span)
            interp.call_span = span
            helper = interp.dry and type(fn) is Function
            if helper:
                interp.calls.append((fn.name, span))
            try:
                result = fn(*a, **kw)
            except PatternError as e:
                if pattern_node is not None and e.start is not None and e.span is None:
                    e.span = pattern_node.char_span(e.start, e.end)
                raise e.with_span(span) from None
            except ApdslError as e:
                if type(fn) is Function and e.span is not None and not _inside(e.span, span):
                    e.add_label(span, f"in this call of {fn.name}")  # the caller's view
                if e.span is None:
                    e.span = kw_where.get(e.facts.get("keyword")) or _argument_span(
                        e.facts.get("param"), arg_spans, kw_spans)
                receiver = getattr(fn, "__self__", None)
                if type(receiver) is Tensor and not e.labels:
                    made = interp.origins.get(receiver)
                    if made is not None and made != span:
                        how = "declared" if made == receiver.storage.span else "made"
                        e.add_label(made, f"{receiver_text} {how} here")
                raise e.with_span(span) from None
            except LimitError as e:
                if type(fn) is Function and e.span is not None and not _inside(e.span, span):
                    e.add_label(span, f"in this call of {fn.name}")
                raise e.with_span(span) from None
            except TypeError as e:
                raise _call_error(fn, e, span, kw_where) from None
            except _PY_ERRORS as e:
                raise _python_error(e, span) from None
            finally:
                if helper:
                    interp.calls.pop()
            if type(result) is Tensor:
                interp.origins.setdefault(result, span)
            return result
        return run


def _absorbs(values: Any, depth: int = 0) -> bool:
    """True when a value check mode cannot know sits among `values` (nested tuples, lists,
    dicts and slices included)."""
    for v in values:
        if isinstance(v, Absorbing):
            return True
        if depth < 8:
            if isinstance(v, (tuple, list)) and _absorbs(v, depth + 1):
                return True
            if isinstance(v, dict) and _absorbs(list(v.values()), depth + 1):
                return True
            if isinstance(v, slice) and _absorbs((v.start, v.stop, v.step), depth + 1):
                return True
    return False


def _compare(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    # `in`, `is` and their negations ask Python for a bool, which an unknown value would
    # answer at random (`UNKNOWN in (1, 2)` is True): an unknown operand gives unknown.
    if isinstance(a, Absorbing):
        return a
    if isinstance(b, Absorbing):
        return b
    return op(a, b)


_KEYWORD_ERRORS = ((re.compile(r"unexpected keyword argument '(\w+)'"), "name"),
                   (re.compile(r"multiple values for argument '(\w+)'"), "argument"))


def _call_error(fn: Any, e: TypeError, span: Span,
                kw_where: dict[tuple[str, str], Span] | None = None) -> ApdslError:
    text = str(e)
    name = getattr(fn, "__name__", "function")
    for pattern, which in _KEYWORD_ERRORS:
        m = pattern.search(text)
        if m and kw_where and (m.group(1), which) in kw_where:
            span = kw_where[(m.group(1), which)]
            break
    if "argument" in text or "positional" in text or "keyword" in text:
        msg = text.replace("__call__()", f"{name}()").replace("call()", f"{name}()")
        help_ = None
        import inspect
        try:
            help_ = f"signature: {name}{inspect.signature(fn)}"
        except (TypeError, ValueError):
            pass
        return ApdslTypeError(msg, code="APK102", help=help_).with_span(span)
    return ApdslTypeError(f"invalid call of {name}: {text}", code="APK120").with_span(span)


def _inside(inner: Span, outer: Span) -> bool:
    return inner.file == outer.file and (outer.line, outer.column) <= (inner.line, inner.column) \
        and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)


def _argument_span(param: Any, arg_spans: list[Span], kw_spans: dict[str, Span]) -> Any:
    """The span of the argument an error names with `param=(keyword, position)`."""
    if not isinstance(param, tuple):
        return None
    keyword, position = param
    if keyword in kw_spans:
        return kw_spans[keyword]
    return arg_spans[position] if position < len(arg_spans) else None


def _pattern_literal(node: Any) -> Any:
    """The string literal holding an einops pattern in `x.rearrange("...")`, if any."""
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr == "rearrange" and node.args and \
            isinstance(node.args[0], ast.Str):
        return node.args[0]
    return None


def _truth(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        if x.size != 1:
            raise ApdslTypeError("the truth value of a host array with several elements is "
                                 "ambiguous", code="APK120",
                                 help="use allclose(x, y), equal(x, y), or (x == y).all()")
        return bool(x)
    if isinstance(x, Tensor):
        raise ApdslTypeError("a tensor has no truth value", code="APK120",
                             help="compare host(t) values, or use allclose/equal")
    return bool(x)


def _truth_or_absorb(x: Any) -> Any:
    return x if isinstance(x, Absorbing) else _truth(x)


def _scoped(run: Closure, frees: bool) -> Closure:
    """`run`, freeing what the block declared when it ends (each loop iteration)."""
    if not frees:
        return run

    def run_scoped(frame: Frame) -> None:
        mark = len(frame.owned)
        try:
            run(frame)
        except _Return as r:  # the returned tensors outlive the block that declared them
            _free(frame, mark, keep=r.value)
            raise
        except BaseException:
            _free(frame, mark)
            raise
        _free(frame, mark)
    return run_scoped


def _may_jump(node: Any) -> bool:
    """Whether a statement can leave its block early (break, continue, return)."""
    kind = type(node)
    if kind is ast.Break or kind is ast.Continue or kind is ast.Return:
        return True
    if kind is ast.If:
        return any(_may_jump(s) for s in node.body) or any(_may_jump(s) for s in node.orelse)
    if kind is ast.For:  # the loop catches its own break and continue
        return any(_may_return(s) for s in node.body)
    return False


def _may_return(node: Any) -> bool:
    kind = type(node)
    if kind is ast.Return:
        return True
    if kind is ast.If:
        return any(_may_return(s) for s in node.body) or \
            any(_may_return(s) for s in node.orelse)
    if kind is ast.For:
        return any(_may_return(s) for s in node.body)
    return False


def _free(frame: Frame, mark: int = 0, keep: Any = None) -> None:
    """End the storage the block declared, except what `keep` (a returned value) holds: that
    lives on as long as something refers to it (garbage collection returns its memory)."""
    kept = _storages(keep) if keep is not None else ()
    for storage in frame.owned[mark:]:
        if storage not in kept:
            storage.free()
    del frame.owned[mark:]


def _storages(value: Any, depth: int = 0) -> set[Any]:
    """The storage of every tensor in a value (tensors, and tuples, lists and dicts of them)."""
    if isinstance(value, Tensor):
        return {value.storage}
    out: set[Any] = set()
    if depth < 50 and isinstance(value, (tuple, list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            out |= _storages(item, depth + 1)
    return out


def _is_nki_module(name: str) -> bool:
    root = name.split(".")[0]
    return root in ("nki", "neuronxcc", "numpy", "np")


def _brief(v: Any) -> str:
    text = show(v)
    return text if len(text) < 200 else text[:200] + " ..."
