"""Plans for a compute instruction called again on operands of equal value (a tile loop's
body), kept in the plan table (`apdsl.runtime.plans.table`).

Every rule `compute.prepare` checks depends only on values that cannot change between two
calls with equal arguments: a view's key (layout, dtype, storage buffer, shape, size and
address), an operator (a value), a hint keyword (a string), so buffers, dtypes, the operator
and engine rules, the start partitions, shapes, bounds and the on-chip entry limit give the
same answer again on the same target.  A `Plan` remembers that answer (the label, entry and
engine) with each operand's leaf pattern, and holds no view or storage: a call by a plan makes
its operands' accesses from the patterns (`table.access`), so a tile declared in a loop (a new
view of new storage each round) takes the plan its first round made.

What can change between calls is still checked every call, by the same functions the general
path calls: a storage freed since (the general path then runs and raises APK408), the init
check of every source (`init_check` is read each time), the PSUM accumulation state, the
destination's duplicate check and its written marks.  Plans are used only executing, with
nothing tracing, on the target they were made for (it is in the key).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor.machine import current
from ..plans import table
from ..table.spec import Instruction
from .compute import Prepared


def key(op: str, views: dict[str, Any], operator: Any,
        hints: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The plan key of a call of `op` on these operand views (dst first), its operator
    argument (by identity: the plan holds it and `find` checks it) and hint values, or None
    when no plan may stand for it (a view with a runtime index or a register; a hint that is
    not a string)."""
    for h in hints:
        if h is not None and type(h) is not str:
            return None
    out: list[Any] = [op, current().targets["nki"]]
    for t in views.values():
        try:
            k = table.key_of(t)
        except AttributeError:  # not a view: the general path reports it
            return None
        if k is None:
            return None
        out.append(k)
    return (*out, id(operator), *hints)


def find(key: tuple[Any, ...] | None, operator: Any) -> Plan | None:
    """The plan kept under `key` for this very operator, when it may be used now."""
    plan = None if key is None else table.find(key)
    return plan if plan is not None and plan.operator is operator else None


class Plan:
    """One checked instruction: the operator argument it was made for and the operator it
    stands for, its label, entry and engine, each operand's leaf pattern by
    role (dst first), the roles it reads, and for a float32 ufunc between strided views of
    one leaf shape, the ufunc it runs straight between the storages."""

    __slots__ = ("operator", "value", "label", "entry", "engine", "leaves", "reads", "ufunc")

    def __init__(self, operator: Any, value: Any, p: Prepared, leaves: dict[str, table.Leaf],
                 reads: tuple[str, ...], ufunc: Any) -> None:
        self.operator = operator  # the argument the key names by id (kept alive: never reused)
        self.value = value  # the operator the argument stands for, checked
        self.label = p.label
        self.entry: Instruction = p.entry
        self.engine = p.engine
        self.leaves = leaves
        self.reads = reads
        shapes = {f[2] for f in leaves.values()}
        direct = ufunc is not None and len(shapes) == 1 and all(
            t.dtype.name == "float32" for t in p.tensors.values())
        self.ufunc = ufunc if direct else None

    def prepared(self, tensors: dict[str, Any]) -> Prepared | None:
        """What `compute.prepare` would return for these operands, their accesses made from
        the plan's patterns; None when a storage was freed (the general path reports it)."""
        accs = {}
        for role, f in self.leaves.items():
            acc = table.access(tensors[role], f)
            if acc is None:
                return None
            accs[role] = acc
        return Prepared(self.label, self.entry, tensors, accs, self.engine)

    def run_direct(self, p: Prepared) -> None:
        """The float32 ufunc straight into dst, with the per-call checks of the general path
        (`Prepared.ufunc_into_dst`) made by the plans' executor (`table.execute`)."""
        accs = p.accs
        reads = [(role, accs[role]) for role in self.reads]  # type: ignore[index]
        d = accs["dst"]  # type: ignore[index]

        def move() -> None:
            with np.errstate(all="ignore"):  # (NumPy buffers overlapping operands itself)
                self.ufunc(*[a.array() for _, a in reads], out=d.array())  # type: ignore

        table.execute(self.label, reads, d, move)


def keep(key: tuple[Any, ...], operator: Any, value: Any, p: Prepared, reads: tuple[str, ...],
         ufunc: Any = None) -> None:
    """Keep the plan of the checked call `p` under `key` (every operand one strided array)."""
    leaves = {}
    for role, acc in p.accs.items():  # type: ignore[union-attr]
        f = table.leaf(acc)
        if f is None:
            return
        leaves[role] = f
    table.keep(key, Plan(operator, value, p, leaves, reads, ufunc))
