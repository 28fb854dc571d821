"""The Scalar Engine's `activation` and `activation_reduce` (SPEC section 11; NKI isa).

`dst = op(data * scale + bias)` in float32, cast to dst, with the optional free-axis sum into
the engine's `reduce_regs` (`apdsl.runtime.nki.reduce_regs`, per device), controlled by
`reduce_cmd`, and read out into `reduce_res`.  The docs' pseudo-code, as apdsl runs it:

    output = op(data * scale + bias)                    # float32
    if reduce_cmd in (reset, reset_reduce): reduce_regs = 0
    if reduce_cmd in (reduce, reset_reduce): reduce_regs += sum(output, free axes)
    if reduce_res is given: reduce_res = reduce_regs    # cast to reduce_res

(the docs' middle line `result = reduce_op(reduce_regs, reduce_op(output))` followed by
`reduce_regs += result` would add the registers to themselves; the prose says "reduce
activated data over existing values", which is the sum above, as SPEC 11 states it.)  The sum is
of the float32 outputs, before their cast to dst.

Rules from the docstrings: `reduce_op` must be `nl.add` (`activation_reduce`'s docs say so
"on NeuronCore-v2" and name no other for later targets, so apdsl takes only `nl.add` there too); `scale` is a float or a
`[partitions, 1]` float32 tile; `bias` a `[partitions, 1]` tile of any dtype but tfloat32, or,
from NeuronCore-v3 (trn2) on, a float; data and dst have the same partitions and elements per
partition; an input outside the function's valid range (`nl.log`, `nl.sqrt`, `nl.sin`, ...)
gives invalid output on hardware, so apdsl refuses it (APK463).  `reduce_cmd=load_reduce` is
an enum member the docs do not describe for `activation`: refused (APK376).  The docs state no
rule for `reduce_regs` of more lanes than one instruction uses, so lanes past the data's
partitions keep their values.  On trn3 `dst` and `data` may be Tensor Indirection views (not
`scale`, `bias`, `reduce_res`; a scattered dst not in PSUM), as the docs say.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import targets
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import unwritten
from ..core.operands import is_ti
from ..core.written import leave_unwritten
from ..table.operators import operator_arg
from . import reduce_run as rr
from .reduce_regs import regs
from .reduce_run import same_partitions

REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")


def reduce_cmd_arg(value: Any, label: str) -> str:
    """`reduce_cmd` as its name: a `nisa.reduce_cmd` member or the name as a string."""
    name = getattr(value, "name", value)
    if not isinstance(name, str) or name not in REDUCE_CMDS:
        raise TargetError(f"{label}: reduce_cmd must be one of {', '.join(REDUCE_CMDS)}, got "
                          f"{value!r}", code="APK376",
                          help="for example reduce_cmd=nisa.reduce_cmd.reset_reduce")
    if name == "load_reduce":
        raise TargetError(f"{label}: reduce_cmd=load_reduce is not described for activation "
                          "(its docs list reset, idle, reduce and reset_reduce)",
                          code="APK376", help="reset with reduce_cmd=reset or reset_reduce, "
                          "then accumulate with reduce")
    return name


def _unset_lanes(label: str, what: str, lanes: np.ndarray) -> ApdslRuntimeError:
    first = int(np.flatnonzero(~lanes)[0])
    return ApdslRuntimeError(
        f"{label}: {what} reduce_regs lane {first}, which no reduce_cmd=reset or reset_reduce "
        "has set on this device", code="APK382",
        notes=[f"{int((~lanes).sum())} of the {lanes.size} lanes used are unset",
               "on hardware the registers hold whatever ran before"],
        help="start the accumulation with reduce_cmd=nisa.reduce_cmd.reset_reduce (or reset), "
        "or turn the check off with --no-init-check to read unset lanes as 0", lane=first)


def activation(dst: Tensor, op: Any, data: Tensor, bias: Any = None, scale: Any = 1.0,
               reduce_op: Any = None, reduce_res: Tensor | None = None,
               reduce_cmd: Any = "idle", name: str | None = None) -> None:
    """`dst = op(data * scale + bias)` on the Scalar Engine, in float32 then cast to dst, with
    the optional free-axis sum kept in the engine's `reduce_regs` across instructions
    (`reduce_cmd`: idle, reset, reduce, reset_reduce) and read out into `reduce_res`
    ([partitions, 1]).  `op` is an activation function (`nl.exp`, `nl.gelu`, `nl.copy`, ...);
    `scale` a float or a [partitions, 1] float32 tile; `bias` a [partitions, 1] tile or (trn2
    and later) a float; `reduce_op` `nl.add`.

    >>> from apdsl.runtime.table.operators import OPERATORS as nl
    >>> x = apdsl.from_numpy(np.array([[0.0, 1.0], [2.0, 3.0]], np.float32), "sbuf")
    >>> y = apdsl.ndarray((2, 2), "float32", "sbuf")
    >>> s = apdsl.ndarray((2, 1), "float32", "sbuf")
    >>> apdsl.activation(y, nl["square"], x, bias=1.0, scale=2.0, reduce_op=nl["add"],
    ...                  reduce_res=s, reduce_cmd="reset_reduce")
    >>> y.numpy().tolist(), s.numpy().tolist()
    ([[1.0, 9.0], [25.0, 49.0]], [[10.0], [74.0]])
    """
    _run("activation", dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd, name)


def activation_reduce(dst: Tensor, op: Any, data: Tensor, reduce_op: Any,
                      reduce_res: Tensor | None, bias: Any = None, scale: Any = 1.0,
                      name: str | None = None) -> None:
    """`activation` with `reduce_cmd=reset_reduce`: `dst = op(data * scale + bias)` and
    `reduce_res` ([partitions, 1]) gets the sum over the free axes of the activated values
    (`reduce_op` `nl.add`; None keeps the sum in `reduce_regs` only).

    >>> from apdsl.runtime.table.operators import OPERATORS as nl
    >>> x = apdsl.from_numpy(np.array([[1.0, 2.0, 3.0]], np.float32), "sbuf")
    >>> y, s = apdsl.ndarray((1, 3), "float32", "sbuf"), apdsl.ndarray((1, 1), "float32", "sbuf")
    >>> apdsl.activation_reduce(y, nl["copy"], x, nl["add"], s, scale=-1.0)
    >>> s.numpy().tolist()
    [[-6.0]]
    """
    if reduce_op is None:
        raise TargetError(f"{rr.instruction_label('activation_reduce', name)}: reduce_op is "
                          "required (nl.add)", code="APK376", help="pass reduce_op=nl.add")
    _run("activation_reduce", dst, op, data, bias, scale, reduce_op, reduce_res,
         "reset_reduce", name)


def _run(opname: str, dst: Tensor, op: Any, data: Tensor, bias: Any, scale: Any,
         reduce_op: Any, reduce_res: Tensor | None, reduce_cmd: Any, name: str | None) -> None:
    label = rr.instruction_label(opname, name)
    cmd = reduce_cmd_arg(reduce_cmd, label)
    target = targets.target_for(data.buffer).name if isinstance(data, Tensor) and \
        targets.family(data.buffer) == "nki" else None
    fn = operator_arg(op, label, "op", table="activation", target=target)
    if reduce_op is not None:
        operator_arg(reduce_op, label, "reduce_op", names=("add",))
    elif cmd in ("reduce", "reset_reduce"):
        raise TargetError(f"{label}: reduce_cmd={cmd} accumulates with reduce_op, which is "
                          "None", code="APK376", help="pass reduce_op=nl.add")
    sc = rr.tile_or_float(scale, label, "scale")
    bi = None if bias is None else rr.tile_or_float(bias, label, "bias")
    if bi is not None and not isinstance(bi, Tensor) and target == "trn1":
        raise TargetError(f"{label}: on trn1 (NeuronCore-v2) bias is a [partitions, 1] tile, "
                          f"not the number {bi!r}", code="APK378",
                          help="memset a [partitions, 1] tile to the value and pass it as bias")
    call = rr.begin(opname, name, {
        "dst": dst, "data": data, "scale": sc if isinstance(sc, Tensor) else None,
        "bias": bi if isinstance(bi, Tensor) else None, "reduce_res": reduce_res},
        indirect=("dst", "data"))
    if is_ti(dst) and dst.buffer == "psum":
        raise TargetError(f"{call.label}: dst {dst.name} is an indirect (scattered) view in "
                          "PSUM; on the Scalar Engine a scattered dst is in SBUF", code="APK383",
                          help="scatter into an SBUF tile")
    _check_shapes(call, opname, ("scale", "bias"))
    call.record()
    if call.accs is None:
        return
    x = call.read_f32("data")
    parts = x.shape[0]
    rows = x.reshape(parts, -1)
    s = call.read_f32("scale").reshape(parts, 1) if "scale" in call.tensors else np.float32(sc)
    b = call.read_f32("bias").reshape(parts, 1) if "bias" in call.tensors else \
        np.float32(0.0 if bi is None else bi)
    out = _activated(call, fn, rows * s + b, "data * scale + bias")
    _reduce_and_write(call, cmd, out, reduce_res)


def _check_shapes(call: Any, opname: str, per_partition: tuple[str, ...]) -> None:
    """The shape rules activation and activate2 share: every operand on data's partitions, dst
    element for element as data, and one value a partition in each of `per_partition` given
    as a tensor (and in reduce_res)."""
    same_partitions(call, "data", "dst", *per_partition, "reduce_res")
    nd, nx = call.free("dst"), call.free("data")
    if nd is not None and nx is not None and nd != nx:
        raise rr.shape_error(call, f"dst has {nd} elements a partition, data {nx}; {opname} "
                             "works element by element", "APK371", "give dst the shape of data",
                             elements=nd, expected=nx)
    for role in (*per_partition, "reduce_res"):
        if role in call.tensors:
            rr.elements(call, role, 1, f"takes one {role} value a partition")


def _activated(call: Any, fn: Any, pre: np.ndarray, what: str, *extra: Any) -> np.ndarray:
    """`fn` on its float32 inputs `pre` (`extra`: prelu's slope), refusing an input outside
    the function's valid range (APK463: the docs say such inputs give invalid output)."""
    ok = fn.inside(pre)
    if not ok.all():
        ok = unwritten.defined(ok)
    if not ok.all():
        p, f = (int(c) for c in np.argwhere(~ok)[0])
        raise ApdslRuntimeError(
            f"{call.label}: {fn!r} gets {what} = {float(pre[p, f])!r} at partition "
            f"{p}, element {f}, outside its valid input range {fn.valid}", code="APK463",
            notes=[f"{int((~ok).sum())} of {ok.size} inputs are outside it",
                   "the NKI docs say such inputs give invalid output, so apdsl does not guess"],
            help="keep the input inside the range (add a small epsilon, or clamp it first)",
            partition=p, element=f)
    return np.asarray(fn.fn(pre, *extra), np.float32)


def _reduce_and_write(call: Any, cmd: str, out: np.ndarray, reduce_res: Tensor | None,
                      reducer: str = "add") -> None:
    """The reduce_regs step of an activation (SPEC 11) and its writes: `out` to dst, the
    registers (reset to `reducer`'s identity, then combined with each row's reduction by it)
    to `reduce_res` when given."""
    parts = out.shape[0]
    r = regs()
    lanes = slice(0, parts)
    values, known = r.values[lanes].copy(), r.set[lanes].copy()
    # lanes whose sum holds unwritten data (SPEC 4): this instruction's rows, and earlier ones
    rows_bad = unwritten.poisoned((parts, 1))
    bad, origin = r.unwritten[lanes].copy(), r.origin
    if cmd in ("reset", "reset_reduce"):
        values[:], known[:] = IDENTITY[reducer], True
        bad[:] = False
    strict = current().options.init_check
    if cmd in ("reduce", "reset_reduce"):
        if strict and not known.all():
            raise _unset_lanes(call.label, "reduce_cmd=reduce accumulates into", known)
        values = _combine(reducer, values, out)
        known[:] = True
        if rows_bad is not None:
            bad |= rows_bad.reshape(-1)
            origin = unwritten.pending().origin  # type: ignore[union-attr]
    outputs = {"dst": out}
    if reduce_res is not None:
        if strict and not known.all():
            raise _unset_lanes(call.label, "reduce_res reads", known)
        outputs["reduce_res"] = values.reshape(parts, 1)
    call.write(outputs)
    if reduce_res is not None and bad.any():
        leave_unwritten(call.accs["reduce_res"], bad, origin)
    r.values[lanes], r.set[lanes], r.unwritten[lanes] = values, known, bad
    r.origin = origin if r.unwritten.any() else None


# -- the register reductions ------------------------------------------------------------------

# The value a reset gives the registers: the identity of the instruction's reduce_op ("Reset
# accumulators to the identity value for reduce_op", activate2's docs; activation's is nl.add)
IDENTITY = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "abs_max": 0.0,
            "abs_min": np.inf}


def _combine(reducer: str, values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The registers after `accumulator = reduce_op(accumulator, dst[i])` over each row of
    `out` (float32) in order.  abs_max/abs_min keep the signed element, and on a tie the later
    one, as the operator does (`apdsl.runtime.table.operators`)."""
    if reducer == "add":
        return values + out.sum(axis=1, dtype=np.float32)
    if reducer == "maximum":
        return np.maximum(values, out.max(axis=1))
    if reducer == "minimum":
        return np.minimum(values, out.min(axis=1))
    mag = np.abs(out[:, ::-1])  # reversed: argmax/argmin find the last of equal magnitudes
    last = out.shape[1] - 1 - (mag.argmax(axis=1) if reducer == "abs_max" else
                               mag.argmin(axis=1))
    row = out[np.arange(out.shape[0]), last]
    keep = np.abs(values) > np.abs(row) if reducer == "abs_max" else \
        np.abs(values) < np.abs(row)
    return np.where(keep, values, row).astype(np.float32)


# -- activate2 (NeuronCore-v4) ------------------------------------------------------------------

# the (op0, op1) pairs of activate2's tensor-scalar stage its docs list
ACTIVATE2_PAIRS = (("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"),
                   ("add", "bypass"), ("subtract", "bypass"), ("bypass", "bypass"))
ACTIVATE2_REDUCE = ("add", "maximum", "minimum", "abs_max", "abs_min")


def activate2(dst: Tensor, op: Any, data: Tensor, imm0: Any, imm1: Any, op0: Any, op1: Any,
              relu_param: Any = 0.0, reverse0: bool = False, reverse1: bool = False,
              reduce_op: Any = None, reduce_res: Tensor | None = None,
              reduce_cmd: Any = "idle", name: str | None = None) -> None:
    """NeuronCore-v4 (trn3): `dst = op((data op0 imm0) op1 imm1)` on the Scalar Engine, in
    float32 then cast to dst, `nl.bypass` skipping a stage (`reverse0`/`reverse1` swap a
    stage's operands); `relu_param` is `nl.prelu`'s slope; the registers shared with
    `activation` reduce the activated rows with `reduce_op` (add, maximum, minimum, abs_max,
    abs_min) under `reduce_cmd`, a reset setting reduce_op's identity.

    >>> from apdsl.runtime.table.operators import OPERATORS as nl
    >>> with apdsl.target("trn3"):
    ...     x = apdsl.from_numpy(np.array([[-1.0, 2.0]], np.float32), "sbuf")
    ...     y, m = apdsl.ndarray((1, 2), "float32", "sbuf"), apdsl.ndarray((1, 1), "float32", "sbuf")
    ...     apdsl.activate2(y, nl["prelu"], x, 2.0, 1.0, nl["multiply"], nl["add"],
    ...                     relu_param=0.5, reduce_op=nl["maximum"], reduce_res=m,
    ...                     reduce_cmd="reset_reduce")
    ...     y.numpy().tolist(), m.numpy().tolist()
    ([[-0.5, 5.0]], [[5.0]])
    """
    label = rr.instruction_label("activate2", name)
    cmd = reduce_cmd_arg(reduce_cmd, label)
    ops = [operator_arg(o, label, role, table="any") for role, o in (("op0", op0),
                                                                     ("op1", op1))]
    pair = (ops[0].name, ops[1].name)
    if pair not in ACTIVATE2_PAIRS:
        raise _activate2_error(label, f"(op0, op1) = (nl.{pair[0]}, nl.{pair[1]}) is not one of "
                               "the tensor-scalar stage's pairs", help="use one of " + ", ".join(
                                   f"(nl.{a}, nl.{b})" for a, b in ACTIVATE2_PAIRS))
    for flag, given, o in (("reverse0", reverse0, ops[0]), ("reverse1", reverse1, ops[1])):
        if given and o.name == "bypass":
            raise _activate2_error(label, f"{flag}=True needs op{flag[-1]} set; it is nl.bypass",
                                   help=f"drop {flag}, or give op{flag[-1]} an operator")
    red = None
    if reduce_op is not None:
        red = operator_arg(reduce_op, label, "reduce_op", names=ACTIVATE2_REDUCE,
                           accepted=", ".join(f"nl.{n}" for n in ACTIVATE2_REDUCE)).name
    elif cmd in ("reduce", "reset_reduce"):
        raise TargetError(f"{label}: reduce_cmd={cmd} accumulates with reduce_op, which is "
                          "None", code="APK376", help="pass reduce_op=nl.add (or nl.maximum, "
                          "...)")
    imms = [rr.tile_or_float(v, label, role) for role, v in (("imm0", imm0), ("imm1", imm1),
                                                              ("relu_param", relu_param))]
    tiles = [t for t in imms[:2] if isinstance(t, Tensor)]
    if len(tiles) == 2 and tiles[0].dtype.name != tiles[1].dtype.name:
        raise _activate2_error(label, f"imm0 is {tiles[0].dtype.name} and imm1 "
                               f"{tiles[1].dtype.name}; two tensor immediates have one dtype",
                               help="give imm0 and imm1 the same dtype")
    _run2(label, name, dst, op, data, ops, (reverse0, reverse1), imms, red or "add", cmd,
          reduce_res)


def _activate2_error(label: str, message: str, help: str) -> TargetError:
    return TargetError(f"{label}: {message}", code="APK384", help=help)


def _run2(label: str, name: str | None, dst: Tensor, op: Any, data: Tensor, ops: list[Any],
          reverse: tuple[bool, bool], imms: list[Any], reducer: str, cmd: str,
          reduce_res: Tensor | None) -> None:
    target = targets.target_for(data.buffer).name if isinstance(data, Tensor) and \
        targets.family(data.buffer) == "nki" else None
    if target is not None and target != "trn3":
        raise _activate2_error(label, f"activate2 needs NeuronCore-v4 (trn3); the target is "
                               f"{target}", help="use --target trn3, or nisa.activation with "
                               "scale and bias")
    fn = operator_arg(op, label, "op", table="activation", target=target)
    roles = ("imm0", "imm1", "relu_param")
    call = rr.begin("activate2", name, {
        "dst": dst, "data": data, **{r: v if isinstance(v, Tensor) else None
                                     for r, v in zip(roles, imms)},
        "reduce_res": reduce_res}, indirect=("dst", "data"))
    if is_ti(dst) and dst.buffer == "psum":
        raise TargetError(f"{call.label}: dst {dst.name} is an indirect (scattered) view in "
                          "PSUM; on the Scalar Engine a scattered dst is in SBUF", code="APK383",
                          help="scatter into an SBUF tile")
    _check_shapes(call, "activate2", roles)
    call.record()
    if call.accs is None:
        return
    rows = call.read_f32("data")
    parts = rows.shape[0]
    rows = rows.reshape(parts, -1)
    vals = [call.read_f32(r).reshape(parts, 1) if r in call.tensors else np.float32(v)
            for r, v in zip(roles, imms)]
    for o, imm, rev in zip(ops, vals[:2], reverse):
        if o.name != "bypass":
            rows = np.asarray(o.fn(imm, rows) if rev else o.fn(rows, imm), np.float32)
    extra = (vals[2],) if fn.name == "prelu" else ()
    out = _activated(call, fn, rows, "the tensor-scalar stage's result", *extra)
    _reduce_and_write(call, cmd, out, reduce_res, reducer)
