"""Plans for a compute instruction called again on the same operands (a tile loop's body).

Every rule `compute.prepare` checks depends only on values that cannot change between two
calls with the same arguments: a view is immutable (storage, dtype, layout, runtime index), an
operator is a value, a hint keyword is a string, so buffers, dtypes, the operator and engine
rules, the start partitions, shapes, bounds and the on-chip entry limit give the same answer
again on the same target.  A `Plan` remembers that answer (the label, entry, engine and the
resolved accesses) for one destination view and one tuple of (the other operand views, the
operator and hint values).  It is keyed by the views' and operator's identity; it holds the
operator, and the views weakly: a view's death ends the plan (`keep`), so an id cannot be
reused while the plan lives, and a plan never keeps a tile the program dropped allocated.

A plan is used only where the general path would do nothing more: executing (not check
mode), nothing tracing (a trace gets its full record every call), on the target it was made
for.  What can change between calls is still checked every call, by the same functions the
general path calls: a storage freed since (the general path then runs and raises APK408), the
init check of every source (`init_check` is read each time), the PSUM accumulation state, the
destination's duplicate check and its written marks.

Plans live beside their destination view, weakly keyed (they die with it; a plan never holds
the destination view itself, or the entry would keep itself alive), at most `PER_VIEW` per
view, and are made only for a destination that was resolved before, so a loop that makes a
fresh destination view per call pays nothing for them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import psum
from ..core.access import Access, Strided
from ..core.written import check_init, check_unique, mark_written
from ..table.spec import Instruction
from .compute import Prepared

PER_VIEW = 8  # plans kept per destination view (a view used with many operand sets: the newest)

_plans: weakref.WeakKeyDictionary[Any, dict[tuple, Plan]] = weakref.WeakKeyDictionary()


class Plan:
    """One checked instruction instance: `accs` by role (dst first), the roles read, and for
    a float32 ufunc between strided views of one shape the arrays it works on."""

    __slots__ = ("pins", "target", "label", "entry", "engine", "accs", "reads", "ufunc",
                 "arrays", "out")

    def __init__(self, pins: tuple, target: str, p: Prepared, reads: tuple[str, ...],
                 ufunc: Any = None) -> None:
        # the operand views (not dst) and values the key names by identity; `keep` makes the
        # views weak references
        self.pins = pins
        self.target = target
        self.label = p.label
        self.entry: Instruction = p.entry
        self.engine = p.engine
        self.accs: dict[str, Access] = p.accs  # type: ignore[assignment]
        self.reads = tuple((role, self.accs[role]) for role in reads)
        self.ufunc = None
        self.arrays: tuple[np.ndarray, ...] = ()
        self.out: np.ndarray | None = None
        if ufunc is not None:
            self._direct(ufunc)

    def _direct(self, ufunc: Any) -> None:
        """`dst = ufunc(*reads)` straight between the storages when every operand is a float32
        strided view of one shape (float32 math on float32 data: no cast, no temporaries)."""
        d = self.accs["dst"]
        if type(d) is not Strided or d.dtype.name != "float32":
            return
        out = d.array()
        arrays = []
        for _, a in self.reads:
            if type(a) is not Strided or a.dtype.name != "float32" or \
                    a.array().shape != out.shape:
                return
            arrays.append(a.array())
        self.ufunc, self.arrays, self.out = ufunc, tuple(arrays), out

    def live(self) -> bool:
        """False when a storage was freed since (the general path raises APK408)."""
        for acc in self.accs.values():
            if acc.storage.freed:
                return False
        return True

    def prepared(self, tensors: dict[str, Any]) -> Prepared:
        """What `compute.prepare` would return for these operands (their plan's accesses)."""
        return Prepared(self.label, self.entry, tensors, self.accs, self.engine)

    def run_direct(self) -> None:
        """The float32 ufunc straight into dst, with every per-call check of the general path
        (`Prepared.ufunc_into_dst`): sources init-checked and noted read in PSUM, dst
        duplicate-checked before and marked written after."""
        label = self.label
        for role, a in self.reads:
            check_init(a, label, role)
            if a.storage.buffer == "psum":
                psum.note_read(a)
        d = self.accs["dst"]
        check_unique(d, label, "dst")
        with np.errstate(all="ignore"):
            self.ufunc(*self.arrays, out=self.out)  # NumPy buffers overlapping operands itself
        mark_written(d)


def find(dst: Any, key: tuple) -> Plan | None:
    """The plan for `dst` and `key` when one exists and may be used now (see the module
    docstring); None otherwise."""
    table = _plans.get(dst)
    if table is None:
        return None
    try:
        plan = table.get(key)
    except TypeError:  # an unhashable argument: never planned
        return None
    if plan is None:
        return None
    m = current()
    if m.trace is not None or m.check or m.targets["nki"] != plan.target or \
            not m.options.plans or not plan.live():
        return None
    return plan


def plannable(dst: Any, *views: Any, hints: tuple = ()) -> bool:
    """Whether a plan may be made for `dst` and the other operand `views` (None: absent) by
    this call, asked before it resolves anything: executing, nothing tracing, every view
    static (no runtime index, no register), the `plans` option on, `dst` resolved before (a view reused, not made
    afresh) and every hint value a string or None."""
    m = current()
    if m.trace is not None or m.check or not m.options.plans or not isinstance(dst, Tensor) \
            or getattr(dst, "memo", None) is None:
        return False
    for h in hints:
        if h is not None and type(h) is not str:
            return False
    for t in (dst, *views):
        if t is None:
            continue
        if not isinstance(t, Tensor) or t.dynamic is not None or not t.layout.static:
            return False
    return True


def keep(dst: Any, key: tuple, make: Callable[[], Plan]) -> None:
    """Store the plan `make()` for `dst` and `key` (the oldest dropped past `PER_VIEW`); the
    caller asked `plannable` first, so the key's values are hashable.

    The plan holds its operand views weakly: when the program lets go of one (a PSUM tile
    rebound by the next iteration of a loop), the plan goes with it, so it never keeps the
    view's storage -- and its SBUF or PSUM bytes -- allocated after the program dropped it
    (the key names the view by id, so no plan may outlive it either)."""
    table = _plans.get(dst)
    if table is None:
        table = _plans[dst] = {}
    elif len(table) >= PER_VIEW:
        del table[next(iter(table))]
    plan = make()
    drop = _dropper(weakref.ref(dst), key)
    plan.pins = tuple(weakref.ref(v, drop) if isinstance(v, Tensor) else v for v in plan.pins)
    table[key] = plan


def _dropper(dst: weakref.ref, key: tuple) -> Callable[[Any], None]:
    """The callback ending plan `key` of the view `dst` refers to (it references neither the
    plan nor its table, so dropping the plan frees its accesses at once, not at the next
    cycle collection)."""
    def drop(_: Any) -> None:
        d = dst()
        table = None if d is None else _plans.get(d)
        if table is not None:
            table.pop(key, None)
    return drop


def plans_of(dst: Any) -> dict[tuple, Plan]:
    """The plans kept for `dst` (for tests)."""
    return dict(_plans.get(dst, {}))
