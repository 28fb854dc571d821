"""`sequence_bounds` (NKI isa docstring; GpSimd): for a one-partition tile of segment IDs, the
start index and the end index (one past the last) of the segment each element belongs to, a
segment being a run of equal consecutive IDs; padding (ID 0) gets n and -1.  dst holds the
starts then the ends: [1, 2, n] in the docstring's example.  IDs must be non-negative
integers (float32 or int32 tiles); a negative or fractional ID is an error, since the docs
define no result for it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor.view import Tensor
from ..table import semantics_reduce as sem
from . import reduce_run as rr


def sequence_bounds(dst: Tensor, segment_ids: Tensor, engine: Any = "unknown",
                    name: str | None = None) -> None:
    """Segment bounds of each element (see the module docstring).

    >>> ids = apdsl.from_numpy(np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.int32), "sbuf")
    >>> d = apdsl.ndarray((1, 2, 9), "int32", "sbuf")
    >>> apdsl.runtime.nki.sequence.sequence_bounds(d, ids)
    >>> d.numpy()[0]
    array([[ 9,  1,  1,  3,  3,  3,  9,  7,  7],
           [-1,  3,  3,  6,  6,  6, -1,  9,  9]], dtype=int32)
    """
    call = rr.begin("sequence_bounds", name, {"dst": dst, "segment_ids": segment_ids},
                    engine=engine)
    for role in ("segment_ids", "dst"):
        parts = call.parts(role)
        if parts is not None and parts != 1:
            raise TargetError(f"{call.label}: {role} {call.tensors[role].name} covers {parts} "
                              "partitions; sequence_bounds takes a tile of one partition (the "
                              "docstring: the partition dimension must always be 1)",
                              code="APK930", role=role,
                              help="give one row of segment IDs at a time: ids[p:p + 1, :]")
    n = call.free("segment_ids")
    if n is not None:
        rr.elements(call, "dst", 2 * n, "holds a start and an end index for each segment ID")
    call.record()
    if call.accs is None:
        return
    ids = call.read("segment_ids").reshape(-1)
    bad = np.flatnonzero((ids < 0) | (ids != np.floor(ids)))
    if bad.size:
        raise rr.runtime_error(
            call, f"segment ID {ids[bad[0]]!r} at position {int(bad[0])} is not a "
            "non-negative integer (the docstring requires every ID to be one)", "APK930",
            "make the IDs non-negative integers (0 marks padding)", position=int(bad[0]))
    call.write({"dst": sem.sequence_bounds(ids)})
