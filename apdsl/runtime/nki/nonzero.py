"""`nonzero_with_count` (NKI isa docstring; NeuronCore-v3 and later, GpSimd): each GpSimd
core reads and writes the first of its 16 partitions only, so the instruction works on the
tile's partitions at physical partitions 0, 16, ..., 112.  For each such partition, dst (one
element longer than src) gets the indices (+ `index_offset`) of src's non-zero elements in
order, then `padding_val` up to src's length, then their count; the other partitions of dst
keep what they hold (unwritten ones stay unwritten).  The other partitions of src are not read:
a kernel may leave them unwritten.  A row of dst computed from unwritten src data is unwritten
(it propagates, SPEC 4) and is an error only where it reaches an observable point."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor import targets
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core.operands import int_arg, start_partition
from . import reduce_run as rr

CORE_PARTITIONS = 16  # partitions a GpSimd core connects to; it works on the first


def nonzero_with_count(dst: Tensor, src: Tensor, index_offset: Any = 0, padding_val: Any = -1,
                       engine: Any = "unknown", name: str | None = None) -> None:
    """Indices of the non-zero elements of each partition at 0, 16, ..., 112, padded, then
    their count (see the module docstring).

    >>> x = apdsl.from_numpy(np.array([[0, 1, 1, 0, 0, 1, 0, 0]], np.float32), "sbuf")
    >>> d = apdsl.ndarray((1, 9), "int32", "sbuf")
    >>> apdsl.runtime.nki.nonzero.nonzero_with_count(d, x, index_offset=16)
    >>> d.numpy()
    array([[17, 18, 21, -1, -1, -1, -1, -1,  3]], dtype=int32)
    """
    call = rr.begin("nonzero_with_count", name, {"dst": dst, "src": src}, engine=engine)
    offset = int_arg(index_offset, call.label, "index_offset")
    pad = int_arg(padding_val, call.label, "padding_val")
    for role, value in (("index_offset", offset), ("padding_val", pad)):
        if not -2**31 <= value < 2**31:
            raise TargetError(f"{call.label}: {role} = {value} is not an int32", code="APK925",
                              help=f"pass an int32 {role}")
    tgt = targets.target_for(call.tensors["dst"].buffer).name
    if tgt == "trn1":
        raise TargetError(f"{call.label}: nonzero_with_count needs NeuronCore-v3 or newer "
                          "(trn2, trn3); the target is trn1", code="APK925",
                          help="use --target trn2")
    rr.same_partitions(call, "dst", "src")
    n = call.free("src")
    if n is not None:
        rr.elements(call, "dst", n + 1, "holds src's indices, padding and the count: one "
                    "element more than src a partition")
    first = _same_start(call)
    call.record()
    if call.accs is None:
        return
    parts = call.parts("src")
    rows = [p for p in range(parts) if (first + p) % CORE_PARTITIONS == 0]
    read = np.zeros((parts, 1), bool)
    read[rows] = True
    src = call.accs["src"]
    # only the cores' partitions are read: the others may hold anything, or nothing
    x = ex.read(src, call.label, "src",
                np.broadcast_to(read, (parts, src.size // parts))).reshape(parts, -1)
    out = np.zeros((x.shape[0], x.shape[1] + 1), np.int64)
    for p in rows:
        found = np.flatnonzero(x[p] != 0)
        out[p, :] = pad
        out[p, :found.size] = found + offset
        out[p, -1] = found.size
    acc = call.accs["dst"]
    ex.prepare_write(acc, call.label, "dst")
    where = np.zeros(out.shape, bool)
    where[rows, :] = True
    ex.store_where(acc, out.astype(np.int32), where)  # (unwritten rows found stay unwritten)


def _same_start(call: rr.Call) -> int:
    """The partition src and dst start at: GpSimd core c reads src's and writes dst's physical
    partition 16c, so the rows it pairs are the same only when both start together."""
    s, d = start_partition(call.tensors["src"]), start_partition(call.tensors["dst"])
    if s is not None and d is not None and s != d:
        raise TargetError(f"{call.label}: src starts at partition {s}, dst at {d}; each GpSimd "
                          "core reads and writes the same physical partition (0, 16, ..., 112), "
                          "so apdsl models src and dst starting at the same partition",
                          code="APK925", help="place src and dst at the same start partition")
    return s if s is not None else (d or 0)
