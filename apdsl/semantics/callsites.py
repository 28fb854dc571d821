"""Run mode's call sites of builtins, specialised when they are compiled.

A call `dma_copy(a0, a_sub)` or `wait_flag("M_MTE1", i)` names a builtin, and the builtin's
kind is known when the call is compiled: an instruction (its implementation called straight, as
`calls.py`'s direct path does), an Ascend event (`set_flag`, `wait_flag`, `pipe_barrier`: the
sync function straight, the event recorded when tracing), or another callable builtin (host
helpers, TLA, `range`, ...).  Each site gets a closure made for its shape: constants and local
names read inline, keyword arguments passed as keywords, no tuple or dict built for arguments
when nothing traces, no wrapper, no `Interpreter.instruction`.

The general closure of the call stays the authority: a program that binds the builtin's name
(a local, a module name) gets it, and so does the step budget when it runs out, so every error
and every step is what the general path gives.  Check mode never comes here.

The closures are generated from a template per shape (kind, argument kinds, keyword names),
compiled once per process and kept (an internal memo of code, never observable), as
`apdsl.records` does for its `__init__`s.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

from ..runtime.trace import calling, record_event
from ..syntax import ast
from ..tensor.machine import current
from ..tensor.view import Tensor
from .frames import Closure

_FACTORIES: dict[str, Callable[..., Closure]] = {}  # source -> factory
_MAX_FACTORIES = 1024


def builtin_site(interp: Any, node: Any, args: list[Closure], kwargs: list[tuple[str, Closure]],
                 general: Closure, failed: Callable[[Any, BaseException], BaseException],
                 unrecorded: list[tuple[int, Any]], errors: tuple) -> Closure | None:
    """The specialised closure of call `node` (run mode, a bare builtin name called with plain
    positional and keyword arguments), or None where the general closure is all there is."""
    func = node.func
    if interp.dry or type(func) is not ast.Name:
        return None
    name = func.id
    fn = interp.builtins.get(name)
    if fn is None or not callable(fn):
        return None
    kind, impl = _kind(interp, name, fn)
    if impl is None:
        return None
    kw_names = tuple(k for k, _ in kwargs)
    if not all(k.isidentifier() and not keyword.iskeyword(k) for k in kw_names):
        return None
    values: list[Any] = []  # what the site's source names x0, x1, ...
    local = _Atoms(interp, values)
    positional = [local.source(a, ev) for a, ev in zip(node.args, args)]
    keywords = [local.source(k.value, ev) for k, (_, ev) in zip(node.keywords, kwargs)]
    record = [(i, local.value(made)) for i, made in unrecorded] if kind == "plain" else []
    source = _source(kind, len(values), positional, list(zip(kw_names, keywords)), record)
    factory = _FACTORIES.get(source)
    if factory is None:
        factory = _compile(source)
        if len(_FACTORIES) < _MAX_FACTORIES:
            _FACTORIES[source] = factory
    span = node.span
    return factory(budget=interp.budget, general=general, failed=failed, fn=fn, impl=impl,
                   name=name, span=span, location=(span.file, span.line), interp=interp,
                   origins=interp.origins, X=tuple(values), CALL_ERRORS=errors)


class _Atoms:
    """The source of each argument of a site: a constant, a local name read inline (its
    compiled closure when it is not a local), a tuple display of those, else its closure."""

    def __init__(self, interp: Any, values: list[Any]) -> None:
        self.interp = interp
        self.values = values

    def value(self, v: Any) -> str:
        self.values.append(v)
        return f"x{len(self.values) - 1}"

    def source(self, node: Any, compiled: Closure) -> str:
        inline = self._inline(node)
        if inline is not None:
            return inline
        return f"{self.value(compiled)}(frame)"

    def _inline(self, node: Any) -> str | None:
        kind = type(node)
        if kind is ast.Const or kind is ast.Str:
            return self.value(node.value)
        if kind is ast.Name and node.id not in self.interp.builtins:
            name = self.value(node.id)
            load = self.value(self.interp.compile_expr(node))
            return f"(v[{name}] if {name} in v else {load}(frame))"
        if kind is ast.TupleExpr and node.items and all(type(i) is ast.Const
                                                        for i in node.items):
            return self.value(tuple(i.value for i in node.items))  # `(128, 64)`: built once
        if kind is ast.TupleExpr and 0 < len(node.items) <= 4:
            items = [self._inline(i) if type(i) is not ast.Starred else None
                     for i in node.items]
            if all(i is not None for i in items):
                return "(" + "".join(f"{i}, " for i in items) + ")"
        return None


def argument_tuple(interp: Any, nodes: list[Any], args: list[Closure]) -> Closure:
    """A closure giving the positional argument values of a call (a tuple, left to right),
    constants and local names read inline (a helper's call with a dozen names, `load_slab(A,
    B, m, n, ...)`, is one Python call)."""
    values: list[Any] = []
    atoms = _Atoms(interp, values)
    parts = [atoms.source(a, ev) for a, ev in zip(nodes, args)]
    lines = ["def make(X):"]
    lines += [f"    x{j} = X[{j}]" for j in range(len(values))]
    lines += ["    def positional(frame):",
              "        v = frame.vars",
              "        return (" + "".join(f"{p}, " for p in parts) + ")",
              "    return positional"]
    source = "\n".join(lines) + "\n"
    factory = _FACTORIES.get(source)
    if factory is None:
        factory = _compile(source)
        if len(_FACTORIES) < _MAX_FACTORIES:
            _FACTORIES[source] = factory
    return factory(tuple(values))


def _kind(interp: Any, name: str, fn: Any) -> tuple[str, Any]:
    """What the builtin `fn` (named `name`) is, and the callable a site calls."""
    from .builtins import EVENTS, INSTRUCTIONS, TLA
    impl = interp.direct_instructions.get(fn)
    if impl is not None:
        return "instr", impl
    if name in INSTRUCTIONS:  # an Ascend-only instruction: its executor loads now
        from ..runtime.table import implementation
        return "instr", implementation(name)
    if name in EVENTS:
        return "event", getattr(fn, "__wrapped__", None)
    if name in TLA:
        from ..tensor import tla
        return "plain", getattr(tla, name)
    return "plain", fn


def _source(kind: str, n: int, positional: list[str], keywords: list[tuple[str, str]],
            record: list[tuple[int, str]]) -> str:
    """The source of a site's factory: `make(...)` returning the site's closure."""
    lines = ["def make(*, budget, general, failed, fn, impl, name, span, location, interp,",
             "         origins, X, CALL_ERRORS):"]
    lines += [f"    x{j} = X[{j}]" for j in range(n)]
    lines += [
        "    def site(frame):",
        "        budget.left -= 1",
        "        if budget.left < 0:",
        "            budget.left += 1",
        "            return general(frame)",
        "        v = frame.vars",
        "        if name in v or name in frame.glob:",  # the program's own binding of the name
        "            budget.left += 1",
        "            return general(frame)",
    ]
    # evaluated left to right, positional arguments then keywords, as the general closure does
    lines += [f"        a{i} = {src}" for i, src in enumerate(positional)]
    lines += [f"        k{j} = {src}" for j, (_, src) in enumerate(keywords)]
    lines.append("        interp.call_span = span")
    names = [f"a{i}" for i in range(len(positional))]
    kws = [f"k{j}" for j in range(len(keywords))]
    direct = ", ".join(names + [f"{k}=k{j}" for j, (k, _) in enumerate(keywords)])
    as_tuple = "(" + "".join(f"{a}, " for a in names) + ")"
    as_dict = "{" + ", ".join(f"{k!r}: k{j}" for j, (k, _) in enumerate(keywords)) + "}"
    if kind == "plain":
        for i, made in record:  # a view made in an argument: where it was made
            lines.append(f"        if type(a{i}) is Tensor:")
            lines.append(f"            origins.setdefault(a{i}, {made})")
        lines += ["        try:",
                  f"            result = impl({direct})",
                  "        except CALL_ERRORS as e:",
                  "            raise failed(fn, e) from None"]
    else:
        lines += ["        m = current()",
                  "        m.location = location",
                  "        m.span = span",
                  "        try:",
                  "            if m.trace is None:",
                  f"                result = impl({direct})",
                  "            else:",
                  f"                result = calling(impl, {as_tuple}, {as_dict})"]
        if kind == "event":  # valid (it returned): `lower` shows it in program order
            every = "(" + "".join(f"{a}, " for a in names + kws) + ")"
            lines.append(f"                record_event(name, {every})")
        lines += ["        except CALL_ERRORS as e:",
                  "            raise failed(fn, e) from None"]
    lines += ["        if type(result) is Tensor:",
              "            origins.setdefault(result, span)",
              "        return result",
              "    return site"]
    return "\n".join(lines) + "\n"


def _compile(source: str) -> Callable[..., Closure]:
    scope = {"current": current, "calling": calling, "record_event": record_event,
             "Tensor": Tensor}
    exec(compile(source, "<apdsl call site>", "exec"), scope)  # noqa: S102 - our own template
    return scope["make"]  # type: ignore[no-any-return]
