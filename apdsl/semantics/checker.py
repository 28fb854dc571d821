"""Static checks that need no execution: unknown names (with close matches), calls of builtins
and of the program's own functions with the wrong arguments or keywords, and constructs the
sandbox forbids.  Errors are collected, not raised, so `check` can report them all."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import ApdslError, ApdslNameError, ApdslTypeError
from ..syntax import ast
from .builtins import builtin_names, nki_names
from .statements import exception_call

# Names a declaration initialiser may use without being defined (`= zeros`, `= random(3)`).
INIT_NAMES = frozenset({"zeros", "ones", "arange", "random", "load"})


class Checker:
    def __init__(self, builtins: dict[str, Any] | None = None) -> None:
        self.builtins = builtins
        self.names = (set(builtin_names()) | set(nki_names()) if builtins is None
                      else set(builtins))
        self.errors: list[ApdslError] = []
        self.functions: dict[str, Any] = {}
        self._signatures: dict[str, inspect.Signature | None] = {}

    def check(self, module: ast.Module) -> list[ApdslError]:
        top = self._bound(module.body)
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.Kernel)):
                self.functions[node.name] = node
        for node in module.body:
            try:
                self._stmt(node, [top])
            except RecursionError:  # an expression too deep to walk: the interpreter says so
                pass
        return self.errors

    # -- scopes -------------------------------------------------------------------------------
    def _bound(self, body: list[Any]) -> set[str]:
        """Every name a block (and its nested blocks, not functions) binds."""
        out: set[str] = set()
        for node in body:
            out.update(ast.bound_names(node))
            if isinstance(node, ast.For):
                out.update(ast.target_names(node.target))
                out.update(self._bound(node.body))
                out.update(self._bound(node.orelse))
            elif isinstance(node, (ast.If, ast.While)):
                out.update(self._bound(node.body))
                out.update(self._bound(node.orelse or []))
        return out

    def _block(self, body: list[Any], scopes: list[set[str]]) -> None:
        for node in body:
            self._stmt(node, scopes)

    def _stmt(self, node: Any, scopes: list[set[str]]) -> None:
        if isinstance(node, ast.Decl):
            for d in node.type.dims:
                self._expr(d, scopes)
            if node.init is not None:
                init = node.init
                if isinstance(init, ast.Name) and init.id in INIT_NAMES:
                    return
                if isinstance(init, ast.Call) and isinstance(init.func, ast.Name) and \
                        init.func.id in INIT_NAMES:
                    for a in init.args:
                        self._expr(a, scopes)
                    return
                self._expr(init, scopes)
        elif isinstance(node, ast.Assign):
            self._expr(node.value, scopes)
            for t in node.targets:
                self._target(t, scopes)
        elif isinstance(node, ast.AugAssign):
            self._expr(node.target, scopes)
            self._expr(node.value, scopes)
        elif isinstance(node, ast.ExprStmt):
            self._expr(node.expr, scopes)
        elif isinstance(node, (ast.If, ast.While)):
            self._expr(node.test, scopes)
            self._block(node.body, scopes)
            self._block(node.orelse or [], scopes)
        elif isinstance(node, ast.For):
            self._expr(node.iter, scopes)
            self._block(node.body, scopes)
            self._block(node.orelse, scopes)
        elif isinstance(node, ast.Del):
            for t in node.targets:
                self._expr(t, scopes)
        elif isinstance(node, ast.Raise):
            name, args = exception_call(node.exc)
            for a in args if name is not None else (node.exc,):
                self._expr(a, scopes)
            self._expr(node.cause, scopes)
        elif isinstance(node, ast.Assert):
            self._expr(node.test, scopes)
            if node.msg is not None:
                self._expr(node.msg, scopes)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self._expr(node.value, scopes)
        elif isinstance(node, (ast.FunctionDef, ast.Kernel)):
            local = {p.name for p in node.params} | self._bound(node.body)
            for p in node.params:
                if p.default is not None:
                    self._expr(p.default, scopes)
                if getattr(p, "type", None) is not None:
                    # named dims of kernel parameters are bound by the inputs
                    for d in p.type.dims:
                        if isinstance(d, ast.Name):
                            local.add(d.id)
            self._block(node.body, scopes + [local])

    def _target(self, t: Any, scopes: list[set[str]]) -> None:
        """An assignment target: names bind; elements and attributes read their parts."""
        if isinstance(t, ast.Name):
            return
        if isinstance(t, (ast.TupleExpr, ast.ListExpr)):
            for item in t.items:
                self._target(item, scopes)
        elif isinstance(t, ast.Starred):
            self._target(t.value, scopes)
        elif isinstance(t, (ast.Subscript, ast.Attribute)):
            self._expr(t, scopes)
        else:
            self.errors.append(ApdslNameError(
                "cannot assign to this expression", code="APK107", span=t.span,
                help="assign to a name, an element or a tuple of them; views are made by "
                "methods, data moves by instructions"))

    def _known(self, name: str, scopes: list[set[str]]) -> bool:
        return name in self.names or any(name in s for s in scopes)

    def _expr(self, node: Any, scopes: list[set[str]]) -> None:
        if node is None:
            return
        if isinstance(node, ast.Name):
            if isinstance(node, ast.NkiName):  # `nl.X`: an NKI name, never the program's own
                if f"{node.space}.{node.id}" not in self.names and node.id not in self.names:
                    self.errors.append(ApdslNameError(
                        f"unknown name '{node.space}.{node.id}'", code="APK101",
                        span=node.span, name=f"{node.space}.{node.id}"))
                return
            if not self._known(node.id, scopes):
                pool = sorted(self.names.union(*scopes))
                from difflib import get_close_matches
                close = get_close_matches(node.id, pool, n=3)
                self.errors.append(ApdslNameError(
                    f"unknown name '{node.id}'", code="APK101", span=node.span,
                    help=f"did you mean {' or '.join(map(repr, close))}?" if close else None,
                    name=node.id))
            return
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                self.errors.append(ApdslNameError(
                    f"attribute '{node.attr}' is not accessible", code="APK103",
                    span=getattr(node, "attr_span", None) or node.span,
                    help="names starting with '_' are private"))
            self._expr(node.value, scopes)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            # the clauses' loop names are the comprehension's own (Python 3 scoping)
            inner = scopes + [{n for g in node.generators for n in ast.target_names(g.target)}]
            for g in node.generators:
                self._expr(g.iter, inner)
                for c in g.ifs:
                    self._expr(c, inner)
            for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (
                    node.elt,):
                self._expr(part, inner)
            return
        if isinstance(node, ast.Lambda):
            for p in node.params:
                self._expr(p.default, scopes)
            self._expr(node.body, scopes + [{p.name for p in node.params}])
            return
        if isinstance(node, ast.Call):
            self._expr(node.func, scopes)
            for a in node.args:
                self._expr(a, scopes)
            for k in node.keywords:
                self._expr(k.value, scopes)
            self._call(node, scopes)
            return
        for child in ast.children(node):
            self._expr(child, scopes)

    def _call(self, node: Any, scopes: list[set[str]]) -> None:
        f = node.func
        if isinstance(f, ast.NkiName):  # `nl.X(...)`: NKI's X (builtins.nki_lookup)
            key = f"{f.space}.{f.id}"
            if self.builtins is not None and key in self.builtins:
                self._builtin_call(node, key, key)
            elif self.builtins is not None and f.id in self.builtins:
                self._builtin_call(node, f.id, key)
            return
        if not isinstance(f, ast.Name) or any(f.id in s for s in scopes[1:]):
            return
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.name is None for k in node.keywords):
            return  # `*xs` and `**kw`: how many arguments is known only when it runs
        name = f.id
        if name in self.functions and name in scopes[0]:
            fn = self.functions[name]
            params = [p.name for p in fn.params]
            required = [p.name for p in fn.params if p.default is None]
            self._match(node, name, params, required, varargs=False)
            return
        if self.builtins is None or name not in self.builtins or name in scopes[0]:
            return
        self._builtin_call(node, name, name)

    def _builtin_call(self, node: Any, key: str, name: str) -> None:
        """Check a call of builtin `self.builtins[key]` against its signature."""
        if key not in self._signatures:
            try:
                self._signatures[key] = inspect.signature(self.builtins[key])
            except (TypeError, ValueError):
                self._signatures[key] = None
        sig = self._signatures[key]
        if sig is None:
            return
        ps = list(sig.parameters.values())
        if any(p.kind is p.VAR_KEYWORD for p in ps):
            return
        varargs = any(p.kind is p.VAR_POSITIONAL for p in ps)
        params = [p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY,
                                                    p.POSITIONAL_ONLY)]
        required = [p.name for p in ps if p.default is p.empty and p.kind in (
            p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        positional = [p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                        p.POSITIONAL_ONLY)]
        self._match(node, name, params, required, varargs, positional)

    def _match(self, node: Any, name: str, params: list[str], required: list[str],
               varargs: bool, positional: list[str] | None = None) -> None:
        positional = params if positional is None else positional
        n = len(node.args)
        if not varargs and n > len(positional):
            self.errors.append(ApdslTypeError(
                f"{name}() takes at most {len(positional)} positional arguments, got {n}",
                code="APK102", span=node.span, help=f"parameters: {', '.join(params)}"))
            return
        given = set(positional[:n])
        unknown = False
        for k in node.keywords:
            if k.name not in params:
                from difflib import get_close_matches
                close = get_close_matches(k.name, params, n=2)
                unknown = True
                self.errors.append(ApdslTypeError(
                    f"{name}() has no parameter '{k.name}'", code="APK102",
                    span=getattr(k, "name_span", None) or k.span,
                    help=f"did you mean {' or '.join(map(repr, close))}?" if close
                    else f"parameters: {', '.join(params)}"))
            elif k.name in given:
                self.errors.append(ApdslTypeError(
                    f"{name}() got '{k.name}' twice", code="APK102", span=k.span))
            given.add(k.name)
        missing = [r for r in required if r not in given]
        if missing and not unknown:  # a misspelt keyword explains the missing argument
            self.errors.append(ApdslTypeError(
                f"{name}() is missing {'argument' if len(missing) == 1 else 'arguments'} "
                f"{', '.join(repr(m) for m in missing)}", code="APK102", span=node.span,
                help=f"parameters: {', '.join(params)}"))
