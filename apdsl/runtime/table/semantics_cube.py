"""The NumPy meaning of the cube path's conversions: Fixpipe's quantisation and ReLU on the
way out of L0C, and LoadData 3D's img2col.

Fixpipe (AscendC "随路量化", "随路ReLU" and their combination table for NPU arch 2201, Atlas
A2).  A quantisation parameter is 64 bits: bits 0-31 a float32 of which the hardware uses
bits 13-31 (1 sign, 8 exponent, 10 mantissa bits: the low 13 mantissa bits are dropped), bits
32-35 a shift N, bit 36 the mode control bit (shift the int32 by N first), bits 37-45 an
offset, bit 46 the sign of an 8-bit result (1: int8, 0: uint8).  A value x >= 0 is multiplied
by M1, a negative one by M2: without ReLU M2 = M1, with ReLU M2 = 0.  The product is computed
in float32; DEQF16 casts it to float16 (saturating), REQ8 and QF322B8_PRE round it half to
even, clip to [-256, 255], add the offset and saturate to the 8-bit dtype.  Without
quantisation ReLU is max(0, x), and F322F16/F322BF16 round to nearest even.

The AscendC page gives N's range as [1, 16] (b'0000 is 1) while its own sample shifts by the
field's value, and it does not say whether the 9-bit offset is signed: apdsl refuses a nonzero
mode control bit or offset rather than guess (APK514).
"""

from __future__ import annotations

import numpy as np

# the quantisation modes of Atlas A2 by what they convert: (source dtype, destination dtypes)
QUANT_DTYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "NoQuant": ("", ()),  # a dtype to itself: float32 -> float32, int32 -> int32
    "F322F16": ("float32", ("float16",)),
    "F322BF16": ("float32", ("bfloat16",)),
    "DEQF16": ("int32", ("float16",)),
    "VDEQF16": ("int32", ("float16",)),
    "QF322B8_PRE": ("float32", ("int8", "uint8")),
    "VQF322B8_PRE": ("float32", ("int8", "uint8")),
    "REQ8": ("int32", ("int8", "uint8")),
    "VREQ8": ("int32", ("int8", "uint8")),
}
PER_CHANNEL = frozenset({"VDEQF16", "VQF322B8_PRE", "VREQ8"})
SCALED = frozenset({"DEQF16", "VDEQF16", "QF322B8_PRE", "VQF322B8_PRE", "REQ8", "VREQ8"})
F16_MAX = float(np.finfo(np.float16).max)


def quant_fields(param: np.ndarray) -> dict[str, np.ndarray]:
    """The fields of 64-bit quantisation parameters (any shape; int64 words are taken as
    their bits, as GM holds them)."""
    a = np.asarray(param)
    p = a.astype(np.int64).view(np.uint64) if a.dtype.kind == "i" else a.astype(np.uint64)
    bits = (p & np.uint64(0xFFFFE000)).astype(np.uint32)  # bits 13-31 of the float32
    return {"m1": bits.view(np.float32), "n": ((p >> np.uint64(32)) & np.uint64(0xF)),
            "mcb": (p >> np.uint64(36)) & np.uint64(1),
            "offset": (p >> np.uint64(37)) & np.uint64(0x1FF),
            "sign": (p >> np.uint64(46)) & np.uint64(1)}


def quantise(values: np.ndarray, mode: str, params: np.ndarray, relu: bool,
             dst: str) -> np.ndarray:
    """Fixpipe's conversion of an (M, N) block of L0C `values` (float32 or int32) to dtype
    `dst` under `mode`; `params` holds the M1 multipliers per column (shape (N,)) or one for
    all (shape ()).  The caller has checked the fields this does not model."""
    if mode not in SCALED:  # (F322F16/F322BF16: the store's cast rounds to nearest even)
        return np.maximum(values, values.dtype.type(0)) if relu else values
    m1 = np.asarray(params, dtype=np.float32)
    m2 = np.zeros_like(m1) if relu else m1
    x = values.astype(np.float32)
    scaled = np.where(x >= 0, x * m1, x * m2).astype(np.float32)
    if dst == "float16":
        return np.clip(scaled, -F16_MAX, F16_MAX).astype(np.float16)
    q = np.clip(np.round(scaled), -256, 255)
    lo, hi = (-128, 127) if dst == "int8" else (0, 255)
    return np.clip(q, lo, hi).astype(np.dtype(dst))


def img2col(fm: np.ndarray, pad_list: tuple[int, int, int, int], pad_value: float,
            stride: tuple[int, int], kernel: tuple[int, int],
            dilation: tuple[int, int]) -> np.ndarray:
    """LoadData 3D's unrolled matrix of a feature map `fm` (C1, H, W, C0): row m is output
    position (ho, wo) = divmod(m, Wo), column k = ((c1 * Kh + kh) * Kw + kw) * C0 + c0 holds
    the padded input at (c1, ho * stride_h + kh * dilation_h, wo * stride_w + kw *
    dilation_w, c0) (pad_list is [left, right, top, bottom])."""
    c1, h, w, c0 = fm.shape
    left, right, top, bottom = pad_list
    sh, sw = stride
    kh, kw = kernel
    dh, dw = dilation
    padded = np.full((c1, h + top + bottom, w + left + right, c0), pad_value, dtype=fm.dtype)
    padded[:, top:top + h, left:left + w, :] = fm
    ho = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    wo = (w + left + right - (kw - 1) * dw - 1) // sw + 1
    rows = (np.arange(ho)[:, None, None, None] * sh + np.arange(kh)[None, None, :, None] * dh)
    cols = (np.arange(wo)[None, :, None, None] * sw + np.arange(kw)[None, None, None, :] * dw)
    # (ho, wo, kh, kw) windows of every (c1, c0): gather, then order as (ho, wo, c1, kh, kw, c0)
    win = padded[:, rows, cols, :]  # (c1, ho, wo, kh, kw, c0)
    return win.transpose(1, 2, 0, 3, 4, 5).reshape(ho * wo, c1 * kh * kw * c0)


def conv_out(size: int, pad: int, kernel: int, dilation: int, stride: int) -> int:
    """Output positions along one axis of a padded, dilated, strided window."""
    return (size + pad - (kernel - 1) * dilation - 1) // stride + 1


def matmul_block(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """One Matmul API block: a @ b (+ bias) in the accumulator's arithmetic (float32 for float
    inputs; exact for int8, whose int32 sums fit)."""
    work = np.float64 if a.dtype.kind == "i" else np.float32
    out = a.astype(work) @ b.astype(work)
    return out if bias is None else out + bias.astype(work).reshape(1, -1)
