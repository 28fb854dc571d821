"""Ascend data formats: the registry, storage shapes, formats as nested layouts, and `convert`.

A format maps a *logical* tensor (ND matrices with optional batch dims, or named conv axes) onto a
row-major *storage* array.  Every format here is described declaratively by which logical axes it
cuts into blocks (an outer block count and an inner block) and in which order the whole axes and
the block parts appear in storage.  From that one description follow the storage shape, the
nested `(count, stride)` modes of each logical dimension (the format as a layout), and a
copy-once conversion that writes through strided views instead of padding and transposing.

Pure NumPy; the rest of the tensor model builds on it, not the other way round.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from itertools import product
from types import MappingProxyType

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import ApdslNameError, FormatError
from .dtypes import DType
from .dtypes import dtype as resolve_dtype
from .layout import Dim, Layout

MATRIX, CONV4, CONV5 = "matrix", "conv4", "conv5"
FRACTAL_ROWS = 16  # the "16" side of every fractal (M0, N0 of the cube unit)
FRACTAL_BYTES = 32  # C0 spans 32 bytes whatever the dtype

NKI_BUFFERS = ("sbuf", "psum", "hbm", "private_hbm", "shared_hbm")
ASCEND_BUFFERS = ("gm", "l1", "l0a", "l0b", "l0c", "ub")
ALL_BUFFERS = NKI_BUFFERS + ASCEND_BUFFERS

Modes = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Format:
    """One data format.

    `axes` are the logical axes (None: any rank, as ND); matrix formats also accept leading batch
    dims (`batched`).  `storage` lists storage axes outermost first: `"X"` is logical axis X
    whole, `"X1"` its block count and `"X0"` its inner block, whose size `blocks` gives as 16 or
    "C0".  `aligned` axes are kept whole but padded to a multiple of C0.  The first `merge`
    storage axes are flattened into one in the published storage shape (FRACTAL_Z's C1*H*W).
    """

    name: str
    family: str
    axes: tuple[str, ...] | None
    storage: tuple[str, ...] | None
    buffers: tuple[str, ...]
    blocks: tuple[tuple[str, int | str], ...] = ()
    aligned: tuple[str, ...] = ()
    merge: int = 1
    batched: bool = False
    aliases: tuple[str, ...] = ()
    summary: str = ""

    @property
    def fractal(self) -> bool:
        return bool(self.blocks)

    @property
    def padded(self) -> bool:
        """True when storage may hold padding (blocked or aligned axes)."""
        return bool(self.blocks or self.aligned)

    def block_of(self, axis: str) -> int | str | None:
        return dict(self.blocks).get(axis)


def _f(name: str, family: str, axes: str | None, storage: Sequence[str] | None,
       buffers: tuple[str, ...], **kw) -> Format:
    return Format(name, family, tuple(axes) if axes else None,
                  tuple(storage) if storage is not None else None, buffers, **kw)


_GUB = ("gm", "ub", "l1")
_REGISTRY: tuple[Format, ...] = (
    _f("ND", MATRIX, None, None, ALL_BUFFERS, aliases=("ROW_MAJOR",),
       summary="row-major, any rank"),
    _f("NCHW", CONV4, "NCHW", "NCHW", ASCEND_BUFFERS, summary="batch, channels, height, width"),
    _f("NHWC", CONV4, "NHWC", "NHWC", ASCEND_BUFFERS, summary="channels last"),
    _f("HWCN", CONV4, "HWCN", "HWCN", ASCEND_BUFFERS, summary="weights, batch last"),
    _f("NDHWC", CONV5, "NDHWC", "NDHWC", ASCEND_BUFFERS, summary="5-D, channels last"),
    _f("NCDHW", CONV5, "NCDHW", "NCDHW", ASCEND_BUFFERS, summary="5-D, channels second"),
    _f("ND_ALIGN", MATRIX, "MN", "MN", _GUB, aligned=("N",), batched=True,
       summary="ND with rows padded to 32 bytes"),
    _f("COLUMN_MAJOR", MATRIX, "MN", "NM", _GUB, batched=True,
       summary="consecutive elements of a column are contiguous"),
    _f("NZ", MATRIX, "MN", ("N1", "M1", "M0", "N0"), _GUB + ("l0c",),
       blocks=(("M", FRACTAL_ROWS), ("N", "C0")), batched=True, aliases=("FRACTAL_NZ", "zN"),
       summary="16 x C0 fractals, row-major inside, column-major between"),
    _f("ZZ", MATRIX, "MK", ("M1", "K1", "M0", "K0"), ("gm", "l1", "l0a"),
       blocks=(("M", FRACTAL_ROWS), ("K", "C0")), batched=True, aliases=("FRACTAL_ZZ", "zZ"),
       summary="16 x C0 fractals, row-major inside and between (Mmad A operand)"),
    _f("ZN", MATRIX, "KN", ("K1", "N1", "N0", "K0"), ("gm", "l1", "l0b"),
       blocks=(("K", "C0"), ("N", FRACTAL_ROWS)), batched=True, aliases=("FRACTAL_ZN", "nZ"),
       summary="C0 x 16 fractals, column-major inside, row-major between (Mmad B operand)"),
    _f("NC1HWC0", CONV4, "NCHW", ("N", "C1", "H", "W", "C0"), _GUB, blocks=(("C", "C0"),),
       summary="feature maps with channels cut into C0 blocks"),
    _f("FRACTAL_Z", CONV4, "NCHW", ("C1", "H", "W", "N1", "N0", "C0"), ("gm", "l1", "l0b"),
       blocks=(("N", FRACTAL_ROWS), ("C", "C0")), merge=3,
       summary="convolution weights (C1*H*W, N1, 16, C0)"),
    _f("NDC1HWC0", CONV5, "NDHWC", ("N", "D", "C1", "H", "W", "C0"), _GUB,
       blocks=(("C", "C0"),), summary="5-D feature maps with channels cut into C0 blocks"),
    _f("FRACTAL_Z_3D", CONV5, "NDHWC", ("D", "C1", "H", "W", "N1", "N0", "C0"),
       ("gm", "l1", "l0b"), blocks=(("N", FRACTAL_ROWS), ("C", "C0")), merge=4,
       summary="3-D convolution weights (D*C1*H*W, N1, 16, C0)"),
)

FORMATS: Mapping[str, Format] = MappingProxyType({f.name: f for f in _REGISTRY})
_EXACT: dict[str, str] = {**{f.name: f.name for f in _REGISTRY},
                          **{a: f.name for f in _REGISTRY for a in f.aliases}}
ALL_NAMES: tuple[str, ...] = tuple(_EXACT)


# ---------------------------------------------------------------------------- names and sizes

def canonical(name: object) -> str:
    """The canonical name of a format or alias.  Exact spelling wins (`zN` is NZ, `nZ` is ZN);
    otherwise names match case-insensitively when that picks one format.

    >>> apdsl.formats.canonical("FRACTAL_NZ"), apdsl.formats.canonical("nZ")
    ('NZ', 'ZN')
    """
    if isinstance(name, Format):
        return name.name
    if not isinstance(name, str):
        raise FormatError(f"a format name must be a string, not {type(name).__name__}",
                          code="APK501", help=f"formats are: {', '.join(FORMATS)}", name=name)
    if name in _EXACT:
        return _EXACT[name]
    folded = {_EXACT[n] for n in ALL_NAMES if n.upper() == name.upper()}
    if len(folded) == 1:
        return folded.pop()
    if folded:
        spellings = [n for n in ALL_NAMES if n.upper() == name.upper()]
        raise FormatError(
            f"format name '{name}' is ambiguous: the case of its letters decides the format",
            code="APK502",
            notes=[f"'{s}' means {_EXACT[s]}" for s in spellings],
            help="write the canonical name: " + " or ".join(sorted(folded)), name=name)
    close = get_close_matches(name.upper(), [n.upper() for n in ALL_NAMES], n=3, cutoff=0.5)
    # one suggestion per format, spelled as matched: FRACTALNZ -> 'FRACTAL_NZ' (NZ)
    picks: dict[str, str] = {}
    for c in close:
        same = [n for n in ALL_NAMES if n.upper() == c]
        spelling = next((n for n in same if n == _EXACT[n]), same[0])
        picks.setdefault(_EXACT[spelling], spelling)
    spelled = [repr(s) if s == f else f"{s!r} ({f})" for f, s in picks.items()]
    raise FormatError(f"unknown format '{name}'", code="APK501",
                      help=(f"did you mean {' or '.join(spelled)}?" if spelled
                            else f"formats are: {', '.join(FORMATS)}"), name=name)


def lookup(name: object) -> Format:
    """The `Format` of a name or alias (see `canonical`)."""
    return FORMATS[canonical(name)]


def _bits(value: object) -> int:
    if isinstance(value, (DType, str)):
        return resolve_dtype(value).bits
    try:
        return resolve_dtype(value).bits
    except ApdslNameError as unknown:
        try:  # NumPy dtypes apdsl does not name (float64) still have a width
            npd = np.dtype(value)  # type: ignore[call-overload]
        except TypeError:
            raise unknown from None
        return 4 if npd.name in ("uint4", "float4_e2m1fn") else npd.itemsize * 8


def c0_for(dtype: object, c0: int | None = None) -> int:
    """Elements in a fractal's C0 side: 32 bytes of `dtype` (int4 64, int8 32, 16-bit 16,
    float32 8), unless `c0` is given (16 for graph-level float32, 16 for L0C fractals).

    >>> apdsl.formats.c0_for("float16"), apdsl.formats.c0_for("int8"), apdsl.formats.c0_for("float32")
    (16, 32, 8)
    """
    if c0 is not None:
        return _check_c0(c0)
    return max(1, FRACTAL_BYTES * 8 // _bits(dtype))


def _check_c0(c0: object) -> int:
    if isinstance(c0, bool) or not isinstance(c0, (int, np.integer)) or c0 < 1:
        raise FormatError(f"c0 must be a positive integer, not {c0!r}", code="APK506",
                          help="C0 is 32 bytes / element size (16 for 16-bit types); "
                               "pass c0=16 for L0C or graph-level float32 fractals", c0=c0)
    return int(c0)


def accepts(fmt: object, buffer: str) -> bool:
    """Whether `buffer` may hold a tensor in format `fmt` (SPEC section 5's buffer column)."""
    return _buffer_name(buffer) in lookup(fmt).buffers


def check_buffer(fmt: object, buffer: str) -> None:
    """Raise APK510 when `buffer` cannot hold format `fmt`."""
    f = lookup(fmt)
    if not accepts(f, buffer):
        raise FormatError(f"format {f.name} cannot live in buffer '{buffer}'", code="APK510",
                          notes=[f"{f.name} is accepted in: {', '.join(f.buffers)}"],
                          help=f"declare it in {' or '.join(f.buffers)}, or use another format",
                          format=f.name, buffer=buffer)


def _buffer_name(buffer: str) -> str:
    return str(buffer).lower().removeprefix("nl.").removeprefix("nisa.")


# ---------------------------------------------------------------------------- layouts

@dataclass(frozen=True)
class _Dim:
    size: int      # logical extent
    padded: int    # extent in storage, padding included
    modes: Modes   # inner first, counts padded: (block, stride), (blocks, stride) or (padded, s)


@dataclass(frozen=True)
class _Plan:
    shape: tuple[int, ...]
    storage: tuple[int, ...]  # the published (merged) storage shape
    dims: tuple[_Dim, ...]

    @property
    def plain(self) -> bool:
        """Storage is a strided view of the logical array: no blocks, no padding."""
        return all(len(d.modes) == 1 and d.size == d.padded for d in self.dims)


def _axis_names(fmt: Format, rank: int) -> tuple[str, ...]:
    if fmt.axes is None:
        return tuple(f"#{i}" for i in range(rank))
    return tuple(f"#{i}" for i in range(rank - len(fmt.axes))) + fmt.axes


def _check_shape(fmt: Format, shape: object, role: str = "logical shape") -> tuple[int, ...]:
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
    want = _rank_text(fmt)
    if fmt.axes is not None and (len(dims) < len(fmt.axes) if fmt.batched
                                 else len(dims) != len(fmt.axes)):
        raise FormatError(f"{fmt.name} needs {want}, but the {role} {dims} has rank {len(dims)}",
                          code="APK504", notes=[f"{fmt.name} logical axes: {_axes_text(fmt)}"],
                          help=None if fmt.batched else
                          f"give all {len(fmt.axes)} axes, using 1 for a missing one",
                          format=fmt.name, shape=dims)
    return dims


def _rank_text(fmt: Format) -> str:
    if fmt.axes is None:
        return "any rank"
    n = len(fmt.axes)
    return f"rank {n} or more" if fmt.batched else f"rank {n}"


def _axes_text(fmt: Format) -> str:
    if fmt.axes is None:
        return "any"
    return "(" + ("..., " if fmt.batched else "") + ", ".join(fmt.axes) + ")"


def _plan(fmt: Format, shape: tuple[int, ...], c0: int) -> _Plan:
    names = _axis_names(fmt, len(shape))
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
    dims = tuple(_Dim(size[a], padded[a],
                      ((block[a], int(stride[a + "0"])), (padded[a] // block[a],
                                                          int(stride[a + "1"])))
                      if a in block else ((padded[a], int(stride[a])),)) for a in names)
    storage = tuple(int(e) for e in extent)
    if fmt.merge > 1:
        lead, cut = len(batch), len(batch) + fmt.merge
        storage = storage[:lead] + (int(np.prod(storage[lead:cut])),) + storage[cut:]
    return _Plan(shape, storage, dims)


def storage_shape(fmt: object, logical_shape: Sequence[int], dtype: object,
                  c0: int | None = None) -> tuple[int, ...]:
    """The row-major storage shape holding `logical_shape` in format `fmt` (SPEC section 5).

    >>> apdsl.formats.storage_shape("NZ", (20, 40), "float16")
    (3, 2, 16, 16)
    """
    f = lookup(fmt)
    return _plan(f, _check_shape(f, logical_shape), c0_for(dtype, c0)).storage


def padded_shape(fmt: object, logical_shape: Sequence[int], dtype: object,
                 c0: int | None = None) -> tuple[int, ...]:
    """The logical shape rounded up to whole fractals (and aligned rows) of format `fmt`.

    >>> apdsl.formats.padded_shape("NZ", (20, 40), "float16")
    (32, 48)
    """
    f = lookup(fmt)
    return tuple(d.padded for d in _plan(f, _check_shape(f, logical_shape),
                                          c0_for(dtype, c0)).dims)


def block_shape(fmt: object, rank: int, dtype: object, c0: int | None = None) -> tuple[int, ...]:
    """Per logical dimension, the fractal block it is cut into (1 for an uncut dimension).

    >>> apdsl.formats.block_shape("NZ", 2, "float16")
    (16, 16)
    """
    f = lookup(fmt)
    names = _axis_names(f, len(_check_shape(f, (1,) * rank)))
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
    plan = _plan(f, _check_shape(f, logical_shape), c0_for(dtype, c0))
    return tuple(d.modes if len(d.modes) > 1 else ((d.size, d.modes[0][1]),) for d in plan.dims)


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
    return _logical_from_storage(f, tuple(storage), c0_for(dtype, c0), str(dtype))


def _logical_from_storage(fmt: Format, storage: tuple[int, ...], c0: int,
                          dname: str) -> tuple[int, ...]:
    if fmt.merge > 1:
        raise FormatError(f"a {fmt.name} array {storage} does not record its logical shape",
                          code="APK509",
                          notes=[f"{fmt.name} storage {_storage_text(fmt)} merges axes, so "
                                 "they cannot be recovered from the array"],
                          help=f"pass shape=, the logical {_axes_text(fmt)} shape",
                          format=fmt.name, storage=storage)
    order = fmt.storage or ()
    lead = len(storage) - len(order) if fmt.axes is not None else 0
    if lead < 0 or (lead and not fmt.batched):
        raise FormatError(f"a {fmt.name} array has {len(order)} storage axes "
                          f"{_storage_text(fmt)}, but this one is {storage}",
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
                notes=[f"{fmt.name} storage axes: {_storage_text(fmt)}, C0 = {c0}"],
                help="pass c0= when the fractals use another C0 (16 in L0C)",
                format=fmt.name, storage=storage, c0=c0)
    return storage[:lead] + tuple(got[a + "1"] * block[a] if a in block else got[a]
                                  for a in fmt.axes)


def _storage_text(fmt: Format) -> str:
    order = list(fmt.storage or ("...",))
    if fmt.merge > 1:
        order = ["*".join(order[:fmt.merge])] + order[fmt.merge:]
    return "(" + ("..., " if fmt.batched else "") + ", ".join(order) + ")"


# ---------------------------------------------------------------------------- conversion

def _strided(base: np.ndarray, shape: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """`as_strided` for every dtype: it goes through the array interface, which cannot spell
    ml_dtypes types such as float8, so stride raw bytes and view them back."""
    raw = base.view(np.dtype((np.void, base.itemsize)))
    return as_strided(raw, tuple(shape), tuple(strides)).view(base.dtype)


def _split_view(storage: np.ndarray, plan: _Plan) -> np.ndarray:
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


def _pieces(plan: _Plan) -> Iterator[tuple[tuple[slice, ...], tuple, list[tuple[int, ...]]]]:
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


def _zero_padding(split: np.ndarray, plan: _Plan) -> None:
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


def _pack(logical: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
    split = _split_view(out, plan)
    for slices, index, parts in _pieces(plan):
        np.copyto(split[index], _split_axes(logical[slices], parts))
    _zero_padding(split, plan)


def _unpack(storage: np.ndarray, plan: _Plan, into: np.ndarray) -> None:
    split = _split_view(storage, plan)
    for slices, index, parts in _pieces(plan):
        np.copyto(_split_axes(into[slices], parts), split[index])


def _permutation(src: Format, dst: Format, rank: int) -> tuple[int, ...]:
    """For each logical axis of `dst`, the logical axis of `src` it is."""
    if src.family == MATRIX:  # matrix formats name their last two axes positionally
        return tuple(range(rank))
    names = src.axes or ()
    return tuple(names.index(a) for a in dst.axes or ())


def _family_text(fam: str) -> str:
    return ", ".join(f.name for f in _REGISTRY if f.family == fam)


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
            notes=[f"{sf.name} logical axes: {_axes_text(sf)}",
                   f"{df.name} logical axes: {_axes_text(df)}",
                   f"{sf.name} converts to: {_family_text(sf.family)}"],
            help=("ND has no named axes: call its 4-D/5-D data NCHW, NHWC, HWCN, NDHWC or NCDHW"
                  if "ND" in (sf.name, df.name) else None),
            src=sf.name, dst=df.name)
    c0v = c0_for(a.dtype, c0)
    dname = a.dtype.name
    if shape is None:
        lshape = _logical_from_storage(sf, a.shape, c0v, dname)
        sp = _plan(sf, _check_shape(sf, lshape, "logical shape of the array"), c0v)
        if sp.storage != a.shape:  # an aligned axis that is not a multiple of C0
            raise FormatError(
                f"the {sf.name} array {a.shape} is not whole: {sf.name} of {lshape} {dname} "
                f"is stored as {sp.storage}", code="APK507",
                notes=[f"{sf.name} storage axes: {_storage_text(sf)}, C0 = {c0v}"],
                help="pass shape= (the logical shape) or the c0= it was made with",
                format=sf.name, storage=a.shape)
    else:
        lshape = _check_shape(sf, shape, "shape=")
        sp = _plan(sf, lshape, c0v)
        if sp.storage != a.shape:
            raise FormatError(
                f"shape={lshape} does not fit the {sf.name} array {a.shape}: {sf.name} of "
                f"{lshape} {dname} is stored as {sp.storage}", code="APK508",
                notes=[f"shape= is the source's logical shape, axes {_axes_text(sf)}",
                       f"{sf.name} storage axes: {_storage_text(sf)}, C0 = {c0v}"],
                help="pass the logical shape the array was converted from",
                src=sf.name, dst=df.name, shape=lshape, storage=a.shape)
    perm = _permutation(sf, df, len(lshape))
    dp = _plan(df, _check_shape(df, tuple(lshape[p] for p in perm)), c0v)
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
