"""Lowering: an instruction operand (a view) becomes the hardware access pattern(s).

The pattern of each layout piece is coalesced (adjacent `[stride, count]` pairs merged where
`outer_stride == inner_stride * inner_count`, count-1 pairs dropped).  On SBUF/PSUM the partition
pair comes first, is never merged and is kept even with count 1; the free entries are limited by
the target.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import TargetError
from ..records import record, replace
from . import targets
from .layout import coalesce, is_static
from .view import Tensor


def _text(x: Any) -> Any:
    return x if is_static(x) else getattr(x, "name", str(x))


@record
class AccessPattern:
    """One lowered access pattern of an instruction operand (SPEC section 8): the tensor, buffer,
    dtype, format, offset and `[stride, count]` pattern, plus any runtime index.

    >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
    >>> ap = apdsl.lower(t.slice(1, 8, 24))[0]
    >>> ap.buffer, ap.offset, ap.pattern
    ('sbuf', 8, [[64, 128], [1, 16]])
    """
    tensor: str
    buffer: str
    dtype: str
    format: str
    offset: Any
    pattern: list[list[Any]]
    scalar_offset: str | None = None
    vector_offset: str | None = None
    indirect_dim: int | None = None
    indirect_scale: int | None = None
    piece: tuple[int, int] | None = None
    box: tuple[tuple[int, ...], tuple[int, ...]] | None = None  # the logical box it covers

    @property
    def free_entries(self) -> int:
        return len(self.pattern) - (1 if targets.is_onchip(self.buffer) else 0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tensor": self.tensor, "buffer": self.buffer, "dtype": self.dtype,
            "format": self.format, "offset": _text(self.offset),
            "pattern": [[_text(s), _text(c)] for s, c in self.pattern]}
        if self.scalar_offset is not None or self.vector_offset is not None:
            out["scalar_offset"] = self.scalar_offset
            out["vector_offset"] = self.vector_offset
            out["indirect_dim"] = self.indirect_dim
            out["indirect_scale"] = self.indirect_scale
        return out

    def _repr_html_(self) -> str:
        """A notebook's view of the pattern: one row of its facts."""
        from html import escape
        cells = [self.tensor, self.buffer, self.dtype, self.format, _text(self.offset),
                 str([[_text(s), _text(c)] for s, c in self.pattern])]
        head = "".join(f"<th>{h}</th>" for h in ("tensor", "buffer", "dtype", "format",
                                                  "offset", "pattern"))
        row = "".join(f"<td><code>{escape(str(c))}</code></td>" for c in cells)
        return f"<table><tr>{head}</tr><tr>{row}</tr></table>"

    def describe(self) -> str:
        extra = ""
        if self.scalar_offset is not None:
            extra = f" + {self.scalar_offset}*{self.indirect_scale}"
        elif self.vector_offset is not None:
            extra = f" + {self.vector_offset}[p]*{self.indirect_scale}"
        pat = [[_text(s), _text(c)] for s, c in self.pattern]
        return f"{self.tensor}@{self.buffer} {self.dtype} offset={_text(self.offset)}{extra} {pat}"


def lower(t: Tensor, *, check_entries: bool = True, role: str = "operand",
          label: str = "") -> list[AccessPattern]:
    """The access patterns of view `t` (one per piece, in logical order).  `label` names the
    instruction the operand belongs to, so an error says which (`dma_copy 'x': dst ...`).

    >>> x = apdsl.ndarray((2, 3, 4), "float32", "hbm")
    >>> [(ap.offset, ap.pattern) for ap in apdsl.lower(x.rearrange("b c h -> (b h) c"))]
    [(0, [[12, 2], [1, 4], [4, 3]])]
    """
    onchip = t.onchip
    if t.layout.static:
        pieces = [(p.pattern, p.offset, (p.start, p.shape)) for p in t.layout.pieces()]
    else:
        pieces = [(t.layout.pattern(), t.layout.base, None)]
    dyn = t.dynamic
    scalar = vector = None
    indirect_dim = scale = None
    if dyn is not None:
        scale = dyn.scale
        indirect_dim = dyn.indirect_dim if dyn.indirect_dim is not None else (
            1 if dyn.kind == "ti" else 0)
        if dyn.kind == "scalar":
            scalar = dyn.index_name
        else:
            vector = dyn.index_name
    out = []
    n = len(pieces)
    for i, (pattern, offset, box) in enumerate(pieces):
        pattern = [list(p) for p in pattern]
        if dyn is not None and dyn.kind == "vector":
            pattern[0][0] = dyn.scale  # the leading stride is the index scale on hardware
        # The partition entry (and the entry a vector index drives) is never merged.
        keep_first = onchip or (dyn is not None and dyn.kind == "vector")
        pat = coalesce(pattern, keep_first=keep_first) if t.layout.static else pattern
        ap = AccessPattern(t.name, t.buffer, t.dtype.name, t.format, offset, pat, scalar,
                           vector, indirect_dim, scale, (i, n) if n > 1 else None, box)
        if check_entries and onchip:
            limit = targets.target_for(t.buffer).max_free_entries
            if ap.free_entries > limit:
                tname = targets.target_for(t.buffer).name
                raise TargetError(
                    f"{label + ': ' if label else ''}{role} {t.name} needs {ap.free_entries} "
                    "free access-pattern entries; "
                    f"{tname} allows {limit}", code="APK304",
                    notes=[f"lowered pattern = {pat}", f"view shape = {t.shape}",
                           "the Trainium architecture guide: an engine instruction's src/dst "
                           "\"can support up to four-dimensional tensorized access pattern "
                           "with a stride in each dimension within each partition\"; the "
                           "current API issues an instruction as written (the legacy "
                           "compiler's split: `apdsl explain APK304`)"],
                    help="merge contiguous dimensions, or split the instruction into a loop "
                    "over an outer dimension", entries=ap.free_entries, limit=limit)
        out.append(ap)
    return out


# -- cutting an instruction into pieces -----------------------------------------------------------

# Instructions whose operands correspond element for element in logical row-major order.
ELEMENTWISE = frozenset({"dma_copy", "tensor_copy"})
# Matrix instructions: each operand's (row axis, column axis).
MATRIX_AXES: dict[str, dict[str, tuple[str, str]]] = {
    "nc_matmul": {"stationary": ("K", "M"), "moving": ("K", "N"), "dst": ("M", "N")},
    "mmad": {"a": ("M", "K"), "b": ("K", "N"), "dst": ("M", "N")},
}


def cut(op: str, operands: dict[str, Tensor], lowered: dict[str, list[AccessPattern]], *,
        label: str = "") -> list[dict[str, AccessPattern]]:
    """The instruction as pieces in which every operand is one access pattern, each piece a
    `{role: AccessPattern}` with `piece=(i, n)` when n > 1 (SPEC section 8).  A refusal
    (APK320) is named by `label` (the instruction and its `name=`; `op` when not given)."""
    from . import cutting
    where = label or op
    if all(len(aps) == 1 for aps in lowered.values()):
        return [{role: aps[0] for role, aps in lowered.items()}]
    if len(operands) == 1:
        ((role, aps),) = lowered.items()
        return [{role: ap} for ap in aps]
    if any(t.size == 0 for t in operands.values()):
        return [{role: aps[0] for role, aps in lowered.items()}]
    matrix = op in MATRIX_AXES
    g = 1 if matrix else _granule(list(operands.values()))
    ops = [_cut_operand(where, role, t, lowered[role], g) for role, t in operands.items()]
    if matrix:
        ops = [_as_matrix(o, _matrix_rows(op, o.role, operands)) for o in ops]

    def make(o: cutting.Operand, offset: int, pattern: list[list[int]]) -> AccessPattern:
        return replace(o.aps[0], offset=offset, pattern=pattern, piece=None, box=None)

    if matrix:
        pieces = cutting.cut_axes(where, ops, MATRIX_AXES[op], make)
    elif op in ELEMENTWISE or len({t.size for t in operands.values()}) == 1:
        pieces = cutting.cut_flat(where, ops, make)
    else:
        raise cutting.refuse(where, next(iter(operands)), "does not correspond element for "
                             "element to the other operands")
    n = len(pieces)
    if n == 1:
        return [{role: replace(ap, piece=None) for role, ap in pieces[0].items()}]
    return [{role: replace(ap, piece=(i, n)) for role, ap in p.items()}
            for i, p in enumerate(pieces)]


def _matrix_rows(op: str, role: str, operands: dict[str, Tensor]) -> int:
    """An operand's rows as a matrix: its partitions (dim 0); in nc_matmul's double_row mode
    (stationary and moving (P, 2, ...), K = P * 2) the first two dims."""
    t = operands[role]
    if op == "nc_matmul" and role in ("stationary", "moving") and t.ndim >= 3 \
            and t.shape[1] == 2 and "dst" in operands:
        cols = prod(t.shape[2:])
        dst = operands["dst"]
        if role == "stationary" and cols == dst.shape[0] or role == "moving" and \
                cols == prod(dst.shape[1:]) and prod(operands["stationary"].shape[2:]) == \
                dst.shape[0] and operands["stationary"].shape[1] == 2:
            return t.shape[0] * 2
    return t.shape[0]


def _as_matrix(o: Any, rows: int) -> Any:
    from ..records import replace as rep
    return rep(o, offsets=o.offsets.reshape(rows, -1), piece_of=o.piece_of.reshape(rows, -1))


def _granule(tensors: list[Tensor]) -> int:
    """The largest g such that, in every operand, each run of g consecutive elements of the
    last dimension starting at a multiple of g is one run of its stride inside one of its
    pieces (1 when some last dimension is nested or irregular)."""
    from math import gcd
    g = 0
    for t in tensors:
        if not t.layout.static or t.ndim == 0:
            return 1
        last = t.layout.dims[-1]
        if len(last.modes) != 1 or last.start or last.step != 1:
            return 1
        g = gcd(g, last.size)
        for p in t.layout.pieces():
            g = gcd(gcd(g, p.start[-1]), p.shape[-1])
    return max(g, 1)


def _cut_operand(op: str, role: str, t: Tensor, aps: list[AccessPattern], g: int = 1) -> Any:
    from . import cutting
    if not t.layout.static:
        raise cutting.refuse(op, role, f"{t.name} has runtime strides or counts (registers), "
                             "so its elements' places are not known before it executes")
    layout, inner = t.layout, None
    if g > 1:  # block starts: the last dimension stepped by g
        k = layout.ndim - 1
        inner = (layout.dims[k].modes[0][1], g)
        layout = layout.slice(k, 0, layout.dims[k].size, g)
    offsets = np.asarray(layout.offsets(), dtype=np.int64)
    piece_of = np.zeros(layout.shape, dtype=np.int64)
    sizes = []
    for i, p in enumerate(t.layout.pieces()):
        start, shape = list(p.start), list(p.shape)
        start[-1], shape[-1] = start[-1] // g, shape[-1] // g
        piece_of[tuple(slice(s, s + n) for s, n in zip(start, shape))] = i
        sizes.append(prod(shape))
    pstride = max_free = None
    if t.onchip:
        storage = t.storage
        pstride = (storage.nbytes // max(storage.shape[0], 1)) * 8 // t.dtype.bits
        max_free = targets.target_for(t.buffer).max_free_entries
    pinned = t.dynamic is not None and t.dynamic.kind in ("vector", "ti")
    return cutting.Operand(role, offsets, piece_of, tuple(sizes), pstride, max_free, pinned,
                           tuple(aps), inner)
