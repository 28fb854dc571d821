"""The legacy NKI shapes `nl.ndarray`/`zeros`/`ones`/`full` make (`apdsl.nki.legacy`): block
dimensions (dimensions before `nl.par_dim`) and direct allocation (`buffer=ncc.sbuf.mod_alloc(
...)`, `ncc.psum.alloc(func)`: each tile placed where it says)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from math import prod
from typing import Any

from ..semantics.host import Host
from ..tensor.blocks import BlockTensor
from ..tensor.view import Tensor
from .locate import assigned_name, caller_span


def allocate(host: Host, function: str, fn: Callable[..., Any], args: tuple, kwargs: dict
         ) -> Any:
    """`nl.ndarray`/`zeros`/`ones`/`full` of a legacy shape: with block dimensions
    (dimensions before `nl.par_dim`) a `BlockTensor`, and with a direct allocation
    (`buffer=ncc.sbuf.mod_alloc(...)`) placed where it says.  None for any other call."""
    from ..semantics.nl_legacy import ParDim
    bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    shape, buffer = bound.get("shape"), bound.get("buffer")
    if not isinstance(shape, (tuple, list)):
        return None
    marks = [k for k, n in enumerate(shape) if isinstance(n, ParDim)]
    k = marks[0] if marks else 0
    direct = buffer if callable(getattr(buffer, "place", None)) else None  # ncc.*.alloc
    if k == 0 and direct is None:
        return None
    buf = direct.buffer if direct is not None else (buffer or "sbuf")
    if buf not in ("sbuf", "psum"):  # (a direct allocation is always on chip)
        # Only SBUF and PSUM tensors have a partition dimension (the legacy programming
        # model: "Tensor in NeuronCore's internal memories (SBUF and PSUM) also have a
        # dimension mapped to the partitions"); an HBM tensor is its sizes, row-major, so
        # par_dim marks nothing there and the dimensions before it are ordinary ones.
        return None
    from ..tensor.dtypes import dtype as to_dtype
    dtype = to_dtype(bound["dtype"])
    name = bound.get("name") or assigned_name()
    span = caller_span(2)
    blocks = tuple(int(n) for n in shape[:k])
    tile = tuple(int(n) for n in shape[k:])
    fill = {"zeros": 0, "ones": 1, "full": bound.get("fill_value")}.get(function)
    if direct is None:
        t = BlockTensor.allocate(blocks, tile, dtype, buf, name=name, span=span)
        if fill is not None:
            host.builtins["memset"](dst=t.backing, value=fill)
        return t
    fbytes = prod(tile[1:]) * dtype.bits // 8

    def place(linear: int) -> Tensor:
        idx = _unravel(linear, blocks)
        at = direct.place(idx, tile[0], fbytes)
        from ..semantics.placing import allocate
        t = allocate(host, tile, dtype, buf, "ND", name, at)
        if fill is not None:
            host.builtins["memset"](dst=t, value=fill)
        return t

    if not blocks:
        return place(0)
    return BlockTensor.placed(blocks, tile, dtype, buf, name, place)


def _unravel(linear: int, blocks: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for n in reversed(blocks):
        out.append(linear % n)
        linear //= n
    return tuple(reversed(out))
