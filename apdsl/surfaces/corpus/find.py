"""Finding a repository's NKI and pyasc kernel entry points and what drives them, from the
syntax of its Python files alone (nothing is imported here: a file that fails to import still
has its kernels counted).

An NKI entry point is a function decorated `@nki.jit`, `@nki_jit`, `@nki.baremetal` (with or
without arguments; `nki` may be `neuronxcc.nki` imported as `nki`) or a bare `@jit` /
`@baremetal` imported from `nki` or `neuronxcc.nki`, at any nesting (kernels a test defines
inside a test function count).  A pyasc entry point is a function decorated `@asc.jit` (or
`@jit` imported from `asc`) in a file that imports `asc`, that no other `@asc.jit` function
of the file calls (pyasc kernels call jit helpers such as copy_in and compute, which are part
of the kernel, not kernels of their own).  Drivers, tried in this order for each entry point:

- `pytest`: the repository's tests (`test_*.py`, `*_test.py`, anywhere in the checkout: a run
  on a folder of kernels is driven by the tests of the checkout it lies in) that name the
  kernel and import its module (or are its file), narrowed to the test functions that name it (directly or
  through a module-level helper that does);
- `call`: a test file that calls one of its own test functions at module level with a kernel
  of the module as an argument (`test_attn_tutorial("accuracy", attn_fwd_v1)`, the test taking
  the kernel as a parameter) drives every kernel of that module: that call, with the kernel
  in the argument's place;
- `main`: an `if __name__ == "__main__":` block naming the kernel, in its file or in a file
  that imports it;
- `signature`: the kernel's module imported, inputs from the parameters' `nki.typing`
  annotations."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...records import record

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules",
                       "site-packages", ".tox", ".mypy_cache", ".pytest_cache", "build",
                       "dist"})
KERNEL_DECORATORS = frozenset({"nki.jit", "nki_jit", "nki.baremetal", "neuronxcc.nki.jit",
                               "neuronxcc.nki.baremetal"})
NKI_MODULES = ("nki", "neuronxcc.nki")


@record
class Driver:
    """One way to run an entry point: `kind` is "pytest" (`tests` are pytest node ids; empty:
    the whole file), "call" (the module-level call at `line` of `file` of one of its test
    functions, with the kernel as its argument `argument`: a position or a keyword), "main"
    (run `file` as `__main__`) or "signature"."""

    kind: str
    file: str
    tests: tuple[str, ...] = ()
    line: int = 0
    argument: str = ""


@record
class EntryPoint:
    """A kernel: its file (absolute), qualified name (as Python's `__qualname__`), line, the
    API its file imports ("nki" or "legacy") and its drivers in the order to try them."""

    file: str
    qualname: str
    line: int
    api: str
    drivers: tuple[Driver, ...]

    def label(self, root: str) -> str:
        return f"{os.path.relpath(self.file, root)}::{self.qualname}"


@record
class Source:
    path: str
    tree: ast.Module
    names: frozenset[str]  # every identifier and attribute name the file uses
    imports: tuple[ast.Import | ast.ImportFrom, ...]  # its import statements, at any depth
    imported: frozenset[str]  # the last part of every module it imports and name it imports


def checkout_top(folder: str) -> str:
    """The top of the checkout `folder` lies in (the nearest folder holding `.git`, itself
    included), or `folder` when it is in none: a run on a sub-folder imports the repository's
    own packages (its `src/`, its `test` package) from there, as its tests do."""
    here = os.path.realpath(folder)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.realpath(folder)
        here = parent


def python_files(root: str) -> Iterator[str]:
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(here, f)


def read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse(path: str, text: str | None = None) -> Source | None:
    """The file's syntax and what it names and imports (one walk of its tree), or None when
    it cannot be read or parsed; `text`, when given, is its contents, already read."""
    text = read(path) if text is None else text
    if text is None:
        return None
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    imports: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[-1])
            names.add(node.name.split(".")[-1])
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
    return Source(path, tree, frozenset(names), tuple(imports),
                  frozenset(_imported(imports)))


def _imported(imports: list[ast.Import | ast.ImportFrom]) -> Iterator[str]:
    """The last part of each module imported (`import a.b` -> b, `from a.b import c` -> b)
    and each name imported from a module (c): how a file names a module it imports, by any
    dotted path or by name from its package."""
    for node in imports:
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module.split(".")[-1]
        for a in node.names:
            yield a.name.split(".")[-1] if isinstance(node, ast.Import) else a.name


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return dotted(node.func)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def imported_nki(src: Source) -> dict[str, str]:
    """What the file imports of NKI: local name -> "nki" or "legacy" (for `nki`, `nl`, ...
    aliases and for `jit`/`baremetal` imported by name)."""
    out: dict[str, str] = {}
    for node in src.imports:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("nki", "neuronxcc") and (
                        a.name == "nki" or a.name.startswith(("nki.", "neuronxcc.nki"))):
                    api = "legacy" if a.name.startswith("neuronxcc") else "nki"
                    out[a.asname or a.name.split(".")[0]] = api
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module in NKI_MODULES or node.module.startswith(("nki.", "neuronxcc.nki")):
                api = "legacy" if node.module.startswith("neuronxcc") else "nki"
                for a in node.names:
                    out[a.asname or a.name] = api
            elif node.module == "neuronxcc":
                for a in node.names:
                    if a.name == "nki":
                        out[a.asname or "nki"] = "legacy"
    return out


def _kernel_decorator(dec: ast.AST, nki: dict[str, str]) -> bool:
    name = dotted(dec)
    if name in KERNEL_DECORATORS:
        return True
    head, _, last = name.rpartition(".")
    if not head:
        return name in ("jit", "baremetal") and name in nki
    return last in ("jit", "baremetal") and head in nki


def imported_asc(src: Source) -> set[str]:
    """The local names a file binds to pyasc's `asc` module (`import asc`, `import apdsl.asc
    as asc`, `from apdsl import asc`), and `jit` when imported from it."""
    out: set[str] = set()
    for node in src.imports:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "asc" or a.name.startswith("asc."):
                    out.add(a.asname or "asc")
                elif a.name == "apdsl.asc" and a.asname:
                    out.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "apdsl":
                out.update(a.asname or a.name for a in node.names if a.name == "asc")
            elif node.module in ("asc", "apdsl.asc", "asc.language"):
                out.update(a.asname or a.name for a in node.names if a.name == "jit")
    return out


def _asc_decorator(dec: ast.AST, names: set[str]) -> bool:
    name = dotted(dec)
    head, _, last = name.rpartition(".")
    return (last == "jit" and head in names) or (not head and name == "jit" and "jit" in names)


def _walk(body: list[ast.stmt], prefix: str, is_kernel: Any
          ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function `is_kernel` accepts, at any nesting."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = prefix + node.name
            if any(is_kernel(d) for d in node.decorator_list):
                yield qual, node
            yield from _walk(node.body, qual + ".<locals>.", is_kernel)
        elif isinstance(node, ast.ClassDef):
            yield from _walk(node.body, prefix + node.name + ".", is_kernel)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for part in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, part, None) or []
                if part == "handlers":
                    for h in inner:
                        yield from _walk(h.body, prefix, is_kernel)
                else:
                    yield from _walk(inner, prefix, is_kernel)


def kernels(src: Source) -> Iterator[tuple[str, int]]:
    """(qualified name, line) of every kernel function the file defines."""
    asc = imported_asc(src)
    if asc:
        found = list(_walk(src.tree.body, "", lambda d: _asc_decorator(d, asc)))
        called = {n.func.id for _, fn in found for n in ast.walk(fn)
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        for qual, node in found:
            if node.name not in called:
                yield qual, node.lineno
        return
    nki = imported_nki(src)
    if not nki and "nki_jit" not in src.names:
        return
    for qual, node in _walk(src.tree.body, "", lambda d: _kernel_decorator(d, nki)):
        yield qual, node.lineno


def api_of(src: Source) -> str:
    if imported_asc(src):
        return "pyasc"
    apis = set(imported_nki(src).values())
    return "legacy" if apis == {"legacy"} else "nki"
