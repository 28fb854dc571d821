"""`install()`: unchanged `import nki`, `import nki.language as nl`, `import nki.isa as nisa`
resolve to apdsl when the real `nki` package is absent.  A real `nki` is never shadowed: then
install() warns and leaves it in place."""

from __future__ import annotations

import importlib.util
import sys
import warnings

NAMES = ("language", "isa", "compiler")


class NkiShadowWarning(UserWarning):
    """The real `nki` package is importable, so apdsl.nki did not take its name."""


def _ours() -> object:
    # The package this module belongs to, already imported before any of its submodules (so
    # read from sys.modules, not imported: the package imports this module).
    return sys.modules[__name__.rpartition(".")[0]]


def installed() -> bool:
    """Does `import nki` give apdsl.nki now?"""
    return sys.modules.get("nki") is _ours()


def install() -> bool:
    """Make `nki` and its submodules resolve to apdsl.nki; True when they do.  With a real
    `nki` importable (already imported, or found on sys.path) nothing changes: a
    NkiShadowWarning says so and install() returns False."""
    ours = _ours()
    if installed():
        return True
    real = sys.modules.get("nki")
    origin = getattr(real, "__file__", None) if real is not None else None
    if real is None:
        try:
            spec = importlib.util.find_spec("nki")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            real, origin = spec, spec.origin or ", ".join(spec.submodule_search_locations or [])
    if real is not None:
        warnings.warn(NkiShadowWarning(
            f"a real nki package is installed ({origin}); apdsl.nki does not shadow it. "
            "To run on apdsl, import apdsl.nki as nki (and apdsl.nki.language as nl, "
            "apdsl.nki.isa as nisa), or remove the real nki from this environment"),
            stacklevel=2)
        return False
    sys.modules["nki"] = ours
    for name in NAMES:
        sys.modules[f"nki.{name}"] = getattr(ours, name)
    return True


def uninstall() -> None:
    """Undo install() (a real nki, which install() never replaces, is left alone)."""
    if installed():
        for name in ("nki", *(f"nki.{n}" for n in NAMES)):
            sys.modules.pop(name, None)
