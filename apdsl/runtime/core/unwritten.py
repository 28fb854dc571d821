"""Unwritten data propagates (SPEC 4), as MemorySanitizer's uninitialised bits do.

Reading an element nothing wrote is not itself the defect: hardware reads whatever the bytes
hold, and a kernel that computes on tile lanes it never loaded and then stores only the loaded
ones is correct.  The defect is garbage reaching what the kernel produces.  So:

- a read that finds unwritten elements (`note_read`, called by the init check) does not stop
  the instruction; the instruction under way (`Machine.taint`, a `Pending`) keeps which of the
  operand's elements are unwritten and where that unwritten data came from (`Origin`: the
  tensor and element nothing wrote, its allocation, and the instruction that first read it);
- each write the instruction then makes (`written.mark_written` and friends) leaves unwritten
  the elements of its destination that depend on them, by the instruction's dependency class
  in the table (`apdsl.runtime.table.spec.Depends`: element-wise, per-partition reduction,
  matmul, transpose, ...), and records their origin on the storage (`Taint`, per unit of
  written state);
- where unwritten data reaches an observable point -- a store to HBM/GM, a kernel's result, a
  host read, an index, register or predicate, a scan's carry chain -- it is an error naming
  the origin (`written.unwritten_error`).

`Pending` lives from an instruction's start (`begin`: `trace.record` calls it, and every fast
path that does not record) until the next one starts, so all the outputs of one instruction
(dst, reduce_res, ...) see its reads, and no other instruction does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import Span
from ...records import record
from ...tensor.machine import Location, current
from ..table import TABLE
from ..table.spec import WHOLE, Depends

# Buffers whose contents are what a kernel produces: a store into them is an observable point.
OBSERVED_BUFFERS = frozenset({"hbm", "private_hbm", "shared_hbm", "gm"})


@record
class Origin:
    """Where unwritten data came from: `tensor[coord]` (storage element `offset`), allocated at
    `allocated`, was never written when instruction `reader` read it at `where`."""

    tensor: str
    coord: tuple[int, ...]
    offset: int
    allocated: Span | None
    reader: str
    where: Location | None
    reader_span: Span | None


class Taint:
    """A storage's origins of unwritten data: per written-state unit, 0 (nothing wrote it) or
    1 + the index of its `Origin` in `origins` (data computed from unwritten data)."""

    __slots__ = ("ids", "origins")

    def __init__(self, units: int) -> None:
        self.ids = np.zeros(units, np.int32)
        self.origins: list[Origin] = []

    def index(self, origin: Origin) -> int:
        for i, o in enumerate(self.origins):
            if o is origin:
                return i + 1
        self.origins.append(origin)
        return len(self.origins)

    def origin_at(self, unit: int) -> Origin | None:
        i = int(self.ids[unit])
        return self.origins[i - 1] if i else None


class Pending:
    """The reads of the instruction under way that found unwritten elements: (role, the
    access, its unwritten elements (logical shape), their origin)."""

    __slots__ = ("op", "depends", "inputs")

    def __init__(self, op: str) -> None:
        self.op = op
        entry = TABLE.get(op.partition(" ")[0])
        self.depends: Depends = WHOLE if entry is None else entry.depends
        self.inputs: list[tuple[str, Any, np.ndarray, Origin]] = []

    @property
    def origin(self) -> Origin:
        return self.inputs[0][3]

    def poison(self, shape: tuple[int, ...]) -> np.ndarray:
        """Which elements of an output of logical `shape` depend on unwritten data."""
        out = np.zeros(shape, bool)
        for role, _, bad, _ in self.inputs:
            out |= depend(self.depends, role, bad, shape)
        return out


def begin() -> None:
    """An instruction starts: the reads of the one before no longer count."""
    m = current()
    if m.taint is not None:
        m.taint = None


def note_read(acc: Any, op: str, role: str, bad: np.ndarray, origin: Origin) -> None:
    """Instruction `op` read unwritten elements `bad` of operand `role` (access `acc`)."""
    m = current()
    p = m.taint
    if p is None or p.op != op:
        p = m.taint = Pending(op)
    p.inputs.append((role, acc, bad, origin))


def pending() -> Pending | None:
    """The unwritten reads of the instruction under way (None: it read none)."""
    return current().taint


def read_of(role: str) -> tuple[np.ndarray, Origin] | None:
    """(the unwritten elements, logical shape, and their origin) of operand `role` the
    instruction under way read; None when it read none there.  What travels with the data
    when an instruction's result is written elsewhere (a `sendrecv` to another core)."""
    p = current().taint
    if p is None:
        return None
    for r, _, bad, origin in p.inputs:
        if r == role:
            return bad, origin
    return None


def take_rows(role: str, rows: np.ndarray) -> None:
    """The instruction under way writes row k of its output from row `rows[k]` of operand
    `role` (a partition shuffle): its unwritten elements of `role`, first axis as rows, become
    those rows in that order, so they propagate row for row ("element" dependency) while the
    error still names the element of the operand as read."""
    moved_as(role, lambda bad: _rows(bad)[rows])


def moved_as(role: str, move: Callable[[np.ndarray], np.ndarray]) -> None:
    """The instruction under way moves operand `role`'s elements into its output as `move`
    moves an array shaped like the operand (a shuffle, a gather): its unwritten elements of
    `role` become `move` of them, shaped like the output, so they propagate element for element
    (the entry's "element" dependency) while the error still names the element as read."""
    p = current().taint
    if p is None:
        return
    p.inputs = [(r, acc, move(bad) if r == role else bad, origin)
                for r, acc, bad, origin in p.inputs]


def poisoned(shape: tuple[int, ...]) -> np.ndarray | None:
    """Which elements of an output of logical `shape` of the instruction under way depend on
    unwritten data (None: none do).  An instruction that checks its inputs' values (a domain,
    an integer range) skips these: their values are garbage, as on hardware."""
    p = current().taint
    if p is None:
        return None
    bad = p.poison(shape)
    return bad if bad.any() else None


def defined(ok: np.ndarray) -> np.ndarray:
    """`ok` (which results or inputs of the instruction under way, shaped like an output, a
    value check accepts) with the elements computed from unwritten data accepted too: their
    values are garbage, as on hardware, and only an error where they reach an observable
    point."""
    bad = poisoned(ok.shape)
    return ok if bad is None else ok | bad


def _rows(a: np.ndarray) -> np.ndarray:
    """`a` as (first axis, the rest): partitions and free elements."""
    return a.reshape(a.shape[0] if a.ndim else 1, -1)


def depend(depends: Depends, role: str, bad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The elements of an output of logical `shape` that depend on the unwritten elements
    `bad` of input `role`, by dependency class `depends` (never fewer than truly do)."""
    size = int(np.prod(shape))
    kind = depends.kind
    if role in ("dst", "dst_list") and bad.size == size:  # a destination read and kept
        return bad.reshape(shape)                          # (accumulated) element by element
    parts = shape[0] if shape else 1
    if kind == "element":
        if bad.size == size:
            return bad.reshape(shape)
        rows = _rows(bad)
        if rows.shape[0] == parts:  # a [P, 1] column, or a reduction of each partition
            return np.broadcast_to(rows.any(axis=1).reshape(
                (parts,) + (1,) * (len(shape) - 1)), shape)
    elif kind == "partition":
        rows = _rows(bad)
        if rows.shape[0] == parts:
            return np.broadcast_to(rows.any(axis=1).reshape(
                (parts,) + (1,) * (len(shape) - 1)), shape)
    elif kind == "cross":
        cols = _rows(bad).any(axis=0)
        free = size // parts if parts else 0
        if cols.size == free:
            return np.broadcast_to(cols.reshape(1, -1), (parts, free)).reshape(shape)
    elif kind == "transpose":
        if bad.size == size:
            return np.ascontiguousarray(_rows(bad).T).reshape(shape)
    elif kind == "matmul":
        how = depends.contract.get(role)
        if how is not None:
            summed, axis = how
            vec = _rows(bad).any(axis=summed)
            out = np.zeros((parts, size // parts if parts else 0), bool)
            if out.shape[axis] == vec.size:
                if axis == 0:
                    out |= vec[:, None]
                else:
                    out |= vec[None, :]
                return out.reshape(shape)
    return np.full(shape, bool(bad.any()))
