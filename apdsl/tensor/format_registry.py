"""Ascend data formats: the registry of names, logical axes, storage order and the buffers
that may hold each format, and the C0 a fractal uses (32 bytes of the dtype; 16 in L0C).

A format maps a *logical* tensor (ND matrices with optional batch dims, or named conv axes) onto a
row-major *storage* array.  Every format here is described declaratively by which logical axes it
cuts into blocks (an outer block count and an inner block) and in which order the whole axes and
the block parts appear in storage; `format_plan` derives storage shapes and layouts from that,
`format_convert` converts arrays between formats.  `formats` is where the rest of apdsl reads
all three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from difflib import get_close_matches
from types import MappingProxyType

import numpy as np

from ..errors import ApdslNameError, FormatError
from ..records import record
from .dtypes import DType
from .dtypes import dtype as resolve_dtype

MATRIX, CONV4, CONV5 = "matrix", "conv4", "conv5"
FRACTAL_ROWS = 16  # the "16" side of every fractal (M0, N0 of the cube unit)
FRACTAL_BYTES = 32  # C0 spans 32 bytes whatever the dtype

NKI_BUFFERS = ("sbuf", "psum", "hbm", "private_hbm", "shared_hbm")
ASCEND_BUFFERS = ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt")
ALL_BUFFERS = NKI_BUFFERS + ASCEND_BUFFERS
# the buffers that hold images and matrices in any axis order: not the bias table (a row)
CONV_BUFFERS = tuple(b for b in ASCEND_BUFFERS if b != "bt")

Modes = tuple[tuple[int, int], ...]
L0C_FRACTAL = 16  # L0C holds 16 x 16 fractals whatever the accumulator dtype



@record
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
    _f("NCHW", CONV4, "NCHW", "NCHW", CONV_BUFFERS, summary="batch, channels, height, width"),
    _f("NHWC", CONV4, "NHWC", "NHWC", CONV_BUFFERS, summary="channels last"),
    _f("HWCN", CONV4, "HWCN", "HWCN", CONV_BUFFERS, summary="weights, batch last"),
    _f("NDHWC", CONV5, "NDHWC", "NDHWC", CONV_BUFFERS, summary="5-D, channels last"),
    _f("NCDHW", CONV5, "NCDHW", "NCDHW", CONV_BUFFERS, summary="5-D, channels second"),
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


def rank_text(fmt: Format) -> str:
    if fmt.axes is None:
        return "any rank"
    n = len(fmt.axes)
    return f"rank {n} or more" if fmt.batched else f"rank {n}"


def axes_text(fmt: Format) -> str:
    if fmt.axes is None:
        return "any"
    return "(" + ("..., " if fmt.batched else "") + ", ".join(fmt.axes) + ")"



def storage_text(fmt: Format) -> str:
    order = list(fmt.storage or ("...",))
    if fmt.merge > 1:
        order = ["*".join(order[:fmt.merge])] + order[fmt.merge:]
    return "(" + ("..., " if fmt.batched else "") + ", ".join(order) + ")"



def family_text(fam: str) -> str:
    return ", ".join(f.name for f in _REGISTRY if f.family == fam)




def buffer_c0(fmt: object, buffer: str | None, c0: int | None = None) -> int | None:
    """The C0 a tensor of format `fmt` in `buffer` is made with: `c0` when given, 16 for NZ in
    L0C (16 x 16 fractals whatever the accumulator dtype), else None (32 bytes of its dtype,
    `c0_for`)."""
    if c0 is not None:
        return c0
    if buffer is not None and _buffer_name(buffer) == "l0c" and canonical(fmt) == "NZ":
        return L0C_FRACTAL
    return None
