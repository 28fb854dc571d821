"""Conversion between formats of one family, copying once: the source is read and the result
written through strided views of their storage (one axis per mode), never padded, transposed
and copied again."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import FormatError
from .format_plan import Plan, check_shape, logical_from_storage, make_plan
from .format_registry import MATRIX, Format, axes_text, c0_for, family_text, lookup, storage_text

__all__ = ["convert"]


def _strided(base: np.ndarray, shape: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """`as_strided` for every dtype: it goes through the array interface, which cannot spell
    ml_dtypes types such as float8, so stride raw bytes and view them back."""
    raw = base.view(np.dtype((np.void, base.itemsize)))
    return as_strided(raw, tuple(shape), tuple(strides)).view(base.dtype)


def _split_view(storage: np.ndarray, plan: Plan) -> np.ndarray:
    """The storage seen with one axis per mode, per dimension outer mode first."""
    counts = [c for d in plan.dims for c, _ in reversed(d.modes)]
    strides = [s * storage.itemsize for d in plan.dims for _, s in reversed(d.modes)]
    return _strided(storage.reshape(-1), counts, strides)


def _split_axes(view: np.ndarray, parts: Sequence[tuple[int, ...]]) -> np.ndarray:
    """`view` with axis i split into `parts[i]` (outer first); always a view, never a copy."""
    shape: list[int] = []
    strides: list[int] = []
    for n_parts, stride in zip(parts, view.strides):
        inner_strides = [stride * int(np.prod(n_parts[i + 1:])) for i in range(len(n_parts))]
        shape.extend(n_parts)
        strides.extend(inner_strides)
    return _strided(view, shape, strides)


def _pieces(plan: Plan) -> Iterator[tuple[tuple[slice, ...], tuple, list[tuple[int, ...]]]]:
    """Rectangles of the logical array that map onto rectangles of the split view: per cut
    dimension the whole blocks and the tail block.  Yields (logical slices, split-view index,
    how each logical axis splits)."""
    per_dim = []
    for d in plan.dims:
        if len(d.modes) == 1:
            per_dim.append([(slice(0, d.size), (slice(0, d.size),), (d.size,))])
            continue
        block = d.modes[0][0]
        whole, tail = divmod(d.size, block)
        segs = []
        if whole:
            segs.append((slice(0, whole * block), (slice(0, whole), slice(None)),
                         (whole, block)))
        if tail:
            segs.append((slice(whole * block, d.size), (whole, slice(0, tail)), (tail,)))
        per_dim.append(segs)
    for combo in product(*per_dim):
        yield (tuple(s[0] for s in combo), tuple(i for s in combo for i in s[1]),
               [s[2] for s in combo])


def _zero_padding(split: np.ndarray, plan: Plan) -> None:
    """Write zeros over exactly the padding of each dimension (corners twice, harmlessly)."""
    axis = 0
    for d in plan.dims:
        full = [slice(None)] * split.ndim
        if len(d.modes) == 1:
            if d.padded > d.size:
                full[axis] = slice(d.size, None)
                split[tuple(full)] = 0
        else:
            whole, tail = divmod(d.size, d.modes[0][0])
            if tail:
                full[axis], full[axis + 1] = whole, slice(tail, None)
                split[tuple(full)] = 0
        axis += len(d.modes)


def _pack(logical: np.ndarray, plan: Plan, out: np.ndarray) -> None:
    split = _split_view(out, plan)
    for slices, index, parts in _pieces(plan):
        np.copyto(split[index], _split_axes(logical[slices], parts))
    _zero_padding(split, plan)


def _unpack(storage: np.ndarray, plan: Plan, into: np.ndarray) -> None:
    split = _split_view(storage, plan)
    for slices, index, parts in _pieces(plan):
        np.copyto(_split_axes(into[slices], parts), split[index])


def _permutation(src: Format, dst: Format, rank: int) -> tuple[int, ...]:
    """For each logical axis of `dst`, the logical axis of `src` it is."""
    if src.family == MATRIX:  # matrix formats name their last two axes positionally
        return tuple(range(rank))
    names = src.axes or ()
    return tuple(names.index(a) for a in dst.axes or ())



def convert(array: np.ndarray, src: object, dst: object, shape: Sequence[int] | None = None,
            c0: int | None = None) -> np.ndarray:
    """Convert `array`, stored in format `src`, to a new array stored in format `dst`.

    `shape` is the source's unpadded logical shape (in `src`'s logical axes, as for
    `storage_shape`); without it a padded source converts with its padding.  Padding in the
    result is zero.  Formats convert within one family: matrices (ND, ND_ALIGN, COLUMN_MAJOR,
    NZ, ZZ, ZN, with batch dims), 4-D conv (NCHW, NHWC, HWCN, NC1HWC0, FRACTAL_Z) and 5-D conv
    (NDHWC, NCDHW, NDC1HWC0, FRACTAL_Z_3D).

    >>> x = np.arange(6, dtype=np.float16).reshape(2, 3)
    >>> nz = apdsl.formats.convert(x, "ND", "NZ")
    >>> nz.shape
    (1, 1, 16, 16)
    >>> apdsl.formats.convert(nz, "NZ", "ND", shape=(2, 3))[1]
    array([3., 4., 5.], dtype=float16)
    """
    a = np.asarray(array)
    sf, df = lookup(src), lookup(dst)
    if sf.family != df.family:
        raise FormatError(
            f"cannot convert {sf.name} to {df.name}: they do not share logical axes",
            code="APK503",
            notes=[f"{sf.name} logical axes: {axes_text(sf)}",
                   f"{df.name} logical axes: {axes_text(df)}",
                   f"{sf.name} converts to: {family_text(sf.family)}"],
            help=("ND has no named axes: call its 4-D/5-D data NCHW, NHWC, HWCN, NDHWC or NCDHW"
                  if "ND" in (sf.name, df.name) else None),
            src=sf.name, dst=df.name)
    c0v = c0_for(a.dtype, c0)
    dname = a.dtype.name
    if shape is None:
        lshape = logical_from_storage(sf, a.shape, c0v, dname)
        sp = make_plan(sf, check_shape(sf, lshape, "logical shape of the array"), c0v)
        if sp.storage != a.shape:  # an aligned axis that is not a multiple of C0
            raise FormatError(
                f"the {sf.name} array {a.shape} is not whole: {sf.name} of {lshape} {dname} "
                f"is stored as {sp.storage}", code="APK507",
                notes=[f"{sf.name} storage axes: {storage_text(sf)}, C0 = {c0v}"],
                help="pass shape= (the logical shape) or the c0= it was made with",
                format=sf.name, storage=a.shape)
    else:
        lshape = check_shape(sf, shape, "shape=")
        sp = make_plan(sf, lshape, c0v)
        if sp.storage != a.shape:
            raise FormatError(
                f"shape={lshape} does not fit the {sf.name} array {a.shape}: {sf.name} of "
                f"{lshape} {dname} is stored as {sp.storage}", code="APK508",
                notes=[f"shape= is the source's logical shape, axes {axes_text(sf)}",
                       f"{sf.name} storage axes: {storage_text(sf)}, C0 = {c0v}"],
                help="pass the logical shape the array was converted from",
                src=sf.name, dst=df.name, shape=lshape, storage=a.shape)
    perm = _permutation(sf, df, len(lshape))
    dp = make_plan(df, check_shape(df, tuple(lshape[p] for p in perm)), c0v)
    out = np.empty(dp.storage, dtype=a.dtype)
    if dp.plain:  # the result is a view of the logical array: fill it straight from storage
        target = _split_view(out, dp).transpose(np.argsort(perm))
        _unpack(np.ascontiguousarray(a), sp, target)
        return out
    if sp.plain:
        logical = _split_view(np.ascontiguousarray(a), sp)
    else:
        logical = np.empty(lshape, dtype=a.dtype)
        _unpack(np.ascontiguousarray(a), sp, logical)
    _pack(logical.transpose(perm), dp, out)
    return out
