"""Vector instructions beyond the element-wise arithmetic: duplicate, cast, brcb, compare and
select (pyasc's names, parameter names and orders; see `apdsl.runtime.ascend.vector`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ...core import execute as ex
from . import repeat as rp
from . import run
from .ops import same_dtype, scalar_value
from .params import BinaryRepeatParams, BrcbRepeatParams, CopyRepeatParams, UnaryRepeatParams


def duplicate(dst: Any, scalar: Any, count: Any = None, repeat_times: Any = None,
              dst_block_stride: Any = None, dst_repeat_stride: Any = None,
              is_set_mask: Any = True, mask: Any = None, name: str | None = None) -> None:
    """Set dst's elements to `scalar` (Duplicate): `duplicate(dst, scalar, count)` or
    `duplicate(dst, scalar, mask, repeat_times, dst_block_stride, dst_repeat_stride)`."""
    strides = None
    if dst_block_stride is not None or dst_repeat_stride is not None:
        strides = {"dst": (1 if dst_block_stride is None else dst_block_stride,
                           8 if dst_repeat_stride is None else dst_repeat_stride)}

    def make(label: str, tensors: dict[str, Any]) -> Any:
        return run.form_of(label, run.lanes_of(tensors), count, mask, repeat_times, None,
                           is_set_mask, None, strides if repeat_times is not None else None)

    inst = run.prepare("asc.duplicate", {"dst": dst}, name, make)
    if inst is None:
        return
    d = inst.tensors["dst"].dtype
    v = scalar_value(inst.label, scalar, d)
    inst.write(np.broadcast_to(ex.cast(v, d), inst.offs["dst"].shape))


# Cast: the Atlas A2 table of conversions, (src, dst) -> the round modes each takes
_ALL = ("CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC")
CASTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("int8", "float16"): ("CAST_NONE",), ("uint8", "float16"): ("CAST_NONE",),
    ("int16", "float16"): _ALL + ("CAST_NONE",), ("int16", "float32"): ("CAST_NONE",),
    ("float16", "int8"): _ALL + ("CAST_NONE",), ("float16", "uint8"): _ALL + ("CAST_NONE",),
    ("float16", "int16"): _ALL, ("float16", "int32"): _ALL,
    ("float16", "float32"): ("CAST_NONE",), ("bfloat16", "int32"): _ALL,
    ("bfloat16", "float32"): ("CAST_NONE",), ("int32", "int16"): ("CAST_NONE",),
    ("int32", "float32"): _ALL + ("CAST_NONE",), ("int32", "int64"): ("CAST_NONE",),
    ("float32", "int16"): _ALL,
    ("float32", "float16"): _ALL + ("CAST_ODD", "CAST_NONE"),
    ("float32", "bfloat16"): _ALL, ("float32", "int32"): _ALL, ("float32", "float32"): _ALL,
    ("float32", "int64"): _ALL, ("int64", "int32"): ("CAST_NONE",),
    ("int64", "float32"): _ALL,
}
# integral rounding of a float64 value by mode (CAST_NONE and CAST_RINT: half to even)
_INTEGRAL = {"CAST_RINT": np.rint, "CAST_NONE": np.rint, "CAST_FLOOR": np.floor,
             "CAST_CEIL": np.ceil, "CAST_TRUNC": np.trunc,
             "CAST_ROUND": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}


def _cast_values(label: str, values: np.ndarray, src: str, dst: str, mode: str,
                 target: Any) -> np.ndarray:
    """`values` (as stored, dtype src) converted to dst by `mode`: float64 (exact) results
    for an integer dst or an integral float32, else values of dst's dtype."""
    v = values.astype(np.float64)
    if np.isnan(v).any():
        raise ApdslRuntimeError(f"{label}: a NaN is cast with {mode}; the AscendC Cast page "
                                "gives no result for it", code="APK558",
                                help="select the NaNs away first")
    if not dst.startswith(("float", "bfloat")) or src == dst:
        return _INTEGRAL[mode](v)
    return _to_precision(label, v, target, mode)


def _to_precision(label: str, v: np.ndarray, target: Any, mode: str) -> np.ndarray:
    """Exact values `v` rounded to the floating dtype `target` by `mode`: the representable
    neighbours below and above, chosen as the mode says (CAST_ODD: the one whose last bit is
    odd, Von Neumann rounding)."""
    near = (v.astype(np.float32) if target.name == "bfloat16" else v).astype(target)
    if mode in ("CAST_NONE", "CAST_RINT"):
        return near
    top = float(np.finfo(np.float32).max) if target.itemsize == 4 else \
        (65504.0 if target == np.dtype(np.float16) else 3.3895313892515355e38)
    if (np.abs(v) > top).any():
        raise ApdslRuntimeError(f"{label}: a value beyond the largest finite {target} is cast "
                                f"with {mode}; the Cast page does not say what that gives",
                                code="APK558", help="keep the values in range")
    bits = target.itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    sign_bit = 1 << (bits - 1)

    def order(t: np.ndarray) -> np.ndarray:  # IEEE bits as a monotonic integer
        u = t.view(unsigned).astype(np.int64)
        mag = u & (sign_bit - 1)
        return np.where(u & sign_bit, -mag, mag)

    def unorder(m: np.ndarray) -> np.ndarray:
        mag = np.abs(m)
        return np.where(m < 0, mag | sign_bit, mag).astype(unsigned).view(target)

    back = near.astype(np.float64)
    o = order(near)
    down = np.where(back <= v, near, unorder(o - 1))
    up = np.where(back >= v, near, unorder(o + 1))
    exact = back == v
    if mode == "CAST_FLOOR":
        return down
    if mode == "CAST_CEIL":
        return up
    if mode == "CAST_TRUNC":
        return np.where(v >= 0, down, up)
    if mode == "CAST_ODD":
        odd_down = (down.view(unsigned) & 1).astype(bool)
        return np.where(exact, near, np.where(odd_down, down, up))
    # CAST_ROUND: the nearer neighbour, a tie away from zero
    dd, du = v - down.astype(np.float64), up.astype(np.float64) - v
    return np.where(dd < du, down, np.where(du < dd, up, np.where(v >= 0, up, down)))


def cast(dst: Any, src: Any, round_mode: Any, count: Any = None, repeat_times: Any = None,
         repeat_params: Any = None, is_set_mask: Any = True, mask: Any = None,
         name: str | None = None) -> None:
    """Convert src to dst's dtype rounding as `round_mode` says (asc.RoundMode): the count
    form or the mask form (UnaryRepeatParams; a repeat has the lanes of the wider dtype)."""
    def make(label: str, tensors: dict[str, Any]) -> Any:
        pair = (tensors["src"].dtype.name, tensors["dst"].dtype.name)
        mode = str(round_mode)
        if pair not in CASTS:
            raise ApdslRuntimeError(f"{label}: Atlas A2 has no Cast from {pair[0]} to "
                                    f"{pair[1]}", code="APK556",
                                    notes=["the conversions: " + ", ".join(
                                        f"{a}->{b}" for a, b in CASTS)],
                                    help="cast in two steps through a listed dtype")
        if mode not in CASTS[pair]:
            raise ApdslRuntimeError(f"{label}: Cast from {pair[0]} to {pair[1]} takes "
                                    f"{', '.join(CASTS[pair])}, not {mode}", code="APK558",
                                    help=f"round_mode=asc.RoundMode.{CASTS[pair][0]}")
        return run.form_of(label, run.lanes_of(tensors), count, mask, repeat_times,
                           repeat_params, is_set_mask, UnaryRepeatParams)

    inst = run.prepare("asc.cast", {"dst": dst, "src": src}, name, make)
    if inst is None:
        return
    target = np.dtype(inst.tensors["dst"].dtype.np)
    out = _cast_values(inst.label, inst.raw("src"), inst.dtype("src"), inst.dtype("dst"),
                       str(round_mode), target)
    if run.is_float(inst.dtype("dst")):
        # integral float64 values are exact in float32 here (|v| < 2**24 or already float32)
        inst.write(out if out.dtype == target else out.astype(target))
        return
    lo, hi = run.INT_RANGES[inst.dtype("dst")]
    inst.write(np.clip(out, lo, hi).astype(np.int64))  # integer results saturate (Cast page)


def brcb(dst: Any, src0: Any, repeat_times: Any, repeat_params: Any,
         name: str | None = None) -> None:
    """Brcb: repeat r reads src0's elements 8r .. 8r + 7 and fills one 32-byte block of dst
    with each (dst's blocks `dst_blk_stride` blocks apart, its repeats `dst_rep_stride`)."""
    label, tensors, starts = run.checked("asc.brcb", {"dst": dst, "src0": src0}, name)
    same_dtype(label, tensors, ("dst", "src0"))
    if not isinstance(repeat_params, BrcbRepeatParams):
        raise ApdslRuntimeError(f"{label}: repeat_params must be an asc.BrcbRepeatParams",
                                code="APK550",
                                help="asc.BrcbRepeatParams(dst_blk_stride, dst_rep_stride)")
    d = tensors["dst"]
    per_block = 32 * 8 // d.dtype.bits
    lanes = 8 * per_block
    form = rp.mask_form(label, lanes, repeat_times,
                        {"dst": (repeat_params.dst_blk_stride, repeat_params.dst_rep_stride)},
                        lanes)
    rel_d = rp.relative(form, "dst", d.dtype.bits)
    k = np.arange(lanes, dtype=np.int64)
    rel_s = np.arange(form.repeats, dtype=np.int64)[:, None] * 8 + k // per_block
    rels = {"dst": rel_d, "src0": rel_s}
    views = {}
    if rel_d.size:
        views = {"dst": rp.record_view(d, rel_d, form, "dst", d.dtype.bits),
                 "src0": tensors["src0"].ap([[1, form.repeats * 8]], offset=0)}
    inst = run.finish("asc.brcb", name, label, tensors, starts, rels, views, form)
    if inst is not None:
        inst.write(inst.raw("src0"))


COPY_REPEAT_MAX = 4095  # the Copy page's range of dstRepeatSize / srcRepeatSize


def copy(dst: Any, src: Any, mask: Any, repeat_time: Any, repeat_params: Any,
         is_set_mask: Any = True, name: str | None = None) -> None:
    """Copy: UB to UB in the mask form only (the page has no count form), each active lane of
    each repeat moved bit for bit; `asc.CopyRepeatParams(dst_stride, src_stride,
    dst_repeat_size, src_repeat_size)` are the block strides and repeat strides, in 32-byte
    blocks (the repeat strides at most 4095)."""
    label, _, _ = run.checked("asc.copy", {"dst": dst, "src": src}, name)
    if not isinstance(repeat_params, CopyRepeatParams):
        raise ApdslRuntimeError(f"{label}: repeat_params must be an asc.CopyRepeatParams, got "
                                f"{type(repeat_params).__name__}", code="APK550",
                                help="asc.CopyRepeatParams(dst_stride, src_stride, "
                                "dst_repeat_size, src_repeat_size)")
    for what in ("dst_repeat_size", "src_repeat_size"):
        rp._int(getattr(repeat_params, what), label, what, 0, COPY_REPEAT_MAX)
    strides = {"dst": (repeat_params.dst_stride, repeat_params.dst_repeat_size),
               "src": (repeat_params.src_stride, repeat_params.src_repeat_size)}

    def make_form(label: str, tensors: dict[str, Any]) -> rp.Form:
        same_dtype(label, tensors, ("dst", "src"))
        return run.form_of(label, run.lanes_of(tensors), None, mask, repeat_time, None,
                           is_set_mask, None, strides=strides)

    inst = run.prepare("asc.copy", {"dst": dst, "src": src}, name, make_form)
    if inst is not None:
        inst.write(inst.raw("src"))


_CMP = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal,
        "GE": np.greater_equal, "NE": np.not_equal}


def _bits_rel(n_bits: int, bits: int) -> np.ndarray:
    """The elements of a bit-mask operand holding bits 0 .. n_bits - 1."""
    return np.arange(-(-n_bits // bits), dtype=np.int64)


def compare(dst: Any, src0: Any, src1: Any, cmp_mode: Any, count: Any = None,
            repeat_times: Any = None, repeat_params: Any = None, is_set_mask: Any = True,
            mask: Any = None, name: str | None = None) -> None:
    """dst's bit i = cmp_mode(src0[i], src1[i]) (bits from each byte's lowest, bytes in
    order): the count form, whose elements must fill whole 256-byte repeats (the page: the
    rest would be silently left out), or the mask form with one repeat (on Atlas A2 its mask
    is reserved: every lane of the repeat compares)."""
    mode = str(cmp_mode)
    label, tensors, starts = run.checked("asc.compare",
                                         {"dst": dst, "src0": src0, "src1": src1}, name)
    same_dtype(label, tensors, ("src0", "src1"))
    s0 = tensors["src0"]
    if mode not in _CMP:
        raise ApdslRuntimeError(f"{label}: cmp_mode must be an asc.CMPMODE, got {cmp_mode!r}",
                                code="APK550", help="asc.CMPMODE.LT, GT, EQ, LE, GE or NE")
    if s0.dtype.name == "int32" and mode != "EQ":
        raise ApdslRuntimeError(f"{label}: int32 compares with CMPMODE.EQ only (Atlas A2)",
                                code="APK461", help="cast to float first")
    lanes = rp.lanes_per_repeat(s0.dtype.bits)
    if repeat_times is None and repeat_params is None:
        form = rp.count_form(label, count)
        if form.count * s0.dtype.bits // 8 % rp.REPEAT_BYTES:
            raise ApdslRuntimeError(
                f"{label}: {form.count} {s0.dtype} elements do not fill whole 256-byte "
                "repeats; Compare leaves the rest out silently", code="APK559",
                help=f"compare a multiple of {lanes} elements (pad the operands)")
        rel = {r: rp.relative(form, r, 0) for r in ("src0", "src1")}
        n = form.count
    else:
        if not isinstance(repeat_params, BinaryRepeatParams):
            raise ApdslRuntimeError(f"{label}: repeat_params must be an "
                                    "asc.BinaryRepeatParams", code="APK550")
        form = rp.mask_form(label, lanes, repeat_times, repeat_params.strides(), lanes,
                            is_set_mask)
        if form.repeats > 1:
            raise ApdslRuntimeError(
                f"{label}: the mask form with {form.repeats} repeats: the AscendC page does "
                "not say where each repeat's result bits go, so apdsl runs one repeat only",
                code="APK559", help="call compare once per repeat, or use the count form")
        rel = {r: rp.relative(form, r, s0.dtype.bits) for r in ("src0", "src1")}
        n = rel["src0"].size
    d = tensors["dst"]
    rels = {"dst": _bits_rel(n, d.dtype.bits), **rel}
    views = {}
    if n:
        views = {"dst": d.ap([[1, rels["dst"].size]], offset=0),
                 **{r: rp.record_view(tensors[r], rel[r], form, r, s0.dtype.bits)
                    for r in ("src0", "src1")}}
    inst = run.finish("asc.compare", name, label, tensors, starts, rels, views, form)
    if inst is None:
        return
    a, b = inst.math("src0").ravel(), inst.math("src1").ravel()
    packed = np.packbits(_CMP[mode](a, b), bitorder="little")
    inst.write(packed.view(np.dtype(d.dtype.np)) if d.dtype.bits == 8 else packed)


def select(dst: Any, sel_mask: Any, src0: Any, src1: Any, sel_mode: Any, count: Any = None,
           repeat_times: Any = None, repeat_params: Any = None, is_set_mask: Any = True,
           mask: Any = None, name: str | None = None) -> None:
    """dst = src0 where sel_mask's bit is 1, else src1 (a tensor; a scalar in
    VSEL_TENSOR_SCALAR_MODE).  Modes 1 and 2 use bit i for element i (repeat r, lane k: bit
    r * lanes + k); mode 0 (VSEL_CMPMASK_SPR) uses the first repeat's bits for every repeat."""
    mode = str(sel_mode)
    if mode not in ("VSEL_CMPMASK_SPR", "VSEL_TENSOR_SCALAR_MODE", "VSEL_TENSOR_TENSOR_MODE"):
        raise ApdslRuntimeError(f"select: sel_mode must be an asc.SelMode, got {sel_mode!r}",
                                code="APK550")
    scalar_mode = mode == "VSEL_TENSOR_SCALAR_MODE"
    operands = {"dst": dst, "src0": src0}
    if not scalar_mode:
        operands["src1"] = src1
    operands["sel_mask"] = sel_mask
    label, tensors, starts = run.checked("asc.select", operands, name)
    data = ("dst", "src0") + (() if scalar_mode else ("src1",))
    same_dtype(label, tensors, data)
    lanes = rp.lanes_per_repeat(tensors["dst"].dtype.bits)
    if repeat_times is None and repeat_params is None:
        form = rp.count_form(label, count)
        bit = np.arange(form.count, dtype=np.int64)
        if mode == "VSEL_CMPMASK_SPR":
            bit = bit % lanes
    else:
        if not isinstance(repeat_params, BinaryRepeatParams):
            raise ApdslRuntimeError(f"{label}: repeat_params must be an "
                                    "asc.BinaryRepeatParams", code="APK550")
        m = mask if mask is not None else count
        form = rp.mask_form(label, m, repeat_times, repeat_params.strides(), lanes,
                            is_set_mask)
        k = np.asarray(form.lanes, dtype=np.int64)
        r = np.arange(form.repeats, dtype=np.int64)[:, None]
        bit = (k + r * 0) if mode == "VSEL_CMPMASK_SPR" else r * lanes + k
    bits = tensors["dst"].dtype.bits
    rels = {role: rp.relative(form, role, bits) for role in data}
    mask_t = tensors["sel_mask"]
    n_bits = int(bit.max()) + 1 if bit.size else 0
    rels["sel_mask"] = _bits_rel(n_bits, mask_t.dtype.bits)
    views = {}
    if bit.size:
        views = {role: rp.record_view(tensors[role], rels[role], form, role, bits)
                 for role in data}
        views["sel_mask"] = mask_t.ap([[1, rels["sel_mask"].size]], offset=0)
    inst = run.finish("asc.select", name, label, tensors, starts, rels, views, form)
    if inst is None:
        return
    raw = np.ascontiguousarray(inst.raw("sel_mask").ravel())
    flags = np.unpackbits(raw.view(np.uint8), bitorder="little")[bit]
    a = inst.math("src0")
    if scalar_mode:
        b = scalar_value(inst.label, src1, tensors["dst"].dtype)
    else:
        b = inst.math("src1")
    inst.write(np.where(flags.astype(bool), a, b))
