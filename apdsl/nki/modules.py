"""Every module path an NKI kernel imports, as apdsl provides it (SPEC 16): the current API
(`nki`, `nki.language`, `nki.isa`, `nki.isa.constants`, `nki.typing`, `nki.compiler`,
`nki.collectives`, `nki.dtype`) and the legacy `neuronxcc.nki` tree (`.language`, `.isa`, `.typing`,
`.compiler`), which maps onto the same modules: one model, both spellings.

`install()` puts these in `sys.modules` together with `Finder`, which turns an import of any
other `nki.*` or `neuronxcc.*` module into a located diagnostic naming it (APK920), still a
ModuleNotFoundError for code that tries an import and falls back."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Sequence
from importlib.machinery import ModuleSpec
from typing import Any

from ..errors import ApdslError
from .locate import caller_span

ROOTS = ("nki", "neuronxcc")


class NkiModuleError(ApdslError, ModuleNotFoundError):
    """An `nki`/`neuronxcc` module apdsl does not provide: a located diagnostic, and still a
    ModuleNotFoundError (so `try: import ... except ImportError:` keeps working, and its
    `name` is the module's)."""

    default_code = "APK920"

    def __init__(self, message: str, *, module: str, **fields: Any) -> None:
        super().__init__(message, module=module, **fields)
        ImportError.__init__(self, message, name=module)  # sets `name` (not a field)


def _package() -> Any:
    return sys.modules[__name__.rpartition(".")[0]]


def _legacy_root() -> types.ModuleType:
    """`neuronxcc`: the legacy compiler package, of which apdsl provides `neuronxcc.nki`."""
    root = types.ModuleType("neuronxcc", "apdsl's stand-in for the Neuron compiler package: "
                            "only its `nki` subpackage, which is apdsl.nki")
    root.__path__ = []  # a package: its other submodules go through Finder
    root.nki = _package()
    return root


def table() -> dict[str, types.ModuleType]:
    """Module name -> the apdsl module that answers to it."""
    ours = _package()
    shared = {"": ours, ".language": ours.language, ".isa": ours.isa,
              ".isa.constants": ours.isa.constants, ".typing": ours.typing,
              ".compiler": ours.compiler}
    out = {f"nki{k}": v for k, v in shared.items()}
    out["nki.collectives"] = ours.collectives
    out["nki.dtype"] = ours.dtype  # (also the type of the dtypes: `dtype_module`)
    out.update({f"neuronxcc.nki{k}": v for k, v in shared.items()})
    out["neuronxcc"] = _legacy_root()
    return out


def as_packages(modules: Iterable[types.ModuleType]) -> list[types.ModuleType]:
    """Give each plain module of `modules` an empty `__path__`: Python then asks the meta path
    finders for its submodules, so an import of one apdsl lacks (`nki.compiler.frontend`) is the
    finder's located diagnostic naming it, not Python's "'nki.compiler' is not a package".
    Returns the modules changed, for `plain_again`."""
    given = []
    for module in modules:
        if not hasattr(module, "__path__"):
            module.__path__ = []
            given.append(module)
    return given


def plain_again(given: list[types.ModuleType]) -> None:
    """Undo `as_packages` (emptying `given`)."""
    while given:
        del given.pop().__path__


# PyTorch's Neuron packages apdsl stands in for (where torch is installed without them): what
# the stand-in provides, and what the rest of the package is for
FRAMEWORKS = {
    "torch_xla": ("with torch_xla absent, apdsl provides torch_xla (device, sync) and "
                  "torch_xla.core.xla_model (xla_device, mark_step, ...), the XLA device "
                  "being the CPU, where apdsl runs kernels",
                  "distributed training, metrics and data loaders need the real torch_xla"),
    "torch_neuronx": ("with torch_neuronx absent, apdsl provides "
                      "torch_neuronx.utils.get_platform_target (the simulated NeuronCore's "
                      "platform)",
                      "tracing a model to a NEFF, its XLA ops and the profiler need the real "
                      "torch_neuronx (with the Neuron compiler and runtime)"),
}


# modules of the Neuron compiler package that are no part of NKI's API: the kernels it bundles
# (NKI's release notes: "still shipped as part of Neuron package in neuronxcc.nki.kernels") and
# its internals.  neuronx-distributed imports them when it loads.
COMPILER_PARTS = ("neuronxcc.nki.kernels", "neuronxcc.nki._private_kernels",
                  "neuronxcc.nki._pre_prod_kernels", "neuronxcc.starfish")


def compiler_part(module: str) -> bool:
    """Is `module` one of the compiler package's own modules (COMPILER_PARTS)?"""
    return any(module == p or module.startswith(p + ".") for p in COMPILER_PARTS)


class Finder:
    """A meta path finder for `nki.*` and `neuronxcc.*` names not in `table()`: the import
    stops at a located APK920 naming the module."""

    def __init__(self, provided: Sequence[str], roots: Sequence[str] = ROOTS) -> None:
        self.provided = tuple(sorted(provided))
        self.roots = tuple(roots)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> ModuleSpec | None:
        if fullname.split(".")[0] not in self.roots or fullname in sys.modules:
            return None
        framework = FRAMEWORKS.get(fullname.split(".")[0])
        if framework is not None:
            provides, needs = framework
            raise NkiModuleError(
                f"apdsl's {fullname.split('.')[0]} has no module {fullname}", module=fullname,
                span=caller_span(2), notes=[provides], help=needs)
        if compiler_part(fullname):
            raise NkiModuleError(
                f"{fullname} is the Neuron compiler's (neuronx-cc), not NKI's API: apdsl "
                "does not provide it", module=fullname, span=caller_span(2),
                notes=[f"the NKI modules apdsl provides: {', '.join(self.provided)}"],
                help="it comes with neuronx-cc, the Neuron compiler package, which apdsl "
                     "does not replace")
        raise NkiModuleError(
            f"apdsl.nki has no module {fullname}", module=fullname, span=caller_span(2),
            notes=[f"the NKI modules apdsl provides: {', '.join(self.provided)}"],
            help="internal modules of the Neuron compiler (neuronxcc.starfish, "
                 "neuronxcc.nki._private_kernels, ...) are not part of NKI's public API")

    def invalidate_caches(self) -> None:
        return None
