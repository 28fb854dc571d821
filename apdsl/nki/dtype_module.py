"""`nki.dtype`: both the type of NKI's dtypes (`isinstance(nl.float32, nki.dtype)`, an
annotation `compute_dtype: nki.dtype = nl.bfloat16` as the NKI library reference writes it)
and a module of their names (`import nki.dtype as nt; nt.float8_e4m3`, as nki-library's tests
use it, SPEC 16): one object, so importing the module does not replace the type."""

from __future__ import annotations

import types
from typing import Any

from ..tensor.dtypes import DType


def _names() -> list[str]:
    from . import language
    return sorted(n for n in dir(language) if isinstance(getattr(language, n, None), DType))


class DtypeModule(types.ModuleType):
    """The `nki.dtype` object: a module whose names are `nki.language`'s dtypes (the same
    objects), and against which `isinstance` tests for an NKI dtype."""

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, DType)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _names():
            from . import language
            return getattr(language, name)
        from .namespace import missing
        raise missing(f"apdsl.nki has no nki.dtype.{name}", code="APK144", name=name,
                      notes=[f"nki.dtype offers the dtypes: {', '.join(_names())}"])

    def __dir__(self) -> list[str]:
        return _names()


DTYPE = DtypeModule("nki.dtype", __doc__)
