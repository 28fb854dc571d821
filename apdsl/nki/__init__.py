"""`apdsl.nki`: the NKI Python frontend (SPEC section 12).  Real NKI kernels run unchanged on
apdsl's model, with its checks and diagnostics:

    import apdsl.nki as nki
    import apdsl.nki.language as nl
    import apdsl.nki.isa as nisa

`nki.jit` kernels called with NumPy arrays (or through `nki.simulate(kernel)(...)`) return
NumPy results; `install()` makes a plain `import nki` resolve here when the real package is
absent, and `pytest -p apdsl.nki` does so for a test session.
"""

from __future__ import annotations

from . import collectives, compiler, isa, language
from . import tensor_types as typing
from .dtype_module import DTYPE as dtype
from .install import install, uninstall
from .kernel import Kernel, baremetal, benchmark, jit, simulate, simulate_kernel, trace
from .kernel import benchmark as profile
from .plugin import pytest_configure, pytest_load_initial_conftests
from .ranks import simulate_ranks
from .tensor_types import tensor

cpu_simulate = simulate  # the NKI CPU simulator's name for the same call (`nki.cpu_simulate`)

# `pytest -p apdsl.nki` also loads the surface that reports failed tests as diagnostics
pytest_plugins = ["apdsl.surfaces.pytest_report"]

__all__ = ["Kernel", "baremetal", "benchmark", "collectives", "compiler", "cpu_simulate",
           "dtype", "install",
           "isa", "jit", "language", "profile", "pytest_configure",
           "pytest_load_initial_conftests", "simulate", "simulate_kernel", "simulate_ranks", "tensor",
           "trace",
           "typing", "uninstall"]


def __getattr__(name: str) -> object:
    """A name `nki` lacks: a located diagnostic naming it at the user's line (still an
    AttributeError, so `hasattr` and `getattr(nki, name, default)` keep working)."""
    if name.startswith(("__", "pytest_")) or _submodule(name):
        raise AttributeError(name)  # pytest's hook look-ups; an apdsl.nki module not loaded
    from difflib import get_close_matches

    from .namespace import missing
    close = get_close_matches(name, __all__, n=3)
    raise missing(f"apdsl.nki has no nki.{name}", code="APK144", name=name,
                  notes=[f"nki offers: {', '.join(sorted(__all__))}"],
                  help=f"did you mean {', '.join(f'nki.{c}' for c in close)}?"
                  if close else None)


def _submodule(name: str) -> bool:
    from pathlib import Path
    here = Path(__file__).parent
    return (here / f"{name}.py").exists() or (here / name / "__init__.py").exists()
