"""The element-wise vector instructions, with pyasc's parameter names and orders.

Each takes both forms: `asc.add(dst, src0, src1, count)` and `asc.add(dst, src0, src1, mask,
repeat_times, repeat_params)` (mask an int or `[low, high]`; `count=`, `mask=` by keyword
too).  Two-input instructions take `asc.BinaryRepeatParams`, one-input and scalar ones
`asc.UnaryRepeatParams`.  Operands share one dtype (APK556), except where the docs list mixed
combinations (axpy and mul_add_dst: half inputs into a float dst).

>>> x = apdsl.ndarray((64,), "float32", "ub")
>>> apdsl.memset(x, 2.0)
>>> y = apdsl.ndarray((64,), "float32", "ub")
>>> add(y, x, x, 64)
>>> float(y.numpy()[0])
4.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ...core import execute as ex
from ...core import unwritten
from ...table import TABLE
from ...table import semantics_vector as arith
from . import run
from .params import BinaryRepeatParams, UnaryRepeatParams

Pairs = dict[str, Any]


def same_dtype(label: str, tensors: Pairs, roles: tuple[str, ...]) -> None:
    """APK556: `roles` must share one dtype."""
    names = {r: tensors[r].dtype.name for r in roles}
    if len(set(names.values())) > 1:
        listed = ", ".join(f"{r} {d}" for r, d in names.items())
        raise ApdslRuntimeError(f"{label}: the operands' dtypes differ ({listed}); this "
                                "instruction computes in one dtype", code="APK556",
                                help="asc.cast the operands to one dtype first",
                                dtypes=names)


def _form(count: Any, mask: Any, repeat_times: Any, repeat_params: Any, is_set_mask: Any,
          cls: type, same: tuple[str, ...], combos: tuple[tuple[str, ...], ...] = ()) -> Any:
    def make(label: str, tensors: Pairs) -> Any:
        if combos:
            got = tuple(tensors[r].dtype.name for r in same)
            if got not in combos:
                listed = "; ".join(", ".join(c) for c in combos)
                raise ApdslRuntimeError(
                    f"{label}: the dtypes ({', '.join(got)} for {', '.join(same)}) are not a "
                    f"combination the Atlas A2 docs list ({listed})", code="APK556",
                    help="asc.cast the operands to a listed combination")
        else:
            same_dtype(label, tensors, same)
        return run.form_of(label, run.lanes_of(tensors), count, mask, repeat_times,
                           repeat_params, is_set_mask, cls)
    return make


def _domain(inst: run.Instance, op: str, role: str, values: np.ndarray) -> None:
    dom = arith.DOMAINS.get(op.rpartition(".")[2])
    if dom is None:
        return
    text, test = dom
    ok = test(values)
    if ok.all() or unwritten.defined(ok).all():
        return
    i = int(np.argmin(ok.ravel()))
    t = inst.tensors[role]
    raise ApdslRuntimeError(
        f"{inst.label}: {role} {t.name} holds {values.ravel()[i]!r} (storage element "
        f"{int(inst.offs[role].ravel()[i])}), outside the inputs it is defined for ({text})",
        code="APK555", notes=[f"{int((~ok).sum())} of {ok.size} inputs are outside it",
                              "the AscendC docs define no result there, so apdsl does not "
                              "guess"],
        help="keep the inputs inside the domain (add a small epsilon, or select them first)")


def binary(op: str, dst: Any, src0: Any, src1: Any, count: Any, repeat_times: Any,
           repeat_params: Any, is_set_mask: Any, mask: Any, name: Any) -> None:
    """Run two-input instruction `op` (see the module docstring)."""
    inst = run.prepare(op, {"dst": dst, "src0": src0, "src1": src1}, name,
                       _form(count, mask, repeat_times, repeat_params, is_set_mask,
                             BinaryRepeatParams, ("dst", "src0", "src1")))
    if inst is None:
        return
    entry = TABLE[op]
    if entry.limits.get("bits"):
        inst.write(entry.semantics(inst.raw("src0"), inst.raw("src1")))
        return
    a, b = inst.math("src0"), inst.math("src1")
    _domain(inst, op, "src1", b)
    with np.errstate(all="ignore"):
        inst.write(entry.semantics(a, b))


def unary(op: str, dst: Any, src: Any, count: Any, repeat_times: Any, repeat_params: Any,
          is_set_mask: Any, mask: Any, name: Any) -> None:
    """Run one-input instruction `op`."""
    inst = run.prepare(op, {"dst": dst, "src": src}, name,
                       _form(count, mask, repeat_times, repeat_params, is_set_mask,
                             UnaryRepeatParams, ("dst", "src")))
    if inst is None:
        return
    entry = TABLE[op]
    if entry.limits.get("bits"):
        inst.write(entry.semantics(inst.raw("src")))
        return
    a = inst.math("src")
    _domain(inst, op, "src", a)
    with np.errstate(all="ignore"):
        inst.write(entry.semantics(a))


def scalar_value(label: str, scalar: Any, dtype: Any) -> Any:
    """The scalar as the instruction sees it: cast to the operand dtype first (pyasc
    materialises it in src's dtype), then as the arithmetic reads it."""
    if isinstance(scalar, (np.ndarray, np.generic)) and np.ndim(scalar) == 0:
        scalar = scalar.item()
    if isinstance(scalar, bool) or not isinstance(scalar, (int, float)):
        raise ApdslRuntimeError(f"{label}: scalar must be a number, got {scalar!r}",
                                code="APK550", help="pass a compile-time number")
    v = ex.cast(np.asarray(scalar), dtype)
    return v.astype(np.float32) if run.is_float(dtype.name) else v.astype(np.int64)


def with_scalar(op: str, dst: Any, src: Any, scalar: Any, count: Any, repeat_times: Any,
                repeat_params: Any, is_set_mask: Any, mask: Any, name: Any) -> None:
    """Run scalar instruction `op`: `dst = op(src, scalar)`."""
    inst = run.prepare(op, {"dst": dst, "src": src}, name,
                       _form(count, mask, repeat_times, repeat_params, is_set_mask,
                             UnaryRepeatParams, ("dst", "src")))
    entry = TABLE[op]
    bare = op.rpartition(".")[2]
    if bare.startswith("shift_"):
        t = src if inst is None else inst.tensors["src"]
        bits = t.dtype.bits
        label = op if inst is None else inst.label
        if isinstance(scalar, bool) or not isinstance(scalar, (int, np.integer)) or \
                not 0 <= int(scalar) <= bits:
            raise ApdslRuntimeError(f"{label}: the shift is {scalar!r}; for {t.dtype} it must "
                                    f"be an integer in [0, {bits}] (Atlas A2)", code="APK550",
                                    help=f"shift by 0 to {bits} places")
        if inst is not None:
            inst.write(entry.semantics(inst.raw("src"), int(scalar), bits))
        return
    if inst is None:
        if not isinstance(scalar, (int, float, np.integer, np.floating)) or \
                isinstance(scalar, bool):
            scalar_value(op, scalar, np.dtype("float32"))  # the same error check mode gives
        return
    s = scalar_value(inst.label, scalar, inst.tensors["src"].dtype)
    with np.errstate(all="ignore"):
        inst.write(entry.semantics(inst.math("src"), s))


def _binary_op(bare: str) -> Any:
    op = f"asc.{bare}"

    def fn(dst: Any, src0: Any, src1: Any, count: Any = None, repeat_times: Any = None,
           repeat_params: Any = None, is_set_mask: Any = True, mask: Any = None,
           name: str | None = None) -> None:
        binary(op, dst, src0, src1, count, repeat_times, repeat_params, is_set_mask, mask,
               name)
    fn.__name__ = fn.__qualname__ = bare
    fn.__doc__ = f"{TABLE[op].summary}: the count form or the mask form (BinaryRepeatParams)."
    return fn


def _unary_op(bare: str) -> Any:
    op = f"asc.{bare}"

    def fn(dst: Any, src: Any, count: Any = None, repeat_times: Any = None,
           repeat_params: Any = None, is_set_mask: Any = True, mask: Any = None,
           name: str | None = None) -> None:
        unary(op, dst, src, count, repeat_times, repeat_params, is_set_mask, mask, name)
    fn.__name__ = fn.__qualname__ = bare
    fn.__doc__ = f"{TABLE[op].summary}: the count form or the mask form (UnaryRepeatParams)."
    return fn


def _scalar_op(bare: str) -> Any:
    op = f"asc.{bare}"

    def fn(dst: Any, src: Any, scalar: Any, count: Any = None, repeat_times: Any = None,
           repeat_params: Any = None, is_set_mask: Any = True, mask: Any = None,
           name: str | None = None) -> None:
        with_scalar(op, dst, src, scalar, count, repeat_times, repeat_params, is_set_mask,
                    mask, name)
    fn.__name__ = fn.__qualname__ = bare
    fn.__doc__ = f"{TABLE[op].summary}: the count form or the mask form (UnaryRepeatParams)."
    return fn


add = _binary_op("add")
sub = _binary_op("sub")
mul = _binary_op("mul")
div = _binary_op("div")
max = _binary_op("max")  # noqa: A001 - pyasc's name
min = _binary_op("min")  # noqa: A001 - pyasc's name
bitwise_and = _binary_op("bitwise_and")
bitwise_or = _binary_op("bitwise_or")
adds = _scalar_op("adds")
muls = _scalar_op("muls")
maxs = _scalar_op("maxs")
mins = _scalar_op("mins")
shift_left = _scalar_op("shift_left")
shift_right = _scalar_op("shift_right")
leaky_relu = _scalar_op("leaky_relu")
exp = _unary_op("exp")
ln = _unary_op("ln")
abs = _unary_op("abs")  # noqa: A001 - pyasc's name
sqrt = _unary_op("sqrt")
rsqrt = _unary_op("rsqrt")
reciprocal = _unary_op("reciprocal")
relu = _unary_op("relu")
bitwise_not = _unary_op("bitwise_not")

# Axpy and MulAddDst: the Atlas A2 dtype combinations (inputs..., dst)
_FUSED = (("float16", "float16"), ("float32", "float32"))


def axpy(dst: Any, src: Any, scalar: Any, count: Any = None, repeat_times: Any = None,
         repeat_params: Any = None, is_set_mask: Any = True, mask: Any = None,
         name: str | None = None) -> None:
    """`dst = src * scalar + dst` (Axpy); half src into a float dst too (A2)."""
    inst = run.prepare("asc.axpy", {"dst": dst, "src": src}, name,
                       _form(count, mask, repeat_times, repeat_params, is_set_mask,
                             UnaryRepeatParams, ("src", "dst"),
                             _FUSED + (("float16", "float32"),)))
    if inst is None:
        return
    s = scalar_value(inst.label, scalar, inst.tensors["src"].dtype)
    inst.write(arith.axpy(inst.math("dst"), inst.math("src"), s))


def mul_add_dst(dst: Any, src0: Any, src1: Any, count: Any = None, repeat_times: Any = None,
                repeat_params: Any = None, is_set_mask: Any = True, mask: Any = None,
                name: str | None = None) -> None:
    """`dst = src0 * src1 + dst` (MulAddDst); half inputs into a float dst too (A2)."""
    inst = run.prepare("asc.mul_add_dst", {"dst": dst, "src0": src0, "src1": src1}, name,
                       _form(count, mask, repeat_times, repeat_params, is_set_mask,
                             BinaryRepeatParams, ("src0", "src1", "dst"),
                             (("float16", "float16", "float16"),
                              ("float32", "float32", "float32"),
                              ("float16", "float16", "float32"))))
    if inst is None:
        return
    inst.write(arith.mul_add_dst(inst.math("dst"), inst.math("src0"), inst.math("src1")))
