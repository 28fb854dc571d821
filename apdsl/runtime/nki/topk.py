"""`topk` (NKI isa docstring, NKI 0.6.0; GpSimd): the K largest of each 16-partition snake of
n bfloat16 elements and their uint32 indices, as a snake (`table.semantics_reduce.topk`); it
reads the snakes' n elements and writes the K positions only.  Its docstring's rules, and a NaN
among the n elements (the docs do not say how it orders), are APK937.  Where each result lands
in the snake is apdsl's reading, not a documented fact: every call site warns (APK936)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError, Warning_
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core.operands import int_arg
from ..sync.warn import warn
from ..table import semantics_reduce as sem
from . import reduce_run as rr


def topk(val_dst: Tensor, idx_dst: Tensor, src: Tensor, n: Any, name: str | None = None
         ) -> None:
    """The K largest of each 16-partition snake and their indices (module docstring).

    >>> import ml_dtypes
    >>> x = np.zeros((16, 1), ml_dtypes.bfloat16)
    >>> x[:10, 0] = [3, 9, 1, 7, 5, 0, 2, 8, 6, 4]
    >>> v, i = apdsl.ndarray((16, 4), "bfloat16", "sbuf"), apdsl.ndarray((16, 4), "uint32", "sbuf")
    >>> apdsl.runtime.nki.topk.topk(v, i, apdsl.from_numpy(x, "sbuf"), n=10)
    >>> v[0:4, 0].numpy().astype(float).tolist(), i[0:4, 0].numpy().tolist()
    ([[6.0], [7.0], [8.0], [9.0]], [[8], [3], [7], [1]])
    """
    call = rr.begin("topk", name, {"val_dst": val_dst, "idx_dst": idx_dst, "src": src})
    count, shapes = int_arg(n, call.label, "n"), call.shapes

    def rule(ok: bool, message: str, help: str) -> None:
        if not ok:
            raise TargetError(f"{call.label}: {message}", code="APK937", help=help)

    rule(8 <= count < 65536, f"n = {count}; topk takes 8 <= n < 65536 elements",
         "n counts the snake's active elements")
    v, i = shapes["val_dst"], shapes["idx_dst"]
    rule(None in (v, i) or (v == i and len(v) == 2), f"val_dst is {v} and idx_dst {i}; topk "
         "writes two [par_dim, k] tiles of one shape", "allocate both as (par_dim, k)")
    k = call.free("val_dst")
    rule(k is None or (1 <= k < 32768 and k <= count), f"K = {k} (val_dst's free size) with "
         f"n = {count}; topk takes 1 <= K < 32768 and K <= n", "K is val_dst's free size: "
         "slice it to the number of values wanted")
    width, cols = call.free("src"), -(-count // 16)
    rule(width is None or width >= cols, f"src has {width} elements a partition; a snake of "
         f"n = {count} needs ceil(n / 16) = {cols}", "widen src or lower n")
    rr.same_partitions(call, "val_dst", "idx_dst", "src")
    parts = call.parts("src")
    rule(parts is None or parts % 16 == 0, f"src has {parts} partitions; topk works on groups "
         "of 16 partitions (a multiple of 16)", "use 16, 32, ... partitions")
    call.record()
    warn(Warning_(f"{call.label}: the order of the results within the snake is apdsl's", code=
                  "APK936", help="use them as a set of (value, index) pairs"), key=("APK936",))
    if call.accs is not None:
        _run(call, count, k or 0)


def _run(call: rr.Call, n: int, k: int) -> None:
    src, parts = call.accs["src"], call.parts("src") or 0  # type: ignore[index]
    width = src.size // parts
    snake = np.zeros((16, width), bool)  # the positions a snake's n elements occupy
    snake[np.arange(n) % 16, np.arange(n) // 16] = True
    reads = np.tile(snake, (parts // 16, 1))
    x = ex.read(src, call.label, "src", reads.reshape(src.shape)).reshape(parts, width)
    if np.isnan(x[reads]).any():
        p, c = (int(i) for i in np.argwhere(np.isnan(x) & reads)[0])
        raise ApdslRuntimeError(f"{call.label}: element {c * 16 + p % 16} of the snake at "
                                f"partitions {p - p % 16}..{p - p % 16 + 15} is NaN; the docs "
                                "do not say how topk orders NaN", code="APK937",
                                help="replace NaN before topk (e.g. with the smallest bfloat16)")
    vals, idxs, where = sem.topk(x.astype(np.float32), n, k)
    for role in ("val_dst", "idx_dst"):  # both checked before either is written
        ex.prepare_write(call.accs[role], call.label, role)  # type: ignore[index]
    for role, out in (("val_dst", vals), ("idx_dst", idxs)):
        ex.store_where(call.accs[role], out, where)  # type: ignore[index]
