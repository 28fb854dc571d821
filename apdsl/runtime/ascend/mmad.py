"""`mmad` (SPEC section 4): the Ascend cube unit's `dst (+)= a @ b` over fractal tiles, with
its dtype, format, padding and accumulation rules, on one BLAS thread."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FormatError
from ...tensor import formats
from ...tensor.machine import current
from ...tensor.tla import fractal_view, region, valid_shape
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.blas import MAX_K, product
from ..core.operands import (
    arg_error,
    check_operand,
    instruction_label,
    resolve_operands,
    tensor_arg,
)
from ..core.resolve import check_live
from ..core.written import mark_written
from ..plans import ascend_plans as plans
from ..table import TABLE
from . import unitflag
from .cube_params import MmadParams
from .dma import check_alignment, shape_text

# Operand roles with their buffer and format, and the accumulator of each input dtype.
OPERANDS = (("a", "l0a", "ZZ"), ("b", "l0b", "ZN"), ("dst", "l0c", "NZ"))
ACCUMULATOR = {"float16": "float32", "bfloat16": "float32", "float32": "float32",
               "int8": "int32", "int4": "int32"}


def _err(code: str, message: str, **kw: Any) -> FormatError:
    return FormatError(message, code=code, **kw)


def mmad(dst: Tensor, a: Tensor, b: Tensor, accumulate: bool = False,
         bias: Tensor | None = None, unit_flag: int = 0, name: str | None = None) -> None:
    """`dst (+)= a @ b` on the cube unit: `a` (M, K) in L0A as ZZ, `b` (K, N) in L0B as ZN,
    `dst` (M, N) in L0C as NZ; float16/bfloat16/float32 accumulate in float32, int8 and int4
    in int32.
    Computes the valid extent; with `strict_padding` K is read in whole fractals.

    >>> g = apdsl.from_numpy(np.ones((16, 16), np.float16), "gm")
    >>> l1a = apdsl.ndarray((16, 16), "float16", "l1", "NZ")
    >>> l1b = apdsl.ndarray((16, 16), "float16", "l1", "ZN")
    >>> apdsl.dma_copy(l1a, g)
    >>> apdsl.dma_copy(l1b, g)
    >>> a = apdsl.ndarray((16, 16), "float16", "l0a", "ZZ")
    >>> b = apdsl.ndarray((16, 16), "float16", "l0b", "ZN")
    >>> apdsl.dma_copy(a, l1a)
    >>> apdsl.dma_copy(b, l1b)
    >>> c = apdsl.ndarray((16, 16), "float32", "l0c", "NZ")
    >>> apdsl.mmad(c, a, b)
    >>> c.numpy()[0, :4]
    array([16., 16., 16., 16.], dtype=float32)
    """
    if isinstance(accumulate, MmadParams) or isinstance(bias, MmadParams):
        # pyasc's form: mmad(dst, fm, filter, params) / mmad(dst, fm, filter, bias, params)
        params, bias = (accumulate, bias) if isinstance(accumulate, MmadParams) else \
            (bias, accumulate)
        mmad_flat(dst, a, b, bias, params, name)
        return
    if accumulate is not True and accumulate is not False:
        if not isinstance(accumulate, np.bool_):
            label = instruction_label("mmad", name)
            for role, t in (("dst", dst), ("a", a), ("b", b)):
                tensor_arg(t, label, role)
            raise arg_error(label, f"accumulate must be True or False, got {accumulate!r}")
        accumulate = bool(accumulate)
    if bias is not None or unit_flag != 0:
        _mmad_cube(dst, a, b, accumulate, name, bias, unit_flag)
        return
    m = current()
    strict = m.options.strict_padding
    # (`plans.lookup`, inlined: every planned mmad's step; none with the `plans` option off)
    kept = getattr(dst, "pair", None) if m.options.plans else None
    got = kept.get((strict, id(a), id(b))) if type(kept) is plans.Kept else None
    if got is not None and got[0][0]() is a and got[0][1]() is b:
        plan = got[1]
        if plan.fast is not None and run_fast(plan, dst, a, b, accumulate, name, m):
            return
    else:
        plan = plans.lookup(PLANS, dst, (a, b), strict)
    label = instruction_label("mmad", name)
    if plan is None:
        plan = mmad_plan(dst, a, b, label, strict)
        if plans.cacheable(dst, a, b):
            plans.keep(PLANS, dst, (a, b), strict, plan)
    run(plan, dst, a, b, accumulate, name, label)


# Per (dst, a, b, strict_padding): the outcome of mmad's rules (`apdsl.runtime.plans.ascend_plans`).
PLANS: plans.Table = plans.Table()


class Plan:
    """What a checked mmad computes: M, N, K as read, and the views of dst, a and b it writes
    or reads (None for dst itself, or a view not read).  `fast`, set after the first call that
    ran in full on three static strided views: what `run_fast` repeats (the accesses, the
    NumPy arrays it reads and writes, the destination's memory order)."""

    __slots__ = ("m", "n", "kr", "dv", "av", "bv", "fast")

    def __init__(self, m: int, n: int, kr: int, dv: Tensor | None = None,
                 av: Tensor | None = None, bv: Tensor | None = None) -> None:
        self.m, self.n, self.kr = m, n, kr
        self.dv, self.av, self.bv = dv, av, bv
        self.fast: tuple[Any, ...] | None = None


def mmad_plan(dst: Any, a: Any, b: Any, label: str, strict: bool) -> Plan:
    """Check every rule of mmad on these operands (raising the first that fails) and return
    what it computes."""
    ops = {"dst": tensor_arg(dst, label, "dst"), "a": tensor_arg(a, label, "a"),
           "b": tensor_arg(b, label, "b")}
    for role, buffer, fmt in OPERANDS:
        t = ops[role]
        if t.buffer != buffer or t.format != fmt or t.ndim != 2:
            where = f"{t.buffer}" + (f" as {t.format}" if t.format != "ND" else "")
            raise _err("APK520", f"{label}: {role} {t.name} is a {t.ndim}-d {where} tensor; "
                       f"mmad takes {role} as a matrix in {buffer} as {fmt}",
                       notes=["mmad operands: a (M, K) in l0a as ZZ, b (K, N) in l0b as ZN, "
                              "dst (M, N) in l0c as NZ"],
                       help=f"dma_copy {role} into a {buffer} tile declared `as {fmt}` (for "
                       f"example make_tensor_like({buffer}, tile, \"{fmt}\"))",
                       role=role, buffer=t.buffer, format=t.format)
    a, b, dst = ops["a"], ops["b"], ops["dst"]
    acc_name = ACCUMULATOR.get(a.dtype.name)
    if a.dtype != b.dtype or acc_name is None or dst.dtype.name != acc_name:
        pairs = ", ".join(f"{k} -> {v}" for k, v in ACCUMULATOR.items())
        raise _err("APK521", f"{label}: a is {a.dtype}, b is {b.dtype}, dst is {dst.dtype}; "
                   "the cube unit multiplies two inputs of one dtype into its accumulator",
                   notes=[f"input -> accumulator: {pairs}"],
                   help=(f"declare dst as {acc_name}" if acc_name and a.dtype == b.dtype
                         else "give a and b the same dtype: float16, bfloat16, float32, "
                         "int8 or int4"), a=str(a.dtype), b=str(b.dtype), dst=str(dst.dtype))
    for role in ("a", "b", "dst"):
        check_alignment(ops[role], label, role)
    (m, k), (k2, n), (m2, n2) = valid_shape(a), valid_shape(b), valid_shape(dst)
    if k != k2 or m != m2 or n != n2:
        raise _err("APK522", f"{label}: shapes do not fit dst (M, N) = a (M, K) @ b (K, N): "
                   f"a {shape_text((m, k))}, b {shape_text((k2, n))}, dst "
                   f"{shape_text((m2, n2))}",
                   notes=["valid extents (a TLA tile's origin_shape, else its shape)",
                          f"M: a {m}, dst {m2}; K: a {k}, b {k2}; N: b {n}, dst {n2}"],
                   help="tiles made with make_tensor_like from one GM tiling agree by "
                   "construction", m=(m, m2), k=(k, k2), n=(n, n2))
    if m == 0 or n == 0:
        return Plan(m, n, 0)
    c0 = formats.c0_for(a.dtype)
    kr = -(-k // c0) * c0 if strict else k
    dv = region(dst, (m, n), op=label, role="dst")
    if kr == 0:  # no K at all: the product is zero
        return Plan(m, n, 0, _other(dv, dst))
    av = region(a, (m, kr), op=label, role="a")
    bv = region(b, (kr, n), op=label, role="b")
    return Plan(m, n, kr, _other(dv, dst), av, bv)


def _other(view: Tensor, t: Tensor) -> Tensor | None:
    return None if view is t else view


def _mmad_cube(dst: Tensor, a: Tensor, b: Tensor, accumulate: bool, name: str | None,
               bias: Tensor | None, unit_flag: Any) -> None:
    """mmad with the bias table (`bias`: dst = a @ b + bias, a row of N float32 / int32 in BT,
    MmadParams' cmatrixSource) or under the unit flag (`unit_flag` 2/3, `unitflag`): the
    rules of mmad, then these; no plan."""
    label = instruction_label("mmad", name)
    uf = unitflag.flag_arg(label, unit_flag)
    plan = mmad_plan(dst, a, b, label, current().options.strict_padding)
    bv = None
    if bias is not None:
        bv = _bias_view(label, bias, dst, plan.n, accumulate)
    _execute(label, name, plan, dst, a, accumulate, bv, uf)


def _execute(label: str, name: str | None, plan: Plan, dst: Tensor, a: Tensor,
             accumulate: bool, bv: Tensor | None, uf: int) -> None:
    """A checked mmad with its bias view or unit flag: resolve, record, compute, write."""
    m, n, kr = plan.m, plan.n, plan.kr
    if m == 0 or n == 0:
        return
    dv = dst if plan.dv is None else plan.dv
    pairs = [("dst", dv)] + ([("a", plan.av), ("b", plan.bv)] if kr else []) \
        + ([("bias", bv)] if bv is not None else [])
    accs = resolve_operands(label, ex.TI_GROUP, *pairs)
    unitflag.before_write(label, dv, uf)
    trace.record("mmad", name, {role: t for role, t in pairs})
    unitflag.after_write(dv, uf, label)
    if accs is None:
        return
    work = np.float32 if a.dtype.kind == "f" else np.float64
    if kr:
        out = product(_load(accs[1], label, "a", work), _load(accs[2], label, "b", work))
    else:
        out = np.zeros((m, n), work)
    if bv is not None:
        out = out + ex.read(accs[-1], label, "bias").astype(work).reshape(1, n)
    _finish(accs[0], out, accumulate, label, dst.dtype.np)


def _bias_view(label: str, bias: Any, dst: Tensor, n: int, accumulate: bool) -> Tensor:
    t = tensor_arg(bias, label, "bias")
    check_operand(TABLE["mmad"], label, "bias", t)
    if t.dtype != dst.dtype or t.ndim != 1 or t.shape[0] < n:
        raise _err("APK518", f"{label}: bias {t.name} is {t.dtype} {shape_text(t.shape)}; "
                   f"the bias table holds a row of at least N = {n} {dst.dtype} (the "
                   "accumulator's dtype)", notes=["mmad with bias: dst[m, n] = (a @ b)[m, n] "
                                                  "+ bias[n]"],
                   help=f"copy the bias L1 -> BT into an ndarray(({n},), {dst.dtype}, bt)")
    if accumulate:
        raise _err("APK518", f"{label}: bias= and accumulate=True; the bias table starts an "
                   "accumulation (it replaces L0C's old value), it does not add to one",
                   help="give the bias to the first mmad of the accumulation (accumulate="
                   "False) and accumulate the others without it")
    check_alignment(t, label, "bias")
    return t[0:n]


def run(plan: Plan, dst: Tensor, a: Tensor, b: Tensor, accumulate: bool,
        name: str | None, label: str) -> None:
    """Execute a checked mmad: resolve (freed storage), record (sync checker, trace), the
    init-checked loads of a and b, the product on one BLAS thread, the accumulation."""
    m, n, kr = plan.m, plan.n, plan.kr
    if m == 0 or n == 0:
        return
    dv = dst if plan.dv is None else plan.dv
    if kr == 0:
        accs = resolve_operands(label, ex.TI_GROUP, ("dst", dv))
        trace.record("mmad", name, {"dst": dv})
        if accs is not None:
            _finish(accs[0], np.zeros((m, n), np.float64), accumulate, label, dst.dtype.np)
        return
    av, bv = plan.av, plan.bv
    accs = resolve_operands(label, ex.TI_GROUP, ("a", av), ("b", bv), ("dst", dv))
    trace.record("mmad", name, {"dst": dv, "a": av, "b": bv})
    if accs is None:
        return
    acc_a, acc_b, acc_d = accs
    work = np.float32 if a.dtype.kind == "f" else np.float64  # float64 holds int8 sums exactly
    left, right = _load(acc_a, label, "a", work), _load(acc_b, label, "b", work)
    lshape = acc_d.lshape if type(acc_d) is ex.Strided else (m, n)
    _finish(acc_d, leaf_product(left, right, lshape), accumulate, label, dst.dtype.np)
    if plan.fast is None and work is np.float32:
        plan.fast = _fast_parts(acc_a, acc_b, acc_d, av, bv, dv)


def _fast_parts(acc_a: ex.Access, acc_b: ex.Access, acc_d: ex.Access, av: Tensor,
                bv: Tensor, dv: Tensor) -> tuple[Any, ...] | None:
    """What `run_fast` needs, once a float mmad ran in full on three strided views: the
    accesses (those `resolve` memoises on the views, so what resolving would give), the arrays
    each operand is gathered from (float16 as its bit patterns, for the table) and the
    destination in its memory order (where the product is added or stored)."""
    accs = (acc_a, acc_b, acc_d)
    if any(type(acc) is not ex.Strided for acc in accs) or not plans.cacheable(av, bv, dv) \
            or any(getattr(v, "memo", None) is not acc for v, acc in zip((av, bv, dv), accs)) \
            or acc_d.dtype.np != np.float32 or not acc_d.injective():
        return None
    loads = []
    for acc in (acc_a, acc_b):
        src = acc.array()
        table = src.dtype == np.float16
        loads.append((src.view(np.uint16) if table else src, table, acc.shape, acc.lshape))
    d = acc_d.array()
    order = tuple(sorted(range(d.ndim), key=lambda i: -abs(d.strides[i])))
    return (acc_a.storage, acc_b.storage, acc_d.storage, acc_d, loads[0], loads[1],
            d.transpose(order), acc_d.lshape, order,
            trace.kept_plan("mmad", {"dst": dv, "a": av, "b": bv}))


def run_fast(plan: Plan, dst: Tensor, a: Tensor, b: Tensor, accumulate: bool,
             name: str | None, m: Any) -> bool:
    """A planned float mmad on its first call's accesses and arrays, with every per-call check
    of the full path: freed storage, the init check of a and b (and of dst when accumulating),
    the sync checker and trace.  False (nothing done, nothing recorded): the full path must
    run (check mode; freed or unwritten data, which it reports)."""
    if m.check:
        return False
    sa, sb, sd, acc_d, (src_a, table_a, shape_a, ls_a), (src_b, table_b, shape_b, ls_b), \
        d, ls_d, order, kept = plan.fast  # type: ignore[misc]
    if sa.freed or sb.freed or sd.freed:
        return False
    if not (sa.all_written and sb.all_written) and m.options.init_check:
        return False
    if not sd.all_written and (accumulate or acc_d.dtype.bits < sd.unit_bits):
        return False  # (the full path reads dst init-checked, or refines its written state)
    trace.record_kept(m, kept, "mmad", name, {"dst": dst if plan.dv is None else plan.dv,
                                              "a": plan.av, "b": plan.bv})
    left = np.empty(shape_a, np.float32)
    if table_a:
        _F16_TO_F32.take(src_a, out=left.reshape(ls_a), mode="clip")
    else:
        np.copyto(left.reshape(ls_a), src_a, casting="unsafe")
    right = np.empty(shape_b, np.float32)
    if table_b:
        _F16_TO_F32.take(src_b, out=right.reshape(ls_b), mode="clip")
    else:
        np.copyto(right.reshape(ls_b), src_b, casting="unsafe")
    # in the destination's memory order: NumPy otherwise walks the logical order, 2.5x slower
    # over the fractal strides
    p = leaf_product(left, right, ls_d).transpose(order)
    if accumulate:
        np.add(d, p, out=d)
        return True
    np.copyto(d, p)
    if not sd.all_written:
        mark_written(acc_d)
    return True


# float16 -> float32 by table: every float16 bit pattern's float32 value.  A gather from the
# table is exact and about twice as fast as NumPy's float16 cast.
_F16_TO_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def _load(acc: ex.Access, label: str, role: str, work: type) -> np.ndarray:
    """An operand's logical matrix in the working dtype, gathered from its fractal storage in
    one strided cast-and-copy (init-checked)."""
    m = current()
    if m.options.init_check and not acc.storage.all_written:
        # with strict_padding the whole fractals' K is read, and padding nothing wrote is
        # reported where it is read (SPEC 4: the tail bug); otherwise unwritten data
        # propagates into dst like any instruction's
        ex.check_init(acc, label, role, observed=m.options.strict_padding)
        return acc.read().astype(work)
    if type(acc) is not ex.Strided:
        return acc.read().astype(work)
    out = np.empty(acc.shape, work)
    src = acc.array()
    if src.dtype == np.float16 and work is np.float32:
        _F16_TO_F32.take(src.view(np.uint16), out=out.reshape(acc.lshape), mode="clip")
    else:
        np.copyto(out.reshape(acc.lshape), src, casting="unsafe")
    return out


def leaf_product(left: np.ndarray, right: np.ndarray, lshape: tuple[int, ...]) -> np.ndarray:
    """`left @ right` (M, K) x (K, N) on one BLAS thread, shaped as the destination's leaves
    `lshape`.  An NZ destination's leaves are (M, N/16, 16) (its fractal rows merge): it
    stores its 16-column blocks one after another, each an (M, 16) row-major matrix.  Its
    product is made as those N/16 blocks, so it lies in the destination's memory order and the
    add into L0C walks both arrays contiguously (a 128 x 64 x 256 float32 tile: 43 us for the
    product and the add, against 84 us for one product added through the fractal strides; the
    stdlib GEMM 2048^3 9% faster).  Each element is then the same contraction by the same BLAS
    kernel, so the same value, as long as K is one of its K blocks (`blas.MAX_K`; past 300 the
    two ways round differently here)."""
    m, k, n = left.shape[0], left.shape[1], right.shape[1]
    if len(lshape) == 3 and lshape[0] == m and lshape[1] * lshape[2] == n and k <= MAX_K:
        blocks = right.reshape(k, lshape[1], lshape[2]).transpose(1, 0, 2)
        return product(left, blocks).transpose(1, 0, 2)  # (N/16, M, 16) in memory
    return product(left, right).reshape(lshape)


def _finish(acc_d: ex.Access, product: np.ndarray, accumulate: bool, label: str,
            out: np.dtype) -> None:
    if accumulate and out.kind == "f" and type(acc_d) is ex.Strided \
            and acc_d.storage.all_written and acc_d.injective():
        # add in place through the fractal view: nothing to check, nothing newly written.
        # Walk both in the destination's memory order: NumPy's add otherwise follows the
        # logical order and runs 2.5x slower over the fractal strides.
        dst = acc_d.array()
        order = sorted(range(dst.ndim), key=lambda i: -abs(dst.strides[i]))
        d, p = dst.transpose(order), product.reshape(acc_d.lshape).transpose(order)
        np.add(d, p, out=d, casting="unsafe")
        return
    if accumulate:
        product = product + ex.read(acc_d, label, "dst").reshape(product.shape)
    if out.kind == "i":  # the int32 accumulator wraps
        product = np.rint(product).astype(np.int64).astype(out)
    ex.prepare_write(acc_d, label, "dst")
    ex.store(acc_d, product)


# ---------------------------------------------------------------------------- pyasc's form

MMAD_SIZE_MAX = 4095
# the start alignment of each flat operand (the Mmad page: L0C 1024 bytes, L0A/L0B 512)
FLAT_ALIGN = {"dst": 1024, "a": 512, "b": 512}


def mmad_flat(dst: Any, fm: Any, filter_: Any, bias: Any, params: MmadParams,
              name: str | None) -> None:
    """`mmad(dst, fm, filter[, bias], asc.MmadParams(m, n, k, ...))` on pyasc's LocalTensors
    (a start address and a length): from its start, `fm` holds the m x k matrix A in L0A as
    ZZ, `filter` the k x n matrix B in L0B as ZN and `dst` the m x n result in L0C as NZ
    (AscendC's Mmad page, Atlas A2; `tla.fractal_view`).  L0C starts from zero when
    `cmatrix_init_val` is set and `is_bias` is not (the AscendC implementation's rule), else
    from what it holds (accumulating); with a bias tensor (C2: the bias table) from the bias
    row.  `unit_flag` as for views (`unitflag`)."""
    label = instruction_label("mmad", name)
    ops = {"dst": tensor_arg(dst, label, "dst"), "a": tensor_arg(fm, label, "fm"),
           "b": tensor_arg(filter_, label, "filter")}
    shown = {"dst": "dst", "a": "fm", "b": "filter"}
    for role, t in ops.items():
        check_live(t, label, role)
        check_operand(TABLE["mmad"], label, role, t)
        if t.ndim != 1:
            raise _err("APK671", f"{label}: {shown[role]} {t.name} is a {t.ndim}-d view; "
                       "mmad with asc.MmadParams takes LocalTensors (a start and a length)",
                       help="pass the LocalTensors, or call mmad(dst, a, b) on matrix views")
        size = t.dtype.bits // 8
        if int(t.layout.offset) * size % FLAT_ALIGN[role]:
            raise _err("APK523", f"{label}: {shown[role]} {t.name} starts at byte "
                       f"{int(t.layout.offset) * size} of {t.buffer.upper()}; Mmad's "
                       f"{shown[role]} starts {FLAT_ALIGN[role]}-byte aligned",
                       help=f"place the LocalTensor at a multiple of {FLAT_ALIGN[role]} bytes")
    d, a, b = ops["dst"], ops["a"], ops["b"]
    if params.given is None and (params.m or params.n or params.k):
        raise _err("APK670", f"{label}: asc.MmadParams(m={params.m}, n={params.n}, "
                   f"k={params.k}) without a whole flag set: pyasc builds an empty MmadParams "
                   "(m = n = k = 0) then, so the device would compute nothing",
                   notes=["pyasc passes m, n and k with unit_flag, cmatrix_source and "
                          "cmatrix_init_val, or with is_bias, fm_offset, en_ssparse, "
                          "en_winograd_a and en_winograd_b; with neither set whole its "
                          "MmadParams constructor emits no arguments"],
                   help="asc.MmadParams(m, n, k, unit_flag=0, cmatrix_source=False, "
                   "cmatrix_init_val=True)")
    m, n, k = (_size(label, getattr(params, f), f) for f in ("m", "n", "k"))
    uf = unitflag.flag_arg(label, params.unit_flag)
    acc_name = ACCUMULATOR.get(a.dtype.name)
    if a.dtype != b.dtype or acc_name is None or d.dtype.name != acc_name or a.dtype.bits < 8:
        pairs = ", ".join(f"{k} -> {v}" for k, v in ACCUMULATOR.items() if k != "int4")
        raise _err("APK521", f"{label}: fm is {a.dtype}, filter is {b.dtype}, dst is "
                   f"{d.dtype}; the cube unit multiplies two inputs of one dtype into its "
                   "accumulator", notes=[f"input -> accumulator: {pairs}"])
    bv = None
    if bias is not None:
        bv = _bias_view(label, bias, d, n, False)
        accumulate = False
    else:
        init = params.cmatrix_init_val is True and params.is_bias is not True
        if params.cmatrix_source is True and not init:
            raise _err("APK671", f"{label}: cmatrix_source=True starts L0C from the bias "
                       "table, but no bias tensor is given", help="mmad(dst, fm, filter, bias, "
                       "params) with the bias LocalTensor in C2")
        accumulate = not init
    c0 = formats.c0_for(a.dtype)
    kr = -(-k // c0) * c0 if current().options.strict_padding else k
    if m == 0 or n == 0:
        return
    dv = fractal_view(d, "NZ", (m, n), label, "dst")
    if kr == 0:
        plan = Plan(m, n, 0, dv)
    else:
        plan = Plan(m, n, kr, dv, fractal_view(a, "ZZ", (m, kr), label, "fm"),
                    fractal_view(b, "ZN", (kr, n), label, "filter"))
    _execute(label, name, plan, d, a, accumulate, bv, uf)


def _size(label: str, value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not 0 <= int(value) <= MMAD_SIZE_MAX:
        raise _err("APK672", f"{label}: MmadParams.{what} is {value!r}; it is an integer in "
                   f"[0, {MMAD_SIZE_MAX}]")
    return int(value)
