"""The NumPy meaning of the microscaling (MX) instructions, `quantize_mx` and `nc_matmul_mx`
(NKI isa docstrings; the MXFP deep dive; the Trainium 3 architecture guide; the OCP MX format).

A packed element (`float8_e4m3fn_x4`, `float8_e5m2_x4`: 32 bits; `float4_e2m1fn_x4`: 16 bits)
holds four values, the first in its lowest bits.  A scaling group is 32 values: 8 partitions
times the 4 values of one packed element, and shares one `float8_e8m0fnu` scale, the power of
two 2**(bits - 127) (bits 255: NaN).  Group g (partitions 8g..8g+7) keeps its scale in the
quadrant its data came from: at partition 32 * (g // 4) + g % 4 of the scale view.

`quantize` has two block-scale rules, chosen by neuronx-cc's `--enable-mx-alternative-emax`
(`apdsl.options(mx_alternative_emax=...)`), whose default changed in Neuron SDK 2.31:
- alternative (the default since 2.31; the quantize_mx docstring): the block scale is
  2**(floor(log2(amax)) - (Emax - 1)), twice the OCP one, so the largest value of a group lies
  in [2**(Emax-1), 2**Emax) and never saturates;
- OCP (the default up to 2.30; the OCP sample algorithm): 2**(floor(log2(amax)) - Emax), each
  quotient clamped to the element type's largest finite value before the cast.
Either way an all-zero group's scale is 2**-127, each value is divided by the scale and rounded
to nearest even.  Values are exact power-of-two quotients of bfloat16/float16 inputs, so the
one rounding is the cast to the element type.
"""

from __future__ import annotations

import numpy as np

SCALE_BIAS = 127
GROUP_PARTITIONS = 8  # a scaling group: 8 partitions ...
PACK = 4  # ... times the 4 values of one packed element
QUADRANT = 32
SCALES_PER_QUADRANT = QUADRANT // GROUP_PARTITIONS  # 4

# packed dtype -> (element type in ml_dtypes, bits per value, Emax: the element type's largest
# unbiased exponent, as the quantize_mx docstring gives it: 8 for e4m3fn, 15 for e5m2)
ELEMENTS = {"float8_e4m3fn_x4": ("float8_e4m3fn", 8, 8),
            "float8_e5m2_x4": ("float8_e5m2", 8, 15),
            "float4_e2m1fn_x4": ("float4_e2m1fn", 4, 2)}
# the element types quantize_mx writes (the docstring: no FP4 output)
QUANTIZED = ("float8_e4m3fn_x4", "float8_e5m2_x4")
# their largest finite values (the OCP rule clamps to them)
LARGEST = {"float8_e4m3fn_x4": 448.0, "float8_e5m2_x4": 57344.0, "float4_e2m1fn_x4": 6.0}


def _element(packed: str) -> np.dtype:
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, ELEMENTS[packed][0]))


def scale_rows(groups: int) -> np.ndarray:
    """The scale view's partition of each of `groups` scaling groups (quadrant-spread)."""
    g = np.arange(groups)
    return QUADRANT * (g // SCALES_PER_QUADRANT) + g % SCALES_PER_QUADRANT


def unpack(bits: np.ndarray, packed: str) -> np.ndarray:
    """Packed elements [P, F] (their unsigned storage) -> values [P, F, 4] as float32."""
    width = ELEMENTS[packed][1]
    b = np.ascontiguousarray(bits).astype(np.uint32)
    mask = np.uint32((1 << width) - 1)
    codes = np.stack([(b >> np.uint32(width * k)) & mask for k in range(PACK)], axis=-1)
    return codes.astype(np.uint8).view(_element(packed)).astype(np.float32)


def pack(values: np.ndarray, packed: str) -> np.ndarray:
    """Values [P, F, 4] of the element type -> packed elements [P, F] (unsigned storage)."""
    width = ELEMENTS[packed][1]
    codes = np.ascontiguousarray(values).view(np.uint8).astype(np.uint32)
    if width == 4:
        codes &= np.uint32(0xF)
    out = np.zeros(codes.shape[:-1], np.uint32)
    for k in range(PACK):
        out |= codes[..., k] << np.uint32(width * k)
    return out.astype(np.uint16 if width == 4 else np.uint32)


def group_exponents(src: np.ndarray, packed: str, alternative: bool = True) -> np.ndarray:
    """Unbiased scale exponents [P / 8, F / 4] of finite float32 values [P, F]:
    floor(log2(amax)) - (Emax - 1) (`alternative`) or - Emax (OCP), or -127 for an all-zero
    group (may be below -127: the caller decides what that means)."""
    p, f = src.shape
    amax = np.abs(src.astype(np.float64)).reshape(p // GROUP_PARTITIONS, GROUP_PARTITIONS,
                                                  f // PACK, PACK).max(axis=(1, 3))
    _, e = np.frexp(amax)  # amax = m * 2**e, m in [0.5, 1): floor(log2(amax)) = e - 1
    emax = ELEMENTS[packed][2] - (1 if alternative else 0)
    return np.where(amax == 0, -SCALE_BIAS, (e - 1) - emax).astype(np.int64)


def quantize(src: np.ndarray, packed: str, alternative: bool = True,
             exps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """quantize_mx on finite float32 values [P, F] whose group exponents are all >= -127:
    (packed data [P, F / 4], scale bits [P / 8, F / 4] uint8).  `exps`: the values'
    `group_exponents` when the caller has them already (they are not computed twice)."""
    p, f = src.shape
    if exps is None:
        exps = group_exponents(src, packed, alternative)
    full = np.repeat(np.repeat(exps, GROUP_PARTITIONS, axis=0), PACK, axis=1)
    scaled = np.ldexp(src.astype(np.float64), -full)  # exact (see above)
    if not alternative:  # a quotient up to 2**(Emax+1) saturates at the largest finite value
        scaled = np.clip(scaled, -LARGEST[packed], LARGEST[packed])
    values = scaled.astype(np.float32).astype(_element(packed)).reshape(p, f // PACK, PACK)
    return pack(values, packed), (exps + SCALE_BIAS).astype(np.uint8)


def scale_factors(scale_bits: np.ndarray) -> np.ndarray:
    """float8_e8m0fnu bits -> 2**(bits - 127) as float64, NaN for 255."""
    s = np.asarray(scale_bits).astype(np.int64)
    return np.where(s == 255, np.nan, np.ldexp(1.0, s - SCALE_BIAS))


def dequantize(bits: np.ndarray, scale_bits: np.ndarray, packed: str) -> np.ndarray:
    """Packed data [P, F] with its group scales [P / 8, F] -> values [P, F, 4] (float64)."""
    values = unpack(bits, packed).astype(np.float64)
    scale = np.repeat(scale_factors(scale_bits), GROUP_PARTITIONS, axis=0)
    return values * scale[:, :, None]


def matmul(stationary: np.ndarray, moving: np.ndarray, stationary_scale: np.ndarray,
           moving_scale: np.ndarray, st_packed: str, mv_packed: str) -> np.ndarray:
    """nc_matmul_mx: dst[m, n] = sum over partitions k and the 4 values q of one element of
    S[k, m, q] * M[k, n, q], both dequantized by their groups' scales; every product is exact
    in float64, the sum is taken there and rounded to float32 (exactly the true sum whenever
    that is a float32, as the tests' inputs make it).  The contraction over (k, q) is one
    float64 matrix product (BLAS): np.einsum's own loop took 20 ms for a 128 x 128 x 128 tile,
    most of an MX kernel's time; the products are the same exact ones."""
    a = dequantize(stationary, stationary_scale, st_packed)
    b = dequantize(moving, moving_scale, mv_packed)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.tensordot(a, b, axes=([0, 2], [0, 2])).astype(np.float32)
