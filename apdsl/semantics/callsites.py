"""Run mode's generated code: call sites of builtins, the assignments of their results, and
the straight blocks made of them, specialised when they are compiled.

A call `dma_copy(a0, a_sub)` or `wait_flag("M_MTE1", i)` names a builtin, and the builtin's
kind is known when the call is compiled: an instruction (its implementation called straight, as
`calls.py`'s direct path does), an Ascend event (`set_flag`, `wait_flag`, `pipe_barrier`: the
sync function straight, the event recorded when tracing), or another callable builtin (host
helpers, TLA, `range`, ...).  Each site is Python source made for its shape: constants, local
names and tuples of them read inline, keyword arguments passed as keywords, no tuple or dict
built for the arguments when nothing traces, no wrapper, no `Interpreter.instruction`.  A
straight block (`blocks.py`) puts its statements' code in one function, so a loop body of
instruction calls is one Python call per iteration.

The general closure of the call stays the authority: a program that binds the builtin's name
(a local, a module name) gets it, and so does the step budget when it runs out, so every error
and every step is what the general path gives.  Check mode never comes here.

The code is generated from its shape only (the values it uses are named x0, x1, ... and bound
when a closure is made), compiled once per process and kept (an internal memo of code, never
observable), as `apdsl.records` does for its `__init__`s.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

from ..errors import ApdslError, Span
from ..runtime.core.trace import calling, record_event
from ..syntax import ast
from ..tensor.machine import current
from ..tensor.view import Tensor
from .frames import Closure
from .host import Compiler
from .pyerrors import PY_ERRORS, python_error

_FACTORIES: dict[str, Callable[..., Closure]] = {}  # source -> factory
_MAX_FACTORIES = 1024
_MAX_BLOCK = 64  # statements of a block put in one function

# Lines of code computing `result`, given the names of the values they use
Emitter = Callable[["Namer"], list[str]]


class Namer:
    """The values generated code refers to, each bound to a name x0, x1, ..."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.machine = False  # whether the code uses `m`, the current machine

    def value(self, v: Any) -> str:
        self.values.append(v)
        return f"x{len(self.values) - 1}"

    def temp(self) -> str:
        """A local of the generated function for an inline expression (`:=`)."""
        self.temps = getattr(self, "temps", 0) + 1
        return f"t{self.temps}"


def make_function(kind: str, body: list[str], namer: Namer) -> Closure:
    """A closure `kind(frame)` running `body` (lines at the function's indentation, `v` being
    the frame's locals), its values bound from `namer`."""
    lines = ["def make(X):"]
    lines += [f"    x{j} = X[{j}]" for j in range(len(namer.values))]
    lines.append(f"    def {kind}(frame):")
    lines.append("        v = frame.vars")
    lines.append("        g = frame.glob")
    if namer.machine:
        # the machine the program runs on: the same for every statement of a block (a
        # builtin that enters another, `nl.ndarray(address=...)`, leaves it before it returns)
        lines.append("        m = current()")
    lines += ["        " + line for line in body]
    lines.append(f"    return {kind}")
    source = "\n".join(lines) + "\n"
    factory = _FACTORIES.get(source)
    if factory is None:
        scope = {"current": current, "calling": calling, "record_event": record_event,
                 "Tensor": Tensor}
        exec(compile(source, f"<apdsl {kind}>", "exec"), scope)  # noqa: S102 - our template
        factory = scope["make"]
        if len(_FACTORIES) < _MAX_FACTORIES:
            _FACTORIES[source] = factory
    return factory(tuple(namer.values))


def builtin_site(interp: Compiler, node: Any, args: list[Closure], kwargs: list[tuple[str, Closure]],
                 general: Closure, failed: Callable[[Any, BaseException], BaseException],
                 unrecorded: list[tuple[int, Any]], errors: tuple) -> Closure | None:
    """The specialised closure of call `node` (run mode, a bare builtin name called with plain
    positional and keyword arguments), or None where the general closure is all there is.
    The closure carries `emit`, its code, for a block or an assignment to inline."""
    emit = _call_emitter(interp, node, args, kwargs, general, failed, unrecorded, errors)
    if emit is None:
        return None
    namer = Namer()
    site = make_function("site", emit(namer) + ["return result"], namer)
    site.emit = emit  # type: ignore[attr-defined]
    return site


def _call_emitter(interp: Compiler, node: Any, args: list[Closure],
                  kwargs: list[tuple[str, Closure]], general: Closure,
                  failed: Callable[[Any, BaseException], BaseException],
                  unrecorded: list[tuple[int, Any]], errors: tuple) -> Emitter | None:
    func = node.func
    if interp.dry or type(func) not in (ast.Name, ast.NkiName):
        return None
    name = func.id
    table = interp.builtins
    # `nisa.dma_copy(...)` is never a program's name: its site stands for `nki_lookup`'s
    # answer (NKI's own meaning first, else the builtin) while the table gives the same
    own = f"{func.space}.{name}" if type(func) is ast.NkiName else None
    fn = table.get(own) if own is not None else None
    own_found = fn is not None
    if own_found:  # (`nl.ndarray`, `nl.transpose`: an instruction or plain, never an event)
        impl = interp.direct_instructions.get(fn)
        kind, impl = ("instr", impl) if impl is not None else ("plain", fn)
    else:
        fn = table.get(name)
        if fn is None or not callable(fn):
            return None  # (the general closure's unknown-name error)
        kind, impl = _kind(interp, name, fn)
    if impl is None or not callable(fn):
        return None
    kw_names = tuple(k for k, _ in kwargs)
    if not all(k.isidentifier() and not keyword.iskeyword(k) for k in kw_names):
        return None
    span = node.span
    location = (span.file, span.line)
    arg_nodes = list(node.args)
    kw_nodes = [k.value for k in node.keywords]

    def emit(namer: Namer) -> list[str]:
        x = namer.value
        atoms = _Atoms(interp, namer)
        budget, callee = x(interp.budget), x(name)
        the_span, the_fn, the_impl, origins = x(span), x(fn), x(impl), x(interp.origins)
        if own is None:  # a program's own binding of the name
            guard = f"{callee} in v or {callee} in g"
        elif own_found:
            guard = f"{x(table)}.get({x(own)}) is not {the_fn}"
        else:
            guard = f"{x(own)} in {x(table)} or {x(table)}.get({callee}) is not {the_fn}"
        lines = [f"{budget}.left -= 1",
                 f"if {budget}.left < 0 or {guard}:",
                 f"    {budget}.left += 1",  # the general closure charges (and stops) itself
                 f"    result = {x(general)}(frame)",
                 "else:"]
        body = []
        # evaluated left to right, positional arguments then keywords, as the general closure
        body += [f"a{i} = {atoms.source(a, ev)}" for i, (a, ev) in enumerate(zip(arg_nodes,
                                                                                  args))]
        body += [f"k{j} = {atoms.source(k, ev)}" for j, (k, (_, ev)) in enumerate(zip(kw_nodes,
                                                                                   kwargs))]
        if kind == "plain":  # (what allocates reads it: ndarray, the nl functions)
            body.append(f"{x(interp)}.call_span = {the_span}")
        names = [f"a{i}" for i in range(len(arg_nodes))]
        kws = [f"k{j}" for j in range(len(kw_names))]
        direct = ", ".join(names + [f"{k}=k{j}" for j, k in enumerate(kw_names)])
        caught = x(errors)
        if kind == "plain":
            for i, made in unrecorded:  # a view made in an argument: where it was made
                body += [f"if type(a{i}) is Tensor and ((entry := {origins}.spans.get(id(a{i})))"
                         f" is None or entry[0]() is not a{i}):",
                         f"    {origins}[a{i}] = {x(made)}"]
            body += ["try:",
                     f"    result = {the_impl}({direct})"]
        else:
            as_tuple = "(" + "".join(f"{a}, " for a in names) + ")"
            as_dict = "{" + ", ".join(f"{k!r}: k{j}" for j, k in enumerate(kw_names)) + "}"
            namer.machine = True  # `m`: the machine, read once when the function starts
            body += [f"m.location = {x(location)}",
                     f"m.span = {the_span}",
                     "try:",
                     "    if m.trace is None:",
                     f"        result = {the_impl}({direct})",
                     "    else:"]
            if kind == "event":  # valid (it returned): `lower` shows it in program order
                # (an event puts no row in the trace while it runs: nothing for `calling`)
                every = "(" + "".join(f"{a}, " for a in names + kws) + ")"
                body += [f"        result = {the_impl}({direct})",
                         f"        record_event({callee}, {every})"]
            else:
                body.append(f"        result = calling({the_impl}, {as_tuple}, {as_dict})")
        body += [f"except {caught} as e:",
                 f"    raise {x(failed)}({the_fn}, e) from None",
                 "if type(result) is Tensor:",  # origins.setdefault(result, span), inline
                 f"    entry = {origins}.spans.get(id(result))",
                 "    if entry is None or entry[0]() is not result:",
                 f"        {origins}[result] = {the_span}"]
        return lines + ["    " + line for line in body]
    return emit


def assign_emitter(call: Closure, target: str) -> Emitter | None:
    """The code of `target = <call>` for a call site's closure `call`: the result stored in the
    frame's locals, a new tensor named after it, as `assignments.py` does."""
    emit = getattr(call, "emit", None)
    if emit is None:
        return None

    def assign(namer: Namer) -> list[str]:
        name = namer.value(target)
        return emit(namer) + [
            "if type(result) is Tensor:",
            "    storage = result.storage",
            "    if storage.name.startswith('%'):",  # `x = ndarray(...)` is called x
            f"        storage.name = {name}",
            f"v[{name}] = result"]
    return assign


def straight_block(pairs: list[tuple[Closure, Any]], located: Callable[..., Any],
                   caught: tuple) -> Closure | None:
    """The statements of a straight block in one function, each statement's code inline where
    it has some (`emit`), else a call of its closure; the failing statement's span attached,
    as `blocks.py` does.  None when the block is long."""
    if len(pairs) > _MAX_BLOCK:
        return None  # (a long block runs statement by statement: compiling it would cost)
    namer = Namer()
    x = namer.value
    catch, locate = x(caught), x(located)
    body: list[str] = []
    for st, span in pairs:
        emit = getattr(st, "emit", None)
        code = emit(namer) if emit is not None else [f"{x(st)}(frame)"]
        body += ["try:"] + ["    " + line for line in code] + [
            f"except {catch} as e:",
            f"    raise {locate}(e, {x(span)}) from None"]
    return make_function("block", body, namer)


def value_emitter(interp: Compiler, node: Any, compiled: Closure, target: str,
                  store: Callable[[Any, Any], None]) -> Emitter | None:
    """The code of `target = <node>` for a value the code reads inline (`i = 1 - i`,
    `a1 = slab[0]`), else None; a tensor value goes through `store`, the general assignment's
    (its origin and name)."""
    if not _Atoms.inlines(interp, node):
        return None

    def assign(namer: Namer) -> list[str]:
        atoms = _Atoms(interp, namer)
        if type(node) in (ast.BinOp, ast.Compare, ast.BoolOp):
            pure = atoms._pure(node)  # an int or a bool when computed inline: no tensor
            if pure is not None:
                conds, core = pure
                name = namer.value(target)
                return [f"if {' and '.join(conds)}:",
                        f"    v[{name}] = {core}",
                        "else:",
                        f"    {namer.value(store)}(frame, {namer.value(compiled)}(frame))"]
        source = atoms.source(node, compiled)
        name = namer.value(target)
        return [f"result = {source}",
                "if type(result) is Tensor:",
                f"    {namer.value(store)}(frame, result)",
                "else:",
                f"    v[{name}] = result"]
    return assign


# tensor attributes read inline (fields: nothing to raise; TENSOR_ATTRS allows them)
_FIELDS = ("dtype", "shape")
_INT_COMPARE = frozenset({"<", "<=", ">", ">=", "==", "!="})
_INT_BINOPS = frozenset({"+", "-", "*", "%", "//"})


class _Atoms:
    """The source of each argument of a site: a constant, a local name read inline (its
    compiled closure when it is not a local), a tuple display of those; an int `+`/`-` or
    comparison of local names and int constants, `and`/`or` of such comparisons, and a tuple
    element `t[i]`, each computed inline when its operands are what it expects (ints within
    the int limit, a tuple and an index in range) and by its compiled closure otherwise; else
    its closure."""

    def __init__(self, interp: Compiler, namer: Namer) -> None:
        self.interp = interp
        self.value = namer.value
        self.temp = namer.temp

    @staticmethod
    def inlines(interp: Compiler, node: Any) -> bool:
        """Whether `node` is computed inline (not only by its compiled closure)."""
        probe = _Atoms(interp, Namer())
        return probe._inline(node) is not None

    def _local(self, node: Any) -> bool:
        return type(node) is ast.Name and node.id not in self.interp.builtins

    def _int(self, node: Any, bound: int | None) -> tuple[list[str], str] | None:
        """(conditions, source) of an int operand: an int constant, or a local name whose
        value must be an int (within `bound` of zero, when given)."""
        if type(node) is ast.Const and type(node.value) is int:
            return [], self.value(node.value)
        if type(node) is ast.BinOp and node.op in _INT_BINOPS:
            # `(k + 1) * T`: the inner operation inline, its value a temp held within `bound`
            inner = self._binop(node)
            if inner is None:
                return None
            t = self.temp()
            conds = [*inner[0], f"type({t} := {inner[1]}) is int"]
            if bound is not None:
                conds.append(f"{self.value(-bound)} <= {t} <= {self.value(bound)}")
            return conds, t
        if self._local(node):
            t, name = self.temp(), self.value(node.id)
            conds = [f"{name} in v", f"type({t} := v[{name}]) is int"]
            if bound is not None:
                conds.append(f"{self.value(-bound)} <= {t} <= {self.value(bound)}")
            return conds, t
        return None

    def _binop(self, node: Any) -> tuple[list[str], str] | None:
        """`+ - *` of ints, with bounds on the names that keep the result within the int limit
        (SPEC 15); `% //` by a nonzero int (they cannot grow)."""
        from .limits import MAX_INT
        op = node.op
        consts = [n.value for n in (node.left, node.right) if type(n) is ast.Const]
        if any(type(c) is not int for c in consts) or len(consts) == 2:
            return None
        c = consts[0] if consts else None
        if op in ("+", "-"):
            bound: int | None = MAX_INT - abs(c) if c is not None else MAX_INT // 2
        elif op == "*":
            bound = MAX_INT // max(1, abs(c)) if c is not None else 2 ** 511
        else:
            bound = None
            if type(node.right) is ast.Const and node.right.value == 0:
                return None  # the general closure's division by zero
        left, right = self._int(node.left, bound), self._int(node.right, bound)
        if left is None or right is None:
            return None
        conds = left[0] + right[0]
        if op in ("%", "//") and type(node.right) is not ast.Const:
            conds.append(f"{right[1]} != 0")
        return conds, f"{left[1]} {op} {right[1]}"

    def _compare(self, node: Any) -> tuple[list[str], str] | None:
        if type(node) is not ast.Compare or len(node.ops) != 1 or \
                node.ops[0] not in _INT_COMPARE:
            return None
        left, right = self._int(node.left, None), self._int(node.comparators[0], None)
        if left is None or right is None or not (left[0] or right[0]):
            return None
        return left[0] + right[0], f"{left[1]} {node.ops[0]} {right[1]}"

    def _pure(self, node: Any) -> tuple[list[str], str] | None:
        """(conditions, source) of the inline forms that need a fallback."""
        kind = type(node)
        if kind is ast.BinOp and node.op in _INT_BINOPS:
            return self._binop(node)
        if kind is ast.Compare:
            return self._compare(node)
        if kind is ast.BoolOp and 2 <= len(node.values) <= 4:
            parts = [self._compare(v) for v in node.values]
            if any(p is None for p in parts):
                return None
            conds = [c for p in parts for c in p[0]]  # type: ignore[index]
            return conds, "(" + f" {node.op} ".join(p[1] for p in parts) + ")"  # type: ignore
        if kind is ast.Subscript and len(node.index) == 1 and self._local(node.value) and \
                type(node.index[0]) is not ast.Slice:
            index = self._int(node.index[0], None)
            if index is None:
                return None
            t, name = self.temp(), self.value(node.value.id)
            conds = [f"{name} in v", f"type({t} := v[{name}]) is tuple", *index[0],
                     f"-len({t}) <= {index[1]} < len({t})"]
            return conds, f"{t}[{index[1]}]"
        return None

    def _slices(self, node: Any) -> tuple[list[str], str] | None:
        """(conditions, source) of the key of `A[k * T:(k + 1) * T, 0:64]`, a tensor local
        indexed by slices (no step) and ints of the inline int forms; else None."""
        if not 1 <= len(node.index) <= 3 or not self._local(node.value) or \
                not any(type(i) is ast.Slice for i in node.index):
            return None
        conds: list[str] = []
        parts = []
        for i in node.index:
            if type(i) is not ast.Slice:
                part = self._int(i, None)
                if part is None:
                    return None
                conds += part[0]
                parts.append(part[1])
                continue
            if i.step is not None:
                return None
            if all(b is None or type(b) is ast.Const and type(b.value) is int
                   for b in (i.start, i.stop)):  # `:`, `0:64`: the slice made once
                parts.append(self.value(slice(*(None if b is None else b.value
                                                for b in (i.start, i.stop)))))
                continue
            bounds = []
            for b in (i.start, i.stop):
                if b is None:
                    bounds.append("None")
                    continue
                part = self._int(b, None)
                if part is None:
                    return None
                conds += part[0]
                bounds.append(part[1])
            parts.append(f"slice({bounds[0]}, {bounds[1]})")
        t, name = self.temp(), self.value(node.value.id)
        key = parts[0] if len(parts) == 1 else "(" + "".join(f"{p}, " for p in parts) + ")"
        # the tensor read first, as the general closure reads the value before the key
        return [f"{name} in v", f"type({t} := v[{name}]) is Tensor", *conds], \
            f"{self.value(subscript)}({t}, {key}, {self.value(node.span)})"

    def source(self, node: Any, compiled: Closure) -> str:
        inline = self._inline(node, compiled)
        if inline is not None:
            return inline
        return f"{self.value(compiled)}(frame)"

    def _inline(self, node: Any, compiled: Closure | None = None) -> str | None:
        pure = self._pure(node)
        if pure is not None:
            conds, source = pure
            fallback = self.value(compiled) if compiled is not None else "None"
            return f"({source} if {' and '.join(conds)} else {fallback}(frame))"
        kind = type(node)
        if kind is ast.Subscript and compiled is not None:
            sliced = self._slices(node)
            if sliced is not None:
                conds, source = sliced
                return f"({source} if {' and '.join(conds)} else {self.value(compiled)}(frame))"
        if kind is ast.Attribute and compiled is not None and node.attr in _FIELDS and \
                self._local(node.value):  # `lhsT.dtype`: a tensor's field, as get_attribute
            t, name = self.temp(), self.value(node.value.id)
            return (f"({t}.{node.attr} if {name} in v and type({t} := v[{name}]) is Tensor "
                    f"else {self.value(compiled)}(frame))")
        if kind is ast.NkiName and compiled is not None:  # `nl.sbuf`: nki_lookup's answer
            table, t = self.value(self.interp.builtins), self.temp()
            own = f"{node.space}.{node.id}"
            if own in self.interp.builtins:
                return (f"({t} if ({t} := {table}.get({self.value(own)})) is not None "
                        f"else {self.value(compiled)}(frame))")
            return (f"({t} if {self.value(own)} not in {table} and ({t} := "
                    f"{table}.get({self.value(node.id)})) is not None "
                    f"else {self.value(compiled)}(frame))")
        if kind is ast.Const or kind is ast.Str:
            return self.value(node.value)
        if kind is ast.Name and node.id not in self.interp.builtins:
            name = self.value(node.id)
            load = self.value(self.interp.compile_expr(node))
            return f"(v[{name}] if {name} in v else {load}(frame))"
        if kind is ast.TupleExpr and node.items and all(type(i) is ast.Const
                                                        for i in node.items):
            return self.value(tuple(i.value for i in node.items))  # `(128, 64)`: built once
        if kind is ast.TupleExpr and 0 < len(node.items) <= 4 and all(
                type(i) is ast.Const or type(i) is ast.Name and i.id not in self.interp.builtins
                for i in node.items):
            return "(" + "".join(f"{self._inline(i)}, " for i in node.items) + ")"
        return None


def subscript(value: Any, key: Any, span: Span | None) -> Any:
    """`value[key]` with the general subscript's errors (located at the subscript); the
    origin of a view made in a call's argument is the call's to record."""
    try:
        return value[key]
    except ApdslError as e:
        raise e.with_span(span) from None
    except PY_ERRORS as e:
        raise python_error(e, span) from None


def _kind(interp: Compiler, name: str, fn: Any) -> tuple[str, Any]:
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
