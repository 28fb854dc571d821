"""Tensor: storage + dtype + layout (+ an optional runtime index).  Every method of NKI's
`NkiTensor` returns a new Tensor over the same storage; nothing here moves data.

Each method checks the constraints seed 001 lists for it, plus SPEC section 4's decisions, and
raises a `ViewError` with its own code where the fact is known.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslNameError, ApdslTypeError, Span, ViewError
from .. import targets, tile_writes
from ..dtypes import DType
from ..dtypes import dtype as to_dtype
from ..layout import Layout
from ..machine import Machine, current
from ..registers import VirtualRegister
from ..storage import Storage
from . import cache as viewcache
from . import dynamic as viewdyn
from . import reshape as viewshape
from .core import (
    Dynamic,
    TensorCore,
    check_ndim,
    dim_arg,
    forbid_dynamic_dim,
    forbid_partition,
    require_static,
    tla_fields,
    with_layout,
)
from .indexing import index_view
from .regroup import sliced_across

__all__ = ["Dynamic", "Tensor", "from_numpy", "ndarray", "new_view"]


def _err(message: str, code: str, **kw: Any) -> ViewError:
    return ViewError(message, code=code, **kw)


class Tensor(TensorCore):
    """A view: storage + dtype + layout (+ an optional runtime index).  Views never copy; only
    instructions move data.  Make one with `apdsl.ndarray` or `apdsl.from_numpy`.

    >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
    >>> u = t.slice(1, 8, 24)
    >>> u.shape, u.offset, u.get_pattern()
    ((128, 16), 8, [[64, 128], [1, 16]])
    """
    # The executing runtime's memo of this view made concrete (its resolved access): a view is
    # immutable, so the memo never goes stale, and it dies with the view.  Not part of the
    # view's value (unset until an instruction first uses the view).
    # `kids`: the children indexing and vector_select made, by key (`apdsl.tensor.view.cache`);
    # `key`: the view's value as the plan table keys it (`runtime.plans.table.key_of`), made
    # once; `pair`: the Ascend copy and mmad plans with this view first
    # (`runtime.plans.ascend_plans`).
    __slots__ = ("memo", "kids", "key", "pair")

    def is_indirect(self) -> bool:
        """True when the view carries a runtime index (`select` with a tensor or register,
        `vector_select`, `.ap(scalar_offset=/vector_offset=)`, `indirect`).

        >>> t = apdsl.ndarray((128, 64), "float32", "hbm")
        >>> i = apdsl.ndarray((1, 1), "int32", "sbuf")
        >>> t.is_indirect(), t.select(0, i).is_indirect()
        (False, True)
        """
        return self.dynamic is not None

    def is_contiguous(self) -> bool:
        """True when the elements are adjacent in storage in row-major order (on chip: within each
        partition, the partition dimension aside).

        >>> t = apdsl.ndarray((128, 64), "float32", "hbm")
        >>> t.is_contiguous(), t.slice(1, 0, 64, 2).is_contiguous()
        (True, False)
        """
        dims = self.layout.dims[1:] if self.onchip else self.layout.dims
        expected = 1
        for d in reversed(dims):
            if d.size == 1:
                continue
            if not d.is_plain or d.stride != expected:
                return False
            expected *= d.size
        return True

    def get_pattern(self) -> list[list[Any]]:
        """The access pattern: one `[stride, count]` pair per dimension, outermost first, one pair per
        leaf mode for a nested dimension (so it may be longer than `ndim`).  A view that is several
        access patterns (a slice across the blocks of a nested dimension) is an error (APK223).

        >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
        >>> t.slice(1, 8, 24).get_pattern()
        [[64, 128], [1, 16]]
        >>> apdsl.ndarray((2, 3, 4), "float32", "hbm").rearrange("b c h -> (b h) c").get_pattern()
        [[12, 2], [1, 4], [4, 3]]
        """
        if not self.layout.is_regular:
            n = len(self.layout.pieces())
            raise _err(f"this view is not one access pattern: it needs {n} (a slice or tile "
                       "that is not aligned to the blocks of a nested dimension)", "APK223",
                       notes=[f"shape = {self.shape}"],
                       help="`apdsl lower` shows every piece; align the slice to whole blocks "
                       "for a single pattern", pieces=n)
        return self.layout.pattern()

    def _repr_svg_(self) -> str | None:
        """What a notebook shows of the view: its access picture (`apdsl show`), as SVG."""
        drawing = Machine.drawing
        return None if drawing is None else drawing.svg(self)

    def _repr_html_(self) -> str | None:
        """What a notebook shows of the view: its facts and its access picture."""
        drawing = Machine.drawing
        return None if drawing is None else drawing.html(self)

    def numpy(self) -> np.ndarray:
        """The view's logical contents as a new NumPy array (reading unwritten memory is an
        error unless init checking is off); a TLA tile gives its valid extent.

        >>> t = apdsl.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        >>> t.permute((1, 0)).numpy()
        array([[0., 3.],
               [1., 4.],
               [2., 5.]], dtype=float32)
        """
        read_view = current().device.read_view
        if self.origin_shape is None:
            return read_view(self)
        if 0 in self.origin_shape:
            return np.empty(self.origin_shape, self.dtype.np)
        from .tiles import valid_view
        return read_view(valid_view(self))

    # -- view primitives ----------------------------------------------------------------------
    @viewcache.derived
    def slice(self, dim: int, start: int, end: int, step: int = 1) -> Tensor:
        """Dimension `dim` cut to indices `start, start + step, ...` below `end` (a view).

        `0 <= start < end <= shape[dim]` and `step >= 1`; on chip the partition dimension is sliced
        with step 1 only.

        >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
        >>> u = t.slice(1, 8, 24, 2)
        >>> u.shape, u.offset, u.get_pattern()
        ((128, 8), 8, [[64, 128], [2, 8]])
        """
        require_static(self, "slice")
        d = dim_arg(self, dim, "slice")
        forbid_dynamic_dim(self, d, "slice")
        n = self.shape[d]
        for v, nm in ((start, "start"), (end, "end"), (step, "step")):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise ApdslTypeError(f"slice: {nm} must be an int, got {type(v).__name__}",
                                     code="APK111")
        if step < 1:
            raise _err(f"slice: step {step} must be >= 1", "APK204", param=("step", 3),
                       help="reverse order is not an access pattern NKI can express")
        if start < 0 or end > n or start >= end:
            problem = (f"end {end} is past the end of dim {d} (size {n})" if end > n else
                       f"start {start} is negative" if start < 0 else
                       f"start {start} must be less than end {end}")
            raise _err(f"slice: {problem}", "APK203", notes=[f"shape = {self.shape}"],
                       help=f"0 <= start < end <= {n}", shape=self.shape, dim=d,
                       param=("end", 2) if end > n else ("start", 1))
        if d == 0 and self.onchip and step != 1:
            raise _err("slice: stepping over partitions is not an access pattern", "APK202",
                       notes=["the partition stride is always the tensor's free size"],
                       help="slice partitions contiguously (step 1), or move the data so the "
                       "rows you need are adjacent")
        return with_layout(self, self.layout.slice(d, start, end, step),
                          **tla_fields(self, "slice", d, start, end, step))

    @viewcache.derived
    def select(self, dim: int, index: Any) -> Tensor:
        """Dimension `dim` fixed at `index`, removing it.  `index` is an int, or a runtime index: a
        (1, 1) integer tensor in SBUF or a register, read when an instruction uses the view.  On chip
        the partition dimension cannot be selected (use `slice`).

        >>> t = apdsl.ndarray((4, 8), "float32", "hbm")
        >>> u = t.select(0, 2)
        >>> u.shape, u.offset
        ((8,), 16)
        """
        d = dim_arg(self, dim, "select")
        if isinstance(index, (Tensor, VirtualRegister)):
            return viewdyn.dynamic_select(self, d, index)
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise ApdslTypeError("select: index must be an int, a (1, 1) tensor or a register",
                                 code="APK111")
        require_static(self, "select")
        forbid_dynamic_dim(self, d, "select")
        if d == 0 and self.onchip:
            raise _err("select: dim 0 of an on-chip tensor is the partition dimension and "
                       "cannot be removed", "APK228",
                       help=f"use slice(0, {index}, {index + 1}) to keep one partition")
        n = self.shape[d]
        if not 0 <= index < n:
            raise _err(f"select: index {index} is out of range for dim {d} (size {n})",
                       "APK215", notes=[f"shape = {self.shape}"], help=f"0 <= index < {n}",
                       param=("index", 1))
        return with_layout(self, self.layout.index(d, int(index)), **tla_fields(self, "select", d))

    def vector_select(self, dim: int, vector_offset: Tensor) -> Tensor:
        """Dimension 0 of an HBM view gathered by a run-time vector: row `p` of the result is row
        `vector_offset[p, 0]` of the view.  `vector_offset` is a (P, 1) integer tensor in SBUF.

        >>> table = apdsl.ndarray((128, 512), "float32", "hbm")
        >>> rows = apdsl.ndarray((64, 1), "int32", "sbuf")
        >>> table.vector_select(0, rows).shape
        (64, 512)
        """
        view = viewcache.gather_child(self, dim, vector_offset)
        if view is None:
            view = viewcache.keep_gather(self, dim, vector_offset,
                                         viewdyn.vector_select(self, dim, vector_offset))
        return view

    def indirect(self, index: Tensor, num_elem: int | None = None) -> Tensor:
        """Tensor Indirection (trn3): free element `i` of partition `p` reads storage column
        `index[p % G, i // G]`-style as SPEC section 4 says; `num_elem` elements per partition (all of
        `index` by default).  Needs a 2-d on-chip view and `index` a (P, K) integer tensor in SBUF.

        >>> with apdsl.target("trn3"):
        ...     t = apdsl.ndarray((128, 64), "float32", "sbuf")
        ...     index = apdsl.ndarray((128, 4), "int32", "sbuf")
        ...     t.indirect(index, num_elem=32).shape
        (128, 32)
        """
        return viewdyn.indirect(self, index, num_elem)

    @viewcache.derived
    def permute(self, dims: tuple[int, ...] | list[int]) -> Tensor:
        """The dimensions reordered: dimension `k` of the result is dimension `dims[k]` of the view.
        On chip dimension 0 (the partitions) stays first.

        >>> t = apdsl.ndarray((2, 3, 4), "float32", "hbm")
        >>> u = t.permute((2, 0, 1))
        >>> u.shape, u.strides
        ((4, 2, 3), (1, 12, 4))
        """
        order = tuple(dims)
        if sorted(order) != list(range(self.ndim)):
            raise _err(f"permute: {order} is not a permutation of {tuple(range(self.ndim))}",
                       "APK207", notes=[f"shape = {self.shape}"])
        if self.has_partition_dim and order[0] != 0:
            raise _err(f"permute: dims[0] must be 0, got {order[0]}: dim 0 is the partition "
                       "dimension and stays outermost", "APK202",
                       notes=[f"{self.buffer} tensor of shape {self.shape}"],
                       help=f"permute only the free dims, e.g. (0, {', '.join(str(i) for i in order if i)})",
                       param=("dims", 0))
        return with_layout(self, self.layout.permute(order), **tla_fields(self, "permute", order))

    @viewcache.derived
    def expand_dim(self, dim: int) -> Tensor:
        """A new size-1 dimension inserted before dimension `dim` (`dim == ndim` appends it).

        >>> apdsl.ndarray((4, 8), "float32", "hbm").expand_dim(1).shape
        (4, 1, 8)
        """
        d = dim_arg(self, dim, "expand_dim", allow_end=True)
        forbid_partition(self, d, "expand_dim", "inserting before dim")
        return with_layout(self, self.layout.insert(d))

    @viewcache.derived
    def squeeze_dim(self, dim: int) -> Tensor:
        """Size-1 dimension `dim` removed.

        >>> apdsl.ndarray((4, 1, 8), "float32", "hbm").squeeze_dim(1).shape
        (4, 8)
        """
        require_static(self, "squeeze_dim")
        d = dim_arg(self, dim, "squeeze_dim")
        forbid_partition(self, d, "squeeze_dim")
        if self.shape[d] != 1:
            raise _err(f"squeeze_dim: dim {d} has size {self.shape[d]}, not 1", "APK206",
                       notes=[f"shape = {self.shape}"])
        return with_layout(self, self.layout.index(d, 0))

    @viewcache.derived
    def broadcast(self, dim: int, size: int) -> Tensor:
        """Size-1 dimension `dim` repeated `size` times with stride 0 (reading only: writing through a
        broadcast is an error).

        >>> u = apdsl.ndarray((4, 1, 8), "float32", "hbm").broadcast(1, 3)
        >>> u.shape, u.strides
        ((4, 3, 8), (8, 0, 1))
        """
        d = dim_arg(self, dim, "broadcast")
        forbid_partition(self, d, "broadcast")
        if self.shape[d] != 1:
            raise _err(f"broadcast: dim {d} has size {self.shape[d]}, not 1", "APK205",
                       notes=[f"shape = {self.shape}"],
                       help="only a size-1 dimension can be broadcast (expand_dim makes one)")
        if not isinstance(size, (int, np.integer)) or size < 1:
            raise _err(f"broadcast: size must be a positive int, got {size!r}", "APK205")
        return with_layout(self, self.layout.broadcast(d, int(size)))

    @viewcache.derived
    def flatten_dims(self, start_dim: int, end_dim: int) -> Tensor:
        """Dimensions `start_dim..end_dim` (inclusive) merged into one with a single stride; they must be
        contiguous with each other (APK210; `rearrange` merges any dimensions as a nested view).

        >>> u = apdsl.ndarray((2, 3, 4), "float32", "hbm").flatten_dims(1, 2)
        >>> u.shape, u.strides
        ((2, 12), (12, 1))
        """
        require_static(self, "flatten_dims")
        a = dim_arg(self, start_dim, "flatten_dims")
        b = dim_arg(self, end_dim, "flatten_dims")
        forbid_partition(self, a, "flatten_dims", "start_dim")
        if a > b:
            raise _err(f"flatten_dims: start_dim {a} is after end_dim {b}", "APK210")
        merged = self.layout.merge(a, b)
        if merged is None:
            raise sliced_across("flatten_dims", f"dims {a}..{b}", self)
        nd = merged.dims[a]
        if not (nd.is_plain or nd.size == 1):
            raise _err(f"flatten_dims: dims {a}..{b} are not contiguous in memory, so they "
                       "cannot be merged into one stride", "APK210",
                       notes=[f"shape = {self.shape}, strides = {self.strides}"],
                       help="rearrange merges any dims as a nested view: "
                       "t.rearrange(...) with a group '(a b)'", strides=self.strides)
        return with_layout(self, merged)

    @viewcache.derived
    def reshape(self, shape: tuple[int, ...] | list[int]) -> Tensor:
        """The view with a new shape (one size may be -1), when no copy is needed: NumPy's no-copy rule,
        where a nested dimension counts as the merge it already is, so it can be split again wherever
        its modes allow (APK209 otherwise).  On chip the partition dimension stays.

        >>> t = apdsl.ndarray((6, 4), "float32", "hbm")
        >>> t.reshape((2, 3, 4)).strides
        (12, 4, 1)
        >>> m = apdsl.ndarray((2, 3), "float32", "hbm").rearrange("a b -> (b a)")
        >>> m.reshape((3, 2)).strides
        (1, 3)
        """
        return viewshape.reshape(self, shape)

    @viewcache.derived
    def reshape_dim(self, dim: int, shape: tuple[int, ...] | list[int]) -> Tensor:
        """Dimension `dim` split into `shape` (one size may be -1), when its layout can be cut there.

        >>> t = apdsl.ndarray((6, 4), "float32", "hbm")
        >>> t.reshape_dim(0, (2, -1)).shape
        (2, 3, 4)
        """
        return viewshape.reshape_dim(self, dim, shape)

    @viewcache.derived
    def rearrange(self, src_pattern: Any, dst_pattern: Any = None,
                  fixed_sizes: dict[str, int] | None = None, **sizes: int) -> Tensor:
        """An einops-style rearrange as a view: the string form `"b (h w) -> b w h"` with sizes as
        keywords, or the NKI tuple form `(src, dst, fixed_sizes)`.  Sizes are ints (NumPy integers
        too).  Merging dimensions that have no single stride makes a nested dimension; the call fails
        only when the result is no layout at all (APK209).

        >>> t = apdsl.ndarray((2, 12), "float32", "hbm")
        >>> t.rearrange("b (h w) -> b w h", h=4).shape
        (2, 3, 4)
        >>> t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": np.int64(4)}).strides
        (12, 1, 3)
        """
        return viewshape.rearrange(self, src_pattern, dst_pattern, fixed_sizes, **sizes)

    @viewcache.derived
    def view(self, dtype: Any) -> Tensor:
        """The same bytes seen as another dtype (`reinterpret_cast` is the same method).  With another
        element size the last dimension must be contiguous and is rescaled; int4 packs two elements a
        byte, low nibble first.

        >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
        >>> u = t.view("bfloat16")
        >>> u.shape, u.dtype.name
        ((128, 128), 'bfloat16')
        """
        return viewshape.view_as(self, dtype)

    reinterpret_cast = view

    @viewcache.derived
    def ap(self, pattern: Any, offset: Any = None, scalar_offset: Any = None,
           vector_offset: Any = None, indirect_dim: int = 0, dtype: Any = None,
           *more: Any) -> Tensor:
        """The view replaced by an explicit access pattern over the same storage: `pattern` is a list
        of `[stride, count]` pairs, outermost first; `offset` is added to the view's offset (None
        keeps it).  `scalar_offset=`/`vector_offset=` add a runtime index scaled by the stride of this
        view's dim `indirect_dim` (of a reshape, its own rows); `dtype=` counts the pattern in elements of another dtype.

        >>> t = apdsl.ndarray((16, 32), "float32", "sbuf")
        >>> u = t.ap([[32, 16], [1, 8]], offset=4)
        >>> u.shape, u.offset, u.get_pattern()
        ((16, 8), 4, [[32, 16], [1, 8]])
        """
        return viewdyn.ap(self, pattern, offset, scalar_offset, vector_offset, indirect_dim,
                          dtype, *more)

    # -- tile writes of the legacy NKI API (`apdsl.tensor.tile_writes`) -------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        tile_writes.assign(self, key, value)

    def __iadd__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "add", value)

    def __isub__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "subtract", value)

    def __imul__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "multiply", value)

    def __itruediv__(self, value: Any) -> Any:
        return tile_writes.augmented(self, "divide", value)

    # -- indexing sugar -------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        """Indexing sugar: slices (with steps), ints, `...`; strict bounds, negative indices count from
        the end.  On chip an int keeps the partition dimension and at least one free dimension.

        >>> t = apdsl.ndarray((64, 64), "float32", "hbm")
        >>> t[0:16, 8:16].shape, t[3].shape, t[:, ::2].strides
        ((16, 8), (64,), (64, 2))
        """
        if isinstance(key, Tensor):
            raise ApdslTypeError("a tensor index needs select(dim, idx) or vector_select(0, "
                                 "idx)", code="APK111")
        k = viewcache.index_key(key)
        if k is not None:
            view = viewcache.child(self, k)
            if view is not None:
                return view
        view = index_view(self, key)
        return view if k is None else viewcache.keep(self, k, view)





# -- construction ------------------------------------------------------------------------------

_SLOTS = (Tensor.memo.__set__, Tensor.key.__set__, Tensor.pair.__set__)  # type: ignore


def new_view(storage: Storage, dtype: DType, layout: Layout) -> Tensor:
    """The view of newly allocated storage, the runtime's slots set empty: reading a slot
    never set raises inside `getattr` (a fresh tile's first instructions would pay for it)."""
    t = Tensor(storage, dtype, layout)
    for put in _SLOTS:
        put(t, None)
    return t


def ndarray(shape: Any, dtype: Any, buffer: Any = "sbuf", format: str = "ND", *, name: str = "",
            span: Span | None = None, c0: int | None = None) -> Tensor:
    """Allocate a tensor (memory starts unwritten).

    >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
    >>> t.shape, t.buffer, t.dtype.name
    ((128, 64), 'sbuf', 'float32')
    """
    dt = to_dtype(dtype)
    buf = targets.buffer_name(buffer)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if type(shape) is not tuple or not all(type(n) is int for n in shape):  # else: as given
        if not isinstance(shape, (tuple, list)) or not all(
                isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape):
            raise ApdslTypeError(f"ndarray: shape must be a tuple of ints, got {shape!r}",
                                 code="APK111")
        shape = tuple(int(n) for n in shape)
    check_ndim(len(shape), "ndarray")
    if any(n < 1 for n in shape) or not shape:
        raise _err(f"ndarray: every dimension must be >= 1, got {shape}", "APK225")
    # A one-element (1,) tile is the one 1-D on-chip shape the NKI docs use (register_load's
    # source); any other 1-D on-chip shape leaves its partition/free split unsaid.
    if targets.is_onchip(buf) and len(shape) < 2 and shape != (1,):
        raise _err(f"ndarray: an on-chip tensor needs a partition and a free dimension, got "
                   f"{shape}", "APK202", help=f"use ({shape[0]}, 1) or (1, {shape[0]})")
    fmt = "ND"
    if format not in (None, "ND"):
        from .. import formats as fm
        fmt = fm.canonical(format)
    if fmt != "ND":
        from ..formats import stored
        placed = stored(fmt, shape, dt, buf, c0)
        storage = Storage(shape, dt, buf, name=name, format=fmt,
                          storage_elements=placed.elements, span=span, c0=c0)
        return Tensor(storage, dt, placed.layout())
    storage = Storage(shape, dt, buf, name=name, span=span)
    return new_view(storage, dt, Layout.row_major(shape))


def from_numpy(array: Any, buffer: str = "hbm", dtype: Any = None, *, name: str = "") -> Tensor:
    """A tensor in `buffer` holding a copy of `array` (all elements written).

    >>> t = apdsl.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), "hbm")
    >>> t.numpy()[1]
    array([3., 4., 5.], dtype=float32)
    """
    arr = np.asarray(array)
    if dtype is None:
        try:
            dt = to_dtype(arr.dtype)
        except ApdslNameError:
            raise ApdslTypeError(f"from_numpy: NumPy dtype {arr.dtype} has no apdsl "
                                 "counterpart; pass dtype= to convert it", code="APK112",
                                 help="for example from_numpy(a, dtype='float32')",
                                 numpy_dtype=str(arr.dtype)) from None
    else:
        dt = to_dtype(dtype)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    t = ndarray(arr.shape, dt, buffer, name=name)
    current().device.write_view(t, arr)
    return t


for _name, _method in tile_writes.operator_methods().items():  # the legacy API's `a + b`
    setattr(Tensor, _name, _method)
