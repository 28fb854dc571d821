"""The package's structure: layers import downward only (the runtime's sub-packages too), no
import cycles, no private names across modules, and sizes per function and per package.

Every `import` and `from ... import` of every module is read from its syntax tree, including
the ones inside functions (deferred for start-up time, but dependencies all the same) and the
ones under `if TYPE_CHECKING:` (they never run, but a type named upward or in a cycle is a
dependency all the same).  The allow-lists below are explicit and may only shrink."""

import ast
import functools
from pathlib import Path

import apdsl

PACKAGE = Path(apdsl.__file__).resolve().parent

# Sizes: a function says one thing (its body, docstring and nested helpers included); a package
# holds one job, and a package that outgrows the limit is split into sub-packages by job (not
# a module cut to fit a count).
MAX_FUNCTION_LINES = 80
MAX_PACKAGE_LINES = 6000

# Bottom to top.  A module may import its own layer and the layers below it.
LAYERS = [
    ("foundation", ("apdsl.errors", "apdsl.records", "apdsl.resources", "apdsl.version",
                    "apdsl.catalogue")),
    ("model", ("apdsl.syntax", "apdsl.tensor")),
    # The runtime's sub-packages, bottom to top: the instruction table, the Ascend pipes and sync
    # checker, the core move and access machinery, the plans, the instructions of each target
    # (`nki` and `ascend`, siblings: see SIBLINGS) and, on top, what dispatches between targets
    # (`copies`) and what gathers the instructions (`instructions`, `device`).
    ("runtime.table", ("apdsl.runtime.table",)),
    ("runtime.sync", ("apdsl.runtime.sync",)),
    ("runtime.core", ("apdsl.runtime.core",)),
    ("runtime.plans", ("apdsl.runtime.plans",)),
    ("runtime.targets", ("apdsl.runtime.nki", "apdsl.runtime.ascend")),
    ("runtime", ("apdsl.runtime",)),
    ("semantics", ("apdsl.semantics",)),
    # the NKI Python frontend and the profiler run programs through the semantics
    ("frontends", ("apdsl.nki", "apdsl.asc", "apdsl.profile")),
    ("surfaces", ("apdsl.surfaces",)),
    ("facade", ("apdsl.__init__", "apdsl.__main__", "apdsl.formats")),
]

# Packages of one layer that must not import each other (one target's instructions never
# depend on the other's; what both share lives below them).
SIBLINGS = [("apdsl.runtime.nki", "apdsl.runtime.ascend")]

# Functions over MAX_FUNCTION_LINES: (module, function).  The list only shrinks.
LONG_FUNCTIONS_ALLOWED: set[tuple[str, str]] = {
    ("apdsl.semantics.calls", "_expr_Call"),
    ("apdsl.semantics.nl_functions", "make"),
    ("apdsl.semantics.loops", "_stmt_For"),
    ("apdsl.semantics.blocks", "compile_block"),
    ("apdsl.runtime.nki.matmul", "nc_matmul"),
    ("apdsl.semantics.callsites", "_call_emitter"),
    ("apdsl.runtime.nki.elementwise", "tensor_scalar"),
    ("apdsl.semantics.nl_operators", "make"),
    ("apdsl.runtime.sync", "access"),
    ("apdsl.runtime.ascend.vector.reduce", "reduce_all"),
}

# Packages over MAX_PACKAGE_LINES (their own modules, sub-packages not counted), with a ceiling
# each.  The list only shrinks: `semantics` is to be split by job (the NKI `nl` functions, the
# interpreter's specialisations, the checker).
LARGE_PACKAGES_ALLOWED: dict[str, int] = {"apdsl.semantics": 9000}

# Upward imports still to be removed; the list only shrinks (empty: every import goes down).
UPWARD_ALLOWED: set[tuple[str, str]] = set()

# Import cycles still to be removed; the list only shrinks (empty: there are none).
CYCLES_ALLOWED: list[list[str]] = []

# Private names imported across modules: (importing module, imported module, name).  The list
# only shrinks (empty: none is).
PRIVATE_ALLOWED: set[tuple[str, str, str]] = set()


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1 and parts[:-1] != ["apdsl"]:
        parts = parts[:-1]
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = all_modules()


# Parsing every module takes about 2 s of CPU; the tests below read the same trees, so a
# worker parses each module once (the trees are only read, never changed).
@functools.cache
def tree(name: str) -> ast.Module:
    """The syntax tree of module `name`."""
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


@functools.cache
def imports(name: str) -> tuple[tuple[str, str | None, int], ...]:
    """(imported module, imported name or None, line) for every apdsl import of a module,
    those under `if TYPE_CHECKING:` included."""
    path = MODULES[name]
    if path.name == "__init__.py":
        package = name.removesuffix(".__init__")
    else:
        package = name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            out.extend((a.name, None, node.lineno) for a in node.names
                       if a.name.split(".")[0] == "apdsl")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "apdsl":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    out.append((sub, None, node.lineno))
                else:
                    out.append((target, a.name, node.lineno))
    return tuple(out)


def canonical(target: str) -> str:
    if target == "apdsl":
        return "apdsl.__init__"
    return target if target in MODULES else target


def layer_of(name: str) -> int:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{name} belongs to no layer: add it to LAYERS")


def edges() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name in MODULES:
        out[name] = {canonical(t) for t, _, _ in imports(name)} - {name}
    return out


def test_every_module_is_in_a_layer():
    for name in MODULES:
        layer_of(name)


def test_sibling_packages_do_not_import_each_other():
    crossing = sorted((m, t) for m, ts in edges().items() for t in ts for a, b in SIBLINGS
                      for x, y in ((a, b), (b, a))
                      if (m == x or m.startswith(x + ".")) and (t == y or t.startswith(y + ".")))
    assert crossing == []


def test_layers_import_downward_only():
    upward = sorted((m, t) for m, ts in edges().items() for t in ts
                    if t in MODULES and layer_of(t) > layer_of(m))
    assert [e for e in upward if e not in UPWARD_ALLOWED] == []
    # the allow-list shrinks: an entry that is no longer needed must be removed
    assert [e for e in UPWARD_ALLOWED if e not in upward] == []


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively (no recursion limit to worry about)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_strongly_connected_finds_a_cycle():
    """The cycle finder itself, on a graph with one three-module cycle and a tail."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert strongly_connected(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    graph = edges()
    # An allowed upward import is still a wrong edge; leave it out so that the cycles it
    # closes are reported once, by the layer test, and any other cycle fails here.
    for m, t in UPWARD_ALLOWED:
        graph[m].discard(t)
    cycles = strongly_connected(graph)
    assert [c for c in cycles if c not in CYCLES_ALLOWED] == []
    assert [c for c in CYCLES_ALLOWED if c not in cycles] == []  # the list only shrinks


def test_no_private_names_across_modules():
    crossing = []
    for name in MODULES:
        for target, imported, _line in imports(name):
            if imported and imported.startswith("_") and not imported.startswith("__"):
                crossing.append((name, target, imported))
    assert [c for c in crossing if c not in PRIVATE_ALLOWED] == []
    assert [c for c in PRIVATE_ALLOWED if c not in crossing] == []  # the list only shrinks


def function_sizes() -> dict[tuple[str, str], int]:
    """Lines of every function and method (outermost only: a nested helper counts toward the
    function that holds it), by (module, name); the longest wins a repeated name."""
    out: dict[tuple[str, str], int] = {}
    for name in MODULES:
        todo: list[ast.AST] = [tree(name)]
        while todo:
            node = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (name, child.name)
                    size = child.end_lineno - child.lineno + 1
                    out[key] = max(out.get(key, 0), size)
                elif isinstance(child, ast.ClassDef):
                    todo.append(child)
    return out


def test_no_function_over_the_limit():
    long = sorted(k for k, n in function_sizes().items() if n > MAX_FUNCTION_LINES)
    assert [k for k in long if k not in LONG_FUNCTIONS_ALLOWED] == []
    assert [k for k in LONG_FUNCTIONS_ALLOWED if k not in long] == []  # the list only shrinks


def package_sizes() -> dict[str, int]:
    """Lines per package: its own modules, not its sub-packages."""
    out: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        package = ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        out[package] = out.get(package, 0) + len(path.read_text(encoding="utf-8").splitlines())
    return out


def test_no_package_over_the_limit():
    sizes = package_sizes()
    over = {p: n for p, n in sizes.items() if n > MAX_PACKAGE_LINES}
    assert [p for p in over if p not in LARGE_PACKAGES_ALLOWED] == []
    assert [p for p, n in over.items() if n > LARGE_PACKAGES_ALLOWED.get(p, n)] == []
    assert [p for p in LARGE_PACKAGES_ALLOWED if p not in over] == []  # the list only shrinks


# Immutable value classes are `apdsl.records.record`s (cheap to define at start-up, slotted,
# one idiom); dataclasses are left for mutable state.  Still frozen dataclasses, the list only
# shrinks: the operator values (SCOPES' contract A fixes them as one, and a lane subclasses
# them) and the launch shape (in a file another lane is changing).
FROZEN_DATACLASSES_ALLOWED = {
    ("apdsl.runtime.table.operators", "Operator"),
    ("apdsl.semantics.launch", "Launch"),
}


def _frozen_dataclasses() -> list[tuple[str, str]]:
    found = []
    for name in MODULES:
        for node in ast.walk(tree(name)):
            if not isinstance(node, ast.ClassDef):
                continue
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "dataclass" and \
                        any(k.arg == "frozen" and getattr(k.value, "value", False)
                            for k in d.keywords):
                    found.append((name, node.name))
    return sorted(found)


def test_value_classes_are_records():
    frozen = _frozen_dataclasses()
    assert [c for c in frozen if c not in FROZEN_DATACLASSES_ALLOWED] == []
    assert [c for c in FROZEN_DATACLASSES_ALLOWED if c not in frozen] == []  # only shrinks
