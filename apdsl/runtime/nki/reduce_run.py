"""The executor of the reduce group's instructions (`apdsl.runtime.table.entries.reduce`): operands
whose shapes differ from one another (a statistics tile of 6 elements a partition, a `[P, 1]`
accumulator read-out, 8 maxima), so `compute.run_elementwise`'s "same shape everywhere" does
not apply.

`begin(op, name, operands)` does what every such instruction does before its own shape rules:
each operand a tensor in a buffer and of a dtype its table entry allows, the trn1
start-partition rule, the `engine=` hint, and the operands resolved (sources before
destinations; check mode: validated only).  The instruction then checks its shapes against
`Call.shapes` (static in check mode), calls `Call.record()` for the trace (`apdsl lower`), and,
unless in check mode (`Call.accs is None`), reads its inputs and hands every output to
`Call.write`, which checks all destinations before it writes any (nothing half-written).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.operands import (
    arg_error,
    check_operand,
    check_start_partitions,
    check_ti_partitions,
    free_size,
    instruction_label,
    is_ti,
    operand_shapes,
    resolve_operands,
    tensor_arg,
)
from ..table import TABLE
from . import hints
from .compute import scalar_arg as tile_or_number

Shape = tuple[int, ...]


class Call:
    """One instruction under way (see the module docstring)."""

    __slots__ = ("op", "name", "label", "pairs", "tensors", "shapes", "accs", "engine")

    def __init__(self, op: str, name: str | None, label: str, pairs: list[tuple[str, Tensor]],
                 shapes: dict[str, Shape | None], accs: dict[str, ex.Access] | None,
                 engine: str | None) -> None:
        self.op, self.name, self.label, self.pairs = op, name, label, pairs
        self.tensors = dict(pairs)
        self.shapes, self.accs, self.engine = shapes, accs, engine

    def parts(self, role: str) -> int | None:
        s = self.shapes[role]
        return None if s is None else s[0]

    def free(self, role: str) -> int | None:
        s = self.shapes[role]
        return None if s is None else free_size(s)

    def record(self, **given: Any) -> None:
        """Put the instruction in the trace, with the hint keywords `given` (`engine=...`;
        shown by `apdsl lower` when not at their default)."""
        trace.record(self.op, self.name, self.tensors, engine=self.engine,
                     hints=hints.given(**given) if given else None)

    def read_f32(self, role: str) -> np.ndarray:
        """The operand's elements as float32, in its (resolved) shape."""
        assert self.accs is not None
        return ex.read_float32(self.accs[role], self.label, role)

    def read(self, role: str) -> np.ndarray:
        """The operand's elements in their own dtype (bit-vector operators)."""
        assert self.accs is not None
        return ex.read(self.accs[role], self.label, role)

    def write(self, outputs: dict[str, np.ndarray]) -> None:
        """Cast each output to its destination and write it; every destination is checked
        (APK405) before any is written."""
        assert self.accs is not None
        for role in outputs:
            ex.prepare_write(self.accs[role], self.label, role)
        for role, values in outputs.items():
            acc = self.accs[role]
            ex.store(acc, ex.cast(np.asarray(values).reshape(acc.shape), acc.dtype))


def begin(op: str, name: str | None, operands: dict[str, Any], *, engine: Any = "unknown",
          engines: tuple[str, ...] | None = None, indirect: tuple[str, ...] = ()) -> Call:
    """Check and resolve the operands of instruction `op` (absent optional ones are None).
    `indirect` names the roles whose docs allow a Tensor Indirection view (trn3: `dst` and
    `data` of `activation` and `tensor_reduce`); any other role given one is APK383."""
    entry = TABLE[op]
    label = instruction_label(op, name)
    pairs = [(role, tensor_arg(t, label, role)) for role, t in operands.items() if t is not None]
    for role, t in pairs:
        check_operand(entry, label, role, t)
        if is_ti(t) and role not in indirect:
            allowed = (f"only {' and '.join(indirect)} may be" if indirect else
                       "its docs list no Tensor Indirection")
            raise TargetError(f"{label}: {role} {t.name} is a Tensor Indirection view "
                              f"(indirect()); {op} does not take one there ({allowed})",
                              code="APK383", help=f"gather {role} into a plain tile first "
                              "(tensor_copy takes indirect() views)", role=role)
    check_start_partitions(label, pairs)
    # the docs' base-partition rules: data on its index's partition, an indirect dst's index
    # on data's (or, data in PSUM and indirect, on data's index)
    check_ti_partitions(label, {"data": "data", "dst": "data"}, *pairs)
    chosen = hints.compute_engine(label, engine, engines or entry.engines["nki"], pairs)
    writes = {o.role for o in entry.operands if o.writes}
    order = [p for p in pairs if p[0] not in writes] + [p for p in pairs if p[0] in writes]
    accs = resolve_operands(label, ex.TI_GROUP, *order)
    shapes = operand_shapes(accs, *(t for _, t in order))
    by_role = {role: s for (role, _), s in zip(order, shapes)}
    acc_map = None if accs is None else {role: a for (role, _), a in zip(order, accs)}
    return Call(op, name, label, pairs, by_role, acc_map,
                TABLE[op].engine("nki", dict(pairs), chosen))


# -- the shape rules the instructions share ---------------------------------------------------

def shape_error(call: Call, message: str, code: str, help: str, **facts: Any) -> TargetError:
    shown = [f"{role} {call.tensors[role].name}: shape {s}" for role, s in call.shapes.items()
             if s is not None]
    return TargetError(f"{call.label}: {message}", code=code, notes=shown, help=help, **facts)


def same_partitions(call: Call, *roles: str) -> None:
    """Every operand in `roles` covers the same number of partitions (APK370)."""
    known = [(r, call.parts(r)) for r in roles if r in call.shapes and call.parts(r) is not None]
    for role, n in known[1:]:
        first, m = known[0]
        if n != m:
            raise shape_error(call, f"{first} has {m} partitions, {role} {n}; {call.op} works "
                              "partition by partition", "APK370",
                              f"give {first} and {role} the same partition count",
                              role=role, partitions=n, expected=m)


def elements(call: Call, role: str, expected: int, what: str) -> None:
    """Operand `role` has exactly `expected` elements a partition (APK371)."""
    n = call.free(role)
    if n is not None and n != expected:
        raise shape_error(call, f"{role} {call.tensors[role].name} has {n} elements a "
                          f"partition; {call.op} {what}", "APK371",
                          f"give {role} {expected} element{'s' * (expected != 1)} a partition, "
                          f"e.g. shape ({call.parts(role)}, {expected})", role=role,
                          elements=n, expected=expected)


def element_range(call: Call, role: str, low: int, high: int | None, why: str) -> None:
    """Operand `role` has between `low` and `high` elements a partition (APK372)."""
    n = call.free(role)
    if n is not None and (n < low or (high is not None and n > high)):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise shape_error(call, f"{role} {call.tensors[role].name} has {n} elements a "
                          f"partition; {call.op} reads {bound} ({why})", "APK372",
                          "split the data into tiles the instruction takes"
                          if high is not None and n > high else
                          f"give {role} at least {low} elements a partition", role=role,
                          elements=n, low=low, high=high)


def max_dims(call: Call, role: str, dims: int) -> None:
    """Operand `role` has at most `dims` dimensions, the partition dimension included
    (APK372)."""
    s = call.shapes[role]
    if s is not None and len(s) > dims:
        raise shape_error(call, f"{role} {call.tensors[role].name} has {len(s)} dimensions; "
                          f"{call.op} takes at most {dims} (partition dimension included)",
                          "APK372", f"reshape {role} to at most {dims} dimensions first",
                          role=role, dims=len(s))


def tile_or_float(value: Any, label: str, role: str) -> Tensor | float:
    """An operand that is a `[P, 1]` tile or a compile-time number (APK359 otherwise, as for
    the compute instructions' scalar operands)."""
    tile, number = tile_or_number(value, label, role)
    return tile if tile is not None else float(number)


def scalar_arg(value: Any, label: str, role: str) -> float:
    """A compile-time float operand (a Python or NumPy number, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        shown = value if isinstance(value, (str, bool, type(None))) else type(value).__name__
        raise arg_error(label, f"{role} must be a number, got {shown!r}",
                        help=f"pass a compile-time float as {role}, for example {role}=0.0")
    return float(value)


def runtime_error(call: Call, message: str, code: str, help: str,
                  **facts: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{call.label}: {message}", code=code, help=help, **facts)
