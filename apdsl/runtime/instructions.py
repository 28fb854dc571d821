"""The instructions of SPEC section 4, executed on NumPy.

Each instruction checks its target rules (APK3xx) where the facts are known, resolves its
operands (runtime indices and registers are read and bounds-checked), records itself for
`apdsl lower` (which also enforces the on-chip access-pattern entry limit), and only then moves
data.  Messages start with the instruction and its `name=` label.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, TargetError
from ..tensor import registers, targets
from ..tensor.dtypes import DTYPES, round_tfloat32
from ..tensor.layout import pattern_bounds
from ..tensor.machine import current
from ..tensor.registers import VirtualRegister
from ..tensor.view import Tensor
from . import execute as ex
from . import hints, psum, trace

F32 = DTYPES["float32"]

# SPEC section 4: the Ascend copy paths a DMA (MTE) can take.
ASCEND_PATHS = frozenset({("gm", "l1"), ("gm", "ub"), ("gm", "l0a"), ("gm", "l0b"),
                          ("l1", "l0a"), ("l1", "l0b"), ("l0c", "gm"), ("l0c", "l1"),
                          ("ub", "gm"), ("ub", "ub")})
MEMSET_BUFFERS = ("sbuf", "psum", "ub", "l1", "l0a", "l0b")


def _label(op: str, name: Any) -> str:
    return f"{op} {str(name)!r}" if name is not None else op


def _arg_error(label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code="APK420", **kw)


def _tensor(x: Any, label: str, role: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise _arg_error(label, f"{role} must be a tensor, got {type(x).__name__}",
                         help=f"pass a tensor or a view of one as {role}")
    return x


def _int(x: Any, label: str, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise _arg_error(label, f"{what} must be an int, got {x!r}")
    return int(x)


def _free(shape: tuple[int, ...]) -> int:
    return prod(shape[1:])


def _static_shape(t: Tensor) -> tuple[int, ...] | None:
    """The view's shape when no register decides it, or (check mode) when every register it
    uses holds a value check mode knows."""
    shape = tuple(t.shape)
    if all(isinstance(n, (int, np.integer)) for n in shape):
        return shape
    if t.dynamic is None and ex.registers_known(t.layout):
        return tuple(registers.resolve(n, "a count") for n in shape)
    return None


def _operands(label: str, group: int, *pairs: tuple[str, Tensor]) -> list[ex.Access] | None:
    """Resolve the operands for execution (runtime indices and registers read, bounds
    checked).  In check mode (the machine's `check` flag) nothing is read: views without runtime
    parts are still bounds-checked, and None is returned."""
    for role, t in pairs:
        if t.dynamic is not None:
            ex.warn_static(t, label, role)
    if current().check:
        for role, t in pairs:
            if t.dynamic is None and (t.layout.static or ex.registers_known(t.layout)):
                ex.resolve(t, label, role, group=group)
            else:
                ex.check_dynamic(t, label, role, group=group)
        return None
    return [ex.resolve(t, label, role, group=group) for role, t in pairs]


def _shapes(accs: list[ex.Access] | None, *ts: Tensor) -> list[tuple[int, ...] | None]:
    """Resolved shapes when executing, else the static ones (None where a register decides)."""
    if accs is not None:
        return [a.shape for a in accs]
    return [_static_shape(t) for t in ts]


def _is_ti(t: Tensor) -> bool:
    return t.dynamic is not None and t.dynamic.kind == "ti"


def _onchip(t: Tensor, label: str, role: str, what: str = "SBUF or PSUM") -> None:
    if not t.onchip:
        raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; this instruction works on "
                          f"{what} only", code="APK309",
                          notes=[f"{role}: shape {tuple(t.shape)} @ {t.buffer}"],
                          help="dma_copy the data on chip first", buffer=t.buffer, role=role)


def _start_partition(t: Tensor) -> int | None:
    """The first partition an on-chip view covers (None when a register decides it)."""
    base = t.layout.base
    if not isinstance(base, (int, np.integer)):
        return None
    storage = t.storage
    per_partition = prod(storage.shape[1:]) * storage.dtype.bits // t.dtype.bits
    return int(base) // per_partition if per_partition else 0


def _either(values: tuple[int, ...]) -> str:
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _start_partitions(label: str, pairs: Any) -> None:
    """The start-partition rule of the Trainium/Inferentia2 architecture guide for compute
    instructions on trn1 (an operand's partitions start on a quadrant boundary that allows its
    partition count: more than 64 start at 0, more than 32 at 0 or 64, others at 0, 32, 64 or
    96).  The trn2 and trn3 guides state no such rule, so it binds trn1 only."""
    for role, t in pairs:
        if not t.onchip or targets.target_for(t.buffer).name != "trn1":
            continue
        count, start = t.layout.dims[0].size if t.layout.dims else 1, _start_partition(t)
        if start is None or not isinstance(count, (int, np.integer)):
            continue
        allowed = (0,) if count > 64 else (0, 64) if count > 32 else (0, 32, 64, 96)
        if start not in allowed:
            raise TargetError(
                f"{label}: {role} {t.name} covers {count} partitions starting at partition "
                f"{start}; on trn1 an operand of {count} partitions starts at "
                f"{_either(allowed)}", code="APK343",
                notes=["Trainium/Inferentia2 architecture guide: 64 < partitions <= 128 start "
                       "at 0; 32 < partitions <= 64 at 0 or 64; up to 32 at 0, 32, 64 or 96"],
                help="move the data to an allowed start partition with dma_copy first (as the "
                "NKI library's cross_partition_copy does), or slice on a quadrant boundary",
                start=start, partitions=int(count))


def _ti_partitions(label: str, index_of: dict[str, str], *pairs: tuple[str, Tensor]) -> None:
    """The base-partition rules the NKI docstrings give for Tensor Indirection operands: every
    `indirect()` index starts on a quadrant boundary (a multiple of 32), and the partitions of
    related operands line up.  `index_of` maps a role to the role whose start partition its
    index must share (for a source: itself; for an indirect dst: the source, or the source's
    index when that is indirect in PSUM)."""
    views = dict(pairs)
    for role, t in pairs:
        if not _is_ti(t):
            continue
        index = t.dynamic.index
        start = _start_partition(index)
        if start is not None and start % 32:
            raise TargetError(f"{label}: the index {index.name} of {role} {t.name}.indirect() "
                              f"starts at partition {start}; an indirect index starts on a "
                              "quadrant boundary (a multiple of 32)", code="APK345",
                              help="place the index tile at partition 0, 32, 64 or 96",
                              start=start)
        other_role = index_of.get(role)
        if other_role is None or start is None:
            continue
        other = views[other_role]
        if other_role == role:
            target, what = _start_partition(t), f"{role} {t.name} itself"
        elif other.buffer == "psum":
            if not _is_ti(other):
                continue  # the docs state no rule for this pair
            target = _start_partition(other.dynamic.index)
            what = f"the index of {other_role} {other.name}"
        else:
            target, what = _start_partition(other), f"{other_role} {other.name}"
        if target is not None and target != start:
            raise TargetError(f"{label}: the index {index.name} of {role} {t.name}.indirect() "
                              f"starts at partition {start}, but {what} starts at {target}; "
                              "they must start on the same partition", code="APK345",
                              help="allocate the index on the same partitions as "
                              f"{what}", start=start, expected=target)


# -- dma_copy ---------------------------------------------------------------------------------

def dma_copy(dst: Tensor, src: Tensor, priority: int | None = None, oob_mode: Any = "error",
             dge_mode: Any = "unknown", engine: Any = "unknown", name: str | None = None) -> None:
    """Copy `src` to `dst` in logical row-major order (any buffers of one family), converting
    the dtype through float32.  The NKI hints are checked (`apdsl.runtime.hints`); with
    `oob_mode="skip"` an out-of-range index is still reported, not skipped.

    >>> src = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4))
    >>> dst = apdsl.ndarray((4, 2), "float32", "sbuf")
    >>> apdsl.dma_copy(dst, src.permute((1, 0)))
    >>> dst.numpy()[:, 1]
    array([4., 5., 6., 7.], dtype=float32)
    """
    label = _label("dma_copy", name)
    dst, src = _tensor(dst, label, "dst"), _tensor(src, label, "src")
    fam_d, fam_s = targets.family(dst.buffer), targets.family(src.buffer)
    if fam_d != fam_s:
        raise TargetError(f"{label}: cannot copy between an {fam_s.upper()} buffer ({src.buffer}) "
                          f"and an {fam_d.upper()} buffer ({dst.buffer})", code="APK305",
                          notes=["NKI buffers: sbuf, psum, hbm, private_hbm, shared_hbm; Ascend "
                                 "buffers: gm, l1, l0a, l0b, l0c, ub"],
                          help="a kernel targets one accelerator family; keep both operands in it")
    for role, t in (("dst", dst), ("src", src)):
        if _is_ti(t):
            raise TargetError(f"{label}: {role} {t.name} is a Tensor Indirection view "
                              "(indirect()); DMA cannot use it", code="APK307",
                              help="use vector_select or .ap(vector_offset=) for a DMA gather, "
                              "or a compute instruction such as tensor_copy for indirect()")
    for role, t in (("dst", dst), ("src", src)):
        if t.buffer == "psum":
            raise TargetError(f"{label}: {role} {t.name} is in PSUM; DMA moves data between "
                              "SBUF and HBM only", code="APK342",
                              notes=["NKI dma_copy: both src and dst are in HBM or SBUF"],
                              help="tensor_copy the PSUM tile into SBUF first, then dma_copy "
                              "the SBUF tile" if role == "src" else "dma_copy into SBUF, then "
                              "tensor_copy into PSUM", buffer=t.buffer, role=role)
    oob = "error"
    if fam_d == "nki":
        _, oob = hints.dma(label, dst, src, priority, oob_mode, dge_mode, engine)
    if fam_d == "ascend":
        _ascend_dma_copy(dst, src, name, label)
        return
    try:
        _dma(dst, src, name, label)
    except ApdslRuntimeError as err:
        if oob == "skip" and err.code in ("APK402", "APK403"):
            err.notes = [*err.notes, "oob_mode=skip is not modelled: apdsl reports an "
                         "out-of-range index instead of skipping its row"]
        raise


def _dma(dst: Tensor, src: Tensor, name: str | None, label: str) -> None:
    accs = _operands(label, ex.TI_GROUP, ("src", src), ("dst", dst))
    ss, ds = _shapes(accs, src, dst)
    if ss is not None and ds is not None and prod(ss) != prod(ds):
        raise TargetError(f"{label}: dst has {prod(ds)} elements {ds}, src has {prod(ss)} "
                          f"{ss}", code="APK306",
                          notes=[f"dst {dst.name} @ {dst.buffer}, src {src.name} @ {src.buffer}"],
                          help="a DMA moves elements in row-major order; both sides must hold "
                          "the same number of elements", dst_shape=ds, src_shape=ss)
    trace.record("dma_copy", name, {"dst": dst, "src": src})
    if accs is not None:
        ex.copy(accs[1], accs[0], label)


def _ascend_copy_rules(dst: Tensor, src: Tensor, label: str = "dma_copy") -> None:
    """The Ascend DMA path rule (alignment and TLA rules: `apdsl.runtime.ascend`)."""
    path = (src.buffer, dst.buffer)
    if path not in ASCEND_PATHS:
        allowed = sorted(b for a, b in ASCEND_PATHS if a == src.buffer)
        raise TargetError(
            f"{label}: no DMA path from {src.buffer.upper()} to {dst.buffer.upper()} on Ascend",
            code="APK308",
            notes=["paths: GM->L1, GM->UB, GM->L0A, GM->L0B (Load2D), L1->L0A, L1->L0B "
                   "(LoadData), L0C->GM, L0C->L1 (Fixpipe), UB->GM, UB->UB"],
            help=(f"from {src.buffer.upper()} a copy can go to "
                  f"{', '.join(b.upper() for b in allowed)}" if allowed
                  else f"nothing is copied out of {src.buffer.upper()} by DMA"),
            src=src.buffer, dst=dst.buffer)


def _ascend_dma_copy(dst: Tensor, src: Tensor, name: str | None, label: str) -> None:
    """The Ascend DMA: the path rule, then `apdsl.runtime.ascend.dma_copy` (alignment, TLA
    valid extents, the row-major copy and the GM -> fractal row-tail zero-fill)."""
    _ascend_copy_rules(dst, src, label)
    from . import ascend
    ascend.dma_copy(dst, src, name, label)


# -- tensor_copy ------------------------------------------------------------------------------

def tensor_copy(dst: Tensor, src: Tensor, engine: Any = "unknown",
                name: str | None = None) -> None:
    """Copy on chip: each partition's elements stay in that partition.

    >>> x = apdsl.ndarray((2, 3), "float32", "sbuf")
    >>> apdsl.memset(x, 1.5)
    >>> y = apdsl.ndarray((2, 3), "float32", "psum")
    >>> apdsl.tensor_copy(y, x)
    >>> y.numpy()[1]
    array([1.5, 1.5, 1.5], dtype=float32)
    """
    label = _label("tensor_copy", name)
    dst, src = _tensor(dst, label, "dst"), _tensor(src, label, "src")
    _onchip(src, label, "src")
    _onchip(dst, label, "dst")
    hints.tensor_copy_engine(label, engine, (("src", src), ("dst", dst)),
                             _is_ti(src) or _is_ti(dst))
    _start_partitions(label, (("src", src), ("dst", dst)))
    _ti_partitions(label, {"src": "src", "dst": "src"}, ("src", src), ("dst", dst))
    accs = _operands(label, ex.TI_GROUP, ("src", src), ("dst", dst))
    ss, ds = _shapes(accs, src, dst)
    if ss is not None and ds is not None and (ss[0] != ds[0] or _free(ss) != _free(ds)):
        raise TargetError(f"{label}: dst has {ds[0]} partitions of {_free(ds)} elements, src "
                          f"{ss[0]} of {_free(ss)}", code="APK311",
                          notes=[f"dst shape {ds}, src shape {ss}"],
                          help="tensor_copy keeps data in its partition: use the same partition "
                          "count and elements per partition (dma_copy can move across "
                          "partitions)", dst_shape=ds, src_shape=ss)
    trace.record("tensor_copy", name, {"dst": dst, "src": src})
    if accs is not None:
        ex.copy(accs[1], accs[0], label)


# -- memset -----------------------------------------------------------------------------------

def memset(dst: Tensor, value: Any, engine: Any = "unknown", name: str | None = None) -> None:
    """Set every element of `dst` to `value` (cast to dst's dtype).

    >>> t = apdsl.ndarray((2, 3), "int32", "sbuf")
    >>> apdsl.memset(t, 7)
    >>> t.numpy()
    array([[7, 7, 7],
           [7, 7, 7]], dtype=int32)
    """
    label = _label("memset", name)
    dst = _tensor(dst, label, "dst")
    if targets.family(dst.buffer) == "ascend":
        from . import ascend
        dst = ascend.memset_target(dst, label)  # buffers, dtypes, alignment, whole fractals
    if dst.buffer not in MEMSET_BUFFERS:
        raise TargetError(f"{label}: dst {dst.name} is in {dst.buffer}; memset writes "
                          f"{', '.join(MEMSET_BUFFERS)} only", code="APK312",
                          help="memset an on-chip tile and dma_copy it out", buffer=dst.buffer)
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if not isinstance(value, (int, float, bool)):
        raise _arg_error(label, f"value must be a number, got {value!r}")
    v = ex.cast(np.asarray(value), dst.dtype)
    if targets.family(dst.buffer) == "nki":
        hints.compute_engine(label, engine, ("vector", "gpsimd"), (("dst", dst),), _is_ti(dst))
    _start_partitions(label, (("dst", dst),))
    accs = _operands(label, ex.TI_GROUP, ("dst", dst))
    trace.record("memset", name, {"dst": dst})
    if accs is not None:
        ex.prepare_write(accs[0], label, "dst")
        ex.fill(accs[0], v[()])


# -- iota -------------------------------------------------------------------------------------

def iota(dst: Tensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0,
         name: str | None = None) -> None:
    """`dst[p, i...] = offset + p * channel_multiplier + sum(i_k * step_k)`, in int32, then
    cast to dst's dtype.

    >>> offsets = apdsl.ndarray((4, 1), "int32", "sbuf")
    >>> apdsl.iota(offsets, [[1, 1]], 0, 2)          # offsets[p] = 2 * p
    >>> offsets.numpy().ravel()
    array([0, 2, 4, 6], dtype=int32)
    """
    label = _label("iota", name)
    dst = _tensor(dst, label, "dst")
    _onchip(dst, label, "dst")
    if dst.buffer != "sbuf":
        raise TargetError(f"{label}: dst {dst.name} is in {dst.buffer}; iota (GpSimd Engine) "
                          "writes SBUF only", code="APK339",
                          notes=["GpSimd cannot access PSUM"],
                          help="iota into an SBUF tile, then tensor_copy it into PSUM",
                          buffer=dst.buffer)
    offset = _int(offset, label, "offset")
    cm = _int(channel_multiplier, label, "channel_multiplier")
    if not isinstance(pattern, (list, tuple)) or not pattern or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in pattern):
        raise _arg_error(label, f"pattern must be a list of [step, count] pairs, got "
                         f"{pattern!r}", help="for example [[1, 64]] counts 0..63")
    steps = [_int(s, label, "a pattern step") for s, _ in pattern]
    counts = [_int(c, label, "a pattern count") for _, c in pattern]
    if any(c < 1 for c in counts):
        raise _arg_error(label, f"pattern counts must be >= 1, got {counts}")
    if len(pattern) > 4:
        raise TargetError(f"{label}: the pattern has {len(pattern)} [step, count] entries; iota "
                          "takes at most 4", code="APK340", notes=[f"pattern {list(pattern)}"],
                          help="merge entries whose steps chain (step_outer == step_inner * "
                          "count_inner), or split the tile and issue several iotas",
                          entries=len(pattern))
    _start_partitions(label, (("dst", dst),))
    accs = _operands(label, ex.TI_GROUP, ("dst", dst))
    (shape,) = _shapes(accs, dst)
    if shape is not None and prod(counts) != _free(shape):
        free = _free(shape)
        raise TargetError(f"{label}: the pattern's counts {counts} give {prod(counts)} elements "
                          f"per partition; dst {dst.name} has {free}", code="APK313",
                          notes=[f"dst shape {shape}"],
                          help=f"make the counts multiply to {free}", counts=counts,
                          elements=free)
    trace.record("iota", name, {"dst": dst})
    if accs is None:
        return
    d = accs[0]
    parts = d.shape[0]
    n = len(counts)
    # int32 arithmetic wraps, so reducing every operand to int32 first changes nothing and
    # keeps any Python int (even past int64) off NumPy's overflow path
    offset, cm = _wrap32(offset), _wrap32(cm)
    steps = [_wrap32(s) for s in steps]
    vals = np.full((), offset, np.int64) + (np.arange(parts, dtype=np.int64) * cm).reshape(
        (parts,) + (1,) * n)
    for k, (s, c) in enumerate(zip(steps, counts)):
        vals = vals + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    vals = vals.astype(np.int32)  # int32 arithmetic wraps
    ex.prepare_write(d, label, "dst")
    ex.store(d, vals.reshape(d.shape))


def _wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


# -- nc_matmul --------------------------------------------------------------------------------

# Input dtypes of the tensor engine (NKI nc_matmul docstring); float8_e4m3fn from trn3 on.
MATMUL_INPUTS = ("float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32")
_WIDE = ("float32", "tfloat32")
_FP8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn")
PERF_MODES = ("none", "double_row")


def nc_matmul(dst: Tensor, stationary: Tensor, moving: Tensor,
              is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              is_transpose: bool = False, accumulate: bool | None = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = None,
              name: str | None = None) -> None:
    """`dst (+)= stationary.T @ moving` in float32 on the tensor engine, K on partitions:
    stationary (K, M) and moving (K, N) in SBUF, dst (M, N) in PSUM.  `accumulate=None` infers
    overwrite or accumulate from the PSUM state (`apdsl.runtime.psum`); with
    `perf_mode="double_row"` K is split over the partitions and a first free dim of 2;
    `is_transpose=True` (trn2 on) moves stationary's bits transposed through a 0/1 moving.

    >>> stationary = apdsl.ndarray((4, 2), "float32", "sbuf")    # K = 4, M = 2
    >>> moving = apdsl.ndarray((4, 3), "float32", "sbuf")        # K = 4, N = 3
    >>> apdsl.memset(stationary, 1.0)
    >>> apdsl.memset(moving, 2.0)
    >>> dst = apdsl.ndarray((2, 3), "float32", "psum")
    >>> apdsl.nc_matmul(dst, stationary, moving)
    >>> dst.numpy()[0]
    array([8., 8., 8.], dtype=float32)
    """
    label = _label("nc_matmul", name)
    dst = _tensor(dst, label, "dst")
    stationary = _tensor(stationary, label, "stationary")
    moving = _tensor(moving, label, "moving")
    for what, flag in (("is_stationary_onezero", is_stationary_onezero),
                       ("is_moving_onezero", is_moving_onezero), ("is_transpose", is_transpose)):
        if not isinstance(flag, (bool, np.bool_)):
            raise _arg_error(label, f"{what} must be True or False, got {flag!r}")
    if accumulate is not None and not isinstance(accumulate, (bool, np.bool_)):
        raise _arg_error(label, f"accumulate must be True, False or None, got {accumulate!r}")
    tgt = targets.target_for(dst.buffer)
    double = _perf_mode(perf_mode, label, tgt)
    # On trn1 transpose mode is only a profiler label: the instruction is an ordinary matmul.
    transpose = bool(is_transpose) and tgt.name != "trn1"
    for role, t in (("stationary", stationary), ("moving", moving)):
        if t.buffer != "sbuf":
            raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; matmul inputs are "
                              "read from SBUF", code="APK309",
                              help=f"copy {role} into an sbuf tile first", buffer=t.buffer,
                              role=role)
    _matmul_dtypes(dst, stationary, moving, tgt, label, transpose, double)
    if is_transpose and accumulate:
        raise TargetError(f"{label}: transpose mode (is_transpose=True) cannot accumulate",
                          code="APK336", help="drop accumulate=True: a transpose overwrites dst")
    _start_partitions(label, (("stationary", stationary), ("moving", moving), ("dst", dst)))
    _matmul_indirection(label, dst, stationary, moving, transpose, tile_position)
    accs = _operands(label, ex.TI_GROUP_MATMUL, ("stationary", stationary), ("moving", moving),
                     ("dst", dst))
    ss, ms, ds = _shapes(accs, stationary, moving, dst)
    if ss is None or ms is None or ds is None:  # check mode with register-sized views
        trace.record("nc_matmul", name, {"dst": dst, "stationary": stationary, "moving": moving})
        return
    k, mm, n = _matmul_shapes(ss, ms, ds, label, double)
    rows, cols = _tiling(tile_position, tile_size, label, tgt, double)
    limit_n = tgt.matmul_max_n * (2 if dst.dtype.name == "bfloat16" and not transpose else 1)
    # (in double_row mode K is the partitions times 2; the partitions are what is limited)
    limits = (("K", ss[0], rows), ("M", mm, cols), ("N", n, limit_n))
    for what, val, lim in limits:
        if val > lim:
            tiled = " with this tile_size" if lim < tgt.partitions and what != "N" else ""
            raise TargetError(f"{label}: {what} = {val} exceeds {lim} on {tgt.name}{tiled}",
                              code="APK314",
                              notes=[f"limits on {tgt.name}: K <= {rows}, M <= {cols}, "
                                     f"N <= {limit_n}"],
                              help=f"split {what} into tiles of at most {lim}"
                              + (" and accumulate over K tiles" if what == "K" else ""),
                              dim=what, value=val, limit=lim)
    if tgt.name in ("trn1", "trn2"):
        if accs is not None:
            _check_psum_bank(accs[2], tgt, label)
        elif dst.dynamic is None and dst.layout.static:
            _check_psum_bank(ex.resolve(dst, label, "dst"), tgt, label)
    trace.record("nc_matmul", name, {"dst": dst, "stationary": stationary, "moving": moving})
    if accs is None:
        return
    s, m, d = accs
    # a transpose (even trn1's labelled one) is not an accumulating-kind matmul: it overwrites
    adding = False if is_transpose else _accumulation(d, accumulate, tgt, label)
    if transpose:  # bits move as they are, tfloat32 included
        result = _transpose_bits(ex.read(s, label, "stationary").reshape(k, mm),
                                 ex.read(m, label, "moving").reshape(k, n), label)
    elif double:  # K = partitions x 2: contract over both
        a32 = _engine_read(s, label, "stationary").reshape(k // 2, 2, mm)
        b32 = _engine_read(m, label, "moving").reshape(k // 2, 2, n)
        result = np.einsum("pkm,pkn->mn", a32, b32, dtype=np.float32)
    else:
        a = _engine_read(s, label, "stationary").reshape(k, mm)
        b = _engine_read(m, label, "moving").reshape(k, n)
        result = a.T @ b
    if adding:
        result += ex.read_float32(d, label, "dst").reshape(mm, n)
    ex.prepare_write(d, label, "dst")
    ex.store(d, result.reshape(d.shape))
    psum.note_matmul(d, bool(is_transpose))


# Tensor Engine dtypes an indirect() matmul operand may have (NKI nc_matmul docstring).
_TI_MATMUL = ("float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn")


def _matmul_indirection(label: str, dst: Tensor, st: Tensor, mv: Tensor, transpose: bool,
                        tile_position: Any) -> None:
    """The nc_matmul docstring's Tensor Indirection rules (trn3)."""
    pairs = (("stationary", st), ("moving", mv), ("dst", dst))
    if not any(_is_ti(t) for _, t in pairs):
        return
    for role, t in pairs:
        if _is_ti(t) and t.dtype.name not in _TI_MATMUL:
            raise TargetError(f"{label}: {role} {t.name}.indirect() is {t.dtype}; an indirect "
                              f"matmul operand is {', '.join(_TI_MATMUL)}", code="APK346",
                              help="gather into a tile first (tensor_copy with indirect()), "
                              "or use a 16- or 8-bit float dtype", role=role)
    if transpose and _is_ti(mv):
        raise TargetError(f"{label}: in transpose mode moving cannot use indirect()",
                          code="APK346", help="gather moving into a tile first")
    if isinstance(tile_position, (list, tuple)) and tile_position and \
            tuple(tile_position) != (0, 0):
        raise TargetError(f"{label}: Tensor Indirection is incompatible with tiling: "
                          f"tile_position must be (0, 0) or unset, not {tuple(tile_position)}",
                          code="APK346", help="drop tile_position/tile_size, or gather first")
    _ti_partitions(label, {"stationary": "stationary", "moving": "moving",
                           "dst": "stationary"}, *pairs)


def _engine_read(acc: ex.Access, label: str, role: str) -> np.ndarray:
    """An input as the tensor engine reads it, in float32: tfloat32 keeps 10 mantissa bits."""
    values = ex.read_float32(acc, label, role)
    return round_tfloat32(values) if acc.dtype.name == "tfloat32" else values


def _perf_mode(perf_mode: Any, label: str, tgt: targets.Target) -> bool:
    """True for double_row (FP8 double performance mode, trn2 and later)."""
    mode = getattr(perf_mode, "name", perf_mode)  # an enum member or its name
    mode = "none" if mode is None else mode
    if mode not in PERF_MODES:
        raise TargetError(f"{label}: perf_mode must be one of {', '.join(PERF_MODES)}, got "
                          f"{perf_mode!r}", code="APK337",
                          help='perf_mode="double_row" enables FP8 double performance mode')
    if mode == "double_row" and tgt.name == "trn1":
        raise TargetError(f"{label}: perf_mode=\"double_row\" needs trn2 or later; the target "
                          "is trn1", code="APK337",
                          help="drop perf_mode on trn1, or run with --target trn2")
    return mode == "double_row"


def _matmul_dtypes(dst: Tensor, st: Tensor, mv: Tensor, tgt: targets.Target, label: str,
                   transpose: bool, double: bool) -> None:
    """The dtype rules of the NKI nc_matmul docstring."""
    allowed = MATMUL_INPUTS + (("float8_e4m3fn",) if tgt.name == "trn3" else ())
    for role, t in (("stationary", st), ("moving", mv)):
        name = t.dtype.name
        if name in allowed and (not double or name in _FP8):
            continue
        if double:
            why = "double_row mode takes float8 inputs only"
            fix = "cast to float8_e4m3/float8_e5m2, or drop perf_mode"
        elif t.dtype.kind in "iu":
            why = "the tensor engine has no integer inputs"
            fix = "cast to bfloat16 (exact for |values| <= 256) or float32 with tensor_copy"
        elif name == "float8_e4m3fn":
            why = f"float8_e4m3fn (OCP FP8) inputs need trn3; the target is {tgt.name}"
            fix = "use float8_e4m3, or run with --target trn3"
        else:
            why = f"{name} is not a tensor engine input dtype"
            fix = "cast to bfloat16, float16, float8 or float32 with tensor_copy"
        raise TargetError(f"{label}: {role} {t.name} is {name}; {why}", code="APK333",
                          notes=[f"inputs on {tgt.name}: {', '.join(allowed)}"], help=fix,
                          role=role, dtype=name)
    names = {st.dtype.name, mv.dtype.name}
    if names == {"float8_e4m3", "float8_e4m3fn"}:
        raise TargetError(f"{label}: stationary is {st.dtype} and moving {mv.dtype}; legacy "
                          "float8_e4m3 and OCP float8_e4m3fn cannot be mixed", code="APK334",
                          help="convert one side so both use the same e4m3 format")
    if (st.dtype.name in _WIDE) != (mv.dtype.name in _WIDE):
        wide, other = (("stationary", "moving") if st.dtype.name in _WIDE
                       else ("moving", "stationary"))
        od = (mv if other == "moving" else st).dtype
        wd = (st if wide == "stationary" else mv).dtype
        raise TargetError(f"{label}: {wide} is {wd} but {other} is {od}; a float32/tfloat32 "
                          "input needs a float32/tfloat32 partner", code="APK317",
                          help=f"cast {other} to float32 (tensor_copy into an f32 tile), or "
                          f"{wide} to {od}")
    if dst.buffer != "psum":
        raise TargetError(f"{label}: dst {dst.name} is in {dst.buffer}; the tensor engine "
                          "writes PSUM", code="APK315",
                          help="declare the result f32[M, N] @ psum and tensor_copy it to SBUF",
                          buffer=dst.buffer, dtype=str(dst.dtype))
    if transpose:
        if not dst.dtype == st.dtype == mv.dtype:
            raise TargetError(f"{label}: transpose mode moves bits: dst, stationary and moving "
                              f"need one dtype, not {dst.dtype}, {st.dtype} and {mv.dtype}",
                              code="APK336", help=f"declare dst as {st.dtype} and pass a "
                              f"{st.dtype} identity as moving")
        return
    outs = ("float32", "bfloat16") if tgt.name == "trn3" else ("float32",)
    if dst.dtype.name not in outs:
        raise TargetError(f"{label}: dst {dst.name} is {dst.dtype}; the tensor engine writes "
                          f"{' or '.join(outs)} on {tgt.name}", code="APK315",
                          notes=["bfloat16 results need trn3"] if dst.dtype.name == "bfloat16"
                          else [],
                          help="declare the result f32[M, N] @ psum and tensor_copy it to SBUF "
                          "(that converts the dtype)", buffer=dst.buffer, dtype=str(dst.dtype))


def _matmul_shapes(ss: tuple[int, ...], ms: tuple[int, ...], ds: tuple[int, ...], label: str,
                   double: bool) -> tuple[int, int, int]:
    """(K, M, N) from the operand shapes; in double_row mode K counts both contraction dims."""
    if double:
        if len(ss) < 3 or len(ms) < 3 or ss[1] != 2 or ms[1] != 2:
            raise TargetError(f"{label}: in double_row mode stationary and moving are (P, 2, "
                              f"...): the contraction is split over the partitions and a first "
                              f"free dim of 2; got stationary {ss}, moving {ms}", code="APK337",
                              help="for a [1, 256] @ [256, 3] product pass stationary "
                              "[128, 2, 1] and moving [128, 2, 3]")
        k, mm, k2, n = ss[0] * 2, prod(ss[2:]), ms[0] * 2, prod(ms[2:])
    else:
        k, mm, k2, n = ss[0], _free(ss), ms[0], _free(ms)
    if k != k2 or ds[0] != mm or _free(ds) != n:
        raise TargetError(f"{label}: shapes do not fit dst (M, N) = stationary.T (M, K) @ moving "
                          f"(K, N): stationary {ss}, moving {ms}, dst {ds}", code="APK318",
                          notes=[f"K: stationary {k}, moving {k2}; M: stationary {mm}, dst "
                                 f"{ds[0]}; N: moving {n}, dst {_free(ds)}"],
                          help="contract over the partition dim: stationary (K, M), moving "
                          "(K, N), dst (M, N)")
    return k, mm, n


def _tiling(position: Any, size: Any, label: str, tgt: targets.Target,
            double: bool) -> tuple[int, int]:
    """The (row, column) tile of the 128 x 128 array a matmul may use (NKI docstring: 2 x 64
    tiles on trn1, 4 x 32 from trn2; start on a multiple of the tile size; both or neither
    given; no column tiling in double_row mode)."""
    full = tgt.partitions
    if not isinstance(position, (list, tuple)) or not isinstance(size, (list, tuple)):
        raise _arg_error(label, f"tile_position and tile_size are (row, column) tuples, got "
                         f"{position!r} and {size!r}")
    if not position and not size:
        return full, full
    sizes = (64, 128) if tgt.name == "trn1" else (32, 64, 128)
    ok = len(position) == 2 and len(size) == 2 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (*position, *size))
    if ok:
        (r0, c0), (rs, cs) = position, size
        ok = rs in sizes and cs in sizes and r0 % rs == 0 and c0 % cs == 0 and \
            0 <= r0 and r0 + rs <= full and 0 <= c0 and c0 + cs <= full
    if not ok:
        raise TargetError(f"{label}: tile_position {tuple(position)!r} with tile_size "
                          f"{tuple(size)!r} is not a tile of the {full} x {full} array on "
                          f"{tgt.name}", code="APK338",
                          notes=[f"tile sizes on {tgt.name}: {', '.join(map(str, sizes))}; a "
                                 "tile starts on a multiple of its size"],
                          help="give both, for example tile_position=(64, 0), "
                          "tile_size=(64, 128) for the bottom half of the rows")
    if double and size[1] < full:
        raise TargetError(f"{label}: double_row mode cannot be combined with column tiling "
                          f"(tile_size {tuple(size)!r})", code="APK337",
                          help=f"use a column size of {full}, or drop perf_mode")
    return int(size[0]), int(size[1])


def _accumulation(d: ex.Access, accumulate: bool | None, tgt: targets.Target,
                  label: str) -> bool:
    """Whether this matmul adds into dst (SPEC section 4's rule over the PSUM state)."""
    if accumulate is False:
        return False
    counts = psum.counts(d)
    item = max(d.dtype.bits // 8, 1)
    total = int(counts.sum()) // item
    adding = int(counts[psum.ACCUMULATING]) // item
    where = f"dst {d.name} (shape {d.shape}, storage {d.storage.describe()})"

    def first(*states: int) -> str:
        # the first logical element in one of `states` (only on the error path)
        found = np.isin(psum.element_states(d), states)
        coord = np.unravel_index(int(np.argmax(found)), d.shape)
        return f"{d.name}[{', '.join(str(int(c)) for c in coord)}]"

    if accumulate is None:
        if adding and adding != total:
            fresh = (psum.NEW, psum.OTHER_NO_MATMUL, psum.MATMUL_LAST_WROTE,
                     psum.OTHER_WROTE_AFTER_MATMUL)
            raise ApdslRuntimeError(
                f"{label}: accumulate=None cannot decide: part of {where} holds an "
                "accumulation an earlier nc_matmul started, part is fresh", code="APK330",
                notes=[f"{adding} of {total} elements are accumulating (last written by "
                       f"nc_matmul; first {first(psum.ACCUMULATING)}), {total - adding} are "
                       f"fresh (new, or last touched by another instruction; first "
                       f"{first(*fresh)})"],
                help="pass accumulate=False to start a new accumulation or accumulate=True "
                "to add to it, or cover exactly the earlier matmuls' dst")
        return adding > 0
    unmatmuled = int(counts[psum.NEW] + counts[psum.OTHER_NO_MATMUL]) // item
    if unmatmuled:
        raise ApdslRuntimeError(
            f"{label}: accumulate=True onto {where}, which no nc_matmul has written",
            code="APK331", notes=[f"{unmatmuled} of {total} elements were never written by a "
                                  f"matmul (first {first(psum.NEW, psum.OTHER_NO_MATMUL)}); "
                                  "accumulating there is undefined on hardware"],
            help="start the accumulation with accumulate=False (or leave accumulate=None)")
    other = int(counts[psum.OTHER_WROTE_AFTER_MATMUL]) // item
    if other and tgt.name in ("trn1", "trn2"):
        raise ApdslRuntimeError(
            f"{label}: accumulate=True onto {where}, which another instruction wrote after "
            f"the last nc_matmul; on {tgt.name} that is undefined", code="APK332",
            notes=[f"{other} of {total} elements were last written by a non-matmul "
                   f"instruction such as memset or tensor_copy (first "
                   f"{first(psum.OTHER_WROTE_AFTER_MATMUL)})"],
            help="start with accumulate=False, or add the value in SBUF after the matmuls")
    return True


def _transpose_bits(a: np.ndarray, b: np.ndarray, label: str) -> np.ndarray:
    """Transpose mode: dst[m, n] = stationary[k, m] where moving[k, n] is 1 (bit for bit), 0
    where a column of moving is all zero.  Another moving has no documented meaning."""
    ones = b.astype(np.float32)
    col_ones = (ones == 1).sum(axis=0)
    if not (((ones == 0) | (ones == 1)).all() and (col_ones <= 1).all()):
        raise TargetError(f"{label}: transpose mode needs moving to be a 0/1 selection "
                          "matrix (an identity, at most one 1 per column)", code="APK336",
                          help="pass an identity matrix as moving, or is_transpose=False to "
                          "multiply")
    src = np.argmax(ones == 1, axis=0)
    out = a.T[:, src]  # (M, N), the input dtype's exact values
    zero = col_ones == 0
    if zero.any():
        out = out.copy()
        out[:, zero] = 0
    return out


def _check_psum_bank(d: ex.Access, tgt: targets.Target, label: str) -> None:
    """A matmul result must lie within one 2 KiB PSUM bank of each partition (trn1/trn2)."""
    storage = d.storage
    per_part = storage.nbytes // storage.shape[0]
    item = d.dtype.bits // 8
    if isinstance(d, ex.Strided) and d.layout is not None and d.layout.dims[0].is_plain:
        layout = d.layout
        rest = [(c, s) for dim in layout.dims[1:] for s, c in dim.leaves()]
        lo_f, hi_f = pattern_bounds(0, tuple(c for c, _ in rest), tuple(s for _, s in rest))
        start = (layout.base * item) % per_part
        lo, hi = start + lo_f * item, start + hi_f * item + item - 1
    else:
        within = (d.offsets().astype(np.int64) * item) % per_part
        lo, hi = int(within.min()), int(within.max()) + item - 1
    first, last = (storage.address + lo), (storage.address + hi)
    bank = tgt.psum_bank_bytes
    if first // bank != last // bank:
        raise TargetError(f"{label}: dst {d.name} spans PSUM bytes {first}..{last} of "
                          f"each partition, crossing banks {first // bank} and {last // bank}",
                          code="APK316",
                          notes=[f"PSUM on {tgt.name}: {tgt.psum_banks} banks of {bank} bytes "
                                 f"({bank // 4} float32) per partition",
                                 f"{storage.describe()} starts at byte {storage.address}"],
                          help=f"keep N * 4 bytes within one bank: at most {bank // 4} float32 "
                          "columns starting on a bank boundary", first=first, last=last)


# -- registers --------------------------------------------------------------------------------

def register_alloc(value: int | None = None, name: str | None = None) -> VirtualRegister:
    """A virtual register, optionally holding an initial value.

    >>> r = apdsl.register_alloc(5)
    >>> r.value
    5
    >>> t = apdsl.ndarray((16, 32), "float32", "sbuf")
    >>> t.ap([[32, 16], [1, r]]).shape[0]                # a count decided at run time
    16
    """
    if value is not None:
        value = _int(value, "register_alloc", "value")
    return VirtualRegister(value, name=name or "")


def register_load(reg: VirtualRegister, t: Tensor, name: str | None = None) -> None:
    """Load the integer in the one-element ([1] or [1, 1]) tensor `t` (SBUF or HBM, at most
    32-bit) into register `reg`.

    >>> t = apdsl.ndarray((1, 1), "int32", "sbuf")
    >>> apdsl.memset(t, 7)
    >>> r = apdsl.register_alloc()
    >>> apdsl.register_load(r, t)
    >>> r.value
    7
    """
    label = _label("register_load", name)
    if not isinstance(reg, VirtualRegister):
        raise _arg_error(label, f"the first argument must be a register, got {reg!r}",
                         help="make one with register_alloc()")
    t = _tensor(t, label, "src")
    if t.buffer != "sbuf" and t.buffer not in targets.NKI_HBM:
        raise TargetError(f"{label}: src {t.name} is in {t.buffer}; a register loads from SBUF "
                          "or HBM", code="APK344",
                          help="tensor_copy the value into an SBUF tile first"
                          if t.buffer == "psum" else "copy the value into SBUF or HBM first",
                          buffer=t.buffer)
    if tuple(t.shape) not in ((1,), (1, 1)) or t.dtype.kind not in "iu" or t.dtype.bits > 32:
        raise TargetError(f"{label}: a register loads from a [1] or [1, 1] integer tensor of "
                          f"at most 32 bits, not {t.dtype}{list(t.shape)}", code="APK319",
                          help="slice one element: t[0:1, 0:1], of an int32 tile",
                          shape=tuple(t.shape), dtype=str(t.dtype))
    accs = _operands(label, ex.TI_GROUP, ("src", t))
    trace.record("register_load", name, {"src": t})
    if accs is not None:
        reg.value = int(ex.read(accs[0], label, "src").reshape(-1)[0])
    else:  # check mode reads no memory: the register's value is now unknown
        reg.value = None
