"""`dma_compute` (NKI isa docstring): the DMA engines' compute, `dst = srcs[0] + srcs[1] + ...`
in float32 (every source cast to float32, the sum cast to dst's dtype), the operands matched
element by element in row-major order (each holds the same number of elements; HBM or SBUF).
The reference allows only `reduce_op=nl.add`, scales of 1.0 (or none) and at most 16 sources;
with an indirect operand (`vector_offset`, a read-modify-write scatter or gather) exactly two
sources and `unique_indices=True`.  apdsl adds the sources left to right, as the docstring
writes the reduction (`reduce_op(srcs[0] * scales[0], srcs[1] * scales[1], ...)`).

The legacy `dma_copy(dst, src, dst_rmw_op=np.add)` is this instruction with sources `dst` and
`src` (the NKI migration guide's own translation)."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.operands import check_operand, operand_shapes, resolve_operands, tensor_arg
from ..table import TABLE

MAX_SOURCES = 16


def _refuse(label: str, message: str, help: str) -> TargetError:
    return TargetError(f"{label}: {message}", code="APK932", help=help)


def _is_add(op: Any) -> bool:
    return getattr(op, "name", None) == "add" or op is np.add


def dma_compute(dst: Tensor, srcs: Any, reduce_op: Any, scales: Any = None,
                unique_indices: bool = True, oob_mode: Any = "error",
                name: str | None = None) -> None:
    """`dst = sum(srcs)` by DMA (see the module docstring).

    >>> a = apdsl.from_numpy(np.full((2, 4), 1.5, np.float32))
    >>> b = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4))
    >>> d = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.runtime.nki.dma_compute.dma_compute(d, [a, b], apdsl.operator("add"))
    >>> d.numpy()[1]
    array([5.5, 6.5, 7.5, 8.5], dtype=float32)
    """
    label = trace.instruction_label("dma_compute", name)
    if isinstance(srcs, Tensor) or not isinstance(srcs, (list, tuple)) or not srcs:
        raise _refuse(label, f"srcs must be a list of tensors, not {type(srcs).__name__}",
                      "pass srcs=[a, b, ...]")
    if len(srcs) > MAX_SOURCES:
        raise _refuse(label, f"{len(srcs)} sources; dma_compute takes at most {MAX_SOURCES}",
                      "add them in groups of 16")
    if not _is_add(reduce_op):
        raise _refuse(label, f"reduce_op {getattr(reduce_op, 'name', reduce_op)!r}: the "
                      "reference supports only nl.add", "pass reduce_op=nl.add")
    if scales is not None and (len(scales) != len(srcs) or any(float(s) != 1.0 for s in scales)):
        raise _refuse(label, f"scales {list(scales)}: the reference requires one scale per "
                      "source, each 1.0 (or scales=None)", "multiply the sources first")
    entry = TABLE["dma_compute"]
    dst = tensor_arg(dst, label, "dst")
    check_operand(entry, label, "dst", dst)
    sources = []
    for k, s in enumerate(srcs):
        s = tensor_arg(s, label, f"srcs[{k}]")
        check_operand(entry, label, "srcs", s)
        sources.append(s)
    indirect = any(t.dynamic is not None for t in (dst, *sources))
    if indirect and (len(sources) != 2 or not unique_indices):
        raise _refuse(label, "with an indirect operand (vector_offset) dma_compute is a "
                      "read-modify-write of exactly two sources with unique_indices=True",
                      "give two sources, one of them the destination, and unique indices")
    if str(getattr(oob_mode, "name", oob_mode)) not in ("error", "oob_mode.error"):
        raise _refuse(label, f"oob_mode {oob_mode!r}: apdsl runs dma_compute with "
                      "oob_mode=error only (an out-of-range index stops it)",
                      "leave oob_mode at its default")
    roles = [("src" if k == 0 else f"src{k}", s) for k, s in enumerate(sources)]
    accs = resolve_operands(label, ex.TI_GROUP, *roles, ("dst", dst))
    shapes = operand_shapes(accs, *sources, dst)
    counts = {prod(s) for s in shapes if s is not None}
    if len(counts) > 1:
        raise TargetError(f"{label}: the operands hold different numbers of elements "
                          f"({', '.join(str(s) for s in shapes)}); dma_compute adds them "
                          "element by element", code="APK306",
                          help="give every source and dst the same number of elements")
    trace.record("dma_compute", name, {"dst": dst, **dict(roles)})
    if accs is None:
        return
    total = np.zeros(accs[-1].size, np.float32)
    for (role, _), acc in zip(roles, accs[:-1]):
        total = total + ex.read_float32(acc, label, role).reshape(-1)
    out = accs[-1]
    ex.prepare_write(out, label, "dst")
    ex.store(out, ex.cast(total.reshape(out.shape), out.dtype))
