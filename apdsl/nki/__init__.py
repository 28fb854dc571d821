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

from . import compiler, isa, language
from .install import install, uninstall
from .kernel import Kernel, baremetal, benchmark, jit, simulate, simulate_kernel, trace
from .kernel import benchmark as profile
from .plugin import pytest_configure, pytest_load_initial_conftests

# `pytest -p apdsl.nki` also loads the surface that reports failed tests as diagnostics
pytest_plugins = ["apdsl.surfaces.pytest_report"]

__all__ = ["Kernel", "baremetal", "benchmark", "compiler", "install", "isa", "jit", "language",
           "pytest_configure", "pytest_load_initial_conftests",
           "profile", "simulate", "simulate_kernel", "trace", "uninstall"]
