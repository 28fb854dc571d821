"""The element-wise instructions with operators: `tensor_tensor`, `tensor_scalar`,
`scalar_tensor_tensor` (NKI isa docstrings; SPEC 11).

Arithmetic operators compute in float32 and cast to dst; bit-vector operators (`invert`,
`bitwise_*`, the shifts) need integer tiles and work on their bits.  `tensor_tensor` on
int32/uint32 tiles defaults to the GpSimd engine, whose native integer arithmetic is exact.
Each rule the docs give is checked with its own code; where they are silent (which arithmetic
operators each engine takes beyond the Scalar Engine's trn2 list, GpSimd's `tensor_scalar`
scope, how bit patterns of different widths combine) nothing is assumed: the first two are left
unchecked, the last is refused as not modelled (APK355).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import targets
from ...tensor.dtypes import int_bounds
from ...tensor.view import Tensor
from ..core import unwritten
from ..core.trace import instruction_label
from ..table import semantics as sem
from ..table.operators import Operator, operator_arg, shift_inside
from . import hints, tile_plans
from .compute import Pairs, Prepared, not_both_psum, outside_domain, prepare, scalar_arg

ARITH = ("arith", "compare", "logical")
INT32 = ("int32", "uint32")
SHIFTS = ("left_shift", "right_shift")
# the Scalar Engine's tensor_scalar on trn2 (isa docstring): these (op0, op1) pairs only
SCALAR_TRN2 = (("multiply", "add"), ("multiply", None), ("add", None))


def target_of(pairs: Pairs) -> str:
    return targets.target_for(pairs[0][1].buffer).name


def check_targets(label: str, pairs: Pairs, ops: dict[str, Operator | None]) -> None:
    """APK352 for an operator the operands' target does not have."""
    limited = [(role, op) for role, op in ops.items() if op is not None and op.targets]
    if limited:
        tgt = target_of(pairs)
        for role, op in limited:
            operator_arg(op, label, role, table="any", target=tgt)


def check_bitvec_dtypes(label: str, pairs: Pairs, op: Operator) -> None:
    """Bit-vector operators need integer tiles (APK354) of one width (APK355)."""
    for role, t in pairs:
        if t.dtype.kind not in "iu":
            raise TargetError(f"{label}: {op!r} is a bit-vector operator, and {role} {t.name} is "
                              f"{t.dtype.name}; bit-vector operators take integer tiles only",
                              code="APK354", role=role, dtype=t.dtype.name,
                              help="view the data as an integer dtype of the same width (for "
                              "float32 bits, .view(int32)), or use an arithmetic operator")
    widths = {t.dtype.bits for _, t in pairs}
    if len(widths) > 1:
        shown = ", ".join(f"{role} {t.dtype.name}" for role, t in pairs)
        raise TargetError(f"{label}: {op!r} works on bit patterns and the operands have "
                          f"different widths ({shown})", code="APK355",
                          notes=["the NKI docs do not say how bit patterns of different "
                                 "widths combine, so apdsl does not guess"],
                          help="give every operand the same integer width (int32/uint32 "
                          "mix freely)", widths=sorted(widths))


def bits_of(value: Any, dtype: np.dtype, label: str, role: str) -> np.ndarray:
    """A scalar operand of a bit-vector operator as a bit pattern of `dtype` (APK365 when it
    is not an integer or does not fit the width)."""
    bits = 8 * dtype.itemsize
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ApdslRuntimeError(f"{label}: {role} = {value!r}: a bit-vector operator takes "
                                "an integer operand", code="APK365", role=role,
                                help=f"pass an int, for example {role}=0xFF")
    v = int(value)
    if not -(1 << (bits - 1)) <= v < (1 << bits):
        raise ApdslRuntimeError(f"{label}: {role} = {v} does not fit the {bits}-bit elements it "
                                f"combines with", code="APK365", role=role,
                                help=f"pass a value in [{-(1 << (bits - 1))}, {(1 << bits) - 1}]")
    return np.asarray(v % (1 << bits), np.dtype(f"u{dtype.itemsize}")).view(dtype)


def as_bits(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An integer array's bits as `dtype` (same width)."""
    return np.ascontiguousarray(x).view(dtype)


def bit_stage(p: Prepared, op: Operator, value: np.ndarray, operand: Any, reverse: bool,
              role: str) -> np.ndarray:
    """One bit-vector stage, its shift amounts checked (APK364)."""
    if op.name in SHIFTS:
        amount = value if reverse else operand
        amounts = np.broadcast_to(amount, np.broadcast_shapes(np.shape(value),
                                                              np.shape(operand)))
        ok = shift_inside(value, amounts)
        if not ok.all():
            where = "the shifted data" if reverse else role
            raise outside_domain(p.label, f"{op!r}", f"shift amounts 0 to "
                                 f"{8 * value.dtype.itemsize - 1}", where,
                                 p.tensors.get(role, p.tensors["dst"]), ~ok,
                                 np.asarray(amounts), code="APK364",
                                 why="the NKI docs do not say what a shift past the element "
                                 "width gives, so apdsl does not guess")
    return sem.stage(op, value, operand, reverse)


# -- tensor_tensor -----------------------------------------------------------------------------

def tensor_tensor(dst: Tensor, data1: Tensor, data2: Tensor, op: Any,
                  engine: Any = "unknown", name: str | None = None) -> None:
    """`dst = op(data1, data2)` element-wise on the Vector or GpSimd engine.

    `op` is a binary operator of the NKI math-operator table (`nl.add`, `nl.maximum`,
    `nl.bitwise_and`, ...; `nl.power` runs on GpSimd).  Arithmetic is float32, cast to dst;
    bit-vector operators take integer tiles and work on their bits; with every tile
    int32/uint32 the default engine is GpSimd, whose integer arithmetic is exact.  data1 and
    data2 may not both be in PSUM.

    >>> a = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(a, 1.5)
    >>> b = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(b, 2.0)
    >>> c = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.tensor_tensor(c, a, b, apdsl.operator("multiply"))
    >>> c.numpy()[0]
    array([3., 3., 3., 3.], dtype=float32)
    """
    views = {"dst": dst, "data1": data1, "data2": data2}
    key = tile_plans.key("tensor_tensor", views, op, (engine, name))
    plan = tile_plans.find(key, op)
    p = None if plan is None else plan.prepared(views)
    if p is not None:  # equal operands again: only the per-call checks (tile_plans)
        unwritten.begin()  # (a plan records nothing: the instruction starts here)
        if plan.ufunc is not None:  # type: ignore[union-attr]
            plan.run_direct(p)  # type: ignore[union-attr]
        else:
            _tensor_tensor(p, plan.value)  # type: ignore[union-attr]
        return
    raw = op
    label = instruction_label("tensor_tensor", name)
    op = operator_arg(op, label, "op", arity=2,
                      accepted="binary operators of the NKI math-operator table")

    def check(label: str, pairs: Pairs) -> None:
        check_targets(label, pairs, {"op": op})
        not_both_psum(label, pairs, "data1", "data2")
        if op.bitvec:
            check_bitvec_dtypes(label, pairs, op)

    def choose(label: str, pairs: Pairs) -> str:
        chosen = hints.compute_engine(label, engine, ("vector", "gpsimd"), pairs)
        if chosen != "unknown" and op.name != "power":
            return chosen
        in_psum = [f"{role} {t.name}" for role, t in pairs if t.buffer == "psum"]
        if op.name == "power":
            if chosen == "vector" or in_psum:
                why = "engine=vector was asked" if chosen == "vector" else \
                    f"{in_psum[0]} is in PSUM, which GpSimd cannot access"
                raise TargetError(f"{label}: nl.power runs on the GpSimd engine, but {why}",
                                  code="APK356", help="keep every operand of nl.power in "
                                  "SBUF and leave engine unset (or engine=nisa.engine.gpsimd)")
            return "gpsimd"
        if not op.bitvec and not in_psum and all(t.dtype.name in INT32 for _, t in pairs):
            return "gpsimd"  # the docs' default for int32/uint32 tiles
        return "vector"

    p = prepare("tensor_tensor", {"dst": dst, "data1": data1, "data2": data2}, name=name,
                engine=engine, check=check, choose=choose)
    if not p.executing:
        return
    _tensor_tensor(p, op)
    if key is not None:  # (after the call: its duplicate-write check passed)
        tile_plans.keep(key, raw, op, p, ("data1", "data2"), None if op.bitvec else op.ufunc)


def _tensor_tensor(p: Prepared, op: Operator) -> None:
    """tensor_tensor's arithmetic on checked operands (the general path and a plan's)."""
    if op.bitvec:
        d = p.tensors["dst"].dtype.np
        a, b = as_bits(p.raw("data1"), d), as_bits(p.raw("data2"), d)
        p.write(bit_stage(p, op, a, b, False, "data2"))
    elif p.engine == "gpsimd" and all(t.dtype.name in INT32 for t in p.tensors.values()):
        p.write(_exact(p, op, p.raw("data1"), p.raw("data2")))
    elif op.ufunc is None or not p.ufunc_into_dst(op.ufunc, ("data1", "data2")):
        p.write(sem.tensor_tensor(op, p.f32("data1"), p.f32("data2")))


def _exact(p: Prepared, op: Operator, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """GpSimd's integer arithmetic, exact; a result the destination cannot hold, or a negative
    power, is refused (APK358): the docs promise exact results and say nothing past them."""
    if op.name == "power" and (b < 0).any():
        raise outside_domain(p.label, "integer nl.power", "exponents >= 0", "data2",
                             p.tensors["data2"], b < 0, b, code="APK358",
                             why="a negative integer power is not an integer")
    result = sem.integer_tensor_tensor(op, a, b)
    dst = p.tensors["dst"]
    lo, hi = int_bounds(dst.dtype)
    bad = (result < lo) | (result > hi)
    if bad.any():
        bad &= ~unwritten.defined(np.zeros(bad.shape, bool))
    if bad.any():
        k = tuple(int(c) for c in np.argwhere(bad)[0])
        raise ApdslRuntimeError(
            f"{p.label}: {op!r} of {a[k]} and {b[k]} is {result[k]}, which {dst.dtype.name} "
            f"dst {dst.name} cannot hold", code="APK358",
            notes=["GpSimd's int32/uint32 arithmetic is exact; the NKI docs do not say what an "
                   "out-of-range result becomes, so apdsl does not guess"],
            help="use a wider or float destination, or engine=nisa.engine.vector for float32 "
            "math", coord=k)
    return np.asarray(result.astype(np.int64), dst.dtype.np)


# -- tensor_scalar -----------------------------------------------------------------------------

def _operands(op: Operator, value: Any, label: str, role: str, unused: bool = False
              ) -> tuple[Tensor | None, Any]:
    """An operand of a tensor_scalar stage: a unary operator takes None or 0 (APK362)."""
    if op.arity == 1:
        if value is not None and not (isinstance(value, (int, float)) and value == 0):
            raise ApdslRuntimeError(f"{label}: {op!r} is unary, so {role} must be None or 0, "
                                    f"got {value!r}", code="APK362", role=role,
                                    help=f"pass {role}=None")
        return None, None
    if value is None:
        raise ApdslRuntimeError(f"{label}: {op!r} is binary and {role} is None",
                                code="APK362", role=role,
                                help=f"pass {role}: a number or a [P, 1] tile")
    return scalar_arg(value, label, role)


def tensor_scalar(dst: Tensor, data: Tensor, op0: Any, operand0: Any, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False,
                  engine: Any = "unknown", name: str | None = None) -> None:
    """`dst = (data op0 operand0) op1 operand1` on the Vector, Scalar or GpSimd engine.

    Each operand is a compile-time scalar or a `[P, 1]` tile broadcast along the free axis
    (float32 for arithmetic operators); `reverse0`/`reverse1` put the operand on the left;
    `op1`/`operand1` are optional (both None when unused).  op0 and op1 are both arithmetic or
    both bit-vector; bit-vector ones run on the Vector engine on integer tiles.  On trn2 the
    Scalar engine takes (multiply, add), (multiply, None) and (add, None) only.

    >>> x = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(x, 3.0)
    >>> y = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.tensor_scalar(y, x, apdsl.operator("subtract"), 1.0, reverse0=True)
    >>> y.numpy()[0]
    array([-2., -2., -2., -2.], dtype=float32)
    """
    label = instruction_label("tensor_scalar", name)
    op0 = operator_arg(op0, label, "op0", accepted="operators of the NKI math-operator table")
    op1 = None if op1 is None else operator_arg(
        op1, label, "op1", accepted="operators of the NKI math-operator table")
    if op1 is not None and op0.bitvec != op1.bitvec:
        raise TargetError(f"{label}: op0={op0!r} and op1={op1!r} are of different types; both "
                          "must be bit-vector operators or both arithmetic", code="APK363",
                          help="split the computation into two tensor_scalar instructions")
    t0, s0 = _operands(op0, operand0, label, "operand0")
    if op1 is None:
        if operand1 is not None:
            raise ApdslRuntimeError(f"{label}: operand1 is given but op1 is None; both are "
                                    "None when unused", code="APK362", role="operand1",
                                    help="pass op1= too, or drop operand1")
        t1, s1 = None, None
    else:
        t1, s1 = _operands(op1, operand1, label, "operand1")
    bitvec = op0.bitvec

    def check(label: str, pairs: Pairs) -> None:
        check_targets(label, pairs, {"op0": op0, "op1": op1})
        if bitvec:
            check_bitvec_dtypes(label, pairs, op0)
            width = dict(pairs)["data"].dtype.bits
            for o, s, rev, role in ((op0, s0, reverse0, "operand0"),
                                    (op1, s1, reverse1, "operand1")):
                if o is not None and s is not None:
                    bits_of(s, dict(pairs)["dst"].dtype.np, label, role)  # APK365, statically
                if o is not None and o.name in SHIFTS and s is not None and not rev and \
                        isinstance(s, (int, np.integer)) and not 0 <= s < width:
                    raise ApdslRuntimeError(
                        f"{label}: {role} = {s}: {o!r} shifts by 0 to {width - 1} bits",
                        code="APK364", role=role, help=f"pass a shift of 0 to {width - 1}",
                        notes=["the NKI docs do not say what a shift past the element "
                               "width gives, so apdsl does not guess"])
            return
        for role, t in pairs:
            if role.startswith("operand") and t.dtype.name != "float32":
                raise TargetError(f"{label}: {role} {t.name} is {t.dtype.name}; with arithmetic "
                                  "operators the operands must be float32", code="APK361",
                                  role=role, dtype=t.dtype.name,
                                  help=f"tensor_copy {role} into a float32 [P, 1] tile first")

    def choose(label: str, pairs: Pairs) -> str:
        chosen = hints.compute_engine(label, engine, ("vector", "scalar", "gpsimd"), pairs)
        if bitvec and chosen not in ("unknown", "vector"):
            raise TargetError(f"{label}: bit-vector operators run on the Vector engine, not "
                              f"{chosen}", code="APK356",
                              help="use engine=nisa.engine.vector, or leave engine unset")
        pair = (op0.name, None if op1 is None else op1.name)
        if chosen == "scalar" and target_of(pairs) == "trn2" and pair not in SCALAR_TRN2:
            raise TargetError(f"{label}: on trn2 the Scalar engine runs tensor_scalar with "
                              f"op0/op1 (multiply, add), (multiply, None) or (add, None) only, "
                              f"not ({pair[0]}, {pair[1]})", code="APK357",
                              help="use engine=nisa.engine.vector, or leave engine unset")
        return "vector" if chosen == "unknown" else chosen

    p = prepare("tensor_scalar", {"dst": dst, "data": data, "operand0": t0, "operand1": t1},
                name=name, engine=engine, columns=("operand0", "operand1"), check=check,
                choose=choose)
    if not p.executing:
        return
    if bitvec:
        d = p.tensors["dst"].dtype.np
        o0 = _bit_operand(p, "operand0", s0, d, op0)
        v = bit_stage(p, op0, as_bits(p.raw("data"), d), o0, reverse0, "operand0")
        if op1 is not None:
            o1 = _bit_operand(p, "operand1", s1, d, op1)
            v = bit_stage(p, op1, v, o1, reverse1, "operand1")
        p.write(v)
        return
    o0 = _f32_operand(p, "operand0", s0)
    o1 = _f32_operand(p, "operand1", s1)
    p.write(sem.tensor_scalar(p.f32("data"), op0, o0, reverse0, op1, o1, reverse1))


def _bit_operand(p: Prepared, role: str, scalar: Any, d: np.dtype, op: Operator) -> Any:
    if op.arity == 1:
        return None
    if role in p.tensors:
        return as_bits(p.raw(role), d)
    return bits_of(scalar, d, p.label, role)


def _f32_operand(p: Prepared, role: str, scalar: Any) -> Any:
    if role in p.tensors:
        return p.f32(role)
    return None if scalar is None else np.float32(scalar)


# -- scalar_tensor_tensor ----------------------------------------------------------------------

def scalar_tensor_tensor(dst: Tensor, data: Tensor, op0: Any, operand0: Any, op1: Any,
                         operand1: Tensor, reverse0: bool = False, reverse1: bool = False,
                         engine: Any = "unknown", name: str | None = None) -> None:
    """`dst = (data op0 operand0) op1 operand1` on the Vector engine: operand0 a scalar or a
    `[P, 1]` tile, operand1 a tile of data's partitions and elements per partition; arithmetic
    operators only, in float32, cast to dst.  data and operand1 may not both be in PSUM.

    >>> x = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(x, 3.0)
    >>> y = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(y, 10.0)
    >>> apdsl.scalar_tensor_tensor(y, x, apdsl.operator("multiply"), 2.0, apdsl.operator("add"), y)
    >>> y.numpy()[0]
    array([16., 16., 16., 16.], dtype=float32)
    """
    label = instruction_label("scalar_tensor_tensor", name)
    words = "arithmetic operators of the NKI math-operator table"
    op0 = operator_arg(op0, label, "op0", kinds=ARITH, accepted=words)
    op1 = operator_arg(op1, label, "op1", kinds=ARITH, accepted=words)
    t0, s0 = (None, None) if op0.arity == 1 and operand0 is None else \
        scalar_arg(operand0, label, "operand0")

    def check(label: str, pairs: Pairs) -> None:
        check_targets(label, pairs, {"op0": op0, "op1": op1})
        not_both_psum(label, pairs, "data", "operand1")

    p = prepare("scalar_tensor_tensor",
                {"dst": dst, "data": data, "operand0": t0, "operand1": operand1}, name=name,
                engine=engine, columns=("operand0",), check=check)
    if not p.executing:
        return
    o0 = _f32_operand(p, "operand0", s0)
    p.write(sem.scalar_tensor_tensor(p.f32("data"), op0, o0, op1, p.f32("operand1"),
                                     reverse0, reverse1))
