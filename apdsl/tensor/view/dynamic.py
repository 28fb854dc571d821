"""The runtime-indexed view methods (`select` with a runtime index, `vector_select`,
`indirect`) and `.ap`, which addresses storage directly; `apdsl.tensor.view.Tensor` documents
them.  Each checks seed 001's constraints and SPEC section 4's decisions."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslTypeError, TargetError, ViewError
from ...records import replace
from .. import targets
from ..dtypes import dtype as to_dtype
from ..layout import Dim, Layout, is_static
from ..registers import RegisterSum, VirtualRegister
from ..scalars import NkiScalar, scalar_error
from .core import Dynamic, TensorCore, check_index_tensor, check_ndim, require_static, with_layout


def _err(message: str, code: str, **kw: Any) -> ViewError:
    return ViewError(message, code=code, **kw)


def dynamic_select(t: Any, d: int, index: Any) -> TensorCore:
    require_static(t, "select")
    if t.dynamic is not None:
        raise _err("select: this view already has a runtime index; only one dynamic "
                   "select is allowed per view", "APK216",
                   help="check is_indirect() before selecting dynamically")
    if d == 0 and t.onchip:
        raise _err("select: a runtime index cannot select the partition dimension",
                   "APK228", help="dynamic select works on free dims or HBM tensors")
    if isinstance(index, TensorCore):
        check_index_tensor(index, (1, 1), "select")
    dim = t.layout.dims[d]
    if not dim.is_plain:
        raise _err("select: a runtime index needs a plain (single-stride) dimension",
                   "APK213")
    dyn = Dynamic("scalar", index, dim.stride, dim.size, "select")
    return with_layout(t, t.layout.index(d, 0), dynamic=dyn)



def vector_select(t: Any, dim: int, vector_offset: TensorCore) -> TensorCore:
    require_static(t, "vector_select")
    if dim != 0:
        raise _err(f"vector_select: dim must be 0, got {dim}", "APK217")
    if t.onchip or targets.family(t.buffer) != "nki":
        raise _err(f"vector_select: only supported on HBM tensors, not {t.buffer}",
                   "APK217", help="copy the table to HBM, or use select on free dims")
    if t.dynamic is not None:
        raise _err("vector_select: this view already has a runtime index", "APK216")
    if not isinstance(vector_offset, TensorCore):
        raise ApdslTypeError("vector_select: vector_offset must be a tensor", code="APK111")
    check_index_tensor(vector_offset, None, "vector_select")
    d0 = t.layout.dims[0]
    if not d0.is_plain:
        raise _err("vector_select: dim 0 must be a plain dimension", "APK213")
    parts = vector_offset.shape[0]
    layout = t.layout.replace_dim(0, (Dim.plain(parts, d0.stride),))
    dyn = Dynamic("vector", vector_offset, d0.stride, d0.size, "vector_select")
    return with_layout(t, layout, dynamic=dyn)



def indirect(t: Any, index: TensorCore, num_elem: int | None = None) -> TensorCore:
    tgt = targets.target_for(t.buffer)
    if not tgt.has_indirect:
        raise TargetError(f"indirect: Tensor Indirection needs trn3, the target is {tgt.name}",
                          code="APK310", help="run with --target trn3")
    if not t.onchip or t.ndim != 2:
        raise _err("indirect: needs a 2-d on-chip (SBUF/PSUM) view (P, F)", "APK217")
    if t.dynamic is not None:
        raise _err("indirect: this view already has a runtime index", "APK216")
    check_index_tensor(index, None, "indirect")
    if index.shape[0] != t.shape[0]:
        raise _err(f"indirect: index has {index.shape[0]} partitions, the view "
                   f"{t.shape[0]}", "APK227", help="index shape must be (P, K) with "
                   "P equal to the view's partitions")
    n = index.size if num_elem is None else int(num_elem)
    if not 0 < n <= index.size:
        raise _err(f"indirect: num_elem {n} must be in 1..{index.size}", "APK227")
    d1 = t.layout.dims[1]
    if not d1.is_plain:
        raise _err("indirect: dim 1 must be a plain dimension", "APK213")
    layout = t.layout.replace_dim(1, (Dim.plain(n, d1.stride),))
    dyn = Dynamic("ti", index, d1.stride, d1.size, "indirect", num_elem=n)
    return with_layout(t, layout, dynamic=dyn)



def ap(t: Any, pattern: Any, offset: Any = None, scalar_offset: Any = None,
       vector_offset: Any = None, indirect_dim: int = 0, dtype: Any = None,
       *more: Any) -> TensorCore:
    if more or (isinstance(pattern, (list, tuple)) and pattern
                and isinstance(offset, (list, tuple))):
        # seed 000 writes `src.ap([32, 16], [1, 32])`: pairs as separate arguments
        raise _err("ap: the pattern must be one list of [stride, count] pairs", "APK219",
                   help=f"write .ap([{list(pattern)}, {list(offset)}{''.join(', ' + str(list(m)) for m in more if isinstance(m, (list, tuple)))}])",
                   pattern=pattern)
    if offset is not None and not isinstance(offset, (int, np.integer, VirtualRegister)) \
            or isinstance(offset, bool):
        raise _err(f"ap: offset must be an int or a register, got {offset!r}", "APK221",
                   help="the offset counts elements from the start of the storage; "
                   "pass the pattern as one list, e.g. src.ap([[32, 16], [1, 32]])")
    pairs = check_pattern(pattern)
    new_dtype = t.dtype if dtype is None else to_dtype(dtype)
    base = t.layout.offset
    if isinstance(base, (int, np.integer)) and new_dtype.bits != t.dtype.bits:
        if (base * t.dtype.bits) % new_dtype.bits:
            raise _err(f"ap: the inherited offset {base} is not a whole number of "
                       f"{new_dtype} elements", "APK212")
        base = base * t.dtype.bits // new_dtype.bits
    if offset is not None:
        base = base + offset if not isinstance(offset, VirtualRegister) and \
            isinstance(base, (int, np.integer)) else RegisterSum(base, offset)
    if scalar_offset is not None and vector_offset is not None:
        raise _err("ap: give at most one of scalar_offset and vector_offset", "APK222")
    dynamic_regs = any(not is_static(x) for p in pairs for x in p)
    storage_shape = t.storage.shape
    if t.onchip and pairs:
        free = prod(storage_shape[1:]) * t.storage.dtype.bits // new_dtype.bits
        s0, c0 = pairs[0]
        if is_static(s0) and s0 != free and not (is_static(c0) and c0 == 1):
            raise TargetError(
                f"ap: the partition stride must be the tensor's free size {free}, got {s0}",
                code="APK303", notes=["on SBUF/PSUM the first pair addresses partitions; "
                                      "every partition uses the same free pattern"],
                help=f"start the pattern with [{free}, partitions]; stepping over "
                "partitions is not possible", pattern=pairs)
        tgt = targets.target_for(t.buffer)
        if is_static(c0) and c0 > tgt.partitions:
            raise TargetError(f"ap: {c0} partitions exceed the {tgt.partitions} of {tgt.name}",
                              code="APK301")
    check_ndim(len(pairs), "ap")
    layout = Layout.from_pattern(pairs, base)
    dyn = None
    if scalar_offset is not None or vector_offset is not None:
        if dynamic_regs:
            raise _err("ap: register strides or counts cannot be combined with "
                       "scalar_offset or vector_offset", "APK222")
        if t.dynamic is not None:
            raise _err("ap: this view already has a runtime index", "APK216")
        scale = _indirect_scale(t, indirect_dim, new_dtype)
        if vector_offset is not None:
            if indirect_dim != 0:
                raise _err("ap: vector_offset supports only indirect_dim=0", "APK222")
            if t.buffer not in targets.NKI_HBM:  # NKI docs: vector indirection is DMA's
                raise TargetError(f"ap: vector_offset is only valid on an HBM tensor, not "
                                  f"on {t.name} in {t.buffer}", code="APK341",
                                  help="keep the table in HBM and gather it with dma_copy; "
                                  "on chip use indirect() (trn3) or scalar_offset",
                                  buffer=t.buffer)
            if not isinstance(vector_offset, TensorCore):
                raise ApdslTypeError("ap: vector_offset must be a tensor", code="APK111")
            check_index_tensor(vector_offset, None, "ap")
            dyn = Dynamic("vector", vector_offset, scale, None, "ap", indirect_dim=0)
        else:
            if isinstance(scalar_offset, TensorCore):
                check_index_tensor(scalar_offset, (1, 1), "ap")
            elif not isinstance(scalar_offset, VirtualRegister):
                raise _not_an_offset(scalar_offset)
            dyn = Dynamic("scalar", scalar_offset, scale, None, "ap",
                          indirect_dim=int(indirect_dim))
    elif t.dynamic is not None:
        dyn = None  # .ap addresses storage directly: the view's own index is replaced
    return replace(t, dtype=new_dtype, layout=layout, dynamic=dyn, coord=None,
                   origin_shape=None)


def _not_an_offset(value: Any) -> ApdslTypeError:
    """The error for a `scalar_offset` that is neither a (1, 1) tensor nor a register."""
    if isinstance(value, NkiScalar):
        return scalar_error(
            "ap: scalar_offset is an NkiScalar, which apdsl's access patterns do not take yet",
            notes=["NKI 2.33 allows it (an int64 one on HBM only); apdsl models NkiScalars as "
                   "loop bounds and if_else conditions"],
            help="load the offset with nisa.register_load into a register, or pass the "
            "(1, 1) tensor itself")
    return ApdslTypeError("ap: scalar_offset must be a (1, 1) tensor or a register",
                          code="APK111")


def _indirect_scale(t: TensorCore, dim: Any, new_dtype: Any) -> int:
    """How many elements (of the pattern's dtype) one step of an `.ap` runtime index moves.

    The NKI reference: "indirect_dim: dimension in self.shape whose stride scales the
    indirect scalar/vector offset", self being the tensor `.ap` is called on; the migration
    guide's formula `prod(A.shape[indirect_dim + 1:])` says the same of a whole tensor.  So a
    reshaped view's own dims count (nki-library's KV-cache update reshapes the cache to
    (B * S, d_head) and relies on a step of d_head), and a slice keeps its storage's row
    stride.  Where the view's stride agrees with neither reading of the formula (a stepped
    slice, a permuted view) the docs do not settle what hardware does: refused.
    """
    if not (isinstance(dim, (int, np.integer)) and 0 <= dim < t.ndim):
        raise _err(f"ap: indirect_dim {dim} is not a dim of the tensor {t.shape}", "APK222")
    stride = t.layout.dims[dim].stride
    readings = {prod(t.shape[dim + 1:])}
    if dim < len(t.storage.shape):
        readings.add(prod(t.storage.shape[dim + 1:]) * t.storage.dtype.bits // t.dtype.bits)
    if t.shape[dim] == 1 and len(readings) == 1:  # a dim of one has no stride of its own
        stride = next(iter(readings))
    if not is_static(stride) or stride not in readings:
        own = "none" if stride is None else stride if is_static(stride) else "a register"
        raise _err(f"ap: the NKI docs do not settle how far a runtime index of indirect_dim "
                   f"{dim} steps on this view: the dim's stride is {own}, "
                   f"prod(shape[{dim} + 1:]) gives {' or '.join(map(str, sorted(readings)))}",
                   "APK222",
                   help="call .ap on the tensor itself, or on a reshape or slice of it whose "
                   f"dim {dim} steps by prod(shape[{dim} + 1:]) elements")
    if new_dtype.bits != t.dtype.bits:
        if (stride * t.dtype.bits) % new_dtype.bits:
            raise _err(f"ap: a step of indirect_dim {dim} ({stride} {t.dtype} elements) is "
                       f"not a whole number of {new_dtype} elements", "APK212")
        return stride * t.dtype.bits // new_dtype.bits
    return int(stride)


# -- indexing sugar -------------------------------------------------------------------------


def check_pattern(pattern: Any) -> list[list[Any]]:
    if not isinstance(pattern, (list, tuple)) or not pattern:
        raise _err(f"ap: pattern must be a non-empty list of [stride, count] pairs, got "
                   f"{pattern!r}", "APK219")
    out = []
    for p in pattern:
        if not (isinstance(p, (list, tuple)) and len(p) == 2):
            raise _err(f"ap: each pattern entry must be [stride, count], got {p!r}", "APK219",
                       pattern=pattern)
        s, c = p
        for v in (s, c):
            if not (isinstance(v, (int, np.integer, VirtualRegister)) and not isinstance(v, bool)):
                raise _err(f"ap: strides and counts must be ints or registers, got {v!r}",
                           "APK219", pattern=pattern)
        if is_static(c) and c < 1:
            raise _err(f"ap: count {c} must be >= 1", "APK219", pattern=pattern)
        out.append([int(s) if is_static(s) else s, int(c) if is_static(c) else c])
    return out

