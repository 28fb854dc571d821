"""Tensor: storage + dtype + layout (+ an optional runtime index).  Every method of NKI's
`NkiTensor` returns a new Tensor over the same storage; nothing here moves data.

Each method checks the constraints seed 001 lists for it, plus SPEC section 4's decisions, and
raises a `ViewError` with its own code where the fact is known.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslNameError, ApdslTypeError, TargetError, ViewError
from ..records import record, replace
from . import targets
from .dtypes import DType
from .dtypes import dtype as to_dtype
from .layout import Dim, Layout, is_static
from .machine import current
from .registers import RegisterSum, VirtualRegister
from .regroup import blames_a_slice, check_ndim, rearranged, sliced_across
from .storage import Storage


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
class Tensor:
    """A view: storage + dtype + layout (+ an optional runtime index).  Views never copy; only
    instructions move data.  Make one with `apdsl.ndarray` or `apdsl.from_numpy`.

    >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
    >>> u = t.slice(1, 8, 24)
    >>> u.shape, u.offset, u.get_pattern()
    ((128, 16), 8, [[64, 128], [1, 16]])
    """
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

    def __repr__(self) -> str:
        tile = ("" if self.origin_shape is None else
                f", coord={self.coord}, origin_shape={self.origin_shape}")
        return (f"Tensor({self.name}: {self.dtype}{list(self.shape)} @ {self.buffer}, "
                f"offset={self.offset}, pattern={self._pattern_text()}{tile})")

    def _pattern_text(self) -> str:
        try:
            return str(self.get_pattern())
        except ViewError:
            return f"<{len(self.layout.pieces())} pieces>"

    # -- helpers -------------------------------------------------------------------------------
    def _with(self, layout: Layout, **kw: Any) -> Tensor:
        check_ndim(layout.ndim)
        if self.origin_shape is not None and "origin_shape" not in kw:
            kw.update(self._tla("this view method"))
        return replace(self, layout=layout, **kw)

    def _tla(self, op: str, *args: Any) -> dict[str, Any]:
        """`coord`/`origin_shape` of a sub-view of a TLA tile (rules in tla.py); none for a
        plain view."""
        if self.origin_shape is None:
            return {}
        from .tiles import sub_view_fields
        return sub_view_fields(self, op, *args)

    def _dim(self, dim: Any, method: str, *, allow_end: bool = False) -> int:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise ApdslTypeError(f"{method}: dim must be an int, got {type(dim).__name__}",
                                 code="APK111")
        n = self.ndim + (1 if allow_end else 0)
        d = int(dim) + n if dim < 0 else int(dim)
        if not 0 <= d < n:
            raise _err(f"{method}: dim {dim} is out of range for a {self.ndim}-d view",
                       "APK201", notes=[f"shape = {self.shape}"],
                       help=f"use a dim in 0..{n - 1}", dim=dim, shape=self.shape,
                       param=("dim", 0))
        return d

    def _no_partition(self, d: int, method: str, what: str = "dim") -> None:
        if d == 0 and self.has_partition_dim:
            why = ("the partition dimension of an on-chip tensor" if self.onchip
                   else "the indirect partition dimension made by vector_select")
            raise _err(f"{method}: {what} 0 is {why}", "APK202",
                       notes=[f"{self.buffer} tensor of shape {self.shape}"],
                       help="operate on the free dimensions (dim >= 1); dim 0 stays outermost")

    def _static(self, method: str) -> None:
        if not self.layout.static:
            raise _err(f"{method} is not supported on a view with register strides or counts",
                       "APK213")

    def _check_dynamic_dim(self, d: int, method: str) -> None:
        dyn = self.dynamic
        if dyn is not None and dyn.kind in ("vector", "ti") and d == (0 if dyn.kind == "vector"
                                                                        else 1):
            raise _err(f"{method}: dim {d} takes part in the indirection of this view "
                       f"({dyn.origin})", "APK218",
                       help="slice or select before the dynamic select, not after")

    # -- view primitives ----------------------------------------------------------------------
    def slice(self, dim: int, start: int, end: int, step: int = 1) -> Tensor:
        """Dimension `dim` cut to indices `start, start + step, ...` below `end` (a view).

        `0 <= start < end <= shape[dim]` and `step >= 1`; on chip the partition dimension is sliced
        with step 1 only.

        >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
        >>> u = t.slice(1, 8, 24, 2)
        >>> u.shape, u.offset, u.get_pattern()
        ((128, 8), 8, [[64, 128], [2, 8]])
        """
        self._static("slice")
        d = self._dim(dim, "slice")
        self._check_dynamic_dim(d, "slice")
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
        return self._with(self.layout.slice(d, start, end, step),
                          **self._tla("slice", d, start, end, step))

    def select(self, dim: int, index: Any) -> Tensor:
        """Dimension `dim` fixed at `index`, removing it.  `index` is an int, or a runtime index: a
        (1, 1) integer tensor in SBUF or a register, read when an instruction uses the view.  On chip
        the partition dimension cannot be selected (use `slice`).

        >>> t = apdsl.ndarray((4, 8), "float32", "hbm")
        >>> u = t.select(0, 2)
        >>> u.shape, u.offset
        ((8,), 16)
        """
        d = self._dim(dim, "select")
        if isinstance(index, (Tensor, VirtualRegister)):
            return self._dynamic_select(d, index)
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise ApdslTypeError("select: index must be an int, a (1, 1) tensor or a register",
                                 code="APK111")
        self._static("select")
        self._check_dynamic_dim(d, "select")
        if d == 0 and self.onchip:
            raise _err("select: dim 0 of an on-chip tensor is the partition dimension and "
                       "cannot be removed", "APK228",
                       help=f"use slice(0, {index}, {index + 1}) to keep one partition")
        n = self.shape[d]
        if not 0 <= index < n:
            raise _err(f"select: index {index} is out of range for dim {d} (size {n})",
                       "APK215", notes=[f"shape = {self.shape}"], help=f"0 <= index < {n}",
                       param=("index", 1))
        return self._with(self.layout.index(d, int(index)), **self._tla("select", d))

    def _dynamic_select(self, d: int, index: Any) -> Tensor:
        self._static("select")
        if self.dynamic is not None:
            raise _err("select: this view already has a runtime index; only one dynamic "
                       "select is allowed per view", "APK216",
                       help="check is_indirect() before selecting dynamically")
        if d == 0 and self.onchip:
            raise _err("select: a runtime index cannot select the partition dimension",
                       "APK228", help="dynamic select works on free dims or HBM tensors")
        if isinstance(index, Tensor):
            _check_index_tensor(index, (1, 1), "select")
        dim = self.layout.dims[d]
        if not dim.is_plain:
            raise _err("select: a runtime index needs a plain (single-stride) dimension",
                       "APK213")
        dyn = Dynamic("scalar", index, dim.stride, dim.size, "select")
        return self._with(self.layout.index(d, 0), dynamic=dyn)

    def vector_select(self, dim: int, vector_offset: Tensor) -> Tensor:
        """Dimension 0 of an HBM view gathered by a run-time vector: row `p` of the result is row
        `vector_offset[p, 0]` of the view.  `vector_offset` is a (P, 1) integer tensor in SBUF.

        >>> table = apdsl.ndarray((128, 512), "float32", "hbm")
        >>> rows = apdsl.ndarray((64, 1), "int32", "sbuf")
        >>> table.vector_select(0, rows).shape
        (64, 512)
        """
        self._static("vector_select")
        if dim != 0:
            raise _err(f"vector_select: dim must be 0, got {dim}", "APK217")
        if self.onchip or targets.family(self.buffer) != "nki":
            raise _err(f"vector_select: only supported on HBM tensors, not {self.buffer}",
                       "APK217", help="copy the table to HBM, or use select on free dims")
        if self.dynamic is not None:
            raise _err("vector_select: this view already has a runtime index", "APK216")
        if not isinstance(vector_offset, Tensor):
            raise ApdslTypeError("vector_select: vector_offset must be a tensor", code="APK111")
        _check_index_tensor(vector_offset, None, "vector_select")
        d0 = self.layout.dims[0]
        if not d0.is_plain:
            raise _err("vector_select: dim 0 must be a plain dimension", "APK213")
        parts = vector_offset.shape[0]
        layout = self.layout.replace_dim(0, (Dim.plain(parts, d0.stride),))
        dyn = Dynamic("vector", vector_offset, d0.stride, d0.size, "vector_select")
        return self._with(layout, dynamic=dyn)

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
        t = targets.target_for(self.buffer)
        if not t.has_indirect:
            raise TargetError(f"indirect: Tensor Indirection needs trn3, the target is {t.name}",
                              code="APK310", help="run with --target trn3")
        if not self.onchip or self.ndim != 2:
            raise _err("indirect: needs a 2-d on-chip (SBUF/PSUM) view (P, F)", "APK217")
        if self.dynamic is not None:
            raise _err("indirect: this view already has a runtime index", "APK216")
        _check_index_tensor(index, None, "indirect")
        if index.shape[0] != self.shape[0]:
            raise _err(f"indirect: index has {index.shape[0]} partitions, the view "
                       f"{self.shape[0]}", "APK227", help="index shape must be (P, K) with "
                       "P equal to the view's partitions")
        n = index.size if num_elem is None else int(num_elem)
        if not 0 < n <= index.size:
            raise _err(f"indirect: num_elem {n} must be in 1..{index.size}", "APK227")
        d1 = self.layout.dims[1]
        if not d1.is_plain:
            raise _err("indirect: dim 1 must be a plain dimension", "APK213")
        layout = self.layout.replace_dim(1, (Dim.plain(n, d1.stride),))
        dyn = Dynamic("ti", index, d1.stride, d1.size, "indirect", num_elem=n)
        return self._with(layout, dynamic=dyn)

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
        return self._with(self.layout.permute(order), **self._tla("permute", order))

    def expand_dim(self, dim: int) -> Tensor:
        """A new size-1 dimension inserted before dimension `dim` (`dim == ndim` appends it).

        >>> apdsl.ndarray((4, 8), "float32", "hbm").expand_dim(1).shape
        (4, 1, 8)
        """
        d = self._dim(dim, "expand_dim", allow_end=True)
        self._no_partition(d, "expand_dim", "inserting before dim")
        return self._with(self.layout.insert(d))

    def squeeze_dim(self, dim: int) -> Tensor:
        """Size-1 dimension `dim` removed.

        >>> apdsl.ndarray((4, 1, 8), "float32", "hbm").squeeze_dim(1).shape
        (4, 8)
        """
        self._static("squeeze_dim")
        d = self._dim(dim, "squeeze_dim")
        self._no_partition(d, "squeeze_dim")
        if self.shape[d] != 1:
            raise _err(f"squeeze_dim: dim {d} has size {self.shape[d]}, not 1", "APK206",
                       notes=[f"shape = {self.shape}"])
        return self._with(self.layout.index(d, 0))

    def broadcast(self, dim: int, size: int) -> Tensor:
        """Size-1 dimension `dim` repeated `size` times with stride 0 (reading only: writing through a
        broadcast is an error).

        >>> u = apdsl.ndarray((4, 1, 8), "float32", "hbm").broadcast(1, 3)
        >>> u.shape, u.strides
        ((4, 3, 8), (8, 0, 1))
        """
        d = self._dim(dim, "broadcast")
        self._no_partition(d, "broadcast")
        if self.shape[d] != 1:
            raise _err(f"broadcast: dim {d} has size {self.shape[d]}, not 1", "APK205",
                       notes=[f"shape = {self.shape}"],
                       help="only a size-1 dimension can be broadcast (expand_dim makes one)")
        if not isinstance(size, (int, np.integer)) or size < 1:
            raise _err(f"broadcast: size must be a positive int, got {size!r}", "APK205")
        return self._with(self.layout.broadcast(d, int(size)))

    def flatten_dims(self, start_dim: int, end_dim: int) -> Tensor:
        """Dimensions `start_dim..end_dim` (inclusive) merged into one with a single stride; they must be
        contiguous with each other (APK210; `rearrange` merges any dimensions as a nested view).

        >>> u = apdsl.ndarray((2, 3, 4), "float32", "hbm").flatten_dims(1, 2)
        >>> u.shape, u.strides
        ((2, 12), (12, 1))
        """
        self._static("flatten_dims")
        a = self._dim(start_dim, "flatten_dims")
        b = self._dim(end_dim, "flatten_dims")
        self._no_partition(a, "flatten_dims", "start_dim")
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
        return self._with(merged)

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
        self._static("reshape")
        new = _resolve_minus_one(tuple(shape), self.size, "reshape")
        if prod(new) != self.size:
            raise _err(f"reshape: {tuple(new)} has {prod(new)} elements, the view has "
                       f"{self.size}", "APK208", notes=[f"shape = {self.shape}"])
        if self.has_partition_dim:
            if new[0] != self.shape[0]:
                raise _err(f"reshape: the partition dimension must stay {self.shape[0]}, "
                           f"got {new[0]}", "APK229", notes=[f"shape = {self.shape}"])
            rest = Layout(self.layout.dims[1:]).reshape(tuple(new[1:]))
            layout = None if rest is None else Layout((self.layout.dims[0],) + rest.dims,
                                                      self.layout.base + rest.base)
        else:
            layout = self.layout.reshape(tuple(new))
        if layout is None and blames_a_slice(self.layout, new, self.has_partition_dim):
            raise sliced_across("reshape", f"{self.shape} -> {tuple(new)}", self)
        if layout is None:
            raise _err(f"reshape: {self.shape} -> {tuple(new)} needs a copy in this layout",
                       "APK209", notes=[f"strides = {self.strides}",
                                        f"pattern = {self._pattern_text()}"],
                       help="reshape only regroups dimensions that are contiguous; "
                       "rearrange can merge any dimensions as a nested view",
                       shape=self.shape, strides=self.strides)
        return self._with(layout)

    def reshape_dim(self, dim: int, shape: tuple[int, ...] | list[int]) -> Tensor:
        """Dimension `dim` split into `shape` (one size may be -1), when its layout can be cut there.

        >>> t = apdsl.ndarray((6, 4), "float32", "hbm")
        >>> t.reshape_dim(0, (2, -1)).shape
        (2, 3, 4)
        """
        self._static("reshape_dim")
        d = self._dim(dim, "reshape_dim")
        sizes = _resolve_minus_one(tuple(shape), self.shape[d], "reshape_dim")
        if len(sizes) > 1 or sizes[0] != self.shape[d]:
            self._no_partition(d, "reshape_dim")
        if prod(sizes) != self.shape[d]:
            raise _err(f"reshape_dim: {tuple(sizes)} has {prod(sizes)} elements, dim {d} "
                       f"has {self.shape[d]}", "APK225")
        layout = self.layout.split(d, tuple(sizes))
        if layout is None and not self.layout.dims[d].is_regular:
            raise sliced_across("reshape_dim", f"dim {d} into {tuple(sizes)}", self)
        if layout is None:
            raise _err(f"reshape_dim: dim {d} cannot be split into {tuple(sizes)} without a "
                       "copy (its blocks do not divide that way)", "APK209",
                       notes=[f"pattern = {self._pattern_text()}"])
        return self._with(layout)

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
        from . import rearrange as rr
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
        plan = rr.plan(pattern, tuple(self.shape), sizes)
        return self._apply_plan(plan)

    def _apply_plan(self, plan: Any) -> Tensor:
        self._static("rearrange")
        check_ndim(len(plan.output_shape), "rearrange")
        layout = rearranged(self, plan)
        if self.has_partition_dim and layout.dims[0] != self.layout.dims[0]:
            raise _err("rearrange: the partition dimension must stay the first output "
                       "dimension, unchanged", "APK202",
                       help="keep the first axis alone and first on both sides: 'p ... -> p ...'")
        return self._with(layout)

    def view(self, dtype: Any) -> Tensor:
        """The same bytes seen as another dtype (`reinterpret_cast` is the same method).  With another
        element size the last dimension must be contiguous and is rescaled; int4 packs two elements a
        byte, low nibble first.

        >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
        >>> u = t.view("bfloat16")
        >>> u.shape, u.dtype.name
        ((128, 128), 'bfloat16')
        """
        new = to_dtype(dtype)
        if self.dynamic is not None:
            raise _err("view: not supported after a dynamic or vector select", "APK213")
        self._static("view")
        if new.bits == self.dtype.bits:
            return replace(self, dtype=new)
        if self.ndim == 0:
            raise _err("view: a 0-d view cannot change element size", "APK211")
        last = self.layout.dims[-1]
        if not (last.is_plain and (last.stride == 1 or last.size == 1)):
            raise _err("view: the last dimension must be contiguous in memory (stride 1)",
                       "APK211", notes=[f"strides = {self.strides}"])
        old_b, new_b = self.dtype.bits, new.bits

        def scale(x: int, what: str) -> int:
            if (x * old_b) % new_b:
                raise _err(f"view: {what} {x} in {self.dtype} is not a whole number of "
                           f"{new} elements", "APK212", notes=[f"shape = {self.shape}, "
                                                               f"strides = {self.strides}"])
            return x * old_b // new_b

        n = scale(last.size, "the last dimension's size")
        dims = []
        for d in self.layout.dims[:-1]:
            if not d.is_plain and d.size != 1:
                raise _err("view: nested dimensions cannot change element size", "APK212")
            dims.append(Dim.plain(d.size, scale(d.stride, "stride") if d.size != 1 else 0))
        dims.append(Dim.plain(n, 1))
        return replace(self, dtype=new, layout=Layout(tuple(dims),
                                                      scale(self.layout.base, "offset")),
                       **self._tla("view(dtype)"))

    reinterpret_cast = view

    def ap(self, pattern: Any, offset: Any = None, scalar_offset: Any = None,
           vector_offset: Any = None, indirect_dim: int = 0, dtype: Any = None,
           *more: Any) -> Tensor:
        """The view replaced by an explicit access pattern over the same storage: `pattern` is a list
        of `[stride, count]` pairs, outermost first; `offset` is added to the view's offset (None
        keeps it).  `scalar_offset=`/`vector_offset=` add a runtime index scaled by the base tensor's
        `indirect_dim`; `dtype=` counts the pattern in elements of another dtype.

        >>> t = apdsl.ndarray((16, 32), "float32", "sbuf")
        >>> u = t.ap([[32, 16], [1, 8]], offset=4)
        >>> u.shape, u.offset, u.get_pattern()
        ((16, 8), 4, [[32, 16], [1, 8]])
        """
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
        pairs = _check_pattern(pattern)
        new_dtype = self.dtype if dtype is None else to_dtype(dtype)
        base = self.layout.offset
        if isinstance(base, (int, np.integer)) and new_dtype.bits != self.dtype.bits:
            if (base * self.dtype.bits) % new_dtype.bits:
                raise _err(f"ap: the inherited offset {base} is not a whole number of "
                           f"{new_dtype} elements", "APK212")
            base = base * self.dtype.bits // new_dtype.bits
        if offset is not None:
            base = base + offset if not isinstance(offset, VirtualRegister) and \
                isinstance(base, (int, np.integer)) else RegisterSum(base, offset)
        if scalar_offset is not None and vector_offset is not None:
            raise _err("ap: give at most one of scalar_offset and vector_offset", "APK222")
        dynamic_regs = any(not is_static(x) for p in pairs for x in p)
        storage_shape = self.storage.shape
        if self.onchip and pairs:
            free = prod(storage_shape[1:]) * self.storage.dtype.bits // new_dtype.bits
            s0, c0 = pairs[0]
            if is_static(s0) and s0 != free and not (is_static(c0) and c0 == 1):
                raise TargetError(
                    f"ap: the partition stride must be the tensor's free size {free}, got {s0}",
                    code="APK303", notes=["on SBUF/PSUM the first pair addresses partitions; "
                                          "every partition uses the same free pattern"],
                    help=f"start the pattern with [{free}, partitions]; stepping over "
                    "partitions is not possible", pattern=pairs)
            t = targets.target_for(self.buffer)
            if is_static(c0) and c0 > t.partitions:
                raise TargetError(f"ap: {c0} partitions exceed the {t.partitions} of {t.name}",
                                  code="APK301")
        check_ndim(len(pairs), "ap")
        layout = Layout.from_pattern(pairs, base)
        dyn = None
        if scalar_offset is not None or vector_offset is not None:
            if dynamic_regs:
                raise _err("ap: register strides or counts cannot be combined with "
                           "scalar_offset or vector_offset", "APK222")
            if self.dynamic is not None:
                raise _err("ap: this view already has a runtime index", "APK216")
            nd = len(storage_shape)
            if not (isinstance(indirect_dim, (int, np.integer)) and 0 <= indirect_dim < nd):
                raise _err(f"ap: indirect_dim {indirect_dim} is not a dim of the base tensor "
                           f"{storage_shape}", "APK222")
            scale = prod(storage_shape[indirect_dim + 1:])
            if new_dtype.bits != self.storage.dtype.bits:
                scale = scale * self.storage.dtype.bits // new_dtype.bits
            if vector_offset is not None:
                if indirect_dim != 0:
                    raise _err("ap: vector_offset supports only indirect_dim=0", "APK222")
                if self.buffer not in targets.NKI_HBM:  # NKI docs: vector indirection is DMA's
                    raise TargetError(f"ap: vector_offset is only valid on an HBM tensor, not "
                                      f"on {self.name} in {self.buffer}", code="APK341",
                                      help="keep the table in HBM and gather it with dma_copy; "
                                      "on chip use indirect() (trn3) or scalar_offset",
                                      buffer=self.buffer)
                if not isinstance(vector_offset, Tensor):
                    raise ApdslTypeError("ap: vector_offset must be a tensor", code="APK111")
                _check_index_tensor(vector_offset, None, "ap")
                dyn = Dynamic("vector", vector_offset, scale, None, "ap", indirect_dim=0)
            else:
                if isinstance(scalar_offset, Tensor):
                    _check_index_tensor(scalar_offset, (1, 1), "ap")
                elif not isinstance(scalar_offset, VirtualRegister):
                    raise ApdslTypeError("ap: scalar_offset must be a (1, 1) tensor or a "
                                         "register", code="APK111")
                dyn = Dynamic("scalar", scalar_offset, scale, None, "ap",
                              indirect_dim=int(indirect_dim))
        elif self.dynamic is not None:
            dyn = None  # .ap addresses storage directly: the view's own index is replaced
        return replace(self, dtype=new_dtype, layout=layout, dynamic=dyn, coord=None,
                       origin_shape=None)

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
        from .indexing import index_view
        return index_view(self, key)


def _check_pattern(pattern: Any) -> list[list[Any]]:
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


def _check_index_tensor(index: Tensor, shape: tuple[int, ...] | None, method: str) -> None:
    if not isinstance(index, Tensor):
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


def _resolve_minus_one(shape: tuple[Any, ...], total: int | None, method: str) -> tuple[int, ...]:
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

def ndarray(shape: Any, dtype: Any, buffer: Any = "sbuf", format: str = "ND", *, name: str = "",
            span: Any = None, c0: int | None = None) -> Tensor:
    """Allocate a tensor (memory starts unwritten).

    >>> t = apdsl.ndarray((128, 64), "float32", "sbuf")
    >>> t.shape, t.buffer, t.dtype.name
    ((128, 64), 'sbuf', 'float32')
    """
    dt = to_dtype(dtype)
    buf = targets.buffer_name(buffer)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
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
        from . import formats as fm
        fmt = fm.canonical(format)
    if fmt != "ND":
        from .formats import stored
        placed = stored(fmt, shape, dt, buf, c0)
        storage = Storage(shape, dt, buf, name=name, format=fmt,
                          storage_elements=placed.elements, span=span, c0=c0)
        return Tensor(storage, dt, placed.layout())
    storage = Storage(shape, dt, buf, name=name, span=span)
    return Tensor(storage, dt, Layout.row_major(shape))


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
