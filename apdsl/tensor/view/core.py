"""The core of a view (`Tensor`): its fields and attributes, and the argument checks and
constructors every view method shares (`apdsl.tensor.view` holds the methods themselves,
`dynamic` the runtime-indexed ones and `.ap`, `reshape` the reshaping ones), the dimension
limit, and what a view method keeps of a TLA tile's valid extent.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslTypeError, FormatError, ViewError
from ...records import record, replace
from .. import targets
from ..dtypes import DType
from ..layout import Layout, is_static
from ..storage import Storage

Shape = tuple[int, ...]

MAX_DIMS = 64  # NumPy's limit: a view with more dimensions could never be read or written


def check_ndim(ndim: int, method: str | None = None) -> None:
    if ndim > MAX_DIMS:
        what = f"{method}: the result" if method else "the view"
        raise ViewError(f"{what} would have {ndim} dimensions, more than the {MAX_DIMS} a view "
                   "can have", code="APK231",
                   notes=["NumPy, which executes every instruction, holds at most "
                          f"{MAX_DIMS} dimensions"],
                   help="merge size-1 axes away: in a pattern, '()' or '1' inside a group "
                   "adds no dimension", ndim=ndim)


@record
class Dynamic:
    """A runtime index attached to a view.

    kind "scalar": every element moves by `index * scale` (select with a runtime index,
    `.ap(scalar_offset=)`); "vector": dim 0 index p reads `index[p] * scale` instead of its static
    stride (`vector_select`, `.ap(vector_offset=)`); "ti": free dim 1 reads storage column
    `index[i % G, i // G]` (Tensor Indirection, `indirect`).
    """

    kind: str
    index: Any  # Tensor or VirtualRegister
    scale: int
    bound: int | None  # valid index range [0, bound); None = checked against storage instead
    origin: str  # method that made it: "select", "vector_select", "ap", "indirect"
    indirect_dim: int | None = None
    num_elem: int | None = None

    @property
    def index_name(self) -> str:
        return self.index.name


def _err(message: str, code: str, **kw: Any) -> ViewError:
    return ViewError(message, code=code, **kw)


@record(identity=True, weak=True)
class TensorCore:
    """The fields and attributes of a view (`apdsl.tensor.view.Tensor` adds the methods)."""
    storage: Storage
    dtype: DType
    layout: Layout
    dynamic: Dynamic | None = None
    label: str = ""
    # TLA tile information (Ascend): the view's coordinate in its parent and its valid extent.
    coord: tuple[int, ...] | None = None
    origin_shape: tuple[int, ...] | None = None

    # -- attributes of seed 001 ---------------------------------------------------------------
    @property
    def name(self) -> str:
        """The declared name of the tensor (or the view's label); `%N` for an anonymous one."""
        return self.label or self.storage.name

    @property
    def buffer(self) -> str:
        """The buffer the storage lives in: `sbuf`, `psum`, `hbm`, ..., `gm`, `l1`, ..."""
        return self.storage.buffer

    @property
    def format(self) -> str:
        """The storage's data format (`ND`, or an Ascend format such as `NZ`)."""
        return self.storage.format

    @property
    def shape(self) -> tuple:
        """The logical shape (one size per dimension; a register where `.ap` set one)."""
        return self.layout.shape

    @property
    def valid_shape(self) -> tuple:
        """The extent holding data: a TLA tile's `origin_shape`, else the whole shape."""
        return self.shape if self.origin_shape is None else self.origin_shape

    @property
    def ndim(self) -> int:
        """The number of logical dimensions."""
        return self.layout.ndim

    @property
    def size(self) -> int | None:
        """The number of logical elements (None while a register decides a count)."""
        shape = self.shape
        return prod(shape) if all(is_static(n) for n in shape) else None

    @property
    def strides(self) -> tuple:
        """One stride per dimension, in elements; None for a nested dimension (see `get_pattern`)."""
        return self.layout.strides

    @property
    def offset(self) -> Any:
        """The storage offset of the first element, in elements from the start of the storage."""
        return self.layout.offset

    @property
    def onchip(self) -> bool:
        """True in SBUF or PSUM, where dimension 0 is the partitions."""
        return targets.is_onchip(self.buffer)

    @property
    def has_partition_dim(self) -> bool:
        """Dim 0 is pinned: on-chip partitions, or the indirect dim of a vector_select."""
        return self.onchip or (self.dynamic is not None and self.dynamic.kind == "vector")

    def __repr__(self) -> str:
        tile = ("" if self.origin_shape is None else
                f", coord={self.coord}, origin_shape={self.origin_shape}")
        return (f"Tensor({self.name}: {self.dtype}{list(self.shape)} @ {self.buffer}, "
                f"offset={self.offset}, pattern={pattern_text(self)}{tile})")


# -- what the view methods share ---------------------------------------------------------------

def pattern_text(t: TensorCore) -> str:
    """The view's pattern for a message, or how many patterns it needs."""
    layout = t.layout
    if layout.is_regular:
        return str(layout.pattern())
    return f"<{len(layout.pieces())} pieces>"


def with_layout(t: TensorCore, layout: Layout, **kw: Any) -> Any:
    """`t` with a new layout (and other fields), a TLA tile's fields carried along."""
    check_ndim(layout.ndim)
    if t.origin_shape is not None and "origin_shape" not in kw:
        kw.update(tla_fields(t, "this view method"))
    if not kw or kw.keys() == {"dynamic"}:  # the common cases, built directly
        return type(t)(t.storage, t.dtype, layout, kw.get("dynamic", t.dynamic), t.label,
                       t.coord, t.origin_shape)
    return replace(t, layout=layout, **kw)


def tla_fields(t: TensorCore, op: str, *args: Any) -> dict[str, Any]:
    """`coord`/`origin_shape` of a sub-view of a TLA tile (rules in tla.py); none for a
    plain view."""
    if t.origin_shape is None:
        return {}
    return sub_view_fields(t, op, *args)


def valid_shape(t: TensorCore) -> Shape:
    """The extent that holds data: a tile's `origin_shape`, else the whole shape."""
    return tuple(t.shape) if t.origin_shape is None else tuple(t.origin_shape)


def sub_view_fields(t: TensorCore, op: str, *args: Any) -> dict[str, Any]:
    """`coord` and `origin_shape` of a sub-view of tile `t`: an index (`select`) projects the
    valid extent and restarts the coord at 0, a slice clips the valid extent to the elements it
    keeps and restarts the coord, a permute reorders both."""
    origin = list(valid_shape(t))
    if op == "select":
        (d,) = args
        del origin[d]
        return {"coord": (0,) * len(origin), "origin_shape": tuple(origin)}
    if op == "slice":
        d, start, end, step = args
        o = origin[d]
        origin[d] = 0 if start >= o else -(-(min(end, o) - start) // step)
        return {"coord": (0,) * len(origin), "origin_shape": tuple(origin)}
    if op == "permute":
        (order,) = args
        coord = t.coord if t.coord is not None else (0,) * len(origin)
        return {"coord": tuple(coord[i] for i in order),
                "origin_shape": tuple(origin[i] for i in order)}
    return untile(t, op)


def untile(t: TensorCore, op: str = "this view method") -> dict[str, Any]:
    """A view method that cannot carry a valid extent: fine for a whole tile (it becomes a plain
    view), refused for a tail tile, whose padding would silently become data."""
    if t.origin_shape is not None and tuple(t.origin_shape) != tuple(t.shape):
        raise FormatError(f"{op} cannot keep the valid extent {tuple(t.origin_shape)} of "
                          f"tile {t.name} (shape {tuple(t.shape)})", code="APK538",
                          notes=["a tail tile's padding holds no data; a reshaped view would "
                                 "read it as if it did"],
                          help="index or slice the tile (t[i, :], t[0:4, :]) or take the valid "
                          "part first with get_tile(t, (0, 0), t.origin_shape)")
    return {"coord": None, "origin_shape": None}


def dim_arg(t: TensorCore, dim: Any, method: str, *, allow_end: bool = False) -> int:
    """`dim` checked and normalised (a negative dim counts from the end)."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise ApdslTypeError(f"{method}: dim must be an int, got {type(dim).__name__}",
                             code="APK111")
    n = t.ndim + (1 if allow_end else 0)
    d = int(dim) + n if dim < 0 else int(dim)
    if not 0 <= d < n:
        raise _err(f"{method}: dim {dim} is out of range for a {t.ndim}-d view",
                   "APK201", notes=[f"shape = {t.shape}"],
                   help=f"use a dim in 0..{n - 1}", dim=dim, shape=t.shape,
                   param=("dim", 0))
    return d


def forbid_partition(t: TensorCore, d: int, method: str, what: str = "dim") -> None:
    if d == 0 and t.has_partition_dim:
        why = ("the partition dimension of an on-chip tensor" if t.onchip
               else "the indirect partition dimension made by vector_select")
        raise _err(f"{method}: {what} 0 is {why}", "APK202",
                   notes=[f"{t.buffer} tensor of shape {t.shape}"],
                   help="operate on the free dimensions (dim >= 1); dim 0 stays outermost")


def require_static(t: TensorCore, method: str) -> None:
    if not t.layout.static:
        raise _err(f"{method} is not supported on a view with register strides or counts",
                   "APK213")


def forbid_dynamic_dim(t: TensorCore, d: int, method: str) -> None:
    dyn = t.dynamic
    if dyn is not None and dyn.kind in ("vector", "ti") and d == (0 if dyn.kind == "vector"
                                                                    else 1):
        raise _err(f"{method}: dim {d} takes part in the indirection of this view "
                   f"({dyn.origin})", "APK218",
                   help="slice or select before the dynamic select, not after")


def check_index_tensor(index: TensorCore, shape: tuple[int, ...] | None, method: str) -> None:
    if not isinstance(index, TensorCore):
        raise ApdslTypeError(f"{method}: the index must be a tensor", code="APK111")
    if index.dtype.kind not in "iu":
        raise _err(f"{method}: the index tensor must have an integer dtype, not {index.dtype}",
                   "APK227", help="declare it int32 (or uint32)")
    if index.buffer not in ("sbuf", "psum"):
        raise _err(f"{method}: the index tensor must be in sbuf, not {index.buffer}", "APK227")
    if shape is not None and tuple(index.shape) != shape:
        raise _err(f"{method}: the index tensor must have shape {shape}, not {index.shape}",
                   "APK227")
    if shape is None and method == "vector_select" and (index.ndim != 2 or index.shape[1] != 1):
        raise _err(f"{method}: vector offsets must have shape (partitions, 1), not "
                   f"{index.shape}", "APK227")


def resolve_minus_one(shape: tuple[Any, ...], total: int | None, method: str) -> tuple[int, ...]:
    if any(not isinstance(n, (int, np.integer)) or isinstance(n, bool) for n in shape):
        raise ApdslTypeError(f"{method}: sizes must be ints, got {shape}", code="APK111")
    if list(shape).count(-1) > 1:
        raise _err(f"{method}: at most one size may be -1", "APK225")
    if any(n < -1 or n == 0 for n in shape):
        raise _err(f"{method}: sizes must be positive (or one -1), got {shape}", "APK225")
    if -1 in shape:
        known = prod(n for n in shape if n != -1)
        if total is None or total % known:
            raise _err(f"{method}: cannot infer -1: {total} is not divisible by {known}",
                       "APK225")
        shape = tuple(total // known if n == -1 else n for n in shape)
    return tuple(int(n) for n in shape)


# -- construction ------------------------------------------------------------------------------

