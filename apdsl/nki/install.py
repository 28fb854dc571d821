"""`install()`: unchanged `import nki`, `import nki.language as nl`, `import nki.isa as nisa`,
the other NKI module paths and the legacy `import neuronxcc.nki ...` (see `modules`) resolve to
apdsl when the real packages are absent, and so do `torch_xla` (its device the CPU,
`torch_xla_cpu`) and `torch_neuronx` (its `utils.get_platform_target`, `torch_neuronx_host`)
where torch is installed without them, so that a PyTorch script launching kernels on an XLA
device runs unchanged.  A real `nki` is never shadowed: then install() warns
and leaves it in place (a real `neuronxcc` or `torch_xla` likewise keeps its own name)."""

from __future__ import annotations

import importlib.util
import sys
import types
import warnings

_GIVEN_PATH: list[types.ModuleType] = []  # the plain modules install() made packages


class NkiShadowWarning(UserWarning):
    """The real `nki` package is importable, so apdsl.nki did not take its name."""


def _ours() -> object:
    # The package this module belongs to, already imported before any of its submodules (so
    # read from sys.modules, not imported: the package imports this module).
    return sys.modules[__name__.rpartition(".")[0]]


def installed() -> bool:
    """Does `import nki` give apdsl.nki now?"""
    return sys.modules.get("nki") is _ours()


def _real(name: str) -> tuple[object | None, str | None]:
    """The real package `name` if one is imported or importable (and where it is)."""
    real = sys.modules.get(name)
    if real is not None:
        return real, getattr(real, "__file__", None)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin in (None, "namespace"):
        # a folder called nki without __init__.py (a checkout's docs folder on sys.path) is a
        # namespace package, not an installed nki
        return None, None
    return spec, spec.origin


def _stand_ins() -> tuple[types.ModuleType, ...]:
    """The modules standing in for PyTorch's Neuron packages (each names its `ROOT`)."""
    from . import torch_neuronx_host, torch_xla_cpu
    return torch_xla_cpu, torch_neuronx_host


def install() -> bool:
    """Make `nki`, `neuronxcc.nki` and their submodules resolve to apdsl.nki; True when they
    do.  With a real `nki` importable (already imported, or found on sys.path) nothing
    changes: a NkiShadowWarning says so and install() returns False."""
    if installed():
        return True
    real, origin = _real("nki")
    if real is not None:
        warnings.warn(NkiShadowWarning(
            f"a real nki package is installed ({origin}); apdsl.nki does not shadow it. "
            "To run on apdsl, import apdsl.nki as nki (and apdsl.nki.language as nl, "
            "apdsl.nki.isa as nisa), or remove the real nki from this environment"),
            stacklevel=2)
        return False
    from .modules import Finder, as_packages, table
    legacy_real = _real("neuronxcc")[0] is not None
    provided = {k: v for k, v in table().items()
                if not (legacy_real and k.startswith("neuronxcc"))}
    roots = ["nki"] if legacy_real else ["nki", "neuronxcc"]
    if _real("torch")[0] is not None:  # PyTorch's Neuron packages, where absent
        for stand_in in _stand_ins():
            if _real(stand_in.ROOT)[0] is None:
                provided.update(stand_in.modules())
                roots.append(stand_in.ROOT)
    sys.modules.update(provided)
    _GIVEN_PATH.extend(as_packages(provided.values()))
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder(list(provided), tuple(roots)))
    return True


def uninstall() -> None:
    """Undo install() (a real nki, which install() never replaces, is left alone)."""
    if not installed():
        return
    from .modules import Finder, plain_again, table
    ours = table()
    for name in ours:
        if name in sys.modules and (name == "neuronxcc" and getattr(
                sys.modules[name], "nki", None) is _ours() or sys.modules[name] is ours[name]):
            del sys.modules[name]
    roots = {stand_in.ROOT for stand_in in _stand_ins()}
    for name in [n for n in sys.modules if n.partition(".")[0] in roots]:
        if getattr(sys.modules[name], "apdsl_stand_in", False):
            del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, Finder)]
    plain_again(_GIVEN_PATH)
