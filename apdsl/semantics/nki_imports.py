"""The imports NKI kernel files begin with, resolved to the `.apk` builtins.

`import nki`, `import nki.language as nl`, `import nki.isa as nisa`, `from neuronxcc import
nki` bind modules whose names are the builtins (the parser already reads `nl.X`, `nisa.X` and
`nki.language.X` as the builtin `X`, so these bindings matter only where a module is used as a
value); `from nki.language import X` binds the builtin `X`, and a name the builtins lack is an
error at the import.  The other NKI modules (`nki.typing`, `nki.compiler`, ...) and NumPy, which
a kernel file imports for its host code, bind nothing: a use of one of their names is an
unknown name where it is used.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApdslNameError
from .values import Module

ROOTS = ("nki", "neuronxcc", "numpy", "np")
# Module paths whose names are the builtins (a leading `neuronxcc.` dropped), and the space
# `builtins.nki_lookup` searches for each (as for `nl.X` and `nisa.X`).
_NAMESPACES = {"nki.language": "nl", "nki.isa": "nisa"}


def is_nki(module: str) -> bool:
    """True for NKI's own modules and NumPy: imports that never search for an `.apk` file."""
    return module.split(".")[0] in ROOTS


def _canonical(module: str) -> str:
    return module.removeprefix("neuronxcc.")


def namespace(name: str, builtins: dict[str, Any]) -> Module:
    """`nki.language` or `nki.isa` as a module value: its attributes are the names `nl.X`
    (`nisa.X`) gives: NKI's own meaning first, else the builtin."""
    space = _NAMESPACES[name]
    names = {k: v for k, v in builtins.items() if "." not in k}
    names.update({k.split(".", 1)[1]: v for k, v in builtins.items()
                  if k.startswith(space + ".")})
    return Module(name, "<builtin>", names)


def _nki_module(builtins: dict[str, Any]) -> Module:
    return Module("nki", "<builtin>", {"language": namespace("nki.language", builtins),
                                       "isa": namespace("nki.isa", builtins)})


def bind_import(module: str, alias: str | None, builtins: dict[str, Any]) -> tuple[str, Any]:
    """What `import MODULE [as ALIAS]` binds for an NKI or NumPy module: (name, value), or
    ("", None) to bind nothing."""
    canon = _canonical(module)
    if canon in _NAMESPACES and alias is not None:
        return alias, namespace(canon, builtins)
    if canon == "nki" or canon.startswith("nki."):
        if alias is not None and canon != "nki":
            return "", None  # e.g. `import nki.typing as t`: nothing of it is needed
        return alias or module.split(".")[0], (
            _nki_module(builtins) if module.split(".")[0] != "neuronxcc" or alias
            else Module("neuronxcc", "<builtin>", {"nki": _nki_module(builtins)}))
    return "", None


def bind_from_import(module: str, names: Any, builtins: dict[str, Any],
                     spans: Any = ()) -> dict[str, Any]:
    """What `from MODULE import a, b as c` binds for an NKI or NumPy module (`spans`: where
    each name is written, for the error of a name apdsl lacks)."""
    canon = _canonical(module)
    out: dict[str, Any] = {}
    if canon in _NAMESPACES:
        space = namespace(canon, builtins).namespace
        for i, (name, alias) in enumerate(names):
            if name not in space or name.startswith("_"):
                from difflib import get_close_matches
                close = get_close_matches(name, [n for n in space if not n.startswith("_")],
                                          n=3)
                raise ApdslNameError(
                    f"module {canon} has no name '{name}' in apdsl", code="APK108",
                    help=f"did you mean {' or '.join(map(repr, close))}?" if close else None,
                    span=spans[i] if i < len(spans) else None)
            out[alias or name] = space[name]
    elif canon == "nki" or (module == "neuronxcc" and canon == "neuronxcc"):
        nki = _nki_module(builtins)
        for name, alias in names:
            if module == "neuronxcc" and name == "nki":
                out[alias or name] = nki
            elif name in nki.namespace:
                out[alias or name] = nki.namespace[name]
    return out
