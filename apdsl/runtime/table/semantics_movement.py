"""The NumPy meaning of the movement instructions (SPEC section 11: transposes, gathers and
shuffles), as pure functions of arrays.

Each follows the NumPy statement of the NKI API reference (`nki/api/nki/isa/__init__.py`) or,
where the docstring has none, the NumPy golden model of its official test
(`nki/test/test_nki_isa_*.py`).  These instructions move elements without arithmetic, so the
executors pass arrays of the operands' own dtype and nothing is converted -- except the Tensor
Engine transpose of NeuronCore-v2, which is a real float32 matrix multiply (`matmul_transpose`).
"""

from __future__ import annotations

import numpy as np

QUADRANT = 32  # partitions a stream shuffle permutes together (a Vector Engine quadrant)
KEEP = 255  # a shuffle-mask entry that leaves its destination partition unmodified
GPSIMD_CORES = 8
CORE_PARTITIONS = 16  # each GpSimd core reads and writes its own 16 SBUF partitions


def transpose2d(data: np.ndarray) -> np.ndarray:
    """nc_transpose: the free axes flattened, then partitions and free exchanged
    (`data.reshape(P, -1).T`)."""
    return data.reshape(data.shape[0], -1).T


def matmul_transpose(data: np.ndarray) -> np.ndarray:
    """nc_transpose on the NeuronCore-v2 Tensor Engine: `data` as the stationary operand times
    an identity moving operand, in float32 (so a NaN or Inf spreads along its output row, as the
    NKI docs warn: Inf * 0 is NaN)."""
    flat = data.reshape(data.shape[0], -1).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        return flat.T @ np.eye(flat.shape[0], dtype=np.float32)


def dma_transpose(src: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """dma_transpose: `np.transpose(src, axes)`."""
    return np.transpose(src, axes)


def stream_shuffle(src: np.ndarray, dst: np.ndarray, mask: list[int]) -> np.ndarray:
    """nc_stream_shuffle: within each 32-partition quadrant q, destination partition
    `q*32 + i` takes source partition `q*32 + mask[i]`; `mask[i] == 255` keeps what `dst` held.
    `src` and `dst` are (partitions, elements) arrays; a destination partition past the mask's
    reach of the source is the caller's to refuse.  Returns the new destination."""
    out = dst.copy()
    for p in range(dst.shape[0]):
        q, i = divmod(p, QUADRANT)
        if mask[i] != KEEP:
            out[p] = src[q * QUADRANT + mask[i]]
    return out


def local_gather(src: np.ndarray, index: np.ndarray, num_elem_per_idx: int,
                 num_valid: int) -> np.ndarray:
    """local_gather, as the NumPy model of the official test: GpSimd core k owns partitions
    16k..16k+15; its indices are that slice of `index` flattened partition-first
    (`flatten(order='F')`), the first `num_valid` of them used; every partition of the core
    takes, for each index, the `num_elem_per_idx` contiguous elements of its own source
    partition starting at that element offset (the test feeds the hardware `chunk *
    num_elem_per_idx`).  `src` is (P, elements), `index` (P, n); the result is
    (P, num_valid, num_elem_per_idx)."""
    parts = src.shape[0]
    out = np.empty((parts, num_valid, num_elem_per_idx), src.dtype)
    span = np.arange(num_elem_per_idx)
    for start in range(0, parts, CORE_PARTITIONS):
        core = slice(start, start + CORE_PARTITIONS)
        idx = index[core].flatten(order="F")[:num_valid].astype(np.int64)
        cols = idx[:, None] + span  # (num_valid, num_elem_per_idx) element offsets
        out[core] = src[core][:, cols]
    return out


def n_gather(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """nc_n_gather (and nl.gather_flattened): in each partition, the free dimensions of `data`
    flattened and taken at that partition's `indices` (the docstring's
    `np.take_along_axis(data.reshape(P, -1), indices.reshape(P, -1), axis=-1)`); the result
    has indices' shape.  Indices outside the partition's elements are the caller's to
    refuse."""
    parts = data.shape[0]
    flat = indices.reshape(parts, -1).astype(np.int64)
    return np.take_along_axis(data.reshape(parts, -1), flat, axis=-1).reshape(indices.shape)
