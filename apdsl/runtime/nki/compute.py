"""Element-wise compute instructions executed from their table entry.

`prepare(op, operands, ...)` is what every such instruction does before it computes: each
operand a tensor in a buffer and of a dtype its entry allows, the instruction's own operand
rules, the trn1 start-partition rule, the engine (hint or default), the operands resolved
(check mode: validated only), the same partition count and elements per partition as `dst`
everywhere (a per-partition column operand: `dst`'s partitions, one element each), and the
trace record.  The `Prepared` result reads each operand as float32 (the engines' arithmetic)
or as its bits, and writes `dst` by the one cast rule.  `scalar_arg` takes an operand that may
be a compile-time scalar or a per-partition `[P, 1]` tile.

`run_elementwise` is the whole of an instruction that needs nothing more (reciprocal): adding
one is a table entry, its semantics function and a three-line function here.  The instructions
with operators (tensor_tensor, tensor_scalar, ...) live in `elementwise` and `selection`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import targets
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import psum, trace, unwritten
from ..core.operands import (
    check_operand,
    check_start_partitions,
    free_size,
    instruction_label,
    operand_shapes,
    resolve_operands,
    tensor_arg,
)
from ..core.written import mark_written
from ..table import TABLE
from ..table.spec import Instruction
from . import hints

Pairs = list[tuple[str, Tensor]]


def not_both_psum(label: str, pairs: Pairs, a: str, b: str) -> None:
    """APK353: the docs' "cannot both reside in PSUM" rule for inputs `a` and `b`."""
    views = {role: t for role, t in pairs if t.buffer == "psum"}
    if a in views and b in views:
        raise TargetError(f"{label}: {a} {views[a].name} and {b} {views[b].name} are both in "
                          "PSUM; at most one of them may be", code="APK353",
                          help="tensor_copy one of them into SBUF first", roles=(a, b))


@dataclass(slots=True)
class Prepared:
    """An instruction instance after its checks: its label, entry, operands, the engine that
    runs it and (executing, not checking) the resolved accesses."""

    label: str
    entry: Instruction
    tensors: dict[str, Tensor]
    accs: dict[str, ex.Access] | None
    engine: str

    @property
    def executing(self) -> bool:
        return self.accs is not None

    def parts(self) -> int:
        return self.accs["dst"].shape[0] if self.accs is not None else 0

    def f32(self, role: str) -> np.ndarray:
        """Operand `role` as float32, shaped (partitions, elements per partition)."""
        acc = self.accs[role]  # type: ignore[index]
        return ex.read_float32(acc, self.label, role).reshape(acc.shape[0], -1)

    def raw(self, role: str) -> np.ndarray:
        """Operand `role` as its own dtype's values (its bits), shaped like `f32`."""
        acc = self.accs[role]  # type: ignore[index]
        return ex.read(acc, self.label, role).reshape(acc.shape[0], -1)

    def write(self, values: np.ndarray, role: str = "dst") -> None:
        """Write `values` to operand `role` by the one cast rule (bit-exact when they already
        have its dtype)."""
        acc = self.accs[role]  # type: ignore[index]
        ex.prepare_write(acc, self.label, role)
        ex.store(acc, np.asarray(values).reshape(acc.shape))

    def write_where(self, values: np.ndarray, where: np.ndarray, role: str = "dst") -> None:
        """Write `values` (already of the operand's dtype) only where `where` holds; the other
        elements keep their contents and their written state (an unwritten one stays
        unwritten)."""
        acc = self.accs[role]  # type: ignore[index]
        ex.prepare_write(acc, self.label, role)
        where = np.asarray(where, bool).reshape(acc.shape)
        before = acc.written()
        current = acc.read()  # no init check: the elements kept are not read by the engine
        ex.store(acc, np.where(where, np.asarray(values).reshape(acc.shape), current), where)
        if before is not True or unwritten.pending() is not None:
            # the kept elements keep their state; the written ones depend on the inputs
            was = True if before is True else np.asarray(before, bool).reshape(acc.shape)
            ex.set_written(acc, np.logical_or(was, where), wrote=where)

    def dtype(self, role: str) -> str:
        return self.tensors[role].dtype.name

    def ufunc_into_dst(self, ufunc: Any, inputs: tuple[str, ...]) -> bool:
        """`dst = ufunc(*inputs)` straight between the storages, without temporaries, when
        every operand is a float32 strided view of one shape (float32 math on float32 data
        needs no cast); False, doing nothing, otherwise.  The same checks as `f32`/`write`:
        init check and PSUM bookkeeping of the inputs, duplicate check of dst."""
        accs = self.accs
        d = accs["dst"]  # type: ignore[index]
        strided = ex.Strided
        if type(d) is not strided or d.dtype.name != "float32":
            return False
        out = d.array()
        srcs, arrays = [], []
        for r in inputs:
            a = accs[r]  # type: ignore[index]
            if type(a) is not strided or a.dtype.name != "float32":
                return False
            x = a.array()
            if x.shape != out.shape:
                return False
            srcs.append(a)
            arrays.append(x)
        for a, role in zip(srcs, inputs):
            ex.check_init(a, self.label, role)
            if a.storage.buffer == "psum":
                psum.note_read(a)
        ex.prepare_write(d, self.label, "dst")
        with np.errstate(all="ignore"):
            ufunc(*arrays, out=out)  # NumPy buffers overlapping operands itself
        mark_written(d)
        return True


def prepare(op: str, operands: dict[str, Any], *, name: str | None, engine: Any = "unknown",
            columns: tuple[str, ...] = (), check: Callable[[str, Pairs], None] | None = None,
            choose: Callable[[str, Pairs], str] | None = None) -> Prepared:
    """Check, resolve and record instruction `op` (see the module docstring).  `operands`
    maps each role to its tensor, `dst` first (None: absent); `columns` are the roles that
    are per-partition `[P, 1]` operands; `check(label, pairs)` runs the instruction's own
    operand rules; `choose(label, pairs)` picks the engine (default: the hint, checked against
    the entry's engines)."""
    entry = TABLE[op]
    label = instruction_label(op, name)
    pairs: Pairs = [(role, tensor_arg(t, label, role)) for role, t in operands.items()
                    if t is not None]
    for role, t in pairs:
        check_operand(entry, label, role, t)
    if check is not None:
        check(label, pairs)
    if targets.target_for(pairs[0][1].buffer).name == "trn1":  # the rule binds trn1 only
        check_start_partitions(label, pairs)
    if choose is not None:
        chosen = choose(label, pairs)
    else:
        chosen = hints.compute_engine(label, engine, entry.engines["nki"], pairs)
    reads = pairs[1:] + pairs[:1]  # sources resolve before the destination, as elsewhere
    accs = resolve_operands(label, ex.TI_GROUP, *reads)
    shapes = operand_shapes(accs, *(t for _, t in reads))
    ds = shapes[-1]
    for (role, _), ss in zip(reads[:-1], shapes):
        if ss is None or ds is None or ss == ds and role not in columns:
            continue
        want = 1 if role in columns else free_size(ds)
        if ss[0] != ds[0] or free_size(ss) != want:
            what = "one element" if role in columns else f"{free_size(ds)} elements"
            raise TargetError(
                f"{label}: dst has {ds[0]} partitions of {free_size(ds)} elements, so {role} "
                f"needs {ds[0]} partitions of {what}; it has {ss[0]} of {free_size(ss)}",
                code="APK460", notes=[f"dst shape {ds}, {role} shape {ss}"],
                help=f"give {role} the shape ({ds[0]}, 1): one value per partition"
                if role in columns else f"{op} works element by element within each "
                "partition: give every operand the same partition count and elements per "
                "partition", dst_shape=ds, src_shape=ss, role=role)
    tensors = dict(pairs)
    runs_on = entry.engine("nki", tensors, chosen)
    given = None if engine == "unknown" else hints.given(engine=engine)
    trace.record(op, name, tensors, engine=runs_on, hints=given)  # the engine= hint, for lower
    acc_map = None if accs is None else dict(zip(tensors, accs[-1:] + accs[:-1]))
    return Prepared(label, entry, tensors, acc_map, runs_on or "unknown")


def scalar_arg(value: Any, label: str, role: str) -> tuple[Tensor | None, Any]:
    """An operand that is a compile-time scalar or a per-partition `[P, 1]` tile: (the tile,
    None) or (None, the number).  APK359 for anything else."""
    if isinstance(value, Tensor):
        return value, None
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise ApdslRuntimeError(
            f"{label}: {role} must be a number or a [P, 1] tile, got {type(value).__name__}",
            code="APK359", help=f"pass a compile-time constant (for example {role}=1.0) or a "
            "tile with one element per partition", role=role)
    return None, value


def run_elementwise(op: str, dst: Any, inputs: dict[str, Any], *, engine: Any = "unknown",
                    name: str | None = None) -> None:
    """Execute the one-input element-wise instruction `op` of the table: its semantics on the
    float32 inputs, cast to dst (see the module docstring)."""
    p = prepare(op, {"dst": dst, **inputs}, name=name, engine=engine)
    if not p.executing:
        return
    values = {role: p.f32(role) for role in inputs}
    domain = p.entry.limits.get("domain")
    if domain is not None:
        for role, v in values.items():
            ok = domain.inside(v)
            if not ok.all():
                ok = unwritten.defined(ok)
            if not ok.all():
                acc = p.accs[role]  # type: ignore[index]
                raise outside_domain(p.label, p.entry.name, domain.says, role,
                                     p.tensors[role], ~ok.reshape(acc.shape),
                                     v.reshape(acc.shape))
    result = p.entry.semantics(*values.values())
    p.write(np.asarray(result, np.float32))


def outside_domain(label: str, what: str, domain: str, role: str, t: Tensor,
                   bad: np.ndarray, values: np.ndarray, code: str = "APK463",
                   why: str = "the NKI docs say such inputs give invalid output, so apdsl does "
                   "not guess") -> ApdslRuntimeError:
    """APK463 (or `code`): the first input element outside what `what` is defined for."""
    coord = tuple(int(c) for c in np.argwhere(bad)[0])
    return ApdslRuntimeError(
        f"{label}: {role} {t.name}{list(coord)} = {values[coord]!r} is outside the inputs "
        f"{what} is defined for ({domain})", code=code,
        notes=[f"{int(bad.sum())} of {bad.size} elements are outside it", why],
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
