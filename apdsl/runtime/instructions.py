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
from ..tensor import targets
from ..tensor.dtypes import DTYPES
from ..tensor.registers import VirtualRegister
from ..tensor.view import Tensor
from . import execute as ex
from . import trace
from .options import OPTIONS

F32 = DTYPES["float32"]

# SPEC section 4: the Ascend copy paths a DMA (MTE) can take.
ASCEND_PATHS = frozenset({("gm", "l1"), ("gm", "ub"), ("l1", "l0a"), ("l1", "l0b"),
                          ("l0c", "gm"), ("l0c", "l1"), ("ub", "gm"), ("ub", "ub")})
MEMSET_BUFFERS = ("sbuf", "psum", "ub", "l1", "l0a", "l0b", "l0c")


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
    """The view's shape when no register decides it."""
    shape = tuple(t.shape)
    return shape if all(isinstance(n, (int, np.integer)) for n in shape) else None


def _operands(label: str, group: int, *pairs: tuple[str, Tensor]) -> list[ex.Access] | None:
    """Resolve the operands for execution (runtime indices and registers read, bounds
    checked).  In check mode (`options.execute` off) nothing is read: views without runtime
    parts are still bounds-checked, and None is returned."""
    for role, t in pairs:
        if t.dynamic is not None:
            ex.warn_static(t, label, role)
    if not OPTIONS.execute:
        for role, t in pairs:
            if t.dynamic is None and t.layout.static:
                ex.resolve(t, label, role, group=group)
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


# -- dma_copy ---------------------------------------------------------------------------------

def dma_copy(dst: Tensor, src: Tensor, name: str | None = None) -> None:
    """Copy `src` to `dst` in logical row-major order (any buffers of one family), converting
    the dtype through float32."""
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
    if fam_d == "ascend":
        _ascend_dma_copy(dst, src, name, label)
    else:
        _dma(dst, src, name, label)


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
            notes=["paths: GM->L1, GM->UB, L1->L0A, L1->L0B, L0C->GM, L0C->L1, UB->GM, UB->UB"],
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

def tensor_copy(dst: Tensor, src: Tensor, name: str | None = None) -> None:
    """Copy on chip: each partition's elements stay in that partition."""
    label = _label("tensor_copy", name)
    dst, src = _tensor(dst, label, "dst"), _tensor(src, label, "src")
    _onchip(src, label, "src")
    _onchip(dst, label, "dst")
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

def memset(dst: Tensor, value: Any, name: str | None = None) -> None:
    """Set every element of `dst` to `value` (cast to dst's dtype)."""
    label = _label("memset", name)
    dst = _tensor(dst, label, "dst")
    if dst.buffer not in MEMSET_BUFFERS:
        raise TargetError(f"{label}: dst {dst.name} is in {dst.buffer}; memset writes "
                          f"{', '.join(MEMSET_BUFFERS)} only", code="APK312",
                          help="memset an on-chip tile and dma_copy it out", buffer=dst.buffer)
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if not isinstance(value, (int, float, bool)):
        raise _arg_error(label, f"value must be a number, got {value!r}")
    v = ex.cast(np.asarray(value), dst.dtype)
    if targets.family(dst.buffer) == "ascend":
        from . import ascend
        ascend.check_alignment(dst, label, "dst")
    accs = _operands(label, ex.TI_GROUP, ("dst", dst))
    trace.record("memset", name, {"dst": dst})
    if accs is not None:
        ex.prepare_write(accs[0], label, "dst")
        ex.fill(accs[0], v[()])


# -- iota -------------------------------------------------------------------------------------

def iota(dst: Tensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0,
         name: str | None = None) -> None:
    """`dst[p, i...] = offset + p * channel_multiplier + sum(i_k * step_k)`, in int32, then
    cast to dst's dtype."""
    label = _label("iota", name)
    dst = _tensor(dst, label, "dst")
    _onchip(dst, label, "dst")
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
    vals = np.full((), offset, np.int64) + (np.arange(parts, dtype=np.int64) * cm).reshape(
        (parts,) + (1,) * n)
    for k, (s, c) in enumerate(zip(steps, counts)):
        vals = vals + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    vals = vals.astype(np.int32)  # int32 arithmetic wraps
    ex.prepare_write(d, label, "dst")
    ex.store(d, vals.reshape(d.shape))


# -- nc_matmul --------------------------------------------------------------------------------

def nc_matmul(dst: Tensor, stationary: Tensor, moving: Tensor, accumulate: bool = False,
              name: str | None = None) -> None:
    """`dst (+)= stationary.T @ moving` in float32, K on partitions: stationary (K, M), moving
    (K, N), dst (M, N) float32 in PSUM."""
    label = _label("nc_matmul", name)
    dst = _tensor(dst, label, "dst")
    stationary = _tensor(stationary, label, "stationary")
    moving = _tensor(moving, label, "moving")
    if not isinstance(accumulate, (bool, np.bool_)):
        raise _arg_error(label, f"accumulate must be True or False, got {accumulate!r}")
    if dst.buffer != "psum" or dst.dtype != F32:
        raise TargetError(f"{label}: dst {dst.name} is {dst.dtype} in {dst.buffer}; the tensor "
                          "engine writes float32 in PSUM", code="APK315",
                          help="declare the result f32[M, N] @ psum and tensor_copy/dma_copy it "
                          "out", buffer=dst.buffer, dtype=str(dst.dtype))
    for role, t in (("stationary", stationary), ("moving", moving)):
        if t.buffer != "sbuf":
            raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; matmul inputs are "
                              "read from SBUF", code="APK309",
                              help=f"copy {role} into an sbuf tile first", buffer=t.buffer,
                              role=role)
    if (stationary.dtype == F32) != (moving.dtype == F32):
        f32, other = (("stationary", "moving") if stationary.dtype == F32
                      else ("moving", "stationary"))
        od = (moving if other == "moving" else stationary).dtype
        raise TargetError(f"{label}: {f32} is float32 but {other} is {od}; float32 inputs need "
                          "float32 partners", code="APK317",
                          help=f"cast {other} to float32 (tensor_copy into an f32 tile), or "
                          f"{f32} to {od}")
    accs = _operands(label, ex.TI_GROUP_MATMUL, ("stationary", stationary), ("moving", moving),
                     ("dst", dst))
    ss, ms, ds = _shapes(accs, stationary, moving, dst)
    if ss is None or ms is None or ds is None:  # check mode with register-sized views
        trace.record("nc_matmul", name, {"dst": dst, "stationary": stationary, "moving": moving})
        return
    k, mm = ss[0], _free(ss)
    k2, n = ms[0], _free(ms)
    if k != k2 or ds[0] != mm or _free(ds) != n:
        raise TargetError(f"{label}: shapes do not fit dst (M, N) = stationary.T (M, K) @ moving "
                          f"(K, N): stationary {ss}, moving {ms}, dst {ds}", code="APK318",
                          notes=[f"K: stationary {k}, moving {k2}; M: stationary {mm}, dst "
                                 f"{ds[0]}; N: moving {n}, dst {_free(ds)}"],
                          help="contract over the partition dim: stationary (K, M), moving "
                          "(K, N), dst (M, N)")
    tgt = targets.target_for(dst.buffer)
    limits = (("K", k, tgt.partitions), ("M", mm, tgt.partitions), ("N", n, tgt.matmul_max_n))
    for what, val, lim in limits:
        if val > lim:
            raise TargetError(f"{label}: {what} = {val} exceeds {lim} on {tgt.name}",
                              code="APK314",
                              notes=[f"limits on {tgt.name}: K <= {tgt.partitions}, M <= "
                                     f"{tgt.partitions}, N <= {tgt.matmul_max_n}"],
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
    a = ex.read(s, label, "stationary").reshape(k, mm).astype(np.float32)
    b = ex.read(m, label, "moving").reshape(k, n).astype(np.float32)
    result = a.T @ b
    if accumulate:
        result += ex.read(d, label, "dst").reshape(mm, n)
    ex.prepare_write(d, label, "dst")
    ex.store(d, result.reshape(d.shape))


def _check_psum_bank(d: ex.Access, tgt: targets.Target, label: str) -> None:
    """A matmul result must lie within one 2 KiB PSUM bank of each partition (trn1/trn2)."""
    storage = d.storage
    per_part = storage.nbytes // storage.shape[0]
    item = d.dtype.bits // 8
    if isinstance(d, ex.Strided) and d.layout is not None and d.layout.dims[0].is_plain:
        layout = d.layout
        rest = [(c, s) for dim in layout.dims[1:] for s, c in dim.leaves()]
        lo_f, hi_f = ex._pattern_bounds(0, tuple(c for c, _ in rest), tuple(s for _, s in rest))
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
    """A virtual register, optionally holding an initial value."""
    if value is not None:
        value = _int(value, "register_alloc", "value")
    return VirtualRegister(value, name=name or "")


def register_load(reg: VirtualRegister, t: Tensor, name: str | None = None) -> None:
    """Load the integer in (1, 1) tensor `t` into register `reg`."""
    label = _label("register_load", name)
    if not isinstance(reg, VirtualRegister):
        raise _arg_error(label, f"the first argument must be a register, got {reg!r}",
                         help="make one with register_alloc()")
    t = _tensor(t, label, "src")
    if tuple(t.shape) != (1, 1) or t.dtype.kind not in "iu":
        raise TargetError(f"{label}: a register loads from a (1, 1) integer tensor, not "
                          f"{t.dtype}{list(t.shape)}", code="APK319",
                          help="slice one element: t[0:1, 0:1], of an int32 tile",
                          shape=tuple(t.shape), dtype=str(t.dtype))
    accs = _operands(label, ex.TI_GROUP, ("src", t))
    trace.record("register_load", name, {"src": t})
    if accs is not None:
        reg.value = int(ex.read(accs[0], label, "src").reshape(-1)[0])
