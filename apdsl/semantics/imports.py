"""`import M` and `from M import a, b`: modules searched in the importing file's folder, then
`stdlib/`; NKI's own modules (`nki`, `nki.language`, ...) name the builtins and load nothing."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslIOError, ApdslNameError, Span
from ..syntax import ast
from . import nki_imports
from .frames import Closure, Frame
from .pybuiltins import builtin_module
from .values import Module


class ImportCompiler:
    """Import statements and module loading of the interpreter (a mixin of `Interpreter`)."""

    def _stmt_Import(self, node: ast.Import) -> Closure:
        interp = self

        def run(frame: Frame) -> None:
            if nki_imports.is_nki(node.module):  # NKI's modules: the builtins (nki_imports)
                name, value = nki_imports.bind_import(node.module, node.alias, interp.builtins)
                if name:
                    frame.vars[name] = value
                return
            mod = interp.import_module(node.module, node.span)
            frame.vars[node.alias or node.module.split(".")[0]] = mod
        return run

    def _stmt_FromImport(self, node: ast.FromImport) -> Closure:
        interp = self

        def run(frame: Frame) -> None:
            if nki_imports.is_nki(node.module):
                frame.vars.update(nki_imports.bind_from_import(
                    node.module, node.names, interp.builtins, node.name_spans))
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
        from pathlib import Path

        from ..resources import stdlib_path
        from ..syntax.parser import parse
        if dotted in self.modules:
            return self.modules[dotted]
        builtin = builtin_module(dotted, self.budget)  # `import math`
        if builtin is not None:
            self.modules[dotted] = builtin
            return builtin
        rel = Path(*dotted.split(".")).with_suffix(".apk")
        base = Path(self.base_dir)
        search = [(base / rel, str(base / rel))]
        std = Path(self.stdlib_dir) if self.stdlib_dir else stdlib_path()
        search.append((std / rel, f"<stdlib>/{rel.as_posix()}"))
        for path, shown in search:  # noqa: B007 - the hit is used after the loop
            if path.is_file():
                break
        else:
            raise ApdslIOError(f"no module named '{dotted}'", code="APK602",
                               notes=[f"searched {base / rel} and <stdlib>/{rel}"],
                               help="put the module next to the importing file or in stdlib/")
        if dotted in self.importing:
            raise ApdslIOError(f"circular import of '{dotted}'", code="APK604")
        from ..syntax.source_files import read_source
        tree = parsed(read_source(path, shown), shown, parse)
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


# Imported modules' syntax by (text, shown name): a run imports its modules afresh, and the
# stdlib GEMM's module took ~4 ms to parse on every run.  The text is read each time (a file
# may change) and is the key, so a hit is what parsing would give; syntax trees are
# immutable, so interpreters share them.  Bounded: the oldest goes first.
_PARSED: dict[tuple[str, str], Any] = {}
_MAX_PARSED = 32


def parsed(text: str, shown: str, parse: Any) -> Any:
    """The syntax tree of module text `text` (file name `shown`), parsed once."""
    key = (text, shown)
    tree = _PARSED.get(key)
    if tree is None:
        tree = parse(text, shown)  # a syntax error raises, and nothing is kept
        if len(_PARSED) >= _MAX_PARSED:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = tree
    return tree
