"""Element-wise compute instructions executed from their table entry alone.

`run_elementwise(entry, ...)` is everything such an instruction does: each operand a tensor in
a buffer and of a dtype its entry allows, the trn1 start-partition rule, the engine hint, the
operands resolved (check mode: validated only), the same partition count and elements per
partition everywhere, the trace record, then the entry's NumPy meaning applied to float32 inputs
and cast to the destination.  Adding such an instruction is a table entry, its semantics
function and a three-line function here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ApdslRuntimeError, TargetError
from ..tensor import targets
from ..tensor.view import Tensor
from . import execute as ex
from . import hints, trace
from .operands import (
    check_start_partitions,
    free_size,
    instruction_label,
    operand_shapes,
    resolve_operands,
    tensor_arg,
)
from .spec import TRN3_DTYPES, Instruction
from .table import TABLE


def _check_operand(entry: Instruction, label: str, role: str, t: Tensor) -> None:
    spec = entry.operand(role)
    fam = targets.family(t.buffer)
    allowed = spec.memory.get(fam, ())
    if t.buffer not in allowed:
        where = " or ".join(b.upper() for b in allowed) if allowed else "no buffer of " + fam
        raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; {entry.name} works on "
                          f"{where} only", code="APK309" if allowed else "APK462",
                          notes=[f"{role}: shape {tuple(t.shape)} @ {t.buffer}"],
                          help="dma_copy the data on chip first" if allowed
                          else f"{entry.name} is an instruction of the other target family",
                          buffer=t.buffer, role=role)
    dtypes = spec.dtypes
    name = t.dtype.name
    if dtypes is not None and (name not in dtypes or (
            name in TRN3_DTYPES and targets.target_for(t.buffer).name != "trn3")):
        raise TargetError(f"{label}: {role} {t.name} is {name}; {entry.name} takes "
                          f"{', '.join(d for d in dtypes if d not in TRN3_DTYPES)} (and "
                          f"{', '.join(TRN3_DTYPES)} on trn3)", code="APK461",
                          help="view or copy the data as one of those dtypes first",
                          dtype=name, role=role)


def run_elementwise(op: str, dst: Any, inputs: dict[str, Any], *, engine: Any = "unknown",
                    name: str | None = None) -> None:
    """Execute the element-wise instruction `op` of the table (see the module docstring)."""
    entry = TABLE[op]
    label = instruction_label(op, name)
    pairs = [("dst", tensor_arg(dst, label, "dst"))]
    pairs += [(role, tensor_arg(t, label, role)) for role, t in inputs.items()]
    for role, t in pairs:
        _check_operand(entry, label, role, t)
    check_start_partitions(label, pairs)
    chosen = hints.compute_engine(label, engine, entry.engines["nki"], pairs)
    reads = pairs[1:] + pairs[:1]  # sources resolve before the destination, as elsewhere
    accs = resolve_operands(label, ex.TI_GROUP, *reads)
    shapes = operand_shapes(accs, *(t for _, t in reads))
    ds = shapes[-1]
    for (role, _), ss in zip(reads[:-1], shapes):
        if ss is not None and ds is not None and (ss[0] != ds[0] or
                                                  free_size(ss) != free_size(ds)):
            raise TargetError(
                f"{label}: dst has {ds[0]} partitions of {free_size(ds)} elements, {role} "
                f"{ss[0]} of {free_size(ss)}", code="APK460",
                notes=[f"dst shape {ds}, {role} shape {ss}"],
                help=f"{op} works element by element within each partition: give every operand "
                "the same partition count and elements per partition", dst_shape=ds,
                src_shape=ss, role=role)
    trace.record(op, name, dict(pairs), engine=entry.engine("nki", dict(pairs), chosen))
    if accs is None:
        return
    d = accs[-1]
    values = [ex.read_float32(acc, label, role).reshape(d.shape[0], -1)
              for acc, (role, _) in zip(accs[:-1], reads[:-1])]
    domain = entry.limits.get("inside")
    if domain is not None:
        for v, (role, t), acc in zip(values, reads, accs):
            ok = domain(v)
            if not ok.all():
                raise _outside_domain(entry, label, role, t, ~ok.reshape(acc.shape),
                                      v.reshape(acc.shape))
    result = entry.semantics(*values)
    ex.prepare_write(d, label, "dst")
    ex.store(d, ex.cast(np.asarray(result, np.float32).reshape(d.shape), d.dtype))


def _outside_domain(entry: Instruction, label: str, role: str, t: Tensor,
                    bad: np.ndarray, values: np.ndarray) -> ApdslRuntimeError:
    """APK463: the first input element outside the instruction's documented domain."""
    coord = tuple(int(c) for c in np.argwhere(bad)[0])
    return ApdslRuntimeError(
        f"{label}: {role} {t.name}{list(coord)} = {values[coord]!r} is outside the inputs "
        f"{entry.name} is defined for ({entry.limits['domain']})", code="APK463",
        notes=[f"{int(bad.sum())} of {bad.size} elements are outside it",
               "the NKI docs say such inputs give invalid output, so apdsl does not guess"],
        help="keep the input inside the domain (add a small epsilon, or select the elements "
        "first)", coord=coord)


def reciprocal(dst: Tensor, data: Tensor, engine: Any = "unknown",
               name: str | None = None) -> None:
    """`dst = 1 / data` element-wise on the Vector Engine, computed in float32 then cast to
    dst's dtype; data and dst in SBUF or PSUM with the same partitions and elements per
    partition.

    >>> x = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(x, 4.0)
    >>> y = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.reciprocal(y, x)
    >>> y.numpy()[0]
    array([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """
    run_elementwise("reciprocal", dst, {"data": data}, engine=engine, name=name)
