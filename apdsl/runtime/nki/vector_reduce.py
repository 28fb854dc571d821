"""The Vector Engine's accumulating instructions beyond select/range_select:
`tensor_scalar_reduce`, `tensor_scalar_cumulative` and `exponential` (NKI isa docstrings).
Each computes in float32, casts to dst, and reads and leaves the engine's accumulator lanes
(`apdsl.runtime.nki.vector_acc`) as its `reduce_cmd` says:

- tensor_scalar_reduce: `dst = data <op0> operand0`; the lanes (reset to `reduce_op`'s identity,
  kept, or loaded from `reduce_init`) take `reduce_op` over each partition's results;
  `reduce_res` gets the lanes (negated with `reduce_res_negate`).
- tensor_scalar_cumulative: along each partition, `reg = op1(op0(src[i], imm0), reg)` and
  `dst[i] = reg`, reg starting from op1's identity, the lanes, or `imm1`; the lanes keep reg.
- exponential (NeuronCore-v4: trn3): `dst = exp(src - max_value)`; unless idle, the lanes (reset
  to 0, kept, or loaded from `reduce_init`) gain the sum of each partition's exponentials (in
  float32, before dst's cast); `reduce_res` gets them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor.view import Tensor
from ..core.operands import start_partition, static_shape
from ..core.trace import instruction_label
from ..table.operators import operator_arg
from . import vector_acc
from .compute import Pairs, Prepared, prepare, scalar_arg
from .elementwise import ARITH, check_targets, target_of

REDUCE_OPS = ("add", "multiply", "maximum", "minimum")
CUMULATIVE_OPS = ("add", "subtract", "multiply", "maximum", "minimum")
_UFUNC = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum}


def _lane(p: Prepared) -> int:
    start = start_partition(p.tensors["dst"])
    return 0 if start is None else start


def _count(p: Prepared) -> int:
    shape = static_shape(p.tensors["dst"])
    return 0 if shape is None else shape[0]


def _column(value: Any, label: str, role: str) -> tuple[Tensor | None, Any]:
    return (None, None) if value is None else scalar_arg(value, label, role)


def _value(p: Prepared, t: Tensor | None, scalar: Any, role: str) -> Any:
    return p.f32(role) if t is not None else np.float32(0.0 if scalar is None else scalar)


def _check_load(label: str, cmd: str, init: Any, role: str, load_needs: bool) -> None:
    if cmd == "load_reduce" and init is None and load_needs:
        raise ApdslRuntimeError(f"{label}: reduce_cmd=load_reduce loads the accumulators from "
                                f"{role}, which is not given", code="APK924",
                                help=f"pass {role}= (a number or a [P, 1] float32 tile)")
    if cmd not in ("load_reduce",) and init is not None and not (
            isinstance(init, (int, float)) and init == 0):
        raise ApdslRuntimeError(f"{label}: {role} is given but reduce_cmd is {cmd}; the docs set "
                                f"{role} only with load_reduce", code="APK924",
                                help="pass reduce_cmd=nisa.reduce_cmd.load_reduce, or drop "
                                f"{role}")


def _finish(p: Prepared, start: np.ndarray | None, partial: np.ndarray, op: str,
            negate: bool = False) -> None:
    """Combine the instruction's per-partition reduction with the starting lanes, keep the
    lanes and write reduce_res."""
    lanes = _UFUNC[op](start, partial).astype(np.float32)
    vector_acc.keep_lanes(_lane(p), lanes)
    if "reduce_res" in p.tensors:
        p.write((-lanes if negate else lanes).reshape(-1, 1), "reduce_res")


# -- tensor_scalar_reduce ----------------------------------------------------------------------

def tensor_scalar_reduce(dst: Tensor, data: Tensor, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: Tensor | None = None, reverse0: bool = False,
                         reduce_cmd: Any = "reset_reduce", reduce_init: Any = None,
                         reduce_res_negate: bool = False, engine: Any = "unknown",
                         name: str | None = None) -> None:
    """`dst = data <op0> operand0` (an arithmetic operator; operand0 a number or a `[P, 1]`
    float32 tile) and `reduce_op` (nl.add, nl.multiply, nl.maximum, nl.minimum) of each
    partition's results into the Vector Engine's accumulators, copied to `reduce_res`.

    >>> x = apdsl.from_numpy(np.array([[1.0, 5.0, 2.0]], np.float32), "sbuf")
    >>> d = apdsl.ndarray((1, 3), "float32", "sbuf")
    >>> r = apdsl.ndarray((1, 1), "float32", "sbuf")
    >>> apdsl.runtime.nki.vector_reduce.tensor_scalar_reduce(
    ...     d, x, apdsl.operator("multiply"), 2.0, apdsl.operator("maximum"), reduce_res=r)
    >>> d.numpy(), float(r.numpy()[0, 0])
    (array([[ 2., 10.,  4.]], dtype=float32), 10.0)
    """
    label = instruction_label("tensor_scalar_reduce", name)
    o0 = operator_arg(op0, label, "op0", kinds=ARITH,
                      accepted="the arithmetic operators of the NKI math-operator table")
    red = operator_arg(reduce_op, label, "reduce_op", names=REDUCE_OPS,
                       accepted="nl.add, nl.multiply, nl.maximum or nl.minimum")
    cmd = vector_acc.reduce_cmd_arg(reduce_cmd, label)
    if cmd not in ("reset_reduce", "reduce", "load_reduce"):
        raise ApdslRuntimeError(f"{label}: reduce_cmd={cmd}; tensor_scalar_reduce takes "
                                "reset_reduce, reduce or load_reduce", code="APK464",
                                help="pass reduce_cmd=nisa.reduce_cmd.reset_reduce")
    if reverse0:
        raise TargetError(f"{label}: reverse0=True is not supported yet by tensor_scalar_reduce "
                          "(its docstring)", code="APK924", help="use tensor_scalar with "
                          "reverse0, then tensor_reduce")
    t0, s0 = (None, None) if o0.arity == 1 else scalar_arg(operand0, label, "operand0")
    if o0.arity == 2 and operand0 is None:
        raise ApdslRuntimeError(f"{label}: {o0!r} is binary and operand0 is None",
                                code="APK362", help="pass operand0: a number or a [P, 1] tile")
    _check_load(label, cmd, reduce_init, "reduce_init", True)
    ti, si = _column(reduce_init, label, "reduce_init")

    def check(label: str, pairs: Pairs) -> None:
        check_targets(label, pairs, {"op0": o0})

    p = prepare("tensor_scalar_reduce", {"dst": dst, "data": data, "operand0": t0,
                                         "reduce_init": ti, "reduce_res": reduce_res},
                name=name, engine=engine, columns=("operand0", "reduce_init", "reduce_res"),
                check=check)
    if not p.executing:
        if cmd == "reduce":
            vector_acc.starting_lanes(label, cmd, _lane(p), _count(p), red.name)
        vector_acc.keep_lanes(_lane(p), None, _count(p))
        return
    x = p.f32("data")
    with np.errstate(all="ignore"):
        result = (o0.fn(x) if o0.arity == 1 else o0.fn(x, _value(p, t0, s0, "operand0"))
                  ).astype(np.float32)
        init = _value(p, ti, si, "reduce_init") if cmd == "load_reduce" else None
        start = vector_acc.starting_lanes(label, cmd, _lane(p), x.shape[0], red.name, init)
        partial = _UFUNC[red.name].reduce(result, axis=1, dtype=np.float32)
    p.write(result)
    _finish(p, start, partial, red.name, bool(reduce_res_negate))


# -- tensor_scalar_cumulative --------------------------------------------------------------------

def tensor_scalar_cumulative(dst: Tensor, src: Tensor, op0: Any, op1: Any, imm0: Any,
                             imm1: Any = None, reduce_cmd: Any = "reset_reduce",
                             engine: Any = "unknown", name: str | None = None) -> None:
    """Along each partition, `reg = op1(op0(src[i], imm0), reg)` and `dst[i] = reg` (float32):
    op0 arithmetic, op1 nl.add, nl.subtract, nl.multiply, nl.maximum or nl.minimum; reg starts
    from op1's identity (reset_reduce), the accumulator lanes (reduce) or `imm1` (load_reduce)
    and is left in the lanes.

    >>> x = apdsl.from_numpy(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32), "sbuf")
    >>> d = apdsl.ndarray((1, 4), "float32", "sbuf")
    >>> apdsl.runtime.nki.vector_reduce.tensor_scalar_cumulative(
    ...     d, x, apdsl.operator("multiply"), apdsl.operator("add"), 1.0)
    >>> d.numpy()
    array([[ 1.,  3.,  6., 10.]], dtype=float32)
    """
    label = instruction_label("tensor_scalar_cumulative", name)
    o0 = operator_arg(op0, label, "op0", kinds=ARITH,
                      accepted="the arithmetic operators of the NKI math-operator table")
    o1 = operator_arg(op1, label, "op1", names=CUMULATIVE_OPS,
                      accepted="nl.add, nl.subtract, nl.multiply, nl.maximum or nl.minimum")
    cmd = vector_acc.reduce_cmd_arg(reduce_cmd, label)
    if cmd not in ("reset_reduce", "reduce", "load_reduce"):
        raise ApdslRuntimeError(f"{label}: reduce_cmd={cmd}; tensor_scalar_cumulative takes "
                                "reset_reduce, reduce or load_reduce", code="APK464",
                                help="pass reduce_cmd=nisa.reduce_cmd.reset_reduce")
    t0, s0 = (None, None) if o0.arity == 1 else scalar_arg(imm0, label, "imm0")
    if cmd == "load_reduce" and imm1 is None:
        raise ApdslRuntimeError(f"{label}: reduce_cmd=load_reduce starts from imm1, which is "
                                "not given", code="APK924",
                                help="pass imm1= (a number or a [P, 1] float32 tile)")
    t1, s1 = _column(imm1 if cmd == "load_reduce" else None, label, "imm1")

    p = prepare("tensor_scalar_cumulative", {"dst": dst, "src": src, "imm0": t0, "imm1": t1},
                name=name, engine=engine, columns=("imm0", "imm1"))
    if not p.executing:
        if cmd == "reduce":
            vector_acc.starting_lanes(label, cmd, _lane(p), _count(p), o1.name)
        vector_acc.keep_lanes(_lane(p), None, _count(p))
        return
    x = p.f32("src")
    init = _value(p, t1, s1, "imm1") if cmd == "load_reduce" else None
    reg = vector_acc.starting_lanes(label, cmd, _lane(p), x.shape[0], o1.name, init)
    with np.errstate(all="ignore"):
        staged = (o0.fn(x) if o0.arity == 1 else o0.fn(x, _value(p, t0, s0, "imm0"))
                  ).astype(np.float32)
        out = np.empty_like(staged)
        for i in range(staged.shape[1]):
            reg = o1.fn(staged[:, i], reg).astype(np.float32)
            out[:, i] = reg
    p.write(out)
    vector_acc.keep_lanes(_lane(p), reg)


# -- exponential -------------------------------------------------------------------------------

def exponential(dst: Tensor, src: Tensor, max_value: Any = 0.0,
                reduce_res: Tensor | None = None, reduce_cmd: Any = "idle",
                reduce_init: Any = 0.0, engine: Any = "unknown",
                name: str | None = None) -> None:
    """`dst = exp(src - max_value)` (max_value a number or a `[P, 1]` float32 tile), in float32;
    unless reduce_cmd is idle, each partition's sum of the exponentials accumulates in the
    Vector Engine's lanes (reset to 0, kept, or loaded from `reduce_init`), copied to
    `reduce_res`.  NeuronCore-v4 (trn3) only.

    >>> with apdsl.target("trn3"):
    ...     x = apdsl.from_numpy(np.log(np.array([[1.0, 2.0, 4.0]], np.float32)), "sbuf")
    ...     d = apdsl.ndarray((1, 3), "float32", "sbuf")
    ...     apdsl.exponential(d, x)
    ...     print(d.numpy())
    [[1. 2. 4.]]
    """
    label = instruction_label("exponential", name)
    cmd = vector_acc.reduce_cmd_arg(reduce_cmd, label)
    if cmd == "reset":
        raise ApdslRuntimeError(f"{label}: reduce_cmd=reset; exponential takes idle, "
                                "reset_reduce, reduce or load_reduce", code="APK464",
                                help="pass reduce_cmd=nisa.reduce_cmd.reset_reduce")
    if cmd == "idle" and reduce_res is not None:
        vector_acc.check_cmd(label, cmd, True)  # APK464: no reduction to copy out
    _check_load(label, cmd, reduce_init, "reduce_init", False)
    tm, sm = scalar_arg(max_value, label, "max_value")
    ti, si = _column(reduce_init if cmd == "load_reduce" else None, label, "reduce_init")

    def check(label: str, pairs: Pairs) -> None:
        tgt = target_of(pairs)
        if tgt != "trn3":
            raise TargetError(f"{label}: exponential needs NeuronCore-v4 (trn3); the target "
                              f"is {tgt}", code="APK924",
                              help="use --target trn3, or nisa.activation(op=nl.exp, "
                              "bias=-max)")

    p = prepare("exponential", {"dst": dst, "src": src, "max_value": tm, "reduce_init": ti,
                                "reduce_res": reduce_res},
                name=name, engine=engine, columns=("max_value", "reduce_init", "reduce_res"),
                check=check)
    if not p.executing:
        if cmd == "idle":
            vector_acc.starting_lanes(label, cmd, _lane(p), _count(p), "add")
            return
        if cmd == "reduce":
            vector_acc.starting_lanes(label, cmd, _lane(p), _count(p), "add")
        vector_acc.keep_lanes(_lane(p), None, _count(p))
        return
    x = p.f32("src")
    with np.errstate(all="ignore"):
        result = np.exp(x - _value(p, tm, sm, "max_value")).astype(np.float32)
    init = _value(p, ti, si, "reduce_init") if cmd == "load_reduce" else \
        np.float32(si or 0.0)
    start = vector_acc.starting_lanes(label, cmd, _lane(p), x.shape[0], "add", init)
    p.write(result)
    if start is not None:
        _finish(p, start, np.add.reduce(result, axis=1, dtype=np.float32), "add")
