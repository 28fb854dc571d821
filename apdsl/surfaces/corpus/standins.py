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
  Its packed microscaling dtypes (`float8_e4m3fn_x4`, `float8_e5m2_x4`, `float4_e2m1fn_x4`)
  keep four values in one element, the first in the lowest bits (as nki-library's unpackers
  read them): `static_cast` of float32 [P, F] to one of them is [P, F / 4] packed elements
  (`PackedArray`, whose bits are the unsigned integers of that width and which knows its
  dtype), and `static_cast` of those to a float dtype is the [P, F] values again.

The finder sits last on `sys.meta_path`, so a module that is really there always wins."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from typing import Any

import numpy as np


class AbsentFromCheckout(RuntimeError):
    """A name of a module the checkout leaves out was used (called, instantiated): the
    repository's code needs what its public checkout does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not in the checkout (the public repository leaves this "
                         "module out)")
        self.name = name


class AbsentName:
    """The type of what an absent module's names are (each a subclass)."""

    module = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AbsentFromCheckout(f"{self.module}.{type(self).__name__}")


class AbsentModule(types.ModuleType):
    """A module of the repository that its checkout leaves out: every name is a class that
    cannot be instantiated (it can still be imported, subclassed and used in annotations).
    It has no file: pytest, asked to import a test file under a name a stand-in holds (two
    test folders both named `test`, driven one after the other), reports the mismatch."""

    __file__: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (AbsentName,), {"module": self.__name__})
        setattr(self, name, made)
        return made


class PackedMX:
    """A packed microscaling dtype of `neuron_dtypes` (four values in one element)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"neuron_dtypes.{self.name}"


class PackedArray(np.ndarray):
    """Packed MX elements as `neuron_dtypes` keeps them: the bits as unsigned integers, and the
    packed dtype (`apdsl_dtype`, which apdsl's kernel arguments read).  As with the real
    package, such an array has no cast to a number type (`astype` raises TypeError); `view`
    with a dtype gives the plain bits."""

    apdsl_dtype = ""

    def __array_finalize__(self, obj: Any) -> None:
        self.apdsl_dtype = getattr(obj, "apdsl_dtype", "")

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise TypeError(f"neuron_dtypes: {self.apdsl_dtype} has no cast to {dtype}; "
                        "static_cast unpacks it")

    def view(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if args or kwargs.get("dtype") is not None:
            return np.asarray(self).view(*args, **kwargs)
        return super().view()


def packed_name(value: Any) -> str:
    """The packed MX dtype an array or dtype stands for ('' when it is not one): the stand-in's
    own dtypes, or `nl.float8_e4m3fn_x4` and the like (nki-library's goldens cast to those)."""
    if isinstance(value, PackedMX):
        return value.name
    from ...runtime.table.semantics_mx import ELEMENTS
    from ...tensor.dtypes import DType
    if isinstance(value, DType) and value.name in ELEMENTS:
        return value.name
    meta = getattr(value, "metadata", None) or getattr(getattr(value, "dtype", None),
                                                        "metadata", None) or {}
    return str(getattr(value, "apdsl_dtype", "") or meta.get("apdsl_dtype", "") or "")


def pack_values(data: Any, name: str) -> PackedArray:
    """float values [..., F] -> packed elements [..., F / 4], each value rounded to nearest
    even in the element type."""
    import ml_dtypes

    from ...runtime.table.semantics_mx import ELEMENTS, PACK, pack
    values = np.asarray(data, dtype=np.float32)
    if values.shape[-1] % PACK:
        raise ValueError(f"static_cast to {name}: the last dimension ({values.shape[-1]}) "
                         f"is not a multiple of {PACK}")
    element = getattr(ml_dtypes, ELEMENTS[name][0])
    grouped = values.reshape(*values.shape[:-1], values.shape[-1] // PACK, PACK)
    out = pack(grouped.astype(element), name).view(PackedArray)
    out.apdsl_dtype = name
    return out


def unpack_values(bits: Any, name: str) -> np.ndarray:
    """packed elements [..., F] -> float32 values [..., 4 F]."""
    from ...runtime.table.semantics_mx import unpack
    raw = np.asarray(bits)
    values = unpack(raw, name)
    return values.reshape(*raw.shape[:-1], raw.shape[-1] * values.shape[-1])


def neuron_dtypes() -> types.ModuleType:
    """The `neuron_dtypes` helpers on apdsl's dtype model."""
    import ml_dtypes

    from ...tensor.dtypes import cast_array
    from ...tensor.dtypes import dtype as apdsl_dtype

    def static_cast(data: Any, dtype: Any) -> Any:
        """`data` as `dtype`, by apdsl's one cast rule (round to nearest even, integers
        saturate); a dtype apdsl lacks by NumPy's `astype`; packed MX dtypes packed and
        unpacked as the module's docstring says."""
        if packed_name(dtype):
            return pack_values(data, packed_name(dtype))
        if packed_name(data):
            data = unpack_values(data, packed_name(data))
        try:
            target = apdsl_dtype(np.dtype(dtype).name)
        except Exception:  # noqa: BLE001 - a dtype apdsl has no name for
            return np.asarray(data).astype(dtype)
        return cast_array(np.asarray(data), target)

    def is_float_type(dtype: Any) -> bool:
        if packed_name(dtype):
            return True
        dt = np.dtype(dtype)
        return dt.kind == "f" or "float" in dt.name

    def sizeinbytes(dtype: Any) -> int:
        if packed_name(dtype):
            from ...tensor.dtypes import dtype as apdsl_dtype
            return apdsl_dtype(packed_name(dtype)).bits // 8
        return int(np.dtype(dtype).itemsize)

    m = types.ModuleType("neuron_dtypes", "apdsl's stand-in for the Neuron SDK's dtype helpers")
    for name in ("bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "finfo", "iinfo"):
        setattr(m, name, getattr(ml_dtypes, name))
    m.static_cast, m.is_float_type, m.sizeinbytes = static_cast, is_float_type, sizeinbytes
    for name in ("float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4"):
        setattr(m, name, PackedMX(name))
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
