"""The data-movement instructions of SPEC section 4: `dma_copy`, `tensor_copy`, `memset` and
`iota` (their declarations: `apdsl.runtime.table`)."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..errors import ApdslError, TargetError, Warning_
from ..tensor import targets
from ..tensor.machine import current
from ..tensor.view import Tensor
from .core import execute as ex
from .core import trace
from .core.dma import nki_dma
from .core.operands import (
    arg_error,
    check_start_partitions,
    check_ti_partitions,
    free_size,
    instruction_label,
    int_arg,
    is_ti,
    operand_shapes,
    refuse_packed_conversion,
    require_onchip,
    resolve_operands,
    step_count_pairs,
    tensor_arg,
)
from .nki import hints, oob
from .plans import ascend_plans, dmaplan
from .sync.warn import warn

MEMSET_BUFFERS = ("sbuf", "psum", "ub", "l1", "l0a", "l0b")



# -- dma_copy ---------------------------------------------------------------------------------

# The hint defaults, compared by identity: a call that leaves every hint out takes the short
# path (no hint rule can fail, nothing to record); one that spells a default out is checked.
_OOB, _DGE, _ENGINE = "error", "unknown", "unknown"


def dma_copy(dst: Tensor, src: Tensor, priority: int | None = None, oob_mode: Any = _OOB,
             dge_mode: Any = _DGE, engine: Any = _ENGINE, name: str | None = None) -> None:
    """Copy `src` to `dst` in logical row-major order (any buffers of one family), converting
    the dtype through float32.  The NKI hints are checked (`apdsl.runtime.nki.hints`) and
    recorded for `apdsl lower`; with `oob_mode="skip"` the rows of an indirect operand whose
    index is out of range are not moved (`apdsl.runtime.nki.oob`).

    >>> src = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4))
    >>> dst = apdsl.ndarray((4, 2), "float32", "sbuf")
    >>> apdsl.dma_copy(dst, src.permute((1, 0)))
    >>> dst.numpy()[:, 1]
    array([4., 5., 6., 7.], dtype=float32)
    """
    m = current()
    # (off: the general path only, the plans' oracle; under set_atomic_add a GM write reads
    # GM, which no plan does)
    planned = m.options.plans and "ascend.atomic" not in m.engine_state
    # an Ascend pair copied before by its fast plan: every check below passed for these very
    # views (a stdlib GEMM 2048^3 makes 10,368 such copies a run: 1.85x -> 1.65x-1.74x)
    if planned and ascend_plans.run_kept(dst, src, name):
        return
    defaults = priority is None and oob_mode is _OOB and dge_mode is _DGE and engine is _ENGINE
    # an NKI pair copied before (`dmaplan`: it records nothing for the Ascend race checker, so
    # it never sees an Ascend view, whose plans are `ascend_plans`')
    if defaults and planned and getattr(dst, "buffer", None) not in targets.ASCEND and \
            dmaplan.run(dst, src, name):
        return
    label = instruction_label("dma_copy", name)
    dst, src = tensor_arg(dst, label, "dst"), tensor_arg(src, label, "src")
    fam_d, fam_s = targets.family(dst.buffer), targets.family(src.buffer)
    if fam_d != fam_s:
        raise TargetError(f"{label}: cannot copy between an {fam_s.upper()} buffer ({src.buffer}) "
                          f"and an {fam_d.upper()} buffer ({dst.buffer})", code="APK305",
                          notes=["NKI buffers: sbuf, psum, hbm, private_hbm, shared_hbm; Ascend "
                                 "buffers: gm, l1, l0a, l0b, l0c, ub"],
                          help="a kernel targets one accelerator family; keep both operands in it")
    pairs = (("dst", dst), ("src", src))
    for role, t in pairs if dst.dynamic is not None or src.dynamic is not None else ():
        if is_ti(t):
            raise TargetError(f"{label}: {role} {t.name} is a Tensor Indirection view "
                              "(indirect()); DMA cannot use it", code="APK307",
                              help="use vector_select or .ap(vector_offset=) for a DMA gather, "
                              "or a compute instruction such as tensor_copy for indirect()")
    for role, t in pairs if dst.buffer == "psum" or src.buffer == "psum" else ():
        if t.buffer == "psum":
            raise TargetError(f"{label}: {role} {t.name} is in PSUM; DMA moves data between "
                              "SBUF and HBM only", code="APK342",
                              notes=["NKI dma_copy: both src and dst are in HBM or SBUF"],
                              help="tensor_copy the PSUM tile into SBUF first, then dma_copy "
                              "the SBUF tile" if role == "src" else "dma_copy into SBUF, then "
                              "tensor_copy into PSUM", buffer=t.buffer, role=role)
    if fam_d == "ascend":
        _ascend_dma_copy(dst, src, name, label)
        return
    refuse_packed_conversion(label, dst, src)
    if defaults and planned:
        dmaplan.keep(dst, src, nki_dma(dst, src, name, label))
        return
    _, oob_name = hints.dma(label, dst, src, priority, oob_mode, dge_mode, engine)
    given = hints.given(priority=priority, oob_mode=oob_mode, dge_mode=dge_mode, engine=engine)
    if oob_name == "skip" and not current().check and (oob.indirect(src) or oob.indirect(dst)):
        oob.copy_skipping(dst, src, name, label, given)  # out-of-range rows are not moved
        return
    nki_dma(dst, src, name, label, given)


def _ascend_dma_copy(dst: Tensor, src: Tensor, name: str | None, label: str) -> None:
    """The Ascend DMA: the path rule, then `apdsl.runtime.ascend.dma.dma_copy` (alignment, TLA
    valid extents, the row-major copy and the GM -> fractal row-tail zero-fill)."""
    ascend, atomic = _ASCEND or _ascend_modules()
    ascend.ascend_copy_rules(dst, src, label)
    if not atomic.atomic_copy(dst, src, name, label):  # (set_atomic_add: GM writes add)
        ascend.dma_copy(dst, src, name, label)


# The Ascend DMA's modules, imported on the first Ascend copy (an NKI program, or `apdsl check`,
# never loads them) and kept: an import statement in the function costs about 2 us a call, 2%
# of the stdlib GEMM's run.
_ASCEND: list[Any] = []


def _ascend_modules() -> list[Any]:
    from .ascend import atomic, dma
    _ASCEND[:] = (dma, atomic)
    return _ASCEND


# -- tensor_copy ------------------------------------------------------------------------------

def tensor_copy(dst: Tensor, src: Tensor, engine: Any = "unknown", dtype: Any = None,
                name: str | None = None) -> None:
    """Copy on chip: each partition's elements stay in that partition.  `dtype`, as the
    legacy NKI reference's `tensor_copy(src, dtype=)` has it, is the dtype of the copy's
    output: here dst's own (the copy converts to dst's dtype); another has no effect (APK182).

    >>> x = apdsl.ndarray((2, 3), "float32", "sbuf")
    >>> apdsl.memset(x, 1.5)
    >>> y = apdsl.ndarray((2, 3), "float32", "psum")
    >>> apdsl.tensor_copy(y, x)
    >>> y.numpy()[1]
    array([1.5, 1.5, 1.5], dtype=float32)
    """
    label = instruction_label("tensor_copy", name)
    dst, src = tensor_arg(dst, label, "dst"), tensor_arg(src, label, "src")
    if dtype is not None:
        _output_dtype(label, dtype, dst)
    require_onchip(src, label, "src")
    require_onchip(dst, label, "dst")
    refuse_packed_conversion(label, dst, src)
    chosen = hints.tensor_copy_engine(label, engine, (("src", src), ("dst", dst)),
                                      is_ti(src) or is_ti(dst))
    check_start_partitions(label, (("src", src), ("dst", dst)))
    check_ti_partitions(label, {"src": "src", "dst": "src"}, ("src", src), ("dst", dst))
    accs = resolve_operands(label, ex.TI_GROUP, ("src", src), ("dst", dst))
    ss, ds = operand_shapes(accs, src, dst)
    if ss is not None and ds is not None and (ss[0] != ds[0] or free_size(ss) != free_size(ds)):
        raise TargetError(f"{label}: dst has {ds[0]} partitions of {free_size(ds)} elements, src "
                          f"{ss[0]} of {free_size(ss)}", code="APK311",
                          notes=[f"dst shape {ds}, src shape {ss}"],
                          help="tensor_copy keeps data in its partition: use the same partition "
                          "count and elements per partition (dma_copy can move across "
                          "partitions)", dst_shape=ds, src_shape=ss)
    trace.record("tensor_copy", name, {"dst": dst, "src": src},
                 engine=None if chosen == "unknown" else chosen,  # the engine= hint
                 hints=hints.given(engine=chosen))
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
    label = instruction_label("memset", name)
    dst = tensor_arg(dst, label, "dst")
    if targets.family(dst.buffer) == "ascend":
        ascend = (_ASCEND or _ascend_modules())[0]
        dst = ascend.memset_target(dst, label)  # buffers, dtypes, alignment, whole fractals
    if dst.buffer not in MEMSET_BUFFERS:
        raise TargetError(f"{label}: dst {dst.name} is in {dst.buffer}; memset writes "
                          f"{', '.join(MEMSET_BUFFERS)} only", code="APK312",
                          help="memset an on-chip tile and dma_copy it out", buffer=dst.buffer)
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if not isinstance(value, (int, float, bool)):
        raise arg_error(label, f"value must be a number, got {value!r}")
    if dst.dtype.kind == "x" and value == 0 and not np.signbit(value):
        v = np.zeros((), dst.dtype.np)  # all bits zero: four zeros in every MX dtype
    else:
        refuse_packed_conversion(label, dst, None)
        v = ex.cast(np.asarray(value), dst.dtype)
    chosen = "unknown"
    if targets.family(dst.buffer) == "nki":
        chosen = hints.compute_engine(label, engine, ("vector", "gpsimd"), (("dst", dst),),
                                      is_ti(dst))
    check_start_partitions(label, (("dst", dst),))
    accs = resolve_operands(label, ex.TI_GROUP, ("dst", dst))
    trace.record("memset", name, {"dst": dst},
                 engine=None if chosen == "unknown" else chosen,  # the engine= hint
                 hints=hints.given(engine=chosen))
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
    label = instruction_label("iota", name)
    dst = tensor_arg(dst, label, "dst")
    require_onchip(dst, label, "dst")
    if dst.buffer != "sbuf":
        raise TargetError(f"{label}: dst {dst.name} is in {dst.buffer}; iota (GpSimd Engine) "
                          "writes SBUF only", code="APK339",
                          notes=["GpSimd cannot access PSUM"],
                          help="iota into an SBUF tile, then tensor_copy it into PSUM",
                          buffer=dst.buffer)
    offset = int_arg(offset, label, "offset")
    cm = int_arg(channel_multiplier, label, "channel_multiplier")
    steps, counts = step_count_pairs(pattern, label, "[[1, 64]] counts 0..63")
    if len(pattern) > 4:
        raise TargetError(f"{label}: the pattern has {len(pattern)} [step, count] entries; iota "
                          "takes at most 4", code="APK340", notes=[f"pattern {list(pattern)}"],
                          help="merge entries whose steps chain (step_outer == step_inner * "
                          "count_inner), or split the tile and issue several iotas",
                          entries=len(pattern))
    check_start_partitions(label, (("dst", dst),))
    accs = resolve_operands(label, ex.TI_GROUP, ("dst", dst))
    (shape,) = operand_shapes(accs, dst)
    if shape is not None and prod(counts) != free_size(shape):
        free = free_size(shape)
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


def _output_dtype(label: str, given: Any, dst: Tensor) -> None:
    """tensor_copy's `dtype=` beside `dst=`: the copy's output dtype is dst's.  The ISA
    instruction has one output dtype, its dst's (the reference: src is cast through FP32 to
    dst.dtype), and the current reference takes no `dtype=` at all; the SDK's matmul tutorial
    passed one other than dst's (fp32 dst, `dtype=result.dtype`) until it dropped the keyword
    with nothing else changed (aws-neuron-sdk 38480a9f).  So another dtype has no effect:
    APK182 warns once per call site.  A value that is no dtype is refused (APK420)."""
    from ..tensor.dtypes import dtype as to_dtype
    try:
        named = to_dtype(given)
    except ApdslError:
        raise arg_error(label, f"dtype={given!r} is not a dtype", dtype=repr(given),
                        help=f"drop dtype= (the copy converts src to dst's "
                        f"{dst.dtype.name}), or name dst's dtype") from None
    if named.name == dst.dtype.name:
        return
    warn(Warning_(f"{label}: dtype={named.name} has no effect: the copy writes dst "
                  f"{dst.name}'s {dst.dtype.name}", code="APK182", dtype=named.name,
                  dst_dtype=dst.dtype.name,
                  help=f"drop dtype=, or allocate dst as {named.name} to copy into that "
                  "dtype"), key=("APK182",))
