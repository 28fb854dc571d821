"""The NumPy meaning of the reduce group's instructions (SPEC section 11), as pure functions.

Inputs come as float32 arrays of shape `(partitions, elements a partition)` (flattened free
dimensions, row-major) unless a function says otherwise; the executors cast the results to their
destinations.  Sources: the NKI isa docstrings and their official NumPy tests
(`docs/facts/nki_isa.md` sections 3.4-3.7, 3.17-3.21, 3.24); where a docstring leaves a case
open, the function says what apdsl does.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(count, mean, variance * count) of each row in float32; an empty row gives 0, 0, 0."""
    count = np.full((x.shape[0],), x.shape[1], F32)
    if x.shape[1] == 0:
        zero = np.zeros((x.shape[0],), F32)
        return count, zero, zero
    mean = x.mean(axis=1, dtype=F32)
    dev = x - mean[:, None]
    return count, mean, (dev * dev).sum(axis=1, dtype=F32)


def bn_stats(x: np.ndarray) -> np.ndarray:
    """`[count, mean, variance * count]` of the even-indexed elements of each partition, then
    of the odd-indexed ones (index in the flattened free dimensions), shape `(P, 6)`.  The
    variance is the population variance (the docs' test checks `bn_aggr`'s against
    `np.var`).  With a single element a partition the odd half is empty: apdsl gives it count
    0, mean 0, variance 0, which `bn_aggr` then weighs by its count of 0."""
    even, odd = _moments(x[:, 0::2]), _moments(x[:, 1::2])
    return np.stack(even + odd, axis=1)


def bn_aggr(x: np.ndarray) -> np.ndarray:
    """`[mean, variance]` of each partition from its `(count, mean, variance * count)`
    triples (the pooled moments: `n = sum c`, `mean = sum(c m) / n`,
    `var = sum(v c + c (m - mean)^2) / n`), shape `(P, 2)`.  A partition whose counts sum to 0
    gives NaN (0 / 0 in float32)."""
    t = x.reshape(x.shape[0], -1, 3)
    c, m, vc = t[:, :, 0], t[:, :, 1], t[:, :, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        n = c.sum(axis=1, dtype=F32)
        mean = (c * m).sum(axis=1, dtype=F32) / n
        dev = m - mean[:, None]
        var = (vc + c * dev * dev).sum(axis=1, dtype=F32) / n
    return np.stack([mean, var], axis=1).astype(F32)


def max8(x: np.ndarray) -> np.ndarray:
    """The 8 largest values of each partition in descending order (repeated values repeat),
    shape `(P, 8)`."""
    return -np.sort(-x, axis=1)[:, :8]


def _matches(row: np.ndarray, vals: np.ndarray, order: range) -> list[int | None]:
    """For each val (visited in `order`), the first position of `row` equal to it that no
    earlier-visited equal val took; None when there is none left."""
    taken: set[int] = set()
    out: list[int | None] = [None] * len(vals)
    for i in order:
        for pos in np.flatnonzero(row == vals[i]):
            if int(pos) not in taken:
                taken.add(int(pos))
                out[i] = int(pos)
                break
    return out


def find_index8(data: np.ndarray, vals: np.ndarray, missing: int) -> np.ndarray:
    """nc_find_index8: for each of the 8 vals of a partition the index of its first occurrence
    in the partition's data; equal vals take successive occurrences in ascending order (the
    docs contrast this with nc_match_replace8); a val with no occurrence left gets `missing`
    (the all-ones sentinel of the destination dtype).  int64, shape `(P, 8)`."""
    out = np.full(vals.shape, missing, np.int64)
    for p in range(data.shape[0]):
        for i, pos in enumerate(_matches(data[p], vals[p], range(vals.shape[1]))):
            if pos is not None:
                out[p, i] = pos
    return out


def match_replace8(data: np.ndarray, vals: np.ndarray,
                   imm: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """nc_match_replace8: the first occurrence of each of the 8 vals of a partition replaced by
    `imm`; vals are visited from the last to the first, so among equal vals the highest slot
    takes the first occurrence (the docs' example: data `[1,2,3,4,8,8,8,8,8,8,8]`, vals
    `[3,8,8,8,8,8,8,8]` give indices `[2,10,9,8,7,6,5,4]`).  Returns (the replaced data, the
    matched positions as int64 (-1: no match), the matched mask of `(P, 8)`)."""
    out = data.copy()
    idx = np.full(vals.shape, -1, np.int64)
    for p in range(data.shape[0]):
        for i, pos in enumerate(_matches(data[p], vals[p], range(vals.shape[1] - 1, -1, -1))):
            if pos is not None:
                idx[p, i] = pos
                out[p, pos] = F32(imm)
    return out, idx, idx >= 0


def dropout(data: np.ndarray, prob: np.ndarray | float, uniform: np.ndarray) -> np.ndarray:
    """Each element replaced by 0 where its uniform draw in [0, 1) is below its partition's
    drop probability (so 1.0 drops every element and 0.0 none, as the docs say); survivors keep
    their value, unscaled (the docs describe no rescaling).  `prob` is a float or a `(P, 1)`
    array; `data` keeps its own dtype (dst's dtype is data's)."""
    keep = uniform >= np.asarray(prob, F32)
    return np.where(keep, data, np.zeros((), data.dtype))


def _logical(x: np.ndarray, name: str, axis: tuple[int, ...]) -> np.ndarray:
    truth = x != 0
    if name == "logical_and":
        r = truth.all(axis=axis)
    elif name == "logical_or":
        r = truth.any(axis=axis)
    else:
        r = truth.sum(axis=axis) % 2 == 1
    return r.astype(F32)


_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
           "bitwise_xor": np.bitwise_xor}
# the reductions apdsl computes (the legal reduction ops of the math-operator table but
# subtract, whose folding order the docs do not give)
REDUCTIONS = tuple(_UFUNCS) + ("logical_and", "logical_or", "logical_xor")


def reduce_free(x: np.ndarray, name: str, axis: tuple[int, ...], negate: bool) -> np.ndarray:
    """tensor_reduce: `x` (the data in its own shape: float32 for arithmetic operators, the
    integers as they are for bit-vector ones) reduced by operator `name` over `axis`, times -1
    when `negate`.  Logical operators reduce truth values (nonzero) to 1.0 / 0.0."""
    if name.startswith("logical_"):
        r = _logical(x, name, axis)
    else:
        with np.errstate(all="ignore"):
            r = _UFUNCS[name].reduce(x, axis=axis)
    if negate:
        r = -np.asarray(r, F32)
    return np.asarray(r)


def reduce_partitions(x: np.ndarray, name: str) -> np.ndarray:
    """tensor_partition_reduce: `x` reduced over its partitions (axis 0), keeping a partition
    axis of 1 (the docs' test: `np.sum(a, axis=0, keepdims=True)`); `average` is the mean."""
    with np.errstate(all="ignore"):
        if name == "average":
            return x.mean(axis=0, dtype=F32, keepdims=True)
        return _UFUNCS[name].reduce(x, axis=0, keepdims=True)


def sequence_bounds(ids: np.ndarray) -> np.ndarray:
    """`sequence_bounds` of one row of segment IDs (the isa docstring's NumPy equivalent): a
    segment is a run of equal consecutive IDs; each element gets its run's first index and one
    past its last, and a padding element (ID 0) gets n and -1.  Result [2, n] (starts, ends)."""
    n = ids.size
    pos = np.arange(n)
    first = np.ones(n, bool)
    first[1:] = ids[1:] != ids[:-1]
    last = np.ones(n, bool)
    last[:-1] = ids[:-1] != ids[1:]
    start = np.maximum.accumulate(np.where(first, pos, 0))
    end = np.minimum.accumulate(np.where(last, pos + 1, n)[::-1])[::-1]
    pad = ids == 0
    return np.stack([np.where(pad, n, start), np.where(pad, -1, end)])


def topk(x: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`topk` over `x` (P, width), P a multiple of 16: each group of 16 partitions is a snake
    whose element e (< n) is `x[16g + e % 16, e // 16]`.  Its K largest, ascending, are written
    as a snake too, output position q at `[16g + q % 16, q // 16]` (the layout nki-library's
    gpsimd_topk reads back; its notes say hardware's order within the snake differs, so only
    the set is to be relied on).  Among equal values the smaller index is the larger (the docs
    are silent).  Returns (values, indices, where written), each of shape (P, K)."""
    parts = x.shape[0]
    vals, idxs = np.zeros((parts, k), F32), np.zeros((parts, k), np.int64)
    where = np.zeros((parts, k), bool)
    q = np.arange(k)
    for g in range(parts // 16):
        snake = x[16 * g:16 * g + 16].T.reshape(-1)[:n]
        chosen = np.lexsort((np.arange(n), -snake))[:k][::-1]
        rows, cols = 16 * g + q % 16, q // 16
        vals[rows, cols], idxs[rows, cols], where[rows, cols] = snake[chosen], chosen, True
    return vals, idxs, where
