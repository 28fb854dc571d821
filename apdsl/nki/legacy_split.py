"""The legacy compiler's split of an instruction whose operand needs more free access-pattern
entries than the hardware has (a legacy kernel only: a file that imports `neuronxcc`).

An engine instruction reads and writes each partition through at most four free `[stride,
count]` entries (the Trainium architecture guide), and the current API refuses more (APK304).
Legacy kernels index tiles with grids of any rank (`nl.mgrid[0:128, 0:2, 0:2, 0:2, 0:n, 0:n,
0:n]`), and the legacy compiler legalized such an access by issuing the instruction once per
position of its outer free dimensions: nki-samples' trilinear interpolation, run on devices with
`nki.baremetal` and checked against torch, writes operands needing six entries; the compiler's
release notes name that legalization pass (NCC_INLA001, "legalization failure with >2 free
access pattern dimensions").  apdsl issues the same pieces: each a whole instruction, checked,
lowered and costed as the compiler's own.

Only instructions that compute each element of dst from the elements at the same position of
their other operands are split, and only when every tensor operand has dst's shape or holds
one value per partition (a `[P, 1]` scalar operand, the same for every piece); a dst sharing
memory with a source through another view is not split (the pieces would read what earlier
pieces wrote).  Anything else keeps the refusal.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from itertools import product
from math import prod
from typing import Any

from ..tensor import targets
from ..tensor.lowering import lower
from ..tensor.targets import NKI_ONCHIP
from ..tensor.view import Tensor

# instructions computing dst element by element from the same positions of their operands
_ELEMENTWISE = frozenset({"tensor_tensor", "tensor_scalar", "scalar_tensor_tensor",
                          "tensor_copy", "reciprocal", "memset", "tensor_copy_predicated",
                          "activation", "dma_copy"})
# keywords that make an otherwise element-wise instruction reduce over the free axes
_REDUCING = ("reduce_op", "reduce_res")


def pieces(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict
           ) -> Iterator[dict[str, Any]] | str:
    """The keyword arguments of each piece the legacy compiler issues for the call, in order,
    or why apdsl does not split it (then the call's refusal stands)."""
    if name not in _ELEMENTWISE:
        return f"{name} does not compute dst element by element"
    try:
        given = dict(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except TypeError:
        return "its arguments do not fit"  # (the call itself reports them)
    dst = given.get("dst")
    if not isinstance(dst, Tensor):
        return "it has no dst tile"
    if any(given.get(k) is not None for k in _REDUCING):
        return f"{name} reduces over the free axes here"
    tensors = {k: v for k, v in given.items() if isinstance(v, Tensor)}
    shape = tuple(dst.shape)
    full = [k for k, t in tensors.items() if tuple(t.shape) == shape]
    for k, t in tensors.items():
        if k not in full and (len(t.shape) == 0 or t.shape[0] != shape[0] or
                              prod(t.shape[1:]) != 1):
            return f"{k} has neither dst's shape {shape} nor one value per partition"
    if any(t.dynamic is not None or not t.layout.static for t in tensors.values()):
        return "an operand has a runtime index"
    for k, t in tensors.items():
        if k != "dst" and t.storage is dst.storage and not _same_view(t, dst):
            return f"dst shares {k}'s memory through another view (a piece would read what " \
                "an earlier piece wrote)"
    depth = _depth(shape, [tensors[k] for k in full])
    if depth is None:
        return "no split over its outer free dimensions fits"
    axes = range(1, depth + 1)

    def each() -> Iterator[dict[str, Any]]:
        for at in product(*(range(shape[a]) for a in axes)):
            kw = dict(given)
            for k in full:
                v = tensors[k]
                for a, i in zip(axes, at):
                    v = v.slice(a, i, i + 1)
                kw[k] = v
            yield kw
    return each()


def _too_many(t: Tensor) -> bool:
    if t.storage.buffer not in NKI_ONCHIP or t.dynamic is not None:
        return False
    limit = targets.target_for(t.buffer).max_free_entries
    return any(ap.free_entries > limit for ap in lower(t, check_entries=False))


def _depth(shape: tuple[int, ...], full: list[Tensor]) -> int | None:
    """How many outer free dimensions the pieces go over: the fewest that leave every
    operand within the limit (None: no split does)."""
    for depth in range(1, len(shape)):
        views = []
        for t in full:
            for a in range(1, depth + 1):
                t = t.slice(a, 0, 1)
            views.append(t)
        if not any(_too_many(v) for v in views):
            return depth
    return None


def _same_view(a: Tensor, b: Tensor) -> bool:
    return [(ap.offset, ap.pattern) for ap in lower(a, check_entries=False)] == \
        [(ap.offset, ap.pattern) for ap in lower(b, check_entries=False)]
