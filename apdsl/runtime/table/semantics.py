"""The NumPy meaning of each instruction (SPEC sections 4 and 11), as pure functions of arrays.

The executors (`copies`, `matmul`, `compute`, `ascend`, `mmad`) read and check operands, then
call these; the instruction table (`apdsl.runtime.table`) names each one, so a test can hold an
executor against its meaning.  Inputs of arithmetic come as float32 (the engines' arithmetic);
the executor casts the result to the destination's dtype with the one cast rule.
"""

from __future__ import annotations

from typing import Any

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


# -- operators (SPEC 11): `op` is an `apdsl.runtime.table.operators.Operator`; float32 arrays in, the
# operator's float32 result out (bit-vector operators: integer arrays of dst's dtype, bits out)

def apply(op: Any, lhs: Any, rhs: Any) -> np.ndarray:
    """One operator stage: `op(lhs, rhs)`; a unary operator applies to `lhs` alone."""
    return op.fn(lhs) if op.arity == 1 else op.fn(lhs, rhs)


def tensor_tensor(op: Any, data1: np.ndarray, data2: np.ndarray) -> np.ndarray:
    """tensor_tensor: `op(data1, data2)` element-wise."""
    return apply(op, data1, data2)


def tensor_scalar(data: np.ndarray, op0: Any, operand0: Any, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False) -> np.ndarray:
    """tensor_scalar: `t = op0(data, operand0)` (`op0(operand0, data)` with reverse0), then
    `op1(t, operand1)` (`op1(operand1, t)` with reverse1) when op1 is given.  An operand is a
    scalar or a (P, 1) column broadcast along the free axis; a unary operator applies to the
    running value alone."""
    t = stage(op0, data, operand0, reverse0)
    return t if op1 is None else stage(op1, t, operand1, reverse1)


def stage(op: Any, value: Any, operand: Any, reverse: bool) -> np.ndarray:
    """`op(value, operand)`, or `op(operand, value)` when reversed (unary: `op(value)`)."""
    if op.arity == 1:
        return op.fn(value)
    return op.fn(operand, value) if reverse else op.fn(value, operand)


def scalar_tensor_tensor(data: np.ndarray, op0: Any, operand0: Any, op1: Any,
                         operand1: np.ndarray, reverse0: bool = False,
                         reverse1: bool = False) -> np.ndarray:
    """scalar_tensor_tensor: `op1(op0(data, operand0), operand1)` with the reverse flags
    swapping each stage's operands."""
    return stage(op1, stage(op0, data, operand0, reverse0), operand1, reverse1)


# GpSimd's native integer arithmetic (tensor_tensor when every tile is int32/uint32): exact, on
# int64 values
INTEGER_OPS: dict[str, Any] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
    "equal": lambda x, y: (x == y).astype(np.int64),
    "not_equal": lambda x, y: (x != y).astype(np.int64),
    "greater_equal": lambda x, y: (x >= y).astype(np.int64),
    "greater": lambda x, y: (x > y).astype(np.int64),
    "less_equal": lambda x, y: (x <= y).astype(np.int64),
    "less": lambda x, y: (x < y).astype(np.int64),
    "logical_and": lambda x, y: ((x != 0) & (y != 0)).astype(np.int64),
    "logical_or": lambda x, y: ((x != 0) | (y != 0)).astype(np.int64),
    "logical_xor": lambda x, y: ((x != 0) ^ (y != 0)).astype(np.int64),
    "abs_max": lambda x, y: np.where(np.abs(x) > np.abs(y), x, y),
    "abs_min": lambda x, y: np.where(np.abs(x) < np.abs(y), x, y),
    # exact powers as Python ints (the executor refuses negative exponents and results past
    # the destination's range)
    "power": lambda x, y: np.power(x.astype(object), y.astype(object)),
}


def integer_tensor_tensor(op: Any, data1: np.ndarray, data2: np.ndarray) -> np.ndarray:
    """tensor_tensor on GpSimd's integer arithmetic: `op(data1, data2)` exactly."""
    return INTEGER_OPS[op.name](data1.astype(np.int64), data2.astype(np.int64))


# -- selection and scans (SPEC 11; the NumPy models of the isa docstrings) ---------------------

def truth(predicate: np.ndarray, reverse: bool = False) -> np.ndarray:
    """A predicate tile's truth: non-zero is true; `reverse_pred` negates it (logically: the
    docstrings' `~predicate` is on booleans)."""
    p = np.asarray(predicate) != 0
    return ~p if reverse else p


def copy_predicated(dst: np.ndarray, src: Any, predicate: np.ndarray,
                    reverse_pred: bool = False) -> np.ndarray:
    """tensor_copy_predicated: `src` where the predicate holds, else dst unchanged."""
    return np.where(truth(predicate, reverse_pred), src, dst)


def affine_select(affine: np.ndarray, cmp_op: Any, on_true: np.ndarray,
                  on_false_value: float) -> np.ndarray:
    """affine_select: `on_true` where `cmp_op(affine, 0)` holds, else `on_false_value`
    (`affine` is iota's int32 expression; the comparison is exact)."""
    pred = cmp_op.fn(affine.astype(np.float64), np.float64(0)) != 0
    return np.where(pred, on_true, np.float32(on_false_value))


def range_mask(parts: int, free: int, range_start: int, comp_op0: Any, comp_op1: Any,
               bound0: np.ndarray, bound1: np.ndarray) -> np.ndarray:
    """range_select's mask: `comp_op0(idx, bound0) & comp_op1(idx, bound1)` with `idx =
    range_start + arange(free)` in float32."""
    idx = np.broadcast_to(np.float32(range_start) + np.arange(free, dtype=np.float32),
                          (parts, free))
    return (comp_op0.fn(idx, bound0) != 0) & (comp_op1.fn(idx, bound1) != 0)


def select(mask: np.ndarray, on_true: np.ndarray, on_false: Any) -> np.ndarray:
    """range_select, select_reduce: `on_true` where `mask` holds, else `on_false`."""
    return np.where(mask, on_true, np.float32(on_false) if np.ndim(on_false) == 0 else on_false)


def row_max(result: np.ndarray) -> np.ndarray:
    """The reduction of range_select and select_reduce: the maximum of each partition,
    (P, 1)."""
    return np.max(result, axis=1, keepdims=True)


def tensor_tensor_scan(data0: np.ndarray, data1: np.ndarray, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False) -> np.ndarray:
    """tensor_tensor_scan per partition, along its elements in row-major order:
    `r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i])` with `r[:, -1] = initial`;
    reverse0 makes data0 op0's right operand, reverse1 makes data1 op1's left one."""
    parts, free = data0.shape
    out = np.empty((parts, free), np.float32)
    prev = np.broadcast_to(np.asarray(initial, np.float32).reshape(-1, 1)
                           if np.ndim(initial) else np.float32(initial), (parts, 1))
    for i in range(free):
        a, b = data0[:, i:i + 1], data1[:, i:i + 1]
        t = op0.fn(prev, a) if reverse0 else op0.fn(a, prev)
        prev = op1.fn(b, t) if reverse1 else op1.fn(t, b)
        out[:, i:i + 1] = prev
    return out
