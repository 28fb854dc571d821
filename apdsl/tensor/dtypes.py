"""Element types: names, aliases, widths and their NumPy (ml_dtypes) counterparts."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..errors import ApdslNameError


@dataclass(frozen=True)
class DType:
    name: str
    bits: int
    np: np.dtype
    kind: str  # "f" float, "i" signed int, "u" unsigned int

    @property
    def bytes(self) -> float:
        return self.bits / 8

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def native(self) -> bool:
        """True when NumPy can save and reload the dtype through `.npy`."""
        return self.name not in ("bfloat16", "int4") and not self.name.startswith("float8")

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


def _d(name: str, bits: int, npd, kind: str) -> DType:
    return DType(name, bits, np.dtype(npd), kind)


DTYPES: dict[str, DType] = {d.name: d for d in (
    _d("float32", 32, np.float32, "f"),
    _d("float16", 16, np.float16, "f"),
    _d("bfloat16", 16, ml_dtypes.bfloat16, "f"),
    _d("float8_e4m3", 8, ml_dtypes.float8_e4m3, "f"),
    _d("float8_e4m3fn", 8, ml_dtypes.float8_e4m3fn, "f"),
    _d("float8_e5m2", 8, ml_dtypes.float8_e5m2, "f"),
    _d("int4", 4, ml_dtypes.int4, "i"),
    _d("int8", 8, np.int8, "i"),
    _d("uint8", 8, np.uint8, "u"),
    _d("int16", 16, np.int16, "i"),
    _d("uint16", 16, np.uint16, "u"),
    _d("int32", 32, np.int32, "i"),
    _d("uint32", 32, np.uint32, "u"),
    _d("int64", 64, np.int64, "i"),
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
    src_is_int = values.dtype.kind in "iub" and values.dtype != np.dtype(ml_dtypes.int4)
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
