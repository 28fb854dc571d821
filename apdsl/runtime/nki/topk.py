"""`topk` (NKI isa docstring, NKI 0.6.0; GpSimd): the K largest values of a snake and their
indices.  Each group of 16 partitions of `src` (partitions 16g..16g+15 of the tile) holds one
snake: element e of it (0 <= e < n) is `src[16g + e % 16, e // 16]`; only those are read.

The K largest of the n elements, in ascending order, are written as a snake of the group too:
output position q (0 <= q < K) at `val_dst[16g + q % 16, q // 16]` (bfloat16) and its element
index e at the same place of `idx_dst` (uint32); the rest of `val_dst` and `idx_dst` keeps what
it holds.  K is `val_dst`'s free size.  That the outputs form a snake is how nki-library's
gpsimd_topk kernel reads them (it "de-snakes" position q from partition q % 16, column q // 16);
the docstring's "[par_dim, k]" is the view that holds them.  The same kernel's notes say the
hardware's order within the snake is not this ascending one (and differs from NKI's simulator),
so a kernel should rely on the set of (value, index) pairs, not on their order.

Where the docstring is silent apdsl chooses: among equal values the smaller index is the larger
(it is kept first when K cuts a run of ties, and comes last in the ascending order), and a NaN
among the n elements is refused (APK937 at run time): the docs do not say how it orders.

Rules (APK937): 8 <= n < 65536; 1 <= K < 32768 and K <= n; src's free size >= ceil(n / 16);
the partition count a multiple of 16, the same for the three tiles; `val_dst` and `idx_dst` of
one shape, two-dimensional.  The buffers and dtypes (bfloat16 SBUF src and val_dst, uint32 SBUF
idx_dst) are the table's."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core.operands import int_arg
from . import reduce_run as rr

GROUP = 16  # partitions of one snake (one GpSimd core's)


def _rule(label: str, message: str, help: str, **facts: Any) -> TargetError:
    return TargetError(f"{label}: {message}", code="APK937", help=help, **facts)


def topk(val_dst: Tensor, idx_dst: Tensor, src: Tensor, n: Any, name: str | None = None
         ) -> None:
    """The K largest of each 16-partition snake of n elements and their indices, written as
    a snake, ascending (see the module docstring).

    >>> import ml_dtypes
    >>> x = np.zeros((16, 1), ml_dtypes.bfloat16)
    >>> x[:10, 0] = [3, 9, 1, 7, 5, 0, 2, 8, 6, 4]
    >>> s = apdsl.from_numpy(x, "sbuf")
    >>> v = apdsl.ndarray((16, 4), "bfloat16", "sbuf")
    >>> i = apdsl.ndarray((16, 4), "uint32", "sbuf")
    >>> apdsl.runtime.nki.topk.topk(v, i, s, n=10)
    >>> v.numpy()[:4, 0].astype(float).tolist(), i.numpy()[:4, 0].tolist()
    ([6.0, 7.0, 8.0, 9.0], [8, 3, 7, 1])
    """
    call = rr.begin("topk", name, {"val_dst": val_dst, "idx_dst": idx_dst, "src": src})
    label = call.label
    count = int_arg(n, label, "n")
    if not 8 <= count < 65536:
        raise _rule(label, f"n = {count}; topk takes 8 <= n < 65536 elements",
                    "n counts the snake's active elements", n=count)
    for role in ("val_dst", "idx_dst"):
        s = call.shapes[role]
        if s is not None and len(s) != 2:
            raise _rule(label, f"{role} has shape {s}; topk writes [par_dim, k] tiles",
                        f"give {role} one free dimension of K elements")
    vs, is_ = call.shapes["val_dst"], call.shapes["idx_dst"]
    if vs is not None and is_ is not None and vs != is_:
        raise _rule(label, f"val_dst is {vs} and idx_dst {is_}; they have one shape "
                    "[par_dim, k]", "allocate both as (par_dim, k)")
    k = call.free("val_dst")
    if k is not None and not (1 <= k < 32768 and k <= count):
        raise _rule(label, f"K = {k} (val_dst's free size) with n = {count}; topk takes "
                    "1 <= K < 32768 and K <= n", "K is val_dst's free size: slice it to the "
                    "number of values wanted", k=k, n=count)
    cols = -(-count // GROUP)
    width = call.free("src")
    if width is not None and width < cols:
        raise _rule(label, f"src has {width} elements a partition; a snake of n = {count} "
                    f"needs ceil(n / 16) = {cols}", "widen src or lower n")
    rr.same_partitions(call, "val_dst", "idx_dst", "src")
    parts = call.parts("src")
    if parts is not None and parts % GROUP:
        raise _rule(label, f"src has {parts} partitions; topk works on groups of 16 "
                    "partitions (a multiple of 16)", "use 16, 32, ... partitions")
    call.record()
    if call.accs is None:
        return
    _run(call, count, cols, k or 0)


def _run(call: rr.Call, n: int, cols: int, k: int) -> None:
    src = call.accs["src"]  # type: ignore[index]
    parts = call.parts("src") or 0
    width = src.size // parts
    snake = np.zeros((GROUP, width), bool)  # the positions a snake's n elements occupy
    e = np.arange(n)
    snake[e % GROUP, e // GROUP] = True
    reads = np.tile(snake, (parts // GROUP, 1)).reshape(src.shape)
    x = ex.read(src, call.label, "src", reads).astype(np.float32).reshape(parts, width)
    vals = np.zeros((parts, k), np.float32)
    idxs = np.zeros((parts, k), np.int64)
    where = np.zeros((parts, k), bool)
    q = np.arange(k)
    for g in range(parts // GROUP):
        rows = x[g * GROUP:(g + 1) * GROUP]
        values = rows.T.reshape(-1)[:n]  # element e = rows[e % 16, e // 16]
        if np.isnan(values).any():
            bad = int(np.flatnonzero(np.isnan(values))[0])
            raise ApdslRuntimeError(
                f"{call.label}: element {bad} of the snake at partitions {g * GROUP}.."
                f"{g * GROUP + GROUP - 1} is NaN; the docs do not say how topk orders NaN",
                code="APK937", help="replace NaN before topk (e.g. with the smallest bfloat16)")
        # the K largest, a smaller index first among equals, then ascending
        best = np.lexsort((np.arange(n), -values))[:k]
        chosen = best[::-1]
        vals[g * GROUP + q % GROUP, q // GROUP] = values[chosen]
        idxs[g * GROUP + q % GROUP, q // GROUP] = chosen
        where[g * GROUP + q % GROUP, q // GROUP] = True
    for role in ("val_dst", "idx_dst"):  # both checked before either is written
        ex.prepare_write(call.accs[role], call.label, role)  # type: ignore[index]
    for role, out in (("val_dst", vals), ("idx_dst", idxs)):
        acc = call.accs[role]  # type: ignore[index]
        mask = where.reshape(acc.shape)
        before = acc.written()
        ex.store(acc, np.where(mask, ex.cast(out.reshape(acc.shape), acc.dtype), acc.read()),
                 mask)
        if before is not True:
            ex.set_written(acc, np.asarray(before, bool).reshape(acc.shape) | mask, mask)
