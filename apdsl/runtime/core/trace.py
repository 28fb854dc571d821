"""What happened while a program ran: executed instructions (for `apdsl lower`) and warnings.

The interpreter calls `set_location(file, line)` before each statement; instructions call
`record(op, name, {role: tensor})` before they move data.  Lowering an operand costs time, so it
happens only while a `tracing()` block is active -- except that on-chip operands are always
checked against the target's limit of free access-pattern entries (APK304), cheaply when the
view's pattern is already short enough.

Warnings (`apdsl.errors.Warning_`) go to the current machine's list (`apdsl.runtime.sync.warn`, below
the synchronisation checker that warns and that `record` feeds).  The trace, the statement
location and the warnings are all state of the current machine (`apdsl.tensor.machine`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from math import prod
from types import MappingProxyType
from typing import Any

from ...errors import Span
from ...records import record
from ...tensor import targets
from ...tensor.lowering import AccessPattern, cut, lower
from ...tensor.machine import Location, Machine, current
from ...tensor.targets import NKI_ONCHIP
from ...tensor.view import Tensor
from ..sync.pipes import ASCEND_BUFFERS, PIPES
from ..sync.warn import collect_warnings, take_warnings, warn  # noqa: F401 - their home was here
from ..table import engine_of
from .arguments import given as given_arguments


@record
class Record:
    """One executed instruction: each operand lowered to its own access pattern(s), and the
    instruction cut into pieces in which every operand is one AP (`apdsl.tensor.cutting`)."""

    op: str
    name: str | None
    location: Location | None
    operands: dict[str, list[AccessPattern]]
    pieces: list[dict[str, AccessPattern]]
    engine: str | None = None  # the NKI engine or Ascend pipe (scheduling, the profile)
    storages: dict[str, int] | None = None  # each role's storage id (the profile's dependencies)
    hints: dict[str, Any] | None = None  # the NKI hint keywords given (`apdsl.runtime.nki.hints`)
    # an Ascend instruction's place in the happens-before order of its kernel's events
    # (`apdsl.runtime.sync.Order`; None: not checked, as with `--sync off`)
    order: Any = None
    # an event (set_flag, wait_flag, pipe_barrier): its arguments; it has no operands
    event: tuple[Any, ...] | None = None
    # its non-tensor operands (op=, scale=, axis=, ...), JSON-plain (`apdsl.runtime.core.arguments`)
    arguments: dict[str, Any] | None = None

    def to_json(self) -> list[dict[str, Any]]:
        """SPEC section 8: one object per instruction, or one per piece (`piece: [i, n]`) when
        the instruction is several hardware instructions."""
        n = len(self.pieces)
        out = []
        for i, operands in enumerate(self.pieces or [{}] if self.event is not None
                                     else self.pieces):
            obj: dict[str, Any] = {
                "op": self.op,
                "file": self.location[0] if self.location else None,
                "line": self.location[1] if self.location else None,
                "name": self.name,
                "operands": {role: ap.to_json() for role, ap in operands.items()},
            }
            if self.arguments:  # the non-tensor operands: operators, numbers, flags, enums
                obj["arguments"] = dict(self.arguments)
            if self.engine in PIPES:  # an Ascend instruction: the pipe that runs it
                obj["pipe"] = self.engine
                world = getattr(getattr(self.order, "sync", None), "world", None)
                if world is not None and world.cores > 1:  # ... and the core, of several
                    obj["core"] = world.name(self.order.sync.base)  # type: ignore[union-attr]
            if self.hints:  # engine=, dge_mode=, oob_mode=, priority= as the program gave them
                obj["hints"] = dict(self.hints)
            if self.event is not None:
                obj["event"] = list(self.event)
            if n > 1:
                obj["piece"] = [i, n]
            out.append(obj)
        return out


# The rows of a trace (`Trace`): an event's has EVENT_ROW fields; an instruction's has its part
# (the index in `Trace.parts`) at PART, its pipe (None: no happens-before order) at PIPE, and
# its order's `after` counts from AFTER on.
EVENT_ROW = 5
PART, PIPE, AFTER = 4, 5, 8


@dataclass
class Trace:
    """The instructions a `tracing()` block executed, kept as compact rows (below) and read as
    `Record`s (`records`, made when first read).

    A traced GEMM records tens of thousands of instructions and events while it runs, and the
    garbage collector walks every container object that stays alive, again and again as the
    trace grows; each one it is handed brings its next pass nearer.  So a row is one tuple of
    plain values -- strings, numbers, tuples of them, and indexes into the parts shared by the
    executions of one instruction -- which the collector stops tracking after its first look
    at it, and a row equal to an earlier one (an event, or an instruction without an order,
    executed again by a loop) is that row again.  The rows:

    - an instruction: `(op, name, file, line, part, pipe, seq, sync, *after)`; `parts[part]`
      is its `(lowered operands, pieces, storage ids, engine)`; `pipe`, `seq`, `after` and
      `syncs[sync]` its happens-before `Order` (`pipe` None: it has none, nor `after`);
    - an event: `(op, file, line, arguments, pipe)`.

    (`file` None: no location.  The statement's `(file, line)` is not kept as it is: a tuple
    is left alone only once its elements are, and it may already be older than the row.)

    `hints` and `arguments` hold, by row index, the hint keywords given (a dict) and the
    non-tensor operands (their `(name, value)` pairs) of the instructions that have any.
    """

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    parts: list[tuple[Any, ...]] = field(default_factory=list)
    syncs: list[Any] = field(default_factory=list)
    hints: dict[int, dict[str, Any]] = field(default_factory=dict)
    arguments: dict[int, Any] = field(default_factory=dict)
    # lowered operands by (layout, dtype, buffer, format, name, role, target): a loop's
    # instructions lower the same views again and again (the profile traces whole GEMMs)
    lowered: dict[Any, list[AccessPattern]] = field(default_factory=dict)
    machine: Machine | None = None  # the machine it records
    failed: int | None = None  # the index of the record of an instruction that raised
    # per instruction signature (op, engine, target, roles, operand views by id): the index of
    # its part (`record`; views checked by weak reference)
    signatures: dict[Any, Any] = field(default_factory=dict)
    _sync_index: dict[int, int] = field(default_factory=dict, repr=False)
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False)  # a value -> itself
    # an event's (op, location, arguments) -> its row (`record_event`)
    _events: dict[Any, tuple[Any, ...]] = field(default_factory=dict, repr=False)
    _made: list[Record] = field(default_factory=list, repr=False)

    @property
    def records(self) -> list[Record]:
        """Every row as a `Record`, in program order (made once, as far as the rows go)."""
        made, rows = self._made, self.rows
        if len(made) < len(rows):
            made.extend(map(self._record, range(len(made), len(rows))))
        return made

    def _record(self, i: int) -> Record:
        row = self.rows[i]
        if len(row) == EVENT_ROW:  # an event
            op, file, line, args, pipe = row
            return Record(op, None, None if file is None else (file, line), _NO_OPERANDS,
                          _NO_PIECES, pipe, None, None, None, args)
        op, name, file, line, part, pipe, seq, sync = row[:AFTER]
        location = None if file is None else (file, line)
        lowered, pieces, storages, engine = self.parts[part]
        order = None
        if pipe is not None:
            from ..sync import Order
            order = Order(pipe, seq, row[AFTER:], self.syncs[sync])
        arguments = self.arguments.get(i)
        return Record(op, name, location, lowered, pieces, engine, storages,
                      self.hints.get(i), order, None,
                      None if arguments is None else dict(arguments))

    def share(self, value: Any) -> Any:
        """`value`, or an equal one kept before (the one object in the trace); unhashable
        values as they are."""
        try:
            return self._shared.setdefault(value, value)
        except TypeError:
            return value

    def attach(self, start: int, fn: Any, args: tuple, kwargs: dict) -> None:
        """Give the rows the call `fn(*args, **kwargs)` made (`rows[start:]`, those of
        instruction `fn.__name__`) its non-tensor operands, less the hints they keep already."""
        found = given_arguments(fn, args, kwargs)
        if found is None:
            return
        op = getattr(fn, "__name__", None)
        rows, hints = self.rows, self.hints
        for i in range(start, len(rows)):
            row = rows[i]
            # (an `asc.NAME` row is made by the function NAME of its module)
            if len(row) == EVENT_ROW or (row[0] != op and row[0].rpartition(".")[2] != op):
                continue
            kept = hints.get(i)
            shown = found if not kept else {k: v for k, v in found.items() if k not in kept}
            if shown:
                self.arguments[i] = self.share(tuple(shown.items()))
        del self._made[start:]  # (read while the call ran: made again with its arguments)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.rows)

    def before_error(self) -> list[Record]:
        """The records of the instructions that completed, when an error has just stopped the
        program: an instruction records itself before it moves data, so the record an
        instruction made before it failed (`failed`, marked by `calling`) is left out."""
        if self.failed is not None:
            return self.records[:self.failed]
        return list(self.records)


# -- location -------------------------------------------------------------------------------

def set_location(file: str, line: int, span: Span | None = None) -> None:
    """Called by the interpreter before each statement (cheap: two attribute stores).  `span`,
    when given, is attached to warnings raised by the statement."""
    m = current()
    m.location = (file, line)
    m.span = span


def current_location() -> Location | None:
    return current().location


# -- tracing --------------------------------------------------------------------------------

@contextmanager
def tracing() -> Iterator[Trace]:
    """Record every instruction executed inside the block."""
    m = current()
    saved, trace = m.trace, Trace(machine=m)
    m.trace = trace
    try:
        yield trace
    finally:
        m.trace = saved


def is_tracing() -> bool:
    return current().trace is not None


def calling(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Call an instruction of the program; when it raises after recording itself, its record is
    marked as the failed one (`Trace.before_error` leaves it out: it moved no data)."""
    trace = current().trace
    if trace is None:
        return fn(*args, **kwargs)
    rows = trace.rows
    n = len(rows)
    try:
        result = fn(*args, **kwargs)
    except Exception:
        if len(rows) > n and trace.failed is None:
            trace.failed = len(rows) - 1
        raise
    if len(rows) > n:  # `lower` shows its non-tensor operands too (tensors alone have none)
        if kwargs:
            trace.attach(n, fn, args, kwargs)
        else:
            for a in args:
                if type(a) is not Tensor:
                    trace.attach(n, fn, args, kwargs)
                    break
    return result


def kept_plan(op: str, operands: dict[str, Any]) -> tuple[Any, ...] | None:
    """What `record_kept` needs to record `op` on these operands again and again (an
    instruction plan kept per operand views): the sync checker's plan of Ascend operands, all
    static; None: `record_kept` records as `record` does."""
    views = operands.values()
    if not views or any(t.dynamic is not None or not t.layout.static or
                        t.storage.buffer not in ASCEND_BUFFERS for t in views):
        return None
    from ..sync.sync_facts import plan_of
    return plan_of(op, operands)


def record_kept(m: Any, plan: tuple[Any, ...] | None, op: str, name: str | None,
                operands: dict[str, Any]) -> None:
    """`record(op, name, operands)` on the current machine `m`, for the operands `plan` was
    kept for (`kept_plan`): when nothing traces, the kernel's sync checker takes the plan
    without looking it up (Ascend operands are never NKI on-chip: no entry limit to check)."""
    s = m.sync
    if s is not None and plan is not None and m.trace is None:
        if m.taint is not None:  # (as `record`)
            m.taint = None
        s.access(op, name, operands, m.span, m.location, False, plan)
    else:
        record(op, name, operands)


def instruction_label(op: str, name: Any) -> str:
    """How messages name an instruction: `dma_copy`, or `dma_copy 'load'` with `name=`."""
    return f"{op} {str(name)!r}" if name is not None else op


def record(op: str, name: str | None, operands: dict[str, Any], *,
           engine: str | None = None, hints: dict[str, Any] | None = None) -> None:
    """Lower the instruction's operands: always enough to enforce the on-chip entry limit, fully
    when a trace is active.  Raises APK304 (or APK320) before any data moves.  `engine`: the
    NKI engine or Ascend pipe that runs it (from the instruction table); `hints`: the NKI hint
    keywords the program gave (`apdsl.runtime.nki.hints.given`), shown by `apdsl lower`."""
    m = current()
    if m.taint is not None:  # an instruction starts: the unwritten reads of the one before end
        m.taint = None
    sync = m.sync
    order = None
    if (sync is not None or m.options.sync) and operands and \
            next(iter(operands.values())).storage.buffer in ASCEND_BUFFERS:
        # Ascend pipes and events (SPEC 13; an instruction on NKI buffers runs on no pipe)
        if sync is None:  # apdsl.options(sync=True) outside a kernel: made on first use
            from ..sync import active
            sync = active()
        order = sync.access(op, name, operands, m.span,  # type: ignore[union-attr]
                            m.location, m.trace is not None)  # the trace keeps the order
    trace = m.trace
    if trace is None:  # nothing traces: only the on-chip entry limit, cheaply when it holds
        for role, t in operands.items():
            if t.storage.buffer in NKI_ONCHIP and _may_exceed_entries(t):
                lower(t, role=role, label=instruction_label(op, name))
        return
    views = operands.values()
    first = next(iter(views), None)
    # (op, engine, target, *roles, *views by id): one flat tuple (roles are strings, ids ints)
    sig = (op, engine, None if first is None else m.targets[targets.family(first.buffer)],
           *operands, *map(id, views))
    got = trace.signatures.get(sig)
    if got is not None:  # the same views again (a loop), unless one died and its id is reused
        for r, t in zip(got[0], views):
            if r() is not t:
                got = None
                break
    if got is not None:
        part = got[1]
    else:
        part = len(trace.parts)
        trace.parts.append(_lowered(op, name, operands, engine, trace))
        if all(t.dynamic is None for t in views):
            if len(trace.signatures) >= _SIGNATURES:
                trace.signatures.clear()
            trace.signatures[sig] = (tuple(weakref.ref(t) for t in views), part)
    rows = trace.rows
    if hints:
        trace.hints[len(rows)] = hints
    file, line = m.location or _NOWHERE
    if order is None:
        rows.append(trace.share((op, name, file, line, part, None, 0, -1)))
        return
    s = order.sync
    index = trace._sync_index.get(id(s))
    if index is None:  # (the list keeps the checker alive, so its id stays its own)
        index = trace._sync_index[id(s)] = len(trace.syncs)
        trace.syncs.append(s)
    rows.append((op, name, file, line, part, order.pipe, order.seq, index, *order.after))


_SIGNATURES = 4096  # instruction signatures a trace remembers


def _lowered(op: str, name: str | None, operands: dict[str, Any], engine: str | None,
             trace: Trace) -> tuple[Any, ...]:
    """An instruction's lowered operands, pieces, storage ids and engine."""
    m = current()
    where = instruction_label(op, name)
    cache = trace.lowered
    lowered = {}
    for role, t in operands.items():
        if t.dynamic is not None:
            lowered[role] = lower(t, role=role, label=where)
            continue
        key = (t.layout, t.dtype, t.buffer, t.format, t.name, role,
               m.targets[targets.family(t.buffer)])
        aps = cache.get(key)
        if aps is None:
            aps = cache[key] = lower(t, role=role, label=where)
        lowered[role] = aps
    pieces = cut(op, operands, lowered, label=where)
    storages = {role: t.storage.id for role, t in operands.items()}
    if engine is None:
        engine = engine_of(op, operands)
    return lowered, pieces, storages, engine


def record_event(op: str, args: tuple[Any, ...], pipe: str | None = None) -> None:
    """Put an Ascend event (`set_flag(E, id)`, `wait_flag(E, id)`, `pipe_barrier(P)`, the
    cross-core ones with their `pipe`) in the trace, on the pipe that executes it, so `apdsl
    lower` shows where a kernel synchronises."""
    m = current()
    trace = m.trace
    if trace is None:
        return
    key = (op, m.location, args)  # a loop's events are the same rows again, found by it
    events = trace._events
    try:
        row = events.get(key)
    except TypeError:  # an unhashable argument (the event checked it): a row of its own
        key = row = None
    if row is None:
        file, line = m.location or _NOWHERE
        row = (op, file, line, tuple(args), pipe or _event_pipe(op, args[0]))
        if key is not None:
            events[key] = row
    trace.rows.append(row)


# An event's operands and pieces: none, shared by every event record (records are read, never
# changed; a traced GEMM has tens of thousands of events, and fewer containers in the trace
# are less for the garbage collector to walk while it grows)
_NO_OPERANDS: Mapping[str, Any] = MappingProxyType({})
_NO_PIECES: tuple[()] = ()
_NOWHERE = (None, None)


@lru_cache(maxsize=256)
def _event_pipe(op: str, what: Any) -> Any:
    """The pipe an event runs on: a barrier's own, a set's source, a wait's destination."""
    if op == "pipe_barrier":
        return what
    src, _, dst = str(what).partition("_")
    return src if op == "set_flag" else dst


def _may_exceed_entries(t: Any) -> bool:
    """False when the view's uncoalesced pattern already fits the target's limit: coalescing
    only removes entries, so `lower` could not fail.  (Counting the modes of a regular layout
    costs less than looking the answer up: views are made afresh in every loop iteration.)"""
    entries = -1  # the partition entry is not a free one
    for d in t.layout.dims:
        modes = d.modes
        if d.start != 0 or d.step != 1 or (len(modes) > 1 and
                                            prod(c for c, _ in modes) != d.size):
            return True  # several patterns: `lower` decides
        entries += len(modes)
    return entries > targets.target_for(t.storage.buffer).max_free_entries
