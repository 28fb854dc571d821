"""`install()`: an unchanged `import asc` (and `asc.language`, `asc.lib.runtime`,
`asc.lib.host`, `asc.runtime.config`, `.launcher`, `.jit`) resolves to
apdsl when the real pyasc is absent; an import of any other `asc.*` module stops at APK660
naming it (`ModuleFinder`).  A real `asc` is never shadowed: install() warns and leaves it in
place."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from typing import Any


class AscShadowWarning(UserWarning):
    """The real pyasc (`asc`) is importable, so apdsl.asc did not take its name."""


def _ours() -> Any:
    return sys.modules[__name__.rpartition(".")[0]]


def _modules() -> dict[str, Any]:
    ours = _ours()
    lang, lib = ours.language, ours.lib
    return {"asc": ours, "asc.language": lang, "asc.language.basic": lang,
            "asc.language.core": lang, "asc.language.fwk": lang, "asc.language.adv": ours.adv, "asc.lib": lib,
            "asc.lib.runtime": lib, "asc.lib.host": lib.host, "asc.runtime": ours.runtime,
            "asc.runtime.config": ours.runtime.config,
            "asc.runtime.launcher": ours.runtime.launcher, "asc.runtime.jit": ours.runtime.jit}


class ModuleFinder:
    """A meta path finder for the `asc.*` modules apdsl does not provide, while apdsl is
    `asc`: the import stops at a located APK660 naming the module (a ModuleNotFoundError
    still), not at a bare "No module named"."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if not fullname.startswith("asc.") or fullname in sys.modules or not installed():
            return None
        from ..nki.locate import caller_span
        from .errors import AscModuleError
        raise AscModuleError(
            f"apdsl.asc has no module {fullname}", module=fullname, code="APK660",
            span=caller_span(2),
            notes=["apdsl.asc provides asc, asc.language (basic, core, fwk, adv), asc.lib "
                   "(runtime, host) and asc.runtime (config, launcher, jit); pyasc's code "
                   "generation and its other internals are not modelled"],
            help="import the names from asc itself, or run this code on pyasc")


_FINDER = ModuleFinder()
_GIVEN_PATH: list[Any] = []  # the plain modules install() made packages (undone by uninstall)


def installed() -> bool:
    """Does `import asc` give apdsl.asc now?"""
    return sys.modules.get("asc") is _ours()


def install() -> bool:
    """Make `asc` and its submodules resolve to apdsl.asc; True when they do.  With a real
    pyasc importable nothing changes: an AscShadowWarning says so and install() is False."""
    if installed():
        return True
    real: Any = sys.modules.get("asc")
    origin = getattr(real, "__file__", None) if real is not None else None
    if real is None:
        try:
            spec = importlib.util.find_spec("asc")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            real, origin = spec, spec.origin or ", ".join(spec.submodule_search_locations or [])
    if real is not None:
        warnings.warn(AscShadowWarning(
            f"a real pyasc (asc) is installed ({origin}); apdsl.asc does not shadow it. To "
            "run on apdsl, import apdsl.asc as asc, or remove pyasc from this environment"),
            stacklevel=2)
        return False
    modules = _modules()
    sys.modules.update(modules)
    from ..nki.modules import as_packages
    # (`asc.language.core.dtype` is then APK660 naming it, not "... is not a package")
    _GIVEN_PATH.extend(as_packages(modules.values()))
    if not any(f is _FINDER for f in sys.meta_path):
        sys.meta_path.append(_FINDER)
    return True


def uninstall() -> None:
    """Undo install() (a real pyasc, which install() never replaces, is left alone)."""
    if installed():
        for name in _modules():
            sys.modules.pop(name, None)
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    from ..nki.modules import plain_again
    plain_again(_GIVEN_PATH)
