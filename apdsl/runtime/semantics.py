"""The NumPy meaning of each instruction (SPEC sections 4 and 11), as pure functions of arrays.

The executors (`copies`, `matmul`, `compute`, `ascend`, `mmad`) read and check operands, then
call these; the instruction table (`apdsl.runtime.table`) names each one, so a test can hold an
executor against its meaning.  Inputs of arithmetic come as float32 (the engines' arithmetic);
the executor casts the result to the destination's dtype with the one cast rule.
"""

from __future__ import annotations

import numpy as np


def copy(src: np.ndarray) -> np.ndarray:
    """dma_copy, tensor_copy: the elements as they are (the executor casts)."""
    return src


def fill(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """memset: every element the one (already cast) value."""
    return np.broadcast_to(value, shape)


def wrap32(v: int) -> int:
    """A Python int as int32 arithmetic sees it (two's complement wrap)."""
    return (v + 2**31) % 2**32 - 2**31


def iota(parts: int, offset: int, channel_multiplier: int, steps: list[int],
         counts: list[int]) -> np.ndarray:
    """`offset + p * channel_multiplier + sum(i_k * step_k)` in int32 (wrapping), shape
    `(parts, *counts)`."""
    n = len(counts)
    # int32 arithmetic wraps, so reducing every operand to int32 first changes nothing and
    # keeps any Python int (even past int64) off NumPy's overflow path
    offset, cm = wrap32(offset), wrap32(channel_multiplier)
    vals = np.full((), offset, np.int64) + (np.arange(parts, dtype=np.int64) * cm).reshape(
        (parts,) + (1,) * n)
    for k, (s, c) in enumerate(zip((wrap32(s) for s in steps), counts)):
        vals = vals + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    return vals.astype(np.int32)


def matmul(stationary: np.ndarray, moving: np.ndarray) -> np.ndarray:
    """nc_matmul: `stationary.T @ moving` (K on partitions), float32."""
    return stationary.T @ moving


def mmad(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """mmad: `a @ b` in the accumulator's type."""
    return a @ b


def reciprocal(data: np.ndarray) -> np.ndarray:
    """reciprocal: `1 / data` in float32 (1/0 is inf, as IEEE float32 division gives)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float32(1.0) / data


def nonzero(data: np.ndarray) -> np.ndarray:
    """The inputs reciprocal is defined for: the NKI docs call the output for others invalid."""
    return data != 0
