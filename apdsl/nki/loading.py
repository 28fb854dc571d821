"""A user's kernel file as a Python module, without touching the names other code imports.

`apdsl run|check FILE.py`, the REPL, the language server, the notebook magic and `apdsl.run`
load a user's file into a process that lives on.  Registering it under its stem (`copy`,
`math`, `numpy`, `test`) would replace that module for everyone for the rest of the process,
and two files of one stem would replace each other.  So each load gets a package of its own
under a private, unique name (`_apdsl_user_<hex>`), the file is its module `<package>.<stem>`,
and the package's path is the file's folder:

- `import helpers` in the file (or in a module it imports from its folder) finds `helpers.py`
  beside it as Python does for a script (a module already imported by that name wins, as
  Python's own module cache does), as `<package>.helpers`: siblings are private too, so two
  folders' `utils.py` never meet;
- the modules stay in `sys.modules` under their private names, as an imported module stays
  (pickle, `dataclasses`, `inspect.getsource` and `typing` look them up there, and Python's
  teardown flushes the files a module holds open: a module dropped from `sys.modules` while
  something else kept it alive was never torn down, and its open files were left unwritten);
- nothing is added to `sys.path`.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import linecache
import os
import secrets
import sys
import types
from pathlib import Path
from typing import Any

PREFIX = "_apdsl_user_"


def load(path: str, source: str, code: types.CodeType) -> types.ModuleType:
    """The module of the file at `path` (its text `source`, compiled to `code`), executed."""
    p = Path(path).resolve()
    package = _package(str(p.parent))
    name = f"{package.__name__}.{p.stem}"
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = package.__name__
    module.__builtins__ = _builtins(package.__name__, str(p.parent))  # type: ignore[attr-defined]
    _remember(path, source)
    sys.modules[name] = module
    exec(code, module.__dict__)
    return module


def _package(folder: str) -> types.ModuleType:
    _install()
    name = f"{PREFIX}{secrets.token_hex(6)}"
    package = types.ModuleType(name)
    package.__path__ = [folder]  # type: ignore[attr-defined]
    package.__package__ = name
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [folder]
    package.__spec__ = spec
    sys.modules[name] = package
    return package


def _remember(path: str, source: str) -> None:
    """The text being run is what `inspect.getsource`, tracebacks and diagnostics read of the
    file, always: an editor's unsaved text, and the file as it is now when a process runs it
    again after it changed (an entry left from an earlier run, above all an unsaved text's,
    which linecache never checks against the disk, would locate errors in the old text).  Text
    equal to the disk's is kept with the file's size and time, so linecache drops it once the
    file changes; other text is kept as given."""
    lines = source.splitlines(keepends=True)
    try:
        on_disk = Path(path).read_text(encoding="utf-8")
        stat = os.stat(path)
    except (OSError, UnicodeDecodeError):
        on_disk = stat = None
    if on_disk == source and stat is not None:
        linecache.cache[path] = (stat.st_size, stat.st_mtime, lines, path)
    else:
        linecache.cache[path] = (len(source), None, lines, path)


def _builtins(package: str, folder: str) -> dict[str, Any]:
    """The builtins of a loaded file's modules: Python's, with an `__import__` that finds the
    modules of the file's folder under the load's package."""
    real = builtins.__import__

    def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                level: int = 0) -> Any:
        if level == 0 and name:
            top = name.partition(".")[0]
            if top not in sys.modules and _beside(folder, top):
                module = real(f"{package}.{name}", globals, locals, fromlist, 0)
                return module if fromlist else sys.modules[f"{package}.{top}"]
        return real(name, globals, locals, fromlist, level)

    names = dict(vars(builtins))
    names["__import__"] = import_
    return names


def _beside(folder: str, name: str) -> bool:
    """Is `name` a module or regular package in `folder` (a folder without `__init__.py` is
    not: Python takes such a namespace package only when nothing else has the name)?"""
    spec = importlib.machinery.PathFinder.find_spec(name, [folder])
    return spec is not None and spec.loader is not None


class _Loader(importlib.machinery.SourceFileLoader):
    """A sibling module's loader: the module gets its load's builtins before it runs."""

    def exec_module(self, module: types.ModuleType) -> None:
        package = module.__name__.split(".")[0]
        owner = sys.modules.get(package)
        folder = getattr(owner, "__path__", [str(Path(self.path).parent)])[0]
        module.__builtins__ = _builtins(package, folder)  # type: ignore[attr-defined]
        super().exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the modules of a load's package (only names under `PREFIX`) in its folder."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not fullname.startswith(PREFIX) or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _Loader(spec.loader.name, spec.loader.path)
        return spec


_FINDER = _Finder()


def _install() -> None:
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
