"""Element types: names, aliases, widths and their NumPy (ml_dtypes) counterparts."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import numpy as np

from ..errors import ApdslNameError, ApdslTypeError


def _limits(np_dtype: np.dtype) -> Any:
    if np_dtype.kind in "iub":
        return np.iinfo(np_dtype) if np_dtype.kind != "b" else np.iinfo(np.uint8)
    try:
        return np.finfo(np_dtype)
    except ValueError:  # the ml_dtypes floats
        import ml_dtypes
        return ml_dtypes.finfo(np_dtype)


class DType:
    """An element type.  `np` is its NumPy dtype; the ml_dtypes ones (bfloat16, float8, int4)
    load ml_dtypes on first use, which keeps it off the path of programs that never touch
    them (a cold `apdsl check`)."""

    __slots__ = ("name", "bits", "kind", "_source", "_np")

    def __init__(self, name: str, bits: int, source: str, kind: str) -> None:
        self.name, self.bits, self.kind = name, bits, kind  # "f", "i" signed, "u", "x" packed
        self._source = source  # "numpy.float32" or "ml_dtypes.bfloat16"
        self._np: np.dtype | None = None

    @property
    def np(self) -> np.dtype:
        if self._np is None:
            module, attr = self._source.split(".")
            self._np = np.dtype(getattr(import_module(module), attr))
        return self._np

    def is_numpy(self, npd: np.dtype) -> bool:
        """Whether `npd` is this dtype's NumPy dtype.  An ml_dtypes type is told apart by its
        name first, so asking about a NumPy type never imports ml_dtypes."""
        module, attr = self._source.split(".")
        if module == "ml_dtypes" and npd.name != attr:
            return False
        return self.np == npd

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype (so `np.zeros(n, dtype=nl.float32)` takes apdsl's dtypes).  A
        packed MX dtype's is the unsigned integer of its width naming it in its metadata
        (`apdsl_dtype`), so an array made with it (nki-library's tests fill
        `np.zeros(shape, dtype=nl.float4_e2m1fn_x4)` with packed weights) is still that dtype
        when it reaches a kernel."""
        if self.kind == "x":
            return np.dtype(self.np, metadata={"apdsl_dtype": self.name})
        return self.np

    @property
    def min(self) -> Any:
        """The most negative finite value (`nl.float32.min`, as NumPy's finfo/iinfo)."""
        return _limits(self.np).min

    @property
    def max(self) -> Any:
        """The largest finite value."""
        return _limits(self.np).max

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

    # Equal dtypes are the same object: every DType is one of `DTYPES` (made once, below;
    # `dtype()` and unpickling return those), so they compare and hash by identity, in C
    # (every instruction compares dtypes; a Python __eq__ cost ~0.1 us a comparison).

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
    # tfloat32 is stored as float32; an engine reading it keeps 10 mantissa bits
    # (`round_tfloat32`).  After float32 in this table, so NumPy's float32 maps to float32.
    DType("tfloat32", 32, "numpy.float32", "f"),
    # Microscaling (NKI docs, MXFP deep dive): the shared power-of-two scale (8 exponent bits,
    # no sign or mantissa, 0xFF is NaN) and the packed types, four values in one element
    # (float8 x4 is 32 bits, float4 x4 is 16); their bits are stored in the unsigned integer
    # of that width.  After uint32/uint16, so NumPy's unsigned types map to those.
    DType("float8_e8m0fnu", 8, "ml_dtypes.float8_e8m0fnu", "f"),
    DType("float8_e4m3fn_x4", 32, "numpy.uint32", "x"),
    DType("float8_e5m2_x4", 32, "numpy.uint32", "x"),
    DType("float4_e2m1fn_x4", 16, "numpy.uint16", "x"),
    # a byte holding 0 or 1 (predicates, masks); casts to it test for non-zero
    DType("bool_", 8, "numpy.bool_", "b"),
)}

ALIASES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32",
           "fp32": "float32", "fp16": "float16", "half": "float16", "float": "float32",
           "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "u32": "uint32",
           "i64": "int64", "fp8_e4m3": "float8_e4m3", "fp8_e5m2": "float8_e5m2",
           "tf32": "tfloat32"}

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
        if d.is_numpy(npd):
            return d
    raise ApdslNameError(f"NumPy dtype {npd} has no apdsl counterpart", code="APK104",
                         help="pass dtype= to convert it (for example dtype='float32')",
                         numpy_dtype=str(npd))


def cast_array(values: object, to: DType) -> np.ndarray:
    """The one dtype conversion (SPEC section 4), used by every instruction, memset, input and
    initialiser.  Same-dtype values are returned as they are (bit-exact).  Integer sources
    (NumPy integers of any width, bool, int4, Python ints of any size) go to an integer dtype
    exactly, saturating at its bounds, never wrapping.  Everything else goes through float32:
    round to nearest even, then to an integer dtype saturate with NaN -> 0, or to a float dtype
    round again (overflow to infinity, as the rule says)."""
    arr = np.asarray(values)
    if arr.dtype == to.np:
        return arr
    if to.kind == "x":
        raise packed_cast_error(to, arr.dtype)
    if arr.dtype == object:
        return _cast_objects(arr, to)
    if to.kind == "b":  # non-zero is True (NaN too is not a number: False, as NaN -> 0)
        if arr.dtype == object:
            arr = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):
            nonzero = arr != 0
        return nonzero & ~np.isnan(arr) if arr.dtype.kind in "fc" else nonzero
    with np.errstate(over="ignore", invalid="ignore"):
        if arr.dtype.kind == "b":
            arr = arr.astype(np.uint8)
        elif arr.dtype.name == "int4":  # ml_dtypes' int4, named so as not to load ml_dtypes
            arr = arr.astype(np.int8)
        if arr.dtype.kind in "iu":
            if to.kind in "iu":
                return _saturate_int(arr, to)
            return arr.astype(np.float32).astype(to.np)
        f32 = arr.astype(np.float32)
        if to.kind not in "iu":
            return f32.astype(to.np)
        return _float_to_int(f32, to)


def packed_cast_error(to: DType, source: object) -> ApdslTypeError:
    """APK960 for numbers converted into a packed MX dtype: each of its elements holds four
    values (their bits, stored as an unsigned integer), so the cast rule has no meaning for
    it.  The bits themselves pass unchanged (an array of its storage dtype)."""
    return ApdslTypeError(
        f"cannot convert {source} values to {to}, a packed MX dtype (four values in each "
        "element)", code="APK960", dtype=to.name,
        help=f"quantize_mx writes MX data; to give the bits, pass a {to.np} array (or view a "
             f"uint8 tensor as {to.name})")


def int_bounds(to: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    if to.name == "int4":
        return -8, 7
    info = np.iinfo(to.np)
    return int(info.min), int(info.max)


def _saturate_int(arr: np.ndarray, to: DType) -> np.ndarray:
    """Integer to integer: clip in the source dtype (both bounds representable there, so no
    value wraps), then convert."""
    lo, hi = int_bounds(to)
    src = np.iinfo(arr.dtype)
    lo, hi = max(lo, int(src.min)), min(hi, int(src.max))
    clipped = np.clip(arr, arr.dtype.type(lo), arr.dtype.type(hi))
    if to.name == "int4":
        clipped = clipped.astype(np.int8)
    return clipped.astype(to.np)


def _float_to_int(f32: np.ndarray, to: DType) -> np.ndarray:
    """float32 to integer: round to nearest even, saturate, NaN -> 0.  Decided in float64,
    which holds every float32 and every bound test exactly (2**63 - 1 rounds to 2**63 there,
    and no float32 lies between the two)."""
    lo, hi = int_bounds(to)
    f = f32.astype(np.float64)
    f = np.where(np.isnan(f), 0.0, np.rint(f))
    high, low = f >= float(hi), f <= float(lo)
    work = np.int8 if to.name == "int4" else to.np
    out = np.where(high | low, 0.0, f).astype(work)
    out[high] = hi
    out[low] = lo
    return out.astype(to.np) if to.name == "int4" else out


def _round_int_to_f32(v: int) -> float:
    """A Python int rounded once to float32 (nearest even); beyond float32, infinity."""
    mag = abs(v)
    excess = mag.bit_length() - 24
    if excess > 0:
        q, r = divmod(mag, 1 << excess)
        half = 1 << (excess - 1)
        if r > half or (r == half and q & 1):
            q += 1
        mag = q << excess
    if mag >= 2**128:
        return float("inf") if v > 0 else float("-inf")
    return float(mag) if v >= 0 else -float(mag)


def _cast_objects(arr: np.ndarray, to: DType) -> np.ndarray:
    """Python ints beyond int64/uint64 (NumPy keeps them as objects), and any Python numbers
    mixed with them."""
    flat = arr.reshape(-1)
    if to.kind in "iu":
        lo, hi = int_bounds(to)
        ints = []
        for x in flat:
            if isinstance(x, (bool, int, np.integer)):
                ints.append(min(max(int(x), lo), hi))
            else:
                ints.append(int(_float_to_int(np.asarray([x], np.float32), to)[0]))
        work = np.uint64 if to.kind == "u" else np.int64
        out = np.array(ints, dtype=work).reshape(arr.shape)
        return _saturate_int(out, to) if to.np != work else out
    floats = [_round_int_to_f32(int(x)) if isinstance(x, (bool, int, np.integer)) else float(x)
              for x in flat]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(floats, np.float64).astype(np.float32).reshape(arr.shape).astype(to.np)


def widen_float32(src: np.ndarray, out: np.ndarray) -> None:
    """Store `src` (any dtype, `out`'s shape) in float32 array `out` as `astype` converts it.
    A bfloat16 is the upper half of the float32 of the same value (every bit pattern, NaN
    payloads included), so it widens by a shift of its 16 bits: half the time of the
    element-wise cast, on every bfloat16 input of a tensor-engine matmul."""
    npd = src.dtype
    # (the type's name: NumPy's `dtype.name` is Python code, run on every matmul input)
    if npd.itemsize == 2 and npd.type.__name__ == "bfloat16":
        np.left_shift(src.view(np.uint16), 16, out=out.view(np.uint32), dtype=np.uint32)
    else:
        out[...] = src  # (an assignment casts as astype does, and is cheaper than np.copyto)


def round_tfloat32(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to tfloat32's 10 mantissa bits (nearest even), as an engine
    reads a tfloat32 operand; NaN and infinity stay as they are."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    bits = f.view(np.uint32)
    keep = np.uint32(0xFFFFE000)
    lsb = (bits >> np.uint32(13)) & np.uint32(1)
    with np.errstate(over="ignore"):
        rounded = ((bits + np.uint32(0x0FFF) + lsb) & keep).view(np.float32)
    return np.where(np.isfinite(f), rounded, f)


# The NumPy dtypes a kernel input often arrives in that NKI has no form of (the NKI docs' dtype
# table has no 64-bit type), and the NKI dtype of the same kind to cast them to.  A parameter
# without a tensor type takes its `-i` array's dtype as it is, so such an array is refused where
# it enters (converting it silently would change the numbers, or the dtype, the kernel sees); a
# typed parameter casts by the rule of `cast_array`.
NO_NKI_FORM = {"float64": "float32", "int64": "int32", "uint64": "uint32"}


def no_nki_form(param: str, shape: tuple, npd: np.dtype) -> ApdslTypeError | None:
    """APK140 for an array of a dtype in `NO_NKI_FORM` given to parameter `param` without a
    tensor type (None for any other dtype).  Facts: `input` (the parameter), `dtype`, `cast`
    (the dtype to cast to), so the command line can name its `-i` argument."""
    cast = NO_NKI_FORM.get(np.dtype(npd).name)
    if cast is None:
        return None
    name = np.dtype(npd).name
    return ApdslTypeError(
        f"parameter {param} is given {'an' if name.startswith('int') else 'a'} {name} array "
        f"{tuple(shape)}; NKI tensors have no {name}", code="APK140", input=param, dtype=name, cast=cast,
        help=f"cast it: {param}.astype(np.{cast}) (or another dtype the kernel expects)")
