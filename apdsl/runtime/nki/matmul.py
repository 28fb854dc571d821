"""`nc_matmul` (SPEC section 4): the Tensor Engine's `dst (+)= stationary.T @ moving`, its
dtype, shape, tiling, accumulation and PSUM-bank rules."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor import targets
from ...tensor.dtypes import DTYPES
from ...tensor.layout import pattern_bounds
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace, unwritten
from ..core.limits import check_limits
from ..core.operands import (
    arg_error,
    check_start_partitions,
    check_ti_partitions,
    free_size,
    instruction_label,
    is_ti,
    operand_shapes,
    resolve_operands,
    tensor_arg,
)
from ..plans import matmul_run as run
from ..plans import table
from ..table import TABLE
from ..table.spec import Call

F32 = DTYPES["float32"]

# -- nc_matmul --------------------------------------------------------------------------------

# Input dtypes of the tensor engine (NKI nc_matmul docstring); float8_e4m3fn from trn3 on.
MATMUL_INPUTS = ("float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32")
_WIDE = ("float32", "tfloat32")
_FP8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn")
PERF_MODES = ("none", "double_row")
# The name the SDK's own nc_matmul test gives double_row on NeuronCore-v3 before the
# matmul_perf_mode enum ("double_row_gen3", its test pinned to platform_target='trn2', its
# golden double_row's einsum "kli,klj->ij"); "gen3" is nki.isa.nc_version.gen3, "Trn2 target".
# Only that generation's name is known, so it means double_row there and nowhere else.
GENERATION_MODES = {"double_row_gen3": ("double_row", "trn2")}


def nc_matmul(dst: Tensor, stationary: Tensor, moving: Tensor,
              is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              is_transpose: bool = False, accumulate: bool | None = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = None,
              name: str | None = None) -> None:
    """`dst (+)= stationary.T @ moving` in float32 on the tensor engine, K on partitions:
    stationary (K, M) and moving (K, N) in SBUF, dst (M, N) in PSUM.  `accumulate=None` infers
    overwrite or accumulate from the PSUM state (`apdsl.runtime.core.psum`); with
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
    key = _plan_key(dst, stationary, moving, (is_stationary_onezero, is_moving_onezero,
                                              is_transpose, accumulate, tile_position,
                                              tile_size, perf_mode, name))
    plan = None if key is None else table.find(key)
    if plan is not None:  # the same kind of operands again: only the per-call work (`_Plan`)
        label, group = plan.label, ex.TI_GROUP_MATMUL  # static views, executing: resolved
        unwritten.begin()  # (a plan records nothing: the instruction starts here)
        accs = [ex.resolve(stationary, label, "stationary", group=group),  # (freed, bounds)
                ex.resolve(moving, label, "moving", group=group),
                ex.resolve(dst, label, "dst", group=group)]
        run.execute(accs, label, plan.tgt, plan.k, plan.m, plan.n,
                    transpose=plan.transpose, double=plan.double,
                    is_transpose=is_transpose, accumulate=accumulate)
        return
    planned = key is not None and _plannable(dst)
    label = instruction_label("nc_matmul", name)
    dst = tensor_arg(dst, label, "dst")
    stationary = tensor_arg(stationary, label, "stationary")
    moving = tensor_arg(moving, label, "moving")
    for what, flag in (("is_stationary_onezero", is_stationary_onezero),
                       ("is_moving_onezero", is_moving_onezero), ("is_transpose", is_transpose)):
        if not isinstance(flag, (bool, np.bool_)):
            raise arg_error(label, f"{what} must be True or False, got {flag!r}")
    if accumulate is not None and not isinstance(accumulate, (bool, np.bool_)):
        raise arg_error(label, f"accumulate must be True, False or None, got {accumulate!r}")
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
    if tgt.name == "trn1":  # the rule binds trn1 only (every operand is on tgt's family)
        check_start_partitions(label, (("stationary", stationary), ("moving", moving),
                                       ("dst", dst)))
    if not (dst.dynamic is None and stationary.dynamic is None and moving.dynamic is None):
        _matmul_indirection(label, dst, stationary, moving, transpose, tile_position)
    accs = resolve_operands(label, ex.TI_GROUP_MATMUL, ("stationary", stationary), ("moving", moving),
                     ("dst", dst))
    ss, ms, ds = operand_shapes(accs, stationary, moving, dst)
    if ss is None or ms is None or ds is None:  # check mode with register-sized views
        trace.record("nc_matmul", name, {"dst": dst, "stationary": stationary, "moving": moving})
        return
    k, mm, n = _matmul_shapes(ss, ms, ds, label, double)
    rows, cols = _tiling(tile_position, tile_size, label, tgt, double)
    # the entry's K, M and N bounds (in double_row mode K is the partitions times 2; the
    # partitions are what is limited)
    call = Call(tgt, {"dst": dst.dtype.name}, {"rows": rows, "cols": cols, "transpose": transpose})
    check_limits(TABLE["nc_matmul"], label, call, {"K": ss[0], "M": mm, "N": n})
    bank_key = ("psum bank", tgt.name, table.key_of(dst))  # (a view's bytes cannot move)
    if tgt.name in ("trn1", "trn2") and (bank_key[2] is None or table.find(bank_key) is None):
        if accs is not None:
            _check_psum_bank(accs[2], tgt, label)
        elif dst.dynamic is None and dst.layout.static:
            _check_psum_bank(ex.resolve(dst, label, "dst"), tgt, label)
        if bank_key[2] is not None:
            table.keep(bank_key, True)
    trace.record("nc_matmul", name, {"dst": dst, "stationary": stationary, "moving": moving})
    if accs is None:
        return
    if planned:
        table.keep(key, _Plan(tgt, label, k, mm, n, transpose, double))
    run.execute(accs, label, tgt, k, mm, n, transpose=transpose, double=double,
                is_transpose=bool(is_transpose), accumulate=accumulate)


# Tensor Engine dtypes an indirect() matmul operand may have (NKI nc_matmul docstring).
_TI_MATMUL = ("float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn")


def _matmul_indirection(label: str, dst: Tensor, st: Tensor, mv: Tensor, transpose: bool,
                        tile_position: Any) -> None:
    """The nc_matmul docstring's Tensor Indirection rules (trn3)."""
    pairs = (("stationary", st), ("moving", mv), ("dst", dst))
    if not any(is_ti(t) for _, t in pairs):
        return
    for role, t in pairs:
        if is_ti(t) and t.dtype.name not in _TI_MATMUL:
            raise TargetError(f"{label}: {role} {t.name}.indirect() is {t.dtype}; an indirect "
                              f"matmul operand is {', '.join(_TI_MATMUL)}", code="APK346",
                              help="gather into a tile first (tensor_copy with indirect()), "
                              "or use a 16- or 8-bit float dtype", role=role)
    if transpose and is_ti(mv):
        raise TargetError(f"{label}: in transpose mode moving cannot use indirect()",
                          code="APK346", help="gather moving into a tile first")
    if isinstance(tile_position, (list, tuple)) and tile_position and \
            tuple(tile_position) != (0, 0):
        raise TargetError(f"{label}: Tensor Indirection is incompatible with tiling: "
                          f"tile_position must be (0, 0) or unset, not {tuple(tile_position)}",
                          code="APK346", help="drop tile_position/tile_size, or gather first")
    check_ti_partitions(label, {"stationary": "stationary", "moving": "moving",
                           "dst": "stationary"}, *pairs)


def _perf_mode(perf_mode: Any, label: str, tgt: targets.Target) -> bool:
    """True for double_row (FP8 double performance mode, trn2 and later)."""
    mode = getattr(perf_mode, "name", perf_mode)  # an enum member or its name
    mode = "none" if mode is None else mode
    if isinstance(mode, str) and mode in GENERATION_MODES:
        mode, generation = GENERATION_MODES[mode]
        if tgt.name != generation:
            raise TargetError(f"{label}: perf_mode={perf_mode!r} is the {generation} "
                              f"(NeuronCore-v3) name of double_row; the target is {tgt.name}",
                              code="APK337", help='use perf_mode="double_row" (trn2 and '
                              'later), or run with --target trn2' if tgt.name != "trn1" else
                              "drop perf_mode on trn1, or run with --target trn2")
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
        k, mm, k2, n = ss[0], free_size(ss), ms[0], free_size(ms)
    if k != k2 or ds[0] != mm or free_size(ds) != n:
        raise TargetError(f"{label}: shapes do not fit dst (M, N) = stationary.T (M, K) @ moving "
                          f"(K, N): stationary {ss}, moving {ms}, dst {ds}", code="APK318",
                          notes=[f"K: stationary {k}, moving {k2}; M: stationary {mm}, dst "
                                 f"{ds[0]}; N: moving {n}, dst {free_size(ds)}"],
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
        raise arg_error(label, f"tile_position and tile_size are (row, column) tuples, got "
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


# -- plans: a matmul loop's repeated checks done once ------------------------------------------
#
# A tile loop calls nc_matmul into PSUM views again and again, with operand tiles that are new
# each time but alike.  Every rule checked above depends only on the three views' values (their
# keys in the plan table: layout, dtype, storage buffer, shape, size and address), the flags and
# the target -- trn1's start-partition rule included, but trn1 is not planned.  So a plan kept
# under those (`runtime.plans.table`) keeps the checked shapes; each call still resolves the
# operands (freed storage, bounds), init-checks the inputs and decides the accumulation from
# the PSUM state.  Used only while executing with nothing tracing (a trace records every call).

class _Plan:
    __slots__ = ("tgt", "label", "k", "m", "n", "transpose", "double")

    def __init__(self, tgt: targets.Target, label: str, k: int, m: int, n: int,
                 transpose: bool, double: bool) -> None:
        self.tgt, self.label, self.k, self.m, self.n = tgt, label, k, m, n
        self.transpose, self.double = transpose, double


def _plan_key(dst: Any, st: Any, mv: Any, flags: tuple) -> tuple | None:
    """The plan key of a call, or None when the call is not one a plan may stand for (an
    operand not a static view; a flag not of its exact documented type; the `plans` option
    off)."""
    m = current()
    if not m.options.plans:
        return None
    keys = []
    for t in (dst, st, mv):
        if not isinstance(t, Tensor):
            return None
        k = getattr(t, "key", None)  # (made once per view: `table.key_of`)
        if k is None:
            k = table.key_of(t)
            if k is None:
                return None
        keys.append(k)
    s1z, m1z, tr, acc, pos, size, perf, name = flags
    if type(s1z) is not bool or type(m1z) is not bool or type(tr) is not bool or not (
            acc is None or type(acc) is bool) or type(pos) is not tuple or pos != () or \
            type(size) is not tuple or size != () or not (
            perf is None or type(perf) is str) or not (name is None or type(name) is str):
        return None
    return ("nc_matmul", m.targets["nki"], *keys, *flags)


def _plannable(dst: Tensor) -> bool:
    """Asked before the checks: executing, nothing tracing, not trn1."""
    m = current()
    return m.trace is None and not m.check and m.targets["nki"] != "trn1"
