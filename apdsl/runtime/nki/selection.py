"""Selection and scans: `tensor_copy_predicated`, `affine_select`, `range_select`,
`select_reduce`, `tensor_tensor_scan` (NKI isa docstrings; SPEC 11).

Each checks the rules its docstring gives (memory, dtypes, shapes, operators, targets) and
computes the docstring's NumPy model in float32, cast to dst.  `range_select` and
`select_reduce` reduce into the Vector Engine's accumulators (`apdsl.runtime.nki.vector_acc`).
Left unchecked because the docs are silent: the dtype of `tensor_tensor_scan`'s `initial` tile
and of `range_select`'s `dst` and `reduce_res`, and any PSUM rule of `range_select`.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core.operands import int_arg, start_partition, static_shape, step_count_pairs
from ..core.trace import instruction_label
from ..table import semantics as sem
from ..table.operators import OPERATORS, operator_arg
from . import vector_acc
from .compute import Pairs, Prepared, not_both_psum, prepare, scalar_arg
from .elementwise import ARITH, check_targets, target_of

COMPARISONS = ("equal", "less", "less_equal", "greater", "greater_equal")
FP32_MIN = float(np.finfo(np.float32).min)


def _lane(p: Prepared) -> int:
    start = start_partition(p.tensors["dst"])
    return 0 if start is None else start


# -- tensor_copy_predicated --------------------------------------------------------------------

def tensor_copy_predicated(dst: Tensor, src: Any, predicate: Tensor, reverse_pred: bool = False,
                           engine: Any = "unknown", name: str | None = None) -> None:
    """Copy `src` (a tile, or a number) into `dst` where `predicate` (uint8/16/32) is non-zero
    (zero with `reverse_pred`); elsewhere dst keeps its contents.  Vector Engine; src and dst
    of one dtype; src and predicate not both in PSUM.

    >>> d = apdsl.ndarray((1, 4), "float32", "sbuf")
    >>> apdsl.memset(d, 0.0)
    >>> m = apdsl.from_numpy(np.array([[1, 0, 0, 1]], np.uint8), "sbuf")
    >>> apdsl.tensor_copy_predicated(d, 5.0, m)
    >>> d.numpy()
    array([[5., 0., 0., 5.]], dtype=float32)
    """
    label = instruction_label("tensor_copy_predicated", name)
    t, scalar = scalar_arg(src, label, "src")

    def check(label: str, pairs: Pairs) -> None:
        views = dict(pairs)
        not_both_psum(label, pairs, "src", "predicate")
        if "src" in views and views["src"].dtype != views["dst"].dtype:
            raise TargetError(f"{label}: src {views['src'].name} is {views['src'].dtype.name} "
                              f"and dst {views['dst'].name} {views['dst'].dtype.name}; "
                              "tensor_copy_predicated copies between tiles of one dtype",
                              code="APK360", help="tensor_copy src into a tile of dst's dtype "
                              "first")

    p = prepare("tensor_copy_predicated", {"dst": dst, "src": t, "predicate": predicate},
                name=name, engine=engine, check=check)
    if not p.executing:
        return
    d = p.tensors["dst"].dtype
    pred = p.raw("predicate")
    value = p.raw("src") if t is not None else ex.cast(np.asarray(scalar), d)
    p.write_where(np.broadcast_to(value, pred.shape), sem.truth(pred, bool(reverse_pred)))


# -- affine_select -----------------------------------------------------------------------------

def affine_select(dst: Tensor, pattern: Any, channel_multiplier: Any, on_true_tile: Tensor,
                  on_false_value: Any, cmp_op: Any = None, offset: Any = 0,
                  engine: Any = "unknown", name: str | None = None) -> None:
    """`dst = on_true_tile` where `cmp_op(offset + p * channel_multiplier + sum(i_k * step_k),
    0)` holds (the iota expression of `pattern`, in int32), else `on_false_value` (float32).
    GpSimd; dst and on_true_tile in SBUF; cmp_op a comparison, `nl.equal` by default.

    >>> x = apdsl.ndarray((3, 3), "float32", "sbuf")
    >>> apdsl.memset(x, 1.0)
    >>> m = apdsl.ndarray((3, 3), "float32", "sbuf")
    >>> apdsl.affine_select(m, [[-1, 3]], 1, x, -9.0, apdsl.operator("greater_equal"))
    >>> m.numpy()          # causal: keep where p - i >= 0
    array([[ 1., -9., -9.],
           [ 1.,  1., -9.],
           [ 1.,  1.,  1.]], dtype=float32)
    """
    label = instruction_label("affine_select", name)
    cmp = operator_arg(cmp_op if cmp_op is not None else OPERATORS["equal"], label,
                       "cmp_op", kinds=("compare",), accepted="comparison operators "
                       "(nl.equal, nl.not_equal, nl.less, nl.less_equal, nl.greater, "
                       "nl.greater_equal)")
    steps, counts = _pattern(pattern, label)
    cm, off = int_arg(channel_multiplier, label, "channel_multiplier"), \
        int_arg(offset, label, "offset")
    _, false_value = scalar_arg(on_false_value, label, "on_false_value")
    if false_value is None:
        raise ApdslRuntimeError(f"{label}: on_false_value must be a number (float32)",
                                code="APK359", help="pass a number, for example -9984.0")

    def check(label: str, pairs: Pairs) -> None:
        shape = dict(pairs)["dst"].shape
        if all(isinstance(n, (int, np.integer)) for n in shape):
            free = prod(shape[1:])
            if prod(counts) != free:
                raise TargetError(f"{label}: the pattern's counts {counts} give "
                                  f"{prod(counts)} elements per partition; dst has {free}",
                                  code="APK366", help=f"make the counts multiply to {free}",
                                  counts=counts)

    p = prepare("affine_select", {"dst": dst, "on_true_tile": on_true_tile}, name=name,
                engine=engine, check=check)
    if not p.executing:
        return
    affine = sem.iota(p.parts(), off, cm, steps, counts).reshape(p.parts(), -1)
    same = p.tensors["dst"].dtype == p.tensors["on_true_tile"].dtype
    on_true = p.raw("on_true_tile") if same else p.f32("on_true_tile")
    if same:  # the selected elements move as they are
        false_cast = ex.cast(np.asarray(np.float32(false_value)), p.tensors["dst"].dtype)
        pred = cmp.fn(affine.astype(np.float64), np.float64(0)) != 0
        p.write(np.where(pred, on_true, false_cast))
    else:  # through float32 (isa docstring)
        p.write(sem.affine_select(affine, cmp, on_true, false_value))


def _pattern(pattern: Any, label: str) -> tuple[list[int], list[int]]:
    steps, counts = step_count_pairs(pattern, label, "[[-1, 128]]")
    if len(pattern) > 4:
        raise TargetError(f"{label}: the pattern has {len(pattern)} [step, count] entries; at "
                          "most 4 are allowed", code="APK366",
                          help="merge entries whose steps chain, or split the tile",
                          entries=len(pattern))
    return steps, counts


# -- range_select and select_reduce ------------------------------------------------------------

def range_select(dst: Tensor, on_true_tile: Tensor, comp_op0: Any, comp_op1: Any,
                 bound0: Tensor, bound1: Tensor, reduce_cmd: Any = "reset_reduce",
                 reduce_res: Tensor | None = None, reduce_op: Any = None, range_start: Any = 0,
                 on_false_value: Any = FP32_MIN, engine: Any = "unknown",
                 name: str | None = None) -> None:
    """`dst = on_true_tile` where `comp_op0(i, bound0)` and `comp_op1(i, bound1)` both hold for
    the free index `i = range_start + j` (float32), else `on_false_value` (FP32_MIN, the only
    value hardware takes); the maximum of each partition goes into the Vector Engine's
    accumulator (`reduce_cmd`) and, when given, to `reduce_res`.  NeuronCore-v3+ (trn2, trn3).

    >>> x = apdsl.from_numpy(np.array([[1.0, 7.0, 3.0, 5.0]], np.float32), "sbuf")
    >>> lo = apdsl.from_numpy(np.array([[1.0]], np.float32), "sbuf")
    >>> hi = apdsl.from_numpy(np.array([[3.0]], np.float32), "sbuf")
    >>> d = apdsl.ndarray((1, 4), "float32", "sbuf")
    >>> r = apdsl.ndarray((1, 1), "float32", "sbuf")
    >>> apdsl.range_select(d, x, apdsl.operator("greater_equal"), apdsl.operator("less"),
    ...                    lo, hi, reduce_res=r)
    >>> float(r.numpy()[0, 0])
    7.0
    """
    label = instruction_label("range_select", name)
    words = "nl.equal, nl.less, nl.less_equal, nl.greater or nl.greater_equal"
    op0 = operator_arg(comp_op0, label, "comp_op0", names=COMPARISONS, accepted=words)
    op1 = operator_arg(comp_op1, label, "comp_op1", names=COMPARISONS, accepted=words)
    _reduce_op(reduce_op, label)
    cmd = vector_acc.reduce_cmd_arg(reduce_cmd, label)
    vector_acc.check_cmd(label, cmd, reduce_res is not None)
    start = int_arg(range_start, label, "range_start")
    _, false_value = scalar_arg(on_false_value, label, "on_false_value")
    if false_value is None or np.float32(false_value) != np.float32(FP32_MIN):
        raise TargetError(f"{label}: on_false_value is {on_false_value!r}; hardware takes "
                          f"FP32_MIN ({FP32_MIN!r}) only", code="APK368",
                          help="leave on_false_value unset")

    def check(label: str, pairs: Pairs) -> None:
        tgt = target_of(pairs)
        if tgt not in ("trn2", "trn3"):
            raise TargetError(f"{label}: range_select needs NeuronCore-v3 or newer (trn2, "
                              f"trn3); the target is {tgt}", code="APK367",
                              help="use --target trn2, or select with affine_select")
        shape = dict(pairs)["on_true_tile"].shape
        if all(isinstance(n, (int, np.integer)) for n in shape):
            last = start + prod(shape[1:]) - 1
            if min(start, last) < -2**24 or max(start, last) > 2**24:
                raise TargetError(f"{label}: range_start + the free index runs from {start} to "
                                  f"{last}; the docs keep it within 2**24 (float32 holds "
                                  "every integer only there)", code="APK369",
                                  help="split the tile or lower range_start")

    p = prepare("range_select", {"dst": dst, "on_true_tile": on_true_tile, "bound0": bound0,
                                 "bound1": bound1, "reduce_res": reduce_res},
                name=name, engine=engine, columns=("bound0", "bound1", "reduce_res"),
                check=check)
    if not p.executing:
        _check_lanes(p, cmd)
        return
    on_true = p.f32("on_true_tile")
    mask = sem.range_mask(p.parts(), on_true.shape[1], start, op0, op1, p.f32("bound0"),
                          p.f32("bound1"))
    result = sem.select(mask, on_true, FP32_MIN)
    _finish(p, cmd, result)


def select_reduce(dst: Tensor, predicate: Tensor, on_true: Tensor, on_false: Any,
                  reduce_res: Tensor | None = None, reduce_cmd: Any = "idle",
                  reduce_op: Any = None, reverse_pred: bool = False, engine: Any = "unknown",
                  name: str | None = None) -> None:
    """`dst = on_true` where `predicate` (int8/uint8/int16/uint16) is non-zero (zero with
    `reverse_pred`), else `on_false` (a float32 number or a `[P, 1]` tile); with `reduce_cmd`
    reset_reduce or reduce, the maximum of each partition goes into the Vector Engine's
    accumulator and, when given, to `reduce_res`.  on_true and predicate not both in PSUM.

    >>> x = apdsl.from_numpy(np.array([[4.0, 9.0, 2.0]], np.float32), "sbuf")
    >>> m = apdsl.from_numpy(np.array([[1, 0, 1]], np.uint8), "sbuf")
    >>> d = apdsl.ndarray((1, 3), "float32", "sbuf")
    >>> apdsl.select_reduce(d, m, x, 0.0)
    >>> d.numpy()
    array([[4., 0., 2.]], dtype=float32)
    """
    label = instruction_label("select_reduce", name)
    _reduce_op(reduce_op, label)
    cmd = vector_acc.reduce_cmd_arg(reduce_cmd, label)
    vector_acc.check_cmd(label, cmd, reduce_res is not None)
    t, scalar = scalar_arg(on_false, label, "on_false")

    def check(label: str, pairs: Pairs) -> None:
        not_both_psum(label, pairs, "on_true", "predicate")

    p = prepare("select_reduce", {"dst": dst, "predicate": predicate, "on_true": on_true,
                                  "on_false": t, "reduce_res": reduce_res},
                name=name, engine=engine, columns=("on_false", "reduce_res"), check=check)
    if not p.executing:
        _check_lanes(p, cmd)
        return
    false = p.f32("on_false") if t is not None else scalar
    result = sem.select(sem.truth(p.raw("predicate"), bool(reverse_pred)), p.f32("on_true"),
                        false)
    _finish(p, cmd, result)


def _reduce_op(reduce_op: Any, label: str) -> None:
    if reduce_op is not None:
        operator_arg(reduce_op, label, "reduce_op", names=("maximum",),
                     accepted="nl.maximum only")


def _check_lanes(p: Prepared, cmd: str) -> None:
    """Check mode: the accumulator lanes' known state, as run keeps it."""
    shape = static_shape(p.tensors["dst"])
    if shape is not None:
        vector_acc.accumulate_max(p.label, cmd, _lane(p), None, count=shape[0])


def _finish(p: Prepared, cmd: str, result: np.ndarray) -> None:
    """Write dst, accumulate the maxima, give reduce_res the accumulators."""
    acc = vector_acc.accumulate_max(p.label, cmd, _lane(p), sem.row_max(result))
    p.write(result)
    if "reduce_res" in p.tensors and acc is not None:
        p.write(acc.reshape(-1, 1), "reduce_res")


# -- tensor_tensor_scan ------------------------------------------------------------------------

def tensor_tensor_scan(dst: Tensor, data0: Tensor, data1: Tensor, initial: Any, op0: Any,
                       op1: Any, reverse0: bool = False, reverse1: bool = False,
                       engine: Any = "unknown", name: str | None = None) -> None:
    """A scan along each partition on the Vector Engine: `r[:, i] = op1(op0(data0[:, i],
    r[:, i-1]), data1[:, i])`, starting from `initial` (a float32 number or a `[P, 1]` tile),
    over the elements of each partition in row-major order; binary arithmetic operators, in
    float32, cast to dst.  data0 and data1 not both in PSUM.

    >>> x = apdsl.from_numpy(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32), "sbuf")
    >>> z = apdsl.from_numpy(np.zeros((1, 4), np.float32), "sbuf")
    >>> d = apdsl.ndarray((1, 4), "float32", "sbuf")
    >>> apdsl.tensor_tensor_scan(d, x, z, 0.0, apdsl.operator("add"), apdsl.operator("add"))
    >>> d.numpy()          # a running sum
    array([[ 1.,  3.,  6., 10.]], dtype=float32)
    """
    label = instruction_label("tensor_tensor_scan", name)
    words = "binary arithmetic operators of the NKI math-operator table"
    o0 = operator_arg(op0, label, "op0", kinds=ARITH, arity=2, accepted=words)
    o1 = operator_arg(op1, label, "op1", kinds=ARITH, arity=2, accepted=words)
    t, scalar = scalar_arg(initial, label, "initial")

    def check(label: str, pairs: Pairs) -> None:
        check_targets(label, pairs, {"op0": o0, "op1": o1})
        not_both_psum(label, pairs, "data0", "data1")

    p = prepare("tensor_tensor_scan", {"dst": dst, "data0": data0, "data1": data1,
                                       "initial": t},
                name=name, engine=engine, columns=("initial",), check=check)
    if not p.executing:
        return
    init = p.f32("initial") if t is not None else np.float32(scalar)
    with np.errstate(all="ignore"):
        p.write(sem.tensor_tensor_scan(p.f32("data0"), p.f32("data1"), init, o0, o1,
                                       bool(reverse0), bool(reverse1)))
