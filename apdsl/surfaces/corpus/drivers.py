"""Which of a repository's files drive a kernel (see `find`): its tests and `__main__` blocks
that name it, the test functions among them that do, and the kernels a test defines inside
itself."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence

from .find import Driver, EntryPoint, Source, api_of, kernels


def is_test_file(path: str) -> bool:
    name = os.path.basename(path)
    return name.startswith("test_") or name.endswith("_test.py")


def imports_module(src: Source, stem: str) -> bool:
    """Does the file import a module called `stem` (by any dotted path, or by name from its
    package)?"""
    return stem in src.imported


def _names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def _helpers(src: Source) -> dict[str, set[str]]:
    """Module-level functions and classes, and the methods of those classes that are not
    tests (a test class's `self.run_case(...)`): name -> the names their bodies use."""
    out: dict[str, set[str]] = {}
    for n in src.tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = _names(n)
        if isinstance(n, ast.ClassDef):
            for m in n.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        not m.name.startswith("test"):
                    out.setdefault(m.name, _names(m))
    return out


def _reaches(used: set[str], name: str, helpers: dict[str, set[str]]) -> bool:
    """`name` is used, or used by a module-level helper used (two hops at most)."""
    if name in used:
        return True
    for h in used & helpers.keys():
        inner = helpers[h]
        if name in inner or any(name in helpers[g] for g in inner & helpers.keys() if g != h):
            return True
    return False


def tests_of(src: Source) -> Iterator[tuple[str, ast.AST]]:
    """(pytest node id suffix, node) of the test functions and methods of a test file."""
    for node in src.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name.startswith("test"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        m.name.startswith("test"):
                    yield f"{node.name}::{m.name}", m


def main_block(src: Source) -> ast.If | None:
    for node in src.tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            parts = {getattr(n, "id", None) for n in ast.walk(node.test)} | \
                    {getattr(n, "value", None) for n in ast.walk(node.test)}
            if "__name__" in parts and "__main__" in parts:
                return node
    return None


def pytest_driver(src: Source, name: str, enclosing: str | None) -> Driver | None:
    helpers = _helpers(src)
    if not any(True for _ in tests_of(src)) and not any(
            isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) for n in src.tree.body):
        return None  # a helper module named like a test (test_*_common.py): nothing runs
    chosen = []
    for ident, node in tests_of(src):
        if enclosing is not None:
            if ident.split("::")[-1] == enclosing or ident == enclosing:
                chosen.append(ident)
        elif _reaches(_names(node), name, helpers):
            chosen.append(ident)
    if not chosen and enclosing is None and name not in src.names:
        return None
    return Driver("pytest", src.path, tuple(f"{src.path}::{t}" for t in chosen))


def module_calls(src: Source, kernels: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, argument) of each module-level call of one of the file's test functions passing
    one of `kernels` by name: its position, or its keyword."""
    tests = {name for name, _ in tests_of(src) if "::" not in name}
    for node in src.tree.body:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id in tests):
            continue
        passed = [*((str(i), a) for i, a in enumerate(node.value.args)),
                  *((k.arg, k.value) for k in node.value.keywords if k.arg)]
        for argument, value in passed:
            if isinstance(value, ast.Name) and value.id in kernels:
                yield node.lineno, argument


def _call_driver(s: Source, kernels: frozenset[str]) -> Driver | None:
    """The first module-level call of a test of `s` with a kernel of the module (any one of
    them, the test taking the kernel as a parameter)."""
    for line, argument in module_calls(s, kernels):
        return Driver("call", s.path, (), line, argument)
    return None


# How many calls deep a kernel is looked for behind the functions that call it (a test calling
# a wrapper calling the kernel that calls this one: nki-library's moe_tkg sub-kernels)
HOPS = 4


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _is_test_name(name: str) -> bool:
    return name.startswith(("test", "Test"))


class Callers:
    """Which functions of the files call what: the functions (module-level, and methods of
    module-level classes) that are not tests, by the names their bodies use."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.users_of: dict[str, list[Source]] = {}
        for s in sources:
            for stem in s.imported:
                self.users_of.setdefault(stem, []).append(s)
        self._by_path = {s.path: s for s in sources}
        self._helpers: dict[str, dict[str, set[str]]] = {}

    def helpers(self, src: Source) -> dict[str, set[str]]:
        if src.path not in self._helpers:
            self._helpers[src.path] = _helpers(src)
        return self._helpers[src.path]

    def names_of(self, src: Source) -> Iterator[str]:
        """How other files import `src`'s module: its name, then the name of each package
        whose `__init__.py` imports from it (`from .cross_entropy import f` in `loss/`: a test
        doing `from pkg.loss import f` uses the module too), up the folders while they do."""
        stem, folder = _stem(src.path), os.path.dirname(src.path)
        yield stem
        while (init := self._by_path.get(os.path.join(folder, "__init__.py"))) is not None \
                and init is not src and stem in init.imported:
            stem, folder = os.path.basename(folder), os.path.dirname(folder)
            yield stem

    def users(self, src: Source) -> list[Source]:
        """The files that import `src`'s module (by its name, or by a package re-exporting
        it), each once."""
        found: dict[str, Source] = {}
        for stem in self.names_of(src):
            for s in self.users_of.get(stem, []):
                if s is not src and not s.path.endswith(os.sep + "__init__.py"):
                    found.setdefault(s.path, s)
        return list(found.values())

    def through(self, name: str, home: Source) -> list[tuple[str, Source]]:
        """(function, its file) of the functions that call `name` of file `home`, or call one
        that does (HOPS deep at most): each in the file of the one it calls or in a file
        importing that file's module."""
        found: list[tuple[str, Source]] = []
        seen = {(name, home.path)}
        frontier = [(name, home)]
        for _ in range(HOPS):
            reached = []
            for callee, file in frontier:
                for s in (file, *self.users(file)):
                    for fn, used in self.helpers(s).items():
                        if callee in used and not _is_test_name(fn) and \
                                (fn, s.path) not in seen:
                            seen.add((fn, s.path))
                            reached.append((fn, s))
            found += reached
            frontier = reached
        return found


def reaching(sources: Sequence[Source], wanted: set[str]) -> set[str]:
    """The names of the functions of `sources` (not tests) whose bodies use one of `wanted`,
    or use one that does (HOPS deep at most): what a file driving one of `wanted` may name
    instead."""
    found = set(wanted)
    for _ in range(HOPS):
        more = {fn for s in sources for fn, used in _helpers(s).items()
                if not _is_test_name(fn) and fn not in found and used & found}
        if not more:
            break
        found |= more
    return found - wanted


def find_entry_points(sources: list[Source], elsewhere: Sequence[Source] = ()
                      ) -> list[EntryPoint]:
    """Every kernel of `sources` with its drivers, found among `sources` and `elsewhere`
    (the rest of the checkout: its kernels are not counted, its tests and `__main__` blocks
    drive the kernels of `sources`)."""
    callers = Callers((*sources, *elsewhere))
    out = []
    for src in sources:
        found = list(kernels(src))
        if not found:
            continue
        users = callers.users(src)
        module_kernels = frozenset(q for q, _ in found if "." not in q)
        calls = [d for d in (_call_driver(s, module_kernels) for s in (src, *users)
                             if is_test_file(s.path)) if d is not None]
        for qual, line in found:
            name = qual.split(".")[-1]
            drivers: list[Driver] = []
            enclosing = _enclosing_test(qual)
            if is_test_file(src.path):
                d = pytest_driver(src, name, enclosing)
                if d is not None:
                    drivers.append(d)
            if enclosing is None:
                for s in users:
                    if is_test_file(s.path) and name in s.names:
                        d = pytest_driver(s, name, None)
                        if d is not None:
                            drivers.append(d)
                drivers.extend(_indirect(callers, name, src, drivers))
                drivers.extend(calls)
                for s in [src, *users]:
                    block = main_block(s)
                    if block is not None and _reaches(_names(block), name, _helpers(s)):
                        drivers.append(Driver("main", s.path))
            drivers.append(Driver("signature", src.path))
            out.append(EntryPoint(src.path, qual, line, api_of(src), tuple(drivers)))
    return out


def _indirect(callers: Callers, name: str, src: Source, direct: list[Driver]
              ) -> list[Driver]:
    """The tests that reach kernel `name` through the functions calling it (a wrapper in a
    helper module, a kernel calling it), one driver per test file, after the files of
    `direct`; only tests that name such a function (never a whole file)."""
    chosen: dict[str, list[str]] = {}
    for fn, home in callers.through(name, src):
        for s in (home, *callers.users(home)):
            if is_test_file(s.path) and fn in s.names and \
                    not any(d.file == s.path for d in direct):
                d = pytest_driver(s, fn, None)
                for t in d.tests if d is not None else ():
                    if t not in chosen.setdefault(s.path, []):
                        chosen[s.path].append(t)
    return [Driver("pytest", f, tuple(tests)) for f, tests in chosen.items() if tests]


def _enclosing_test(qual: str) -> str | None:
    """The test function a nested kernel is defined in (`TestX.test_y.<locals>.k`)."""
    if ".<locals>." not in qual:
        return None
    outer = qual.split(".<locals>.")[0]
    return outer.split(".")[-1] if outer.split(".")[-1].startswith("test") else None
