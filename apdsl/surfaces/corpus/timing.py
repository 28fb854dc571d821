"""A repository's assertion about wall-clock time, told apart from an assertion of values.

A benchmark test may end with `assert actual_latency <= latency`, `actual_latency` being host
time measured around the kernel's call (`t0 = perf_counter()` before, `perf_counter() - t0`
after).  On apdsl that is the time the simulation took on this machine, not the kernel's time on
a NeuronCore, so its failing says nothing of the kernel's answer: it is not a mismatch.

Such an assertion is recognised from what it compares, read in the source of the function
holding it, never from its message or its names: it is a comparison (`a <= b`, chained or not)
with at least one side made of clock readings (`time.perf_counter()`, `time.time()`, their `_ns`
forms, `time.monotonic()`, `timeit.default_timer()`, ...) and every side made only of clock
readings, number literals, module constants bound to numbers, and the values a
`pytest.mark.parametrize` gives the test, combined by arithmetic (and `abs`, `float`, `int`,
`round`, `min`, `max`).  Anything else in it - a name bound by any other call, an attribute, a
subscript, a loop variable, a plain parameter (a helper's argument may be a kernel's output) -
makes it an assertion of values, and a failing one stays a mismatch: a wrong answer cannot be
hidden as a timing."""

from __future__ import annotations

import ast
import functools
import os
import traceback
from collections.abc import Iterator

# the clocks of the standard library, by module
CLOCKS = {"time": frozenset({"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
                             "monotonic_ns", "process_time", "process_time_ns", "thread_time",
                             "thread_time_ns"}),
          "timeit": frozenset({"default_timer"})}
# builtins whose result is made of their arguments' values only
PASSING_THROUGH = frozenset({"abs", "float", "int", "round", "min", "max"})

CLOCK, FIXED, OTHER = "clock", "fixed", "other"


def _join(kinds: Iterator[str]) -> str:
    """An expression's kind from its parts': any other part makes it other; else a clock
    reading makes it a clock's; else it is fixed."""
    found = set(kinds)
    return OTHER if OTHER in found else CLOCK if CLOCK in found else FIXED


class _File:
    """One source file: its tree, the clock functions its imports name, its module constants."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.modules: dict[str, str] = {}  # local name -> "time" / "timeit"
        self.clocks: set[str] = set()  # names bound to a clock (`from time import time`)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in CLOCKS:
                        self.modules[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module in CLOCKS and not node.level:
                for a in node.names:
                    if a.name in CLOCKS[node.module]:
                        self.clocks.add(a.asname or a.name)
        self.constants: dict[str, list[ast.expr]] = {}
        for node in tree.body:
            for name, value in _bindings(node):
                self.constants.setdefault(name, []).append(value)

    def is_clock(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.clocks
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.attr in CLOCKS.get(self.modules.get(func.value.id, ""), ())


# what a statement binds: (name, value), value None when it is not an expression's value alone
# (a loop variable, a tuple unpacked, `with ... as`, an import, a nested function)
def _bindings(node: ast.AST) -> Iterator[tuple[str, ast.expr | None]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value
            else:
                yield from ((n.id, None) for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        yield node.target.id, node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        yield from ((n.id, None) for n in ast.walk(node.target) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                yield from ((n.id, None) for n in ast.walk(item.optional_vars)
                            if isinstance(n, ast.Name))
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        yield from ((a.asname or a.name.split(".")[0], None) for a in node.names)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, None
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, None


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of the functions and classes it defines."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _parametrized(decorators: list[ast.expr]) -> set[str]:
    """The argument names `@pytest.mark.parametrize("a, b", ...)` decorators give values."""
    names: set[str] = set()
    for d in decorators:
        if not (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                and d.func.attr == "parametrize" and d.args):
            continue
        first = d.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names |= {n.strip() for n in first.value.replace("\\", ",").split(",")}
        elif isinstance(first, (ast.List, ast.Tuple)):
            names |= {e.value for e in first.elts if isinstance(e, ast.Constant)}
    return names - {""}


class _Scope:
    """The function holding the assertion: what its names are bound to."""

    def __init__(self, file: _File, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                 outer: list[ast.ClassDef]) -> None:
        self.file = file
        self.bound: dict[str, list[ast.expr | None]] = {}
        for node in _own_nodes(fn):
            for name, value in _bindings(node):
                self.bound.setdefault(name, []).append(value)
        args = fn.args
        self.params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                        *filter(None, (args.vararg, args.kwarg)))}
        self.given = _parametrized([*fn.decorator_list,
                                    *(d for c in outer for d in c.decorator_list)])

    def kind(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> str:
        if isinstance(node, ast.Constant):
            ok = isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
            return FIXED if ok else OTHER
        if isinstance(node, ast.BinOp):
            return _join(self.kind(n, seen) for n in (node.left, node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.kind(node.operand, seen)
        if isinstance(node, ast.Call):
            if self.file.is_clock(node.func):
                return CLOCK if not node.args and not node.keywords else OTHER
            if isinstance(node.func, ast.Name) and node.func.id in PASSING_THROUGH and \
                    node.func.id not in self.bound and not node.keywords and node.args:
                return _join(self.kind(a, seen) for a in node.args)
            return OTHER
        if isinstance(node, ast.Name):
            return self._name(node.id, seen)
        return OTHER

    def _name(self, name: str, seen: frozenset[str]) -> str:
        if name in seen:  # `t = t + ...`: its other bindings decide
            return FIXED
        seen = seen | {name}
        if name in self.bound:
            values = self.bound[name]
            if name in self.params and name not in self.given:
                return OTHER  # a helper's argument, then rebound: where it came from is unknown
            return _join(OTHER if v is None else self.kind(v, seen) for v in values)
        if name in self.params:
            return FIXED if name in self.given else OTHER
        values = self.file.constants.get(name)
        if values is None:
            return OTHER
        return _join(OTHER if v is None else _module_kind(self.file, v, seen) for v in values)


def _module_kind(file: _File, node: ast.expr, seen: frozenset[str]) -> str:
    """A module constant's kind: number literals and arithmetic of other such constants."""
    if isinstance(node, ast.Constant):
        ok = isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        return FIXED if ok else OTHER
    if isinstance(node, ast.BinOp):
        return _join(_module_kind(file, n, seen) for n in (node.left, node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _module_kind(file, node.operand, seen)
    if isinstance(node, ast.Name) and node.id not in seen and node.id in file.constants:
        return _join(OTHER if v is None else _module_kind(file, v, seen | {node.id})
                     for v in file.constants[node.id])
    return OTHER


@functools.lru_cache(maxsize=128)
def _parsed(path: str) -> _File | None:
    try:
        with open(path, encoding="utf-8") as f:
            return _File(ast.parse(f.read(), path))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def _holding(tree: ast.Module, line: int
             ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, list[ast.ClassDef],
                        ast.Assert | None]:
    """The innermost function holding `line`, the classes around it, and the assert statement
    at that line."""
    fn: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    classes: list[ast.ClassDef] = []
    found: ast.Assert | None = None
    body: list[ast.stmt] = tree.body
    while True:
        inner = next((n for n in body if n.lineno <= line <= (n.end_lineno or n.lineno)), None)
        if inner is None:
            break
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = inner
        elif isinstance(inner, ast.ClassDef):
            classes.append(inner)
        elif isinstance(inner, ast.Assert):
            found = inner
            break
        body = [n for n in ast.iter_child_nodes(inner) if isinstance(n, ast.stmt)] + \
            [s for h in getattr(inner, "handlers", ()) for s in h.body]
    return fn, classes, found


def is_timing(path: str, line: int) -> bool:
    """Is the statement at `line` of `path` an assertion comparing wall-clock time?"""
    file = _parsed(path)
    if file is None:
        return False
    fn, classes, stmt = _holding(file.tree, line)
    if fn is None or stmt is None or not isinstance(stmt.test, ast.Compare):
        return False
    scope = _Scope(file, fn, classes)
    kinds = [scope.kind(n) for n in (stmt.test.left, *stmt.test.comparators)]
    return CLOCK in kinds and OTHER not in kinds


def timing_failure(error: BaseException, root: str) -> str | None:
    """Where (file:line from `root`) a failed assertion of wall-clock time is, when `error` is
    one (see the module's docstring); None for any other error."""
    if not isinstance(error, AssertionError):
        return None
    base = os.path.realpath(root) + os.sep
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if os.path.realpath(f.filename).startswith(base)]
    if not frames or frames[-1].lineno is None:
        return None
    last = frames[-1]
    path = os.path.realpath(last.filename)
    if not is_timing(path, last.lineno):
        return None
    return f"{os.path.relpath(path, base)}:{last.lineno}"
