"""A format's plan for one logical shape: the padded extent and nested `(count, stride)` modes of
each logical dimension, the storage shape, and the format as a layout (`stored`, the one place
that turns a format, a logical shape, a dtype and a buffer into the layout a tensor has)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import lru_cache
from math import prod

import numpy as np

from ..errors import FormatError
from ..records import record
from .format_registry import (
    Format,
    Modes,
    axes_text,
    buffer_c0,
    c0_for,
    check_buffer,
    lookup,
    rank_text,
    storage_text,
)
from .layout import Dim, Layout

__all__ = ["Plan", "PlanDim", "make_plan", "check_shape", "axis_names", "storage_shape",
           "padded_shape", "block_shape", "dim_modes", "offsets", "logical_shape",
           "logical_from_storage", "Stored", "stored"]


@record
class PlanDim:
    size: int      # logical extent
    padded: int    # extent in storage, padding included
    modes: Modes   # inner first, counts padded: (block, stride), (blocks, stride) or (padded, s)


@record
class Plan:
    shape: tuple[int, ...]
    storage: tuple[int, ...]  # the published (merged) storage shape
    dims: tuple[PlanDim, ...]

    @property
    def plain(self) -> bool:
        """Storage is a strided view of the logical array: no blocks, no padding."""
        return all(len(d.modes) == 1 and d.size == d.padded for d in self.dims)



def axis_names(fmt: Format, rank: int) -> tuple[str, ...]:
    if fmt.axes is None:
        return tuple(f"#{i}" for i in range(rank))
    return tuple(f"#{i}" for i in range(rank - len(fmt.axes))) + fmt.axes



def check_shape(fmt: Format, shape: object, role: str = "logical shape") -> tuple[int, ...]:
    try:
        given = tuple(shape)  # type: ignore[call-overload]
        dims = tuple(operator.index(d) for d in given)
    except TypeError:
        given = None
    if given is None or any(isinstance(d, bool) for d in given):
        raise FormatError(f"{role} of {fmt.name} must be a tuple of integers, not {shape!r}",
                          code="APK505", format=fmt.name, shape=shape)
    if any(d < 0 for d in dims):
        raise FormatError(f"{role} {dims} of {fmt.name} has a negative dimension",
                          code="APK505", format=fmt.name, shape=dims)
    want = rank_text(fmt)
    if fmt.axes is not None and (len(dims) < len(fmt.axes) if fmt.batched
                                 else len(dims) != len(fmt.axes)):
        raise FormatError(f"{fmt.name} needs {want}, but the {role} {dims} has rank {len(dims)}",
                          code="APK504", notes=[f"{fmt.name} logical axes: {axes_text(fmt)}"],
                          help=None if fmt.batched else
                          f"give all {len(fmt.axes)} axes, using 1 for a missing one",
                          format=fmt.name, shape=dims)
    return dims


def make_plan(fmt: Format, shape: tuple[int, ...], c0: int) -> Plan:
    names = axis_names(fmt, len(shape))
    size = dict(zip(names, shape))
    block = {a: (c0 if b == "C0" else b) for a, b in fmt.blocks}
    padded = {}
    for a in names:
        if a in block:
            padded[a] = -(-size[a] // block[a]) * block[a]
        elif a in fmt.aligned:
            padded[a] = -(-size[a] // c0) * c0
        else:
            padded[a] = size[a]
    batch = names[:len(names) - len(fmt.axes)] if fmt.axes is not None else ()
    order = batch + (fmt.storage or names)
    extent = []
    for part in order:
        a, kind = (part[:-1], part[-1]) if part[:-1] in block else (part, "")
        extent.append(padded[a] // block[a] if kind == "1" else block[a] if kind == "0"
                      else padded[a])
    stride = dict(zip(order, np.cumprod((1,) + tuple(extent[:0:-1]), dtype=np.int64)[::-1]))
    dims = tuple(PlanDim(size[a], padded[a],
                      ((block[a], int(stride[a + "0"])), (padded[a] // block[a],
                                                          int(stride[a + "1"])))
                      if a in block else ((padded[a], int(stride[a])),)) for a in names)
    storage = tuple(int(e) for e in extent)
    if fmt.merge > 1:
        lead, cut = len(batch), len(batch) + fmt.merge
        storage = storage[:lead] + (int(np.prod(storage[lead:cut])),) + storage[cut:]
    return Plan(shape, storage, dims)


def storage_shape(fmt: object, logical_shape: Sequence[int], dtype: object,
                  c0: int | None = None) -> tuple[int, ...]:
    """The row-major storage shape holding `logical_shape` in format `fmt` (SPEC section 5).

    >>> apdsl.formats.storage_shape("NZ", (20, 40), "float16")
    (3, 2, 16, 16)
    """
    f = lookup(fmt)
    return make_plan(f, check_shape(f, logical_shape), c0_for(dtype, c0)).storage


def padded_shape(fmt: object, logical_shape: Sequence[int], dtype: object,
                 c0: int | None = None) -> tuple[int, ...]:
    """The logical shape rounded up to whole fractals (and aligned rows) of format `fmt`.

    >>> apdsl.formats.padded_shape("NZ", (20, 40), "float16")
    (32, 48)
    """
    f = lookup(fmt)
    return tuple(d.padded for d in make_plan(f, check_shape(f, logical_shape),
                                          c0_for(dtype, c0)).dims)


def block_shape(fmt: object, rank: int, dtype: object, c0: int | None = None) -> tuple[int, ...]:
    """Per logical dimension, the fractal block it is cut into (1 for an uncut dimension).

    >>> apdsl.formats.block_shape("NZ", 2, "float16")
    (16, 16)
    """
    f = lookup(fmt)
    names = axis_names(f, len(check_shape(f, (1,) * rank)))
    block = {a: (c0_for(dtype, c0) if b == "C0" else b) for a, b in f.blocks}
    return tuple(int(block.get(a, 1)) for a in names)


def dim_modes(fmt: object, logical_shape: Sequence[int], dtype: object,
              c0: int | None = None) -> tuple[Modes, ...]:
    """Each logical dimension's modes, inner first, as (count, stride) in storage elements.

    The storage offset of a logical coordinate is the sum over dimensions of the mixed-radix
    digits of its index (over the mode counts, inner first; the outermost digit unbounded)
    times the mode strides.  A dimension that is not cut is one mode `(size, stride)`.

    >>> apdsl.formats.dim_modes("NZ", (20, 40), "float16")
    (((16, 16), (2, 256)), ((16, 1), (3, 512)))
    """
    f = lookup(fmt)
    p = make_plan(f, check_shape(f, logical_shape), c0_for(dtype, c0))
    return tuple(d.modes if len(d.modes) > 1 else ((d.size, d.modes[0][1]),) for d in p.dims)


def offsets(modes: Sequence[Modes], shape: Sequence[int]) -> np.ndarray:
    """Storage offsets (int64) of every coordinate of `shape`, laid out by `modes`."""
    return Layout(tuple(Dim(n, tuple(m)) for n, m in zip(shape, modes))).offsets()


def logical_shape(fmt: object, storage: Sequence[int], dtype: object,
                  c0: int | None = None) -> tuple[int, ...]:
    """The (padded) logical shape a storage array of format `fmt` holds.

    >>> apdsl.formats.logical_shape("NZ", (3, 2, 16, 16), "float16")
    (32, 48)
    """
    f = lookup(fmt)
    return logical_from_storage(f, tuple(storage), c0_for(dtype, c0), str(dtype))


def logical_from_storage(fmt: Format, storage: tuple[int, ...], c0: int,
                          dname: str) -> tuple[int, ...]:
    if fmt.merge > 1:
        raise FormatError(f"a {fmt.name} array {storage} does not record its logical shape",
                          code="APK509",
                          notes=[f"{fmt.name} storage {storage_text(fmt)} merges axes, so "
                                 "they cannot be recovered from the array"],
                          help=f"pass shape=, the logical {axes_text(fmt)} shape",
                          format=fmt.name, storage=storage)
    order = fmt.storage or ()
    lead = len(storage) - len(order) if fmt.axes is not None else 0
    if lead < 0 or (lead and not fmt.batched):
        raise FormatError(f"a {fmt.name} array has {len(order)} storage axes "
                          f"{storage_text(fmt)}, but this one is {storage}",
                          code="APK507", format=fmt.name, storage=storage)
    if fmt.axes is None:
        return storage
    got = dict(zip(order, storage[lead:]))
    block = {a: (c0 if b == "C0" else b) for a, b in fmt.blocks}
    for a, b in block.items():
        if got[a + "0"] != b:
            raise FormatError(
                f"a {fmt.name} array of {dname} has {a}0 = {b}, but this one {storage} "
                f"has {got[a + '0']}", code="APK507",
                notes=[f"{fmt.name} storage axes: {storage_text(fmt)}, C0 = {c0}"],
                help="pass c0= when the fractals use another C0 (16 in L0C)",
                format=fmt.name, storage=storage, c0=c0)
    return storage[:lead] + tuple(got[a + "1"] * block[a] if a in block else got[a]
                                  for a in fmt.axes)


# ---------------------------------------------------------------------------- the one layout

@record
class Stored:
    """A tensor of logical `shape` stored in `format` in one buffer: everything apdsl derives
    from the format (views, TLA tiles, alignment rules, pictures) reads it from here."""

    format: str
    shape: tuple[int, ...]      # logical
    c0: int                     # the C0 its fractals use (see `format_registry.buffer_c0`)
    padded: tuple[int, ...]     # the logical shape rounded up to whole fractals
    storage: tuple[int, ...]    # the row-major storage shape (SPEC section 5)
    modes: tuple[Modes, ...]    # per logical dimension, as `dim_modes`

    @property
    def elements(self) -> int:
        """Storage elements, padding included."""
        return prod(self.storage)

    def layout(self, offset: int = 0) -> Layout:
        """The format as a layout: logical coordinates to storage offsets."""
        return _layout(self, offset)


def stored(fmt: object, shape: Sequence[int], dtype: object, buffer: str | None = None,
           c0: int | None = None) -> Stored:
    """How a tensor of logical `shape` and `dtype` is stored in format `fmt` in `buffer` (the
    buffer must accept the format: APK510); `c0` overrides the C0 its fractals use."""
    return _stored(lookup(fmt).name, tuple(shape), dtype, buffer, c0)


@lru_cache(maxsize=1024)
def _stored(name: str, shape: tuple[int, ...], dtype: object, buffer: str | None,
            c0: int | None) -> Stored:
    f = lookup(name)
    if buffer is not None:
        check_buffer(f, buffer)
    c = c0_for(dtype, buffer_c0(f, buffer, c0))
    p = make_plan(f, check_shape(f, shape), c)
    modes = tuple(d.modes if len(d.modes) > 1 else ((d.size, d.modes[0][1]),) for d in p.dims)
    return Stored(f.name, p.shape, c, tuple(d.padded for d in p.dims), p.storage, modes)


# Tiles of a loop share a few shapes and layouts are immutable, so each is made once.
@lru_cache(maxsize=1024)
def _layout(s: Stored, offset: int) -> Layout:
    if s.format == "ND":
        return Layout.row_major(s.shape, offset)
    return Layout.from_modes(s.shape, s.modes, offset)
