"""The access picture of a view: which storage elements it touches, and in which order.

`Picture.of(t)` computes, once, everything `apdsl show` and the REPL's `:show` draw: the storage
of `t` laid out as a 2-D grid of cells (`Geometry`), and per cell the earliest access that
touches it and how many accesses touch it (`Cells`).  The renderers (`picture_text`,
`picture_svg`) only read a picture; `Picture.cells(max_rows, max_cols)` gives the grid
summarised into blocks when the storage is too large to draw element by element.

The grid is the *storage*, not the view: partitions are rows for on-chip tensors, leading
dimensions fold into rows, and a fractal-format tensor is drawn as its fractal storage, with the
fractals of one storage band side by side so fractal borders can be drawn.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslError
from ..records import record, replace
from ..tensor.layout import Layout, is_static
from ..tensor.view import Tensor

__all__ = ["Geometry", "Cells", "Picture", "geometry", "pattern_text"]


@record
class Geometry:
    """How the storage's elements are placed on a grid of `rows` x `cols` cells."""

    rows: int
    cols: int
    storage_shape: tuple[int, ...]
    row_axis: str  # what one grid row is ("partition", "row", ...)
    col_axis: str
    fractal: tuple[int, int] | None = None  # (rows, cols) of one fractal, drawn as borders
    per_band: int = 1  # fractals side by side in one band (fractal storage only)
    # a window of the grid (`Picture.window`): where it starts and the whole grid's size
    row_origin: int = 0
    col_origin: int = 0
    full: tuple[int, int] | None = None

    @property
    def windowed(self) -> bool:
        return self.full is not None and self.full != (self.rows, self.cols)

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    def grid(self, flat: np.ndarray) -> np.ndarray:
        """Per storage element values (storage order) -> the (rows, cols) grid."""
        if self.fractal is None:
            return flat.reshape(self.rows, self.cols)
        r0, c0 = self.fractal
        lead = self.rows // r0
        # storage (lead, per_band, r0, c0): fractal j of band i sits at block column j
        return (flat.reshape(lead, self.per_band, r0, c0).transpose(0, 2, 1, 3)
                .reshape(self.rows, self.cols))


def _format_storage_shape(t: Tensor) -> tuple[int, ...]:
    """The row-major storage shape of a tensor declared `as FORMAT` (its `storage.shape` is the
    logical shape), from the C0 its storage was made with."""
    from ..tensor import formats
    st = t.storage
    try:
        return formats.stored(st.format, st.shape, st.dtype, st.buffer, st.c0).storage
    except ApdslError:
        return (st.elements_total,)


def geometry(t: Tensor) -> Geometry:
    """The grid the storage of `t` is drawn on."""
    st = t.storage
    if st.format != "ND":
        from ..tensor import formats
        shape = _format_storage_shape(t)
        fmt = formats.lookup(st.format)
        if len(fmt.blocks) == 2 and len(shape) >= 3:
            r0, c0 = shape[-2], shape[-1]
            per_band = shape[-3]
            lead = prod(shape[:-3])
            return Geometry(lead * r0, per_band * c0, shape, "fractal row", "column",
                            (r0, c0), per_band)
    else:
        shape = tuple(st.shape)
    if len(shape) == 1:
        return Geometry(1, shape[0], shape, "row", "element")
    if t.onchip:
        return Geometry(shape[0], prod(shape[1:]), shape, "partition", "free element")
    return Geometry(prod(shape[:-1]), shape[-1], shape, "row", "column")


@record
class Cells:
    """A grid of cells, each standing for `row_step` x `col_step` storage cells.

    `order` is the earliest access touching a cell (-1: untouched), `count` the number of
    accesses touching it (for a summarised cell, the most any element of its block gets),
    `partial` marks a summarised cell only partly touched.  `fractal` is the fractal
    size in cells when borders fall between cells, else None."""

    order: np.ndarray
    count: np.ndarray
    partial: np.ndarray
    row_start: np.ndarray
    col_start: np.ndarray
    row_step: int
    col_step: int
    fractal: tuple[int, int] | None

    @property
    def shape(self) -> tuple[int, int]:
        return self.order.shape  # type: ignore[return-value]

    @property
    def summarised(self) -> bool:
        return self.row_step > 1 or self.col_step > 1

    @property
    def touched(self) -> int:
        return int(np.count_nonzero(self.order >= 0))


def _factor(n: int, limit: int, side: int | None) -> int:
    """How many grid cells one summarised cell covers along an axis of `n` cells.  With a
    fractal side, the factor divides it or is a multiple of it, so blocks never straddle a
    fractal border."""
    need = -(-n // limit)
    if need <= 1:
        return 1
    if side:
        if need <= side:
            return next(f for f in range(need, side + 1) if side % f == 0)
        return -(-need // side) * side
    return need


def _blocks(a: np.ndarray, fr: int, fc: int, fill: int) -> np.ndarray:
    rows, cols = a.shape
    pr, pc = -(-rows // fr) * fr, -(-cols // fc) * fc
    padded = np.full((pr, pc), fill, dtype=a.dtype)
    padded[:rows, :cols] = a
    return padded.reshape(pr // fr, fr, pc // fc, fc)


@record
class Picture:
    """What view `t` touches in its storage (see the module docstring)."""

    title: str
    view: str  # "name: dtype[shape] @ buffer"
    storage: str  # the storage declaration
    pattern: str
    offset: str
    geometry: Geometry
    order: np.ndarray  # per storage element (grid shape): earliest access, -1 untouched
    count: np.ndarray  # per storage element (grid shape): accesses
    accesses: int  # elements of the view
    drawn: int  # accesses drawn (fewer when runtime indices are unknown)
    outside: int  # accesses that fall outside the storage
    notes: tuple[str, ...]
    # (distinct, max_count, elements) of the whole grid, kept when a window is drawn
    totals: tuple[int, int, int] | None = None

    @property
    def distinct(self) -> int:
        return self.totals[0] if self.totals else int(np.count_nonzero(self.count))

    @property
    def distinct_all(self) -> int:
        return self.distinct

    @property
    def max_count(self) -> int:
        if self.totals:
            return self.totals[1]
        return int(self.count.max()) if self.count.size else 0

    @property
    def elements(self) -> int:
        """Storage elements of the whole grid (a window draws only part of them)."""
        return self.totals[2] if self.totals else self.geometry.elements

    @staticmethod
    def of(t: Tensor, title: str = "") -> Picture:
        tile_note = None
        if t.origin_shape is not None and t.origin_shape != t.shape:
            # a TLA tail tile: instructions move its valid extent, so that is what is drawn
            from ..tensor.tla import valid_view
            tile_note = (f"a tile of shape {tuple(t.shape)} at coord {t.coord}: its valid "
                         f"extent {tuple(t.origin_shape)} is drawn")
            t = valid_view(t)
        geo = geometry(t)
        offsets, notes = _accesses(t)
        if tile_note:
            notes.insert(0, tile_note)
        total = geo.elements
        order = np.full(total, -1, dtype=np.int64)
        count = np.zeros(total, dtype=np.int64)
        drawn = outside = 0
        if offsets is not None:
            drawn = int(offsets.size)
            native, which = _native(offsets, t.dtype.bits, t.storage.dtype.bits)
            inside = (native >= 0) & (native < total)
            outside = int(np.unique(which[~inside]).size) if not inside.all() else 0
            native, which = native[inside], which[inside]
            if native.size:
                count = np.bincount(native, minlength=total).astype(np.int64)
                if count.max() <= 1:  # each element touched once: no sort needed
                    order[native] = which
                else:
                    cells, first = np.unique(native, return_index=True)
                    order[cells] = which[first]
        if outside:
            notes.append(f"{outside} access{'es' if outside != 1 else ''} fall outside the "
                         f"storage of {total} elements (an instruction would reject this view)")
        return Picture(title, _describe(t), t.storage.describe() + _format_note(t, geo),
                       pattern_text(t), _value_text(t.offset), geo, geo.grid(order),
                       geo.grid(count), t.size or 0, drawn, outside, tuple(notes))

    def cells(self, max_rows: int, max_cols: int) -> Cells:
        """The grid, summarised into blocks when it exceeds `max_rows` x `max_cols` cells."""
        geo = self.geometry
        side_r, side_c = geo.fractal or (None, None)
        fr = _factor(geo.rows, max_rows, side_r)
        fc = _factor(geo.cols, max_cols, side_c)
        r0, c0 = geo.row_origin, geo.col_origin
        if fr == 1 and fc == 1:
            return Cells(self.order, self.count, np.zeros(self.order.shape, bool),
                         r0 + np.arange(geo.rows), c0 + np.arange(geo.cols), 1, 1, geo.fractal)
        big = np.iinfo(np.int64).max
        first = _blocks(np.where(self.order < 0, big, self.order), fr, fc, big).min(axis=(1, 3))
        order = np.where(first == big, -1, first)
        # a block's count is the most any of its elements is touched, so a count above 1
        # still means "read more than once" (a broadcast, an overlap), whatever the zoom
        count = _blocks(self.count, fr, fc, 0).max(axis=(1, 3))
        touched = _blocks((self.order >= 0).astype(np.int64), fr, fc, 0).sum(axis=(1, 3))
        real = _blocks(np.ones(self.order.shape, np.int64), fr, fc, 0).sum(axis=(1, 3))
        partial = (touched > 0) & (touched < real)
        fractal = None
        if geo.fractal is not None and side_r % fr == 0 and side_c % fc == 0:
            fractal = (side_r // fr, side_c // fc)
        return Cells(order, count, partial, r0 + np.arange(order.shape[0]) * fr,
                     c0 + np.arange(order.shape[1]) * fc, fr, fc, fractal)

    def window(self, rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None
               ) -> Picture:
        """The part of the grid in rows [a, b) and columns [c, d) (None: all of that axis).
        With fractal storage the window grows outward to whole fractals, so borders stay
        where they are.  The facts (accesses, distinct elements) stay those of the whole view;
        a note says how much of what the view touches lies outside the window."""
        geo = self.geometry
        (a, b), (c, d) = rows or (0, geo.rows), cols or (0, geo.cols)
        a, b = max(a, 0), min(b, geo.rows)
        c, d = max(c, 0), min(d, geo.cols)
        if a >= b or c >= d:
            raise ValueError(f"the window is empty: the grid has {geo.rows} rows and "
                             f"{geo.cols} columns")
        if geo.fractal is not None:
            fr, fc = geo.fractal
            a, b = a // fr * fr, min(-(-b // fr) * fr, geo.rows)
            c, d = c // fc * fc, min(-(-d // fc) * fc, geo.cols)
        if (a, b, c, d) == (0, geo.rows, 0, geo.cols):
            return self
        full = geo.full or (geo.rows, geo.cols)
        new_geo = replace(geo, rows=b - a, cols=d - c, row_origin=geo.row_origin + a,
                          col_origin=geo.col_origin + c, full=full)
        order, count = self.order[a:b, c:d], self.count[a:b, c:d]
        outside = self.distinct_all - int(np.count_nonzero(count))
        ra, ca = new_geo.row_origin, new_geo.col_origin
        note = (f"drawn: {new_geo.row_axis}s {ra}-{ra + b - a - 1} and {new_geo.col_axis}s "
                f"{ca}-{ca + d - c - 1} of {full[0]} x {full[1]}; "
                + (f"{outside} touched element{'s' if outside != 1 else ''} lie outside"
                   if outside else "every touched element is inside"))
        return replace(self, geometry=new_geo, order=order, count=count,
                       notes=(*self.notes, note), totals=self.totals or (
                           self.distinct, self.max_count, geo.elements))

    def zoomed(self, margin: int = 0) -> Picture:
        """The window around every touched element (plus `margin` cells each side)."""
        rows = np.flatnonzero((self.order >= 0).any(axis=1))
        cols = np.flatnonzero((self.order >= 0).any(axis=0))
        if rows.size == 0:
            return self
        return self.window((int(rows[0]) - margin, int(rows[-1]) + 1 + margin),
                           (int(cols[0]) - margin, int(cols[-1]) + 1 + margin))


# -- accesses -----------------------------------------------------------------------------------

def _accesses(t: Tensor) -> tuple[np.ndarray | None, list[str]]:
    """Storage offsets (in elements of the view's dtype) of every access, in logical order,
    and notes on what could not be known.  None when nothing can be drawn."""
    layout, dyn = t.layout, t.dynamic
    if dyn is None and layout.static:
        return np.asarray(layout.offsets()).reshape(-1), []
    try:
        from ..runtime.core.execute import resolve
        offsets = np.asarray(resolve(t, "show", "view").offsets()).reshape(-1)
    except ApdslError as e:
        return _static_part(t, e)
    if dyn is None:
        return offsets, ["register strides, counts or offset drawn with their current values"]
    return offsets, [f"the runtime index {dyn.index_name} is drawn with its current "
                     f"value{'s' if dyn.kind != 'scalar' else ''}"]


def _static_part(t: Tensor, why: ApdslError) -> tuple[np.ndarray | None, list[str]]:
    """What is known before the program runs, when runtime values are not available."""
    layout, dyn = t.layout, t.dynamic
    reason = f"no runtime value yet: {why.message.removeprefix('show: ')}"
    if not layout.static:
        return None, ["strides, counts or offset come from registers resolved at run time: "
                      "nothing drawn", reason]
    if dyn is None:
        return np.asarray(layout.offsets()).reshape(-1), [reason]
    if dyn.kind == "scalar":
        return np.asarray(layout.offsets()).reshape(-1), [
            f"the index {dyn.index_name} is resolved at run time: drawn with index 0; the "
            f"whole access moves by index x {dyn.scale} elements", reason]
    if dyn.kind == "vector":
        row = Layout(layout.dims[1:], layout.base) if layout.ndim > 1 else \
            Layout(layout.dims[:1], layout.base).slice(0, 0, 1)
        return np.asarray(row.offsets()).reshape(-1), [
            f"partition p reads row {dyn.index_name}[p] (x {dyn.scale} elements), resolved "
            "at run time: drawn for one partition at index 0", reason]
    return np.asarray(layout.offsets()).reshape(-1), [
        f"free element i reads column {dyn.index_name}[i % G, i // G], resolved at run time: "
        "drawn with column i for element i", reason]


def _native(offsets: np.ndarray, view_bits: int, native_bits: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Native storage elements touched by each access, and the access each one belongs to."""
    which = np.arange(offsets.size, dtype=np.int64)
    offsets = offsets.astype(np.int64, copy=False)
    if view_bits == native_bits:
        return offsets, which
    if view_bits < native_bits:  # several view elements share a native element
        return (offsets * view_bits) // native_bits, which
    r = view_bits // native_bits  # one view element spans r native elements
    native = (offsets[:, None] * r + np.arange(r, dtype=np.int64)).reshape(-1)
    return native, np.repeat(which, r)


# -- text ---------------------------------------------------------------------------------------

def _value_text(x: Any) -> str:
    if is_static(x):
        return str(int(x))
    return repr(x)  # a register shows its current value: r0=2


def pattern_text(t: Tensor) -> str:
    """The view's `get_pattern()`, or its pieces when it is not one access pattern."""
    try:
        pattern = t.get_pattern()
    except ApdslError:
        pieces = t.layout.pieces()
        parts = [f"offset {p.offset}: {[list(e) for e in p.pattern]}" for p in pieces[:4]]
        more = f"; ... ({len(pieces) - 4} more)" if len(pieces) > 4 else ""
        return f"{len(pieces)} pieces: " + "; ".join(parts) + more
    text = "[" + ", ".join(f"[{_value_text(s)}, {_value_text(c)}]" for s, c in pattern) + "]"
    dyn = t.dynamic
    if dyn is not None:
        where = {"scalar": f"{dyn.index_name} x {dyn.scale}",
                 "vector": f"{dyn.index_name}[p] x {dyn.scale} on dim 0",
                 "ti": f"columns from {dyn.index_name}"}[dyn.kind]
        text += f" + runtime index ({where})"
    return text


def _describe(t: Tensor) -> str:
    fmt = f" as {t.format}" if t.format != "ND" else ""
    return f"{t.name}: {t.dtype}{list(t.shape)} @ {t.buffer}{fmt}"


def _format_note(t: Tensor, geo: Geometry) -> str:
    if t.format == "ND":
        return ""
    text = f" as {t.format}, stored as {geo.storage_shape}"
    if geo.fractal is not None:
        text += f" in {geo.fractal[0]} x {geo.fractal[1]} fractals"
    return text
