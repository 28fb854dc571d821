"""What a repository's test harness imports that neither its checkout nor any package registry
provides, made importable for a corpus run (and only there):

- a module of the repository's own packages that the public checkout leaves out (nki-library's
  test harness imports `test.utils.scripts.remote_lock_scripts` and
  `test.utils.perf_analysis_private`, used on hardware hosts only): a module whose every name
  is a class that cannot be made, so importing works and any use on a path that needs the
  module stops with an error naming it;
- `neuron_dtypes`, the Neuron SDK's host-side dtype helpers (published on the Neuron package
  repository only): `static_cast` by apdsl's cast rule, `is_float_type`, `sizeinbytes`,
  `finfo` and the dtype names, the helpers the repositories' tests use to make their inputs.

The finder sits last on `sys.meta_path`, so a module that is really there always wins."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from typing import Any


class AbsentName:
    """The type of what an absent module's names are (each a subclass)."""

    module = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"{self.module}.{type(self).__name__} is not in the checkout "
                           "(the public repository leaves this module out)")


class AbsentModule(types.ModuleType):
    """A module of the repository that its checkout leaves out: every name is a class that
    cannot be instantiated (it can still be imported, subclassed and used in annotations)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (AbsentName,), {"module": self.__name__})
        setattr(self, name, made)
        return made


def neuron_dtypes() -> types.ModuleType:
    """The `neuron_dtypes` helpers on apdsl's dtype model."""
    import ml_dtypes
    import numpy as np

    from ...tensor.dtypes import cast_array
    from ...tensor.dtypes import dtype as apdsl_dtype

    def static_cast(data: Any, dtype: Any) -> Any:
        """`data` as `dtype`, by apdsl's one cast rule (round to nearest even, integers
        saturate); a dtype apdsl lacks by NumPy's `astype`."""
        try:
            target = apdsl_dtype(np.dtype(dtype).name)
        except Exception:  # noqa: BLE001 - a dtype apdsl has no name for
            return np.asarray(data).astype(dtype)
        return cast_array(np.asarray(data), target)

    def is_float_type(dtype: Any) -> bool:
        dt = np.dtype(dtype)
        return dt.kind == "f" or "float" in dt.name

    def sizeinbytes(dtype: Any) -> int:
        return int(np.dtype(dtype).itemsize)

    m = types.ModuleType("neuron_dtypes", "apdsl's stand-in for the Neuron SDK's dtype helpers")
    for name in ("bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "finfo", "iinfo"):
        setattr(m, name, getattr(ml_dtypes, name))
    m.static_cast, m.is_float_type, m.sizeinbytes = static_cast, is_float_type, sizeinbytes
    return m


STAND_INS = {"neuron_dtypes": neuron_dtypes}


class StandInFinder:
    """The meta path finder for the modules above, for the repository at `root`."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root) + os.sep
        self.used: list[str] = []

    def _in_checkout(self, path: Sequence[str] | None) -> bool:
        return all(os.path.realpath(p).startswith(self.root) for p in path)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None
                  ) -> ModuleSpec | None:
        if fullname in STAND_INS:
            return ModuleSpec(fullname, self)
        if "." in fullname and path and self._in_checkout(path):
            spec = ModuleSpec(fullname, self, is_package=True)
            # where the module would be: its own absent submodules are found here too
            spec.submodule_search_locations = [
                os.path.join(path[0], fullname.rpartition(".")[2])]
            return spec
        return None

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        self.used.append(spec.name)
        if spec.name in STAND_INS:
            return STAND_INS[spec.name]()
        return AbsentModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None

    def invalidate_caches(self) -> None:
        return None


def install_stand_ins(root: str) -> StandInFinder:
    finder = StandInFinder(root)
    sys.meta_path.append(finder)
    return finder
