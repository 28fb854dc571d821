"""Element types: names, aliases, widths and their NumPy (ml_dtypes) counterparts."""

from __future__ import annotations

from importlib import import_module

import numpy as np

from ..errors import ApdslNameError


class DType:
    """An element type.  `np` is its NumPy dtype; the ml_dtypes ones (bfloat16, float8, int4)
    load ml_dtypes on first use, which keeps it off the path of programs that never touch
    them (a cold `apdsl check`)."""

    __slots__ = ("name", "bits", "kind", "_source", "_np")

    def __init__(self, name: str, bits: int, source: str, kind: str) -> None:
        self.name, self.bits, self.kind = name, bits, kind  # kind: "f", "i" signed, "u"
        self._source = source  # "numpy.float32" or "ml_dtypes.bfloat16"
        self._np: np.dtype | None = None

    @property
    def np(self) -> np.dtype:
        if self._np is None:
            module, attr = self._source.split(".")
            self._np = np.dtype(getattr(import_module(module), attr))
        return self._np

    @property
    def bytes(self) -> float:
        return self.bits / 8

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def native(self) -> bool:
        """True when NumPy can save and reload the dtype through `.npy`."""
        return self._source.startswith("numpy.")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> tuple:
        return (dtype, (self.name,))

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("float32", 32, "numpy.float32", "f"),
    DType("float16", 16, "numpy.float16", "f"),
    DType("bfloat16", 16, "ml_dtypes.bfloat16", "f"),
    DType("float8_e4m3", 8, "ml_dtypes.float8_e4m3", "f"),
    DType("float8_e4m3fn", 8, "ml_dtypes.float8_e4m3fn", "f"),
    DType("float8_e5m2", 8, "ml_dtypes.float8_e5m2", "f"),
    DType("int4", 4, "ml_dtypes.int4", "i"),
    DType("int8", 8, "numpy.int8", "i"),
    DType("uint8", 8, "numpy.uint8", "u"),
    DType("int16", 16, "numpy.int16", "i"),
    DType("uint16", 16, "numpy.uint16", "u"),
    DType("int32", 32, "numpy.int32", "i"),
    DType("uint32", 32, "numpy.uint32", "u"),
    DType("int64", 64, "numpy.int64", "i"),
)}

ALIASES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32",
           "fp32": "float32", "fp16": "float16", "half": "float16", "float": "float32",
           "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "u32": "uint32",
           "i64": "int64", "fp8_e4m3": "float8_e4m3", "fp8_e5m2": "float8_e5m2"}

ALL_NAMES = tuple(DTYPES) + tuple(ALIASES)


def dtype(value: object) -> DType:
    """Resolve a dtype from a name, an alias, a DType or a NumPy dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        key = value.removeprefix("nl.").removeprefix("np.")
        key = ALIASES.get(key, key)
        if key in DTYPES:
            return DTYPES[key]
        from difflib import get_close_matches
        close = get_close_matches(key, ALL_NAMES, n=3)
        raise ApdslNameError(f"unknown dtype '{value}'", code="APK104",
                             help=f"did you mean {' or '.join(repr(c) for c in close)}?"
                             if close else f"dtypes are: {', '.join(DTYPES)}", name=value)
    try:
        npd = np.dtype(value)
    except TypeError:
        raise ApdslNameError(f"not a dtype: {value!r}", code="APK104") from None
    for d in DTYPES.values():
        if d.np == npd:
            return d
    raise ApdslNameError(f"NumPy dtype {npd} has no apdsl counterpart", code="APK104",
                         help="pass dtype= to convert it (for example dtype='float32')",
                         numpy_dtype=str(npd))


def cast_array(values: np.ndarray, to: DType) -> np.ndarray:
    """Convert through float32 as the hardware does: round to nearest even; integer targets
    saturate and map NaN to 0.  Same-dtype and integer-to-wider-integer casts are exact."""
    values = np.asarray(values)
    if values.dtype == to.np:
        return values
    src_is_int = values.dtype.kind in "iub" and values.dtype != DTYPES["int4"].np
    if to.kind in "iu":
        info = np.iinfo(np.int8) if to.name == "int4" else np.iinfo(to.np)
        lo, hi = (-8, 7) if to.name == "int4" else (info.min, info.max)
        if src_is_int:
            return np.clip(values.astype(np.int64), lo, hi).astype(to.np)
        # float64 holds every int32 bound exactly, so clipping there saturates, never wraps
        f = values.astype(np.float32).astype(np.float64)
        top = float(hi) if to.bits < 64 else float(np.nextafter(2.0**63, 0))
        f = np.clip(np.where(np.isnan(f), 0.0, np.rint(f)), float(lo), top)
        return f.astype(to.np)
    if src_is_int and to.name == "float32":
        return values.astype(np.float32)
    return values.astype(np.float32).astype(to.np)
