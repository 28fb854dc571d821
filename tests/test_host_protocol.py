"""The hosts the semantics runs on name their interface (`apdsl.semantics.host`): every host
offers every member of the protocols it stands for, and no parameter or field that holds a
host, the interpreter, a source span, a machine or the step budget is typed `Any` (each has its
named type)."""

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import apdsl
from apdsl.semantics import host as hosts

PACKAGE = Path(apdsl.__file__).resolve().parent
HOST_NAMES = {"interp", "host", "interpreter"}
# names whose type is known wherever they appear: `errors.Span`, `tensor.machine.Machine`,
# `semantics.limits.Budget`
KNOWN_NAMES = HOST_NAMES | {"span", "machine", "budget"}


def members(protocol: type) -> set[str]:
    """The attributes and methods a protocol declares (its own and its bases')."""
    out: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object,) or cls.__name__ in ("Protocol", "Generic"):
            continue
        out.update(getattr(cls, "__annotations__", {}))
        out.update(n for n, v in vars(cls).items()
                   if not n.startswith("_") and (callable(v) or isinstance(v, property)))
    return out


def interpreter(dry: bool = False):
    from apdsl.semantics.interpreter import Interpreter
    return Interpreter(dry=dry)


def nki_host(dry: bool = False):
    from apdsl.nki.host import Host
    return Host(dry=dry)


@pytest.mark.parametrize("make", [interpreter, nki_host])
@pytest.mark.parametrize("dry", [False, True])
def test_every_host_offers_the_host_protocol(make, dry):
    h = make(dry)
    missing = {m for m in members(hosts.Host) if not hasattr(h, m)}
    assert not missing
    assert h.dry is dry
    t = h.allocate((4, 8), "float32", "sbuf")
    assert t.shape == (4, 8) and t.buffer == "sbuf"


def test_the_interpreter_is_launcher_compiler_and_files():
    h = interpreter()
    for protocol in (hosts.Launcher, hosts.Compiler, hosts.Files):
        assert not {m for m in members(protocol) if not hasattr(h, m)}, protocol
    assert isinstance(h, hosts.Files)


def test_only_the_apk_interpreter_reads_files():
    """`load`/`save` are `.apk` builtins; a Python kernel's host reads files with NumPy."""
    assert not isinstance(nki_host(), hosts.Files)
    assert "load" in interpreter().builtins and "save" in interpreter().builtins
    assert "load" not in nki_host().builtins


def test_apk_load_and_save(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    src = tmp_path / "k.apk"
    src.write_text("x = load('a.npy')\nsave(x, 'b.npy')\n")
    apdsl.run(str(src))
    assert np.array_equal(np.load(tmp_path / "b.npy"),
                          np.arange(6, dtype=np.float32).reshape(2, 3))


def _any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation).strip("'\"")
    return text in ("Any", "Any | None", "Optional[Any]")


def _annotated_any(source: str) -> list[tuple[int, str]]:
    """(line, name) of every parameter, variable or attribute of KNOWN_NAMES typed `Any`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.arg) and node.arg in KNOWN_NAMES and _any(node.annotation):
            found.append((node.lineno, node.arg))
        elif isinstance(node, ast.AnnAssign) and _any(node.annotation):
            target = node.target
            name = target.id if isinstance(target, ast.Name) else \
                target.attr if isinstance(target, ast.Attribute) else None
            if name in KNOWN_NAMES:
                found.append((node.lineno, name))
    return found


def test_the_any_finder_finds_each_form():
    source = ("def f(host: Any, *, span: 'Any' = None): pass\n"
              "class C:\n    machine: Any = None\n"
              "    def __init__(self):\n        self.budget: Any | None = None\n"
              "def g(value: Any, span: Span | None = None): pass\n")
    assert _annotated_any(source) == [(3, "machine"), (1, "host"), (1, "span"), (5, "budget")]


def test_no_host_is_typed_any():
    found = [f"{path.relative_to(PACKAGE)}:{line} {name}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for line, name in _annotated_any(path.read_text(encoding="utf-8"))]
    assert not found


def test_the_protocols_are_documented():
    for name in hosts.__all__:
        assert inspect.getdoc(getattr(hosts, name))


def test_the_interpreters_dispatch_methods_name_their_node_class():
    """`compile_expr` and `compile_stmt` call `_expr_<class>` / `_stmt_<class>` by the node's
    class name, so each such method's `node` is that class of `apdsl.syntax.ast`: typed so,
    not `Any`."""
    from apdsl.syntax import ast as nodes
    seen = 0
    for path in sorted((PACKAGE / "semantics").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef) or \
                    not node.name.startswith(("_expr_", "_stmt_")):
                continue
            cls = node.name.split("_", 2)[2]
            arg = next(a for a in node.args.args if a.arg == "node")
            assert issubclass(getattr(nodes, cls), nodes.Node), (path.name, node.name)
            assert ast.unparse(arg.annotation) == f"ast.{cls}", (path.name, node.name)
            seen += 1
    assert seen > 40
