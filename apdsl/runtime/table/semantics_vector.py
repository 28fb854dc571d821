"""What each vector instruction computes (the AscendC docs' formulas), on NumPy arrays.

The runner (`run.Instance.math`) hands these functions float32 arrays for floating operands
(the arithmetic is float32, then cast to dst by the one cast rule: for half, float32 then one
rounding is the correctly rounded half result of +, -, *, / and sqrt) and exact int64 arrays
for integer ones (a result that does not fit dst is APK554).  Bit operations get the stored
bits.  Functions whose inputs have a domain say so in `DOMAINS`: an input outside it is
APK555, since the docs define no result there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - b


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * b


def div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a / b


def maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a, b)


def minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a, b)


def bit_and(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_and(a, b)


def bit_or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_or(a, b)


def bit_not(a: np.ndarray) -> np.ndarray:
    return np.invert(a)


def exp(a: np.ndarray) -> np.ndarray:
    return np.exp(a)


def ln(a: np.ndarray) -> np.ndarray:
    return np.log(a)


def absolute(a: np.ndarray) -> np.ndarray:
    return np.abs(a)


def sqrt(a: np.ndarray) -> np.ndarray:
    return np.sqrt(a)


def rsqrt(a: np.ndarray) -> np.ndarray:
    return np.float32(1) / np.sqrt(a)


def reciprocal(a: np.ndarray) -> np.ndarray:
    return np.float32(1) / a


def relu(a: np.ndarray) -> np.ndarray:
    return np.maximum(a, a.dtype.type(0))


def leaky_relu(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.where(a >= 0, a, a * s)


def shift_left(a: np.ndarray, s: int, bits: int) -> np.ndarray:
    """The bits of `a` (an integer dtype of `bits` bits) moved left `s` places, the high ones
    dropped; the result has a's dtype."""
    unsigned = np.dtype(f"uint{bits}")
    v = a.astype(unsigned).astype(np.uint64)
    out = (v << np.uint64(s)) & np.uint64((1 << bits) - 1) if s < 64 else v * 0
    return out.astype(unsigned).view(a.dtype)


def shift_right(a: np.ndarray, s: int, bits: int) -> np.ndarray:
    """Arithmetic for signed dtypes (the sign copied in), logical for unsigned (the AscendC
    ShiftRight docs); the result has a's dtype."""
    v = a.astype(np.int64)
    return (v >> min(s, 63)).astype(a.dtype)


def axpy(dst: np.ndarray, src: np.ndarray, s: np.ndarray) -> np.ndarray:
    return src * s + dst


def mul_add_dst(dst: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * b + dst


# input domains (the AscendC docs give no result outside them): role -> (text, test)
DOMAINS: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "ln": ("src > 0", lambda x: x > 0),
    "sqrt": ("src >= 0", lambda x: x >= 0),
    "rsqrt": ("src > 0", lambda x: x > 0),
    "reciprocal": ("src != 0", lambda x: x != 0),
    "div": ("src1 != 0", lambda x: x != 0),
}


def ascend_quant(src: np.ndarray, scale: float, offset: float) -> np.ndarray:
    """AscendQuant per tensor (Atlas A2): src, scale and offset (pyasc passes them in src's
    dtype) to half, Muls, Adds (each in float32 rounded to half), then to int8 rounding half
    to even, saturating."""
    half = np.float16
    x = np.asarray(src)

    def to_half(v: float) -> np.float32:
        return np.float32(np.asarray(v, dtype=x.dtype).astype(half))

    t = (x.astype(half).astype(np.float32) * to_half(scale)).astype(half).astype(np.float32)
    t = (t + to_half(offset)).astype(half).astype(np.float64)
    return np.clip(np.rint(t), -128, 127).astype(np.int8)
