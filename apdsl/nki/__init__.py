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

from ..tensor.dtypes import DType as dtype
from . import collectives, compiler, isa, language
from . import tensor_types as typing
from .install import install, uninstall
from .kernel import Kernel, baremetal, benchmark, jit, simulate, simulate_kernel, trace
from .kernel import benchmark as profile
from .plugin import pytest_configure, pytest_load_initial_conftests
from .tensor_types import tensor

# `pytest -p apdsl.nki` also loads the surface that reports failed tests as diagnostics
pytest_plugins = ["apdsl.surfaces.pytest_report"]

__all__ = ["Kernel", "baremetal", "benchmark", "collectives", "compiler", "dtype", "install",
           "isa", "jit", "language", "profile", "pytest_configure",
           "pytest_load_initial_conftests", "simulate", "simulate_kernel", "tensor", "trace",
           "typing", "uninstall"]
