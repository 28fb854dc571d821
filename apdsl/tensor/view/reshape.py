"""The reshaping view methods (`reshape`, `reshape_dim`, `rearrange`, `view(dtype)`), which
regroup or reinterpret dimensions without a copy; `apdsl.tensor.view.Tensor` documents them."""

from __future__ import annotations

from math import prod
from typing import Any

from ...errors import ApdslTypeError, ViewError
from ...records import replace
from ..dtypes import dtype as to_dtype
from ..layout import Dim, Layout
from .core import (
    TensorCore,
    check_ndim,
    dim_arg,
    forbid_partition,
    pattern_text,
    require_static,
    resolve_minus_one,
    tla_fields,
    with_layout,
)
from .regroup import blames_a_slice, rearranged, sliced_across


def _err(message: str, code: str, **kw: Any) -> ViewError:
    return ViewError(message, code=code, **kw)


def reshape(t: Any, shape: tuple[int, ...] | list[int]) -> TensorCore:
    require_static(t, "reshape")
    new = resolve_minus_one(tuple(shape), t.size, "reshape")
    if prod(new) != t.size:
        raise _err(f"reshape: {tuple(new)} has {prod(new)} elements, the view has "
                   f"{t.size}", "APK208", notes=[f"shape = {t.shape}"])
    if t.has_partition_dim:
        if new[0] != t.shape[0]:
            raise _err(f"reshape: the partition dimension must stay {t.shape[0]}, "
                       f"got {new[0]}", "APK229", notes=[f"shape = {t.shape}"])
        rest = Layout(t.layout.dims[1:]).reshape(tuple(new[1:]))
        layout = None if rest is None else Layout((t.layout.dims[0],) + rest.dims,
                                                  t.layout.base + rest.base)
    else:
        layout = t.layout.reshape(tuple(new))
    if layout is None and blames_a_slice(t.layout, new, t.has_partition_dim):
        raise sliced_across("reshape", f"{t.shape} -> {tuple(new)}", t)
    if layout is None:
        raise _err(f"reshape: {t.shape} -> {tuple(new)} needs a copy in this layout",
                   "APK209", notes=[f"strides = {t.strides}",
                                    f"pattern = {pattern_text(t)}"],
                   help="reshape only regroups dimensions that are contiguous; "
                   "rearrange can merge any dimensions as a nested view",
                   shape=t.shape, strides=t.strides)
    return with_layout(t, layout)



def reshape_dim(t: Any, dim: int, shape: tuple[int, ...] | list[int]) -> TensorCore:
    require_static(t, "reshape_dim")
    d = dim_arg(t, dim, "reshape_dim")
    sizes = resolve_minus_one(tuple(shape), t.shape[d], "reshape_dim")
    if len(sizes) > 1 or sizes[0] != t.shape[d]:
        forbid_partition(t, d, "reshape_dim")
    if prod(sizes) != t.shape[d]:
        raise _err(f"reshape_dim: {tuple(sizes)} has {prod(sizes)} elements, dim {d} "
                   f"has {t.shape[d]}", "APK225")
    layout = t.layout.split(d, tuple(sizes))
    if layout is None and not t.layout.dims[d].is_regular:
        raise sliced_across("reshape_dim", f"dim {d} into {tuple(sizes)}", t)
    if layout is None:
        raise _err(f"reshape_dim: dim {d} cannot be split into {tuple(sizes)} without a "
                   "copy (its blocks do not divide that way)", "APK209",
                   notes=[f"pattern = {pattern_text(t)}"])
    return with_layout(t, layout)



def rearrange(t: Any, src_pattern: Any, dst_pattern: Any = None,
              fixed_sizes: dict[str, int] | None = None, **sizes: int) -> TensorCore:
    from .. import rearrange as rr
    sizes = {**(fixed_sizes or {}), **sizes}
    if isinstance(src_pattern, str):
        if dst_pattern is not None and not isinstance(dst_pattern, dict):
            raise ApdslTypeError("rearrange: the string form is one pattern "
                                 "'a b -> b a'", code="APK111")
        if isinstance(dst_pattern, dict):
            sizes = {**dst_pattern, **sizes}
        pattern = rr.parse(src_pattern)
    else:
        pattern = rr.from_tuples(src_pattern, dst_pattern, sizes)
    plan = rr.plan(pattern, tuple(t.shape), sizes)
    return apply_plan(t, plan)



def apply_plan(t: Any, plan: Any) -> TensorCore:
    require_static(t, "rearrange")
    check_ndim(len(plan.output_shape), "rearrange")
    layout = rearranged(t, plan)
    if t.has_partition_dim and layout.dims[0] != t.layout.dims[0]:
        raise _err("rearrange: the partition dimension must stay the first output "
                   "dimension, unchanged", "APK202",
                   help="keep the first axis alone and first on both sides: 'p ... -> p ...'")
    return with_layout(t, layout)



def view_as(t: Any, dtype: Any) -> TensorCore:
    new = to_dtype(dtype)
    if t.dynamic is not None:
        raise _err("view: not supported after a dynamic or vector select", "APK213")
    require_static(t, "view")
    if new.bits == t.dtype.bits:
        return replace(t, dtype=new)
    if t.ndim == 0:
        raise _err("view: a 0-d view cannot change element size", "APK211")
    last = t.layout.dims[-1]
    if not (last.is_plain and (last.stride == 1 or last.size == 1)):
        raise _err("view: the last dimension must be contiguous in memory (stride 1)",
                   "APK211", notes=[f"strides = {t.strides}"])
    old_b, new_b = t.dtype.bits, new.bits

    def scale(x: int, what: str) -> int:
        if (x * old_b) % new_b:
            raise _err(f"view: {what} {x} in {t.dtype} is not a whole number of "
                       f"{new} elements", "APK212", notes=[f"shape = {t.shape}, "
                                                           f"strides = {t.strides}"])
        return x * old_b // new_b

    n = scale(last.size, "the last dimension's size")
    dims = []
    for d in t.layout.dims[:-1]:
        if not d.is_plain and d.size != 1:
            raise _err("view: nested dimensions cannot change element size", "APK212")
        dims.append(Dim.plain(d.size, scale(d.stride, "stride") if d.size != 1 else 0))
    dims.append(Dim.plain(n, 1))
    return replace(t, dtype=new, layout=Layout(tuple(dims),
                                                  scale(t.layout.base, "offset")),
                   **tla_fields(t, "view(dtype)"))

