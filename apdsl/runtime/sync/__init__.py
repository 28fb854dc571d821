"""The Ascend synchronisation checker (SPEC section 13): events, barriers and data races.

The pipes of one AI Core run concurrently; `set_flag`/`wait_flag` and `pipe_barrier` order
them.  The order is a happens-before relation over executed instructions, computed as the
program runs with one vector clock per pipe: `clock[p][q]` is the number of instructions of
pipe q known complete before pipe p's next instruction starts.

- An instruction on pipe p (not V) follows every earlier one of p (program order).  On V two
  instructions are ordered only by `pipe_barrier("V")`/`"ALL"` or a `V_V` event, as the
  AscendC PipeBarrier docs say dependent vector instructions need.
- `set_flag(E, id)` on E's source pipe snapshots what that pipe knows, its own instructions
  issued so far included; `wait_flag(E, id)` joins the snapshot into the destination pipe's
  clock and clears the flag (a flag is one bit).
- `pipe_barrier("ALL")` and the end of a kernel order everything.

Accesses are kept per storage region (the physical address range of an on-chip buffer, one GM
tensor's storage), a short list of earlier reads and writes; an access that is ordered after
an earlier one and covers its bytes replaces it, so a loop that reuses its buffers keeps the
list short.  A new access checks each earlier access of another pipe that it is not ordered
after: a read and a write, or two writes, of overlapping bytes are a race (APK570; APK571 on
V without a barrier).  Bounding byte ranges decide first; exact byte sets only when those
overlap.  An instruction's operand facts (region, byte range, pipe) come from a plan kept per
instruction and operand views (`sync_facts.plan_of`), so a loop's instructions do no layout
work here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...errors import Span, Warning_
from ...records import record
from ...tensor.machine import current
from .auto import order as auto_order
from .auto import record as auto_record
from .pipes import (
    BARRIER_PIPES,
    EVENT_IDS,
    HARD_EVENTS,
    PIPE_INDEX,
    PIPES,
    split_event,
)
from .sync_facts import PLANS, Record, Touch, common_bytes, plan_of
from .world import SyncError, World, check_event, cross_race, no_pipe, op_at, reuse

_N = len(PIPES)
_V = PIPE_INDEX["V"]
# (source pipe index, destination pipe index) of every hard event
_EVENT_PIPES = {e: tuple(PIPE_INDEX[p] for p in split_event(e)) for e in HARD_EVENTS}
_EVENT_SRC = {e: s for e, (s, _) in _EVENT_PIPES.items()}
_EVENT_DST = {e: d for e, (_, d) in _EVENT_PIPES.items()}
_ATOMIC_PIPES = frozenset({PIPE_INDEX["MTE3"], PIPE_INDEX["FIX"]})
_ATOMIC = "ascend.atomic"  # the machine's engine_state key (`apdsl.runtime.ascend.atomic`)


@record
class Order:
    """An executed instruction's place in the happens-before order: it is instruction `seq`
    (from 1) of `pipe` under checker `sync`, and every instruction of pipe q numbered up to
    `after[q]` (in `PIPES` order) completes before it starts.  The profile schedules Ascend
    pipes by it."""

    pipe: str
    seq: int
    after: tuple[int, ...]
    sync: Any  # the checker (one per kernel run): sequence numbers count within it


class Sync:
    """The synchronisation state of one kernel on one core (or one `apdsl.pipes()` block):
    its pipes' clocks and its flags; what the cores of a launch share is the `World`."""

    def __init__(self, target: str = "ascend-a2", world: World | None = None,
                 core: int = 0) -> None:
        self.ids = EVENT_IDS.get(target, 8)
        self.world = w = World() if world is None else world
        w.syncs.append(self)
        self.core = core
        self.base = core * _N  # this core's pipes in the world's indices
        self.count = w.count
        # clock[p][q]: of the world's pipe q, the instructions known complete before this
        # core's pipe p starts its next one
        self.clock = [[0] * (_N * w.cores) for _ in range(_N)]
        self.flags: dict[tuple[str, int], tuple[list[int], Span | None, Any]] = {}
        # per region, its earlier reads and its earlier writes, each oldest first: a read
        # conflicts only with writes, so a read need not walk the (often long) list of reads
        self.regions = w.regions
        self.session = False  # made by apdsl.options(sync=True), not by a kernel or pipes()
        # the pipes this core has (None: all; an AIC or AIV of a split AI core: its own)
        self.pipes: frozenset[int] | None = None
        # the unit flags of this core's L0C blocks (`apdsl.runtime.ascend.unitflag`)
        self.units: dict[tuple[int, int], tuple[int, Any, Any]] = {}
        # per region, the buffers whose dependencies a compiler orders (`auto`: pyasc's
        # insert_sync); empty in every other kernel, which the hot path tests first
        self.auto: dict[Any, list[Any]] = {}

    @property
    def failed(self) -> bool:
        """A race was reported (check mode goes on): leftover flags are its consequence."""
        return self.world.failed

    # -- instructions -------------------------------------------------------------------------
    def access(self, op: str, name: Any, operands: dict[str, Any], span: Span | None,
               location: Any, order: bool = True,
               plan: tuple[Any, ...] | None = None) -> Order | None:
        """Check and record the accesses of one instruction before it moves data; return its
        place in the happens-before order (None: it runs on no pipe, or `order` is False: the
        caller does not keep it).

        The hot path of every Ascend instruction: its operand facts come from a plan (`plan_of`),
        each access is a plain tuple (a `Record`), and the exact byte sets are compared only
        when the cheap test (bounding byte ranges, of accesses not ordered before this one)
        says two accesses may overlap.  `plan`: the one `kept_plan` gave for these very
        operands (a caller that keeps its own plan per operand views skips the lookup)."""
        if plan is None:
            plan = PLANS.get((op, *operands, *map(id, operands.values()))) \
                if current().options.plans else None
            if plan is None:
                plan = plan_of(op, operands)
        p = plan[1]
        if p < 0:
            return None
        if self.pipes is not None and p not in self.pipes:
            raise no_pipe(self, op, p)
        P = p + self.base  # noqa: N806 - the pipe's index in the world
        count = self.count
        count[P] = seq = count[P] + 1
        w = self.world
        if seq == 1:  # the pipe's first instruction
            w.used = tuple(q for q in range(len(count)) if count[q])
        clk = self.clock[p]
        same = p != _V  # instructions of one pipe (but V) run in program order
        if same:
            clk[P] = seq - 1
        touched = auto_order(self, p, plan[2]) if self.auto else None
        n = w.accesses
        opname = (op, name)
        regions = self.regions
        new = []
        # a write to GM by MTE3 or FIX under set_atomic_add is atomic (2): two atomic writes
        # of the same bytes do not race (`apdsl.runtime.ascend.atomic`)
        atomic = p in _ATOMIC_PIPES and _ATOMIC in current().engine_state
        for rkey, lo, hi, write, static, role in plan[2]:
            n += 1
            if atomic and write and operands[role].buffer == "gm":
                write = 2
            rec = (P, seq, lo, hi, n, write, static, opname, span, location)
            lists = regions.get(rkey)
            if lists is None:
                lists = regions[rkey] = ([], [])
            else:
                # the cheap test: an earlier access of another pipe, not ordered before this
                # one, whose byte range overlaps (a read conflicts with writes only).  Every
                # access listed here is of an earlier instruction (nothing of this one is
                # recorded yet), so one of this pipe (but V) is ordered by its clock alone:
                # clk[p] is seq - 1 and the access's number is below seq
                for e in lists[1]:
                    if not (e[1] <= clk[e[0]] or e[3] < lo or hi < e[2]):
                        self._check(rec, lists, clk, operands[role])
                        break
                else:
                    if write:
                        for e in lists[0]:
                            if not (e[1] <= clk[e[0]] or e[3] < lo or hi < e[2]):
                                self._check(rec, lists, clk, operands[role])
                                break
            new.append((rec, lists, lo, hi, write, static[3]))
        # recorded once all are checked (two accesses of one region, as an in-place vector
        # instruction's, are checked against the accesses before the instruction)
        for rec, lists, lo, hi, write, dense in new:
            reads, writes = lists
            if dense:
                # a dense access drops the earlier accesses ordered before it and inside its
                # bytes: they can no longer race with anything later that it does not (a
                # write hides both kinds, a read hides reads).  The clock first (it orders
                # most); the same-pipe test is for this instruction's own earlier access
                j = len(reads)
                while j:
                    j -= 1
                    e = reads[j]
                    if lo <= e[2] and e[3] <= hi and (e[1] <= clk[e[0]] or
                                                      e[0] == P and same):
                        del reads[j]
                if write:
                    j = len(writes)
                    while j:
                        j -= 1
                        e = writes[j]
                        if lo <= e[2] and e[3] <= hi and (e[1] <= clk[e[0]] or
                                                          e[0] == P and same):
                            del writes[j]
            (writes if write else reads).append(rec)
        w.accesses = n
        if touched:
            auto_record(self, p, touched)
        return Order(plan[0], seq, tuple(clk), self) if order else None

    def _check(self, rec: Record, earlier: tuple[list[Record], list[Record]],
               clk: list[int], t: Any) -> None:
        """Raise on the oldest earlier access that races with `rec`: a write checks the
        region's reads and writes, a read its writes."""
        acc = Touch(rec)
        first: tuple[Touch, np.ndarray] | None = None
        for lst in (earlier if acc.write else earlier[1:]):
            found = self._first_race(acc, lst, clk)
            if found is not None and (first is None or found[0].n < first[0].n):
                first = found
        if first is not None:
            self.world.failed = True
            raise self._race(acc, first[0], t, first[1])

    @staticmethod
    def _first_race(acc: Touch, earlier: list[Record],
                    clk: list[int]) -> tuple[Touch, np.ndarray] | None:
        p = acc.pipe
        same = p % _N != _V  # instructions of one pipe (but V) run in program order
        lo, hi = acc.lo, acc.hi
        for rec in earlier:
            q = rec[0]
            if q == p and same or rec[1] <= clk[q] or rec[3] < lo or hi < rec[2] \
                    or acc.write == 2 and rec[5] == 2:  # two atomic adds commute
                continue
            e = Touch(rec)
            both = common_bytes(e.exact(), acc.exact())
            if both.size:
                return e, both
        return None

    def _race(self, acc: Touch, e: Touch, t: Any, both: np.ndarray) -> SyncError:
        kind = ("write-after-write" if acc.write and e.write else
                "write-after-read" if acc.write else "read-after-write")
        if acc.pipe // _N != e.pipe // _N:
            return cross_race(self, kind, acc, e, t, both)
        p, q = PIPES[acc.pipe % _N], PIPES[e.pipe % _N]
        verb = {True: "writes", False: "reads"}
        lo, hi = int(both[0]) - acc.base, int(both[-1]) - acc.base
        nbytes = int(both.size)
        where = f"bytes {lo}-{hi}" if nbytes == hi - lo + 1 else \
            f"{nbytes} bytes in {lo}-{hi}"
        as_old, reused = reuse(acc, e, t)
        message = (f"data race ({kind}): {acc.op} on pipe {p} {verb[acc.write]} {t.name} "
                   f"@ {t.buffer} {where} while {op_at(e)} on pipe {q} may still "
                   f"{'write' if e.write else 'read'} them{as_old}")
        notes = [f"{op_at(e)} runs on pipe {q}, {op_at(acc)} on pipe {p}: the pipes run "
                 "concurrently, and no event orders the two"] + reused
        if p == q:  # both on V
            notes = [f"{op_at(e)} and {op_at(acc)} both run on pipe V, where instructions "
                     "may overlap: no barrier orders the two"] + reused
            code = "APK571"
            fix = (f"put pipe_barrier(\"V\") between {op_at(e)} and {op_at(acc)}: dependent "
                   "vector instructions need a barrier")
        else:
            code = "APK570"
            event = f"{q}_{p}"
            pending = [i for (ev, i), (snap, _, _) in self.flags.items()
                       if ev == event and snap[e.pipe] >= e.seq]
            if pending:  # the set is there, its wait is missing
                i = pending[0]
                loc = self.flags[(event, i)][2]
                where = f" (line {loc[1]})" if loc else ""
                fix = (f"wait_flag(\"{event}\", {i}) before {op_at(acc)}: set_flag(\"{event}\", "
                       f"{i}){where} orders {op_at(e)}, but nothing waits for it")
            elif event in HARD_EVENTS:
                free = next((i for i in range(self.ids) if (event, i) not in self.flags), 0)
                fix = (f"order them with an event: set_flag(\"{event}\", {free}) after "
                       f"{op_at(e)}, and wait_flag(\"{event}\", {free}) before {op_at(acc)}")
            else:
                fix = (f"there is no {q}_{p} event: order them through a third pipe with two "
                       "events, or with pipe_barrier(\"ALL\") between them")
        err = SyncError(message, code=code, notes=notes, help=fix, pipes=(q, p),
                        tensor=t.name, bytes=(lo, hi))
        return err.with_label(e.span, f"{'written' if e.write else 'read'} here on pipe {q}")

    # -- events -------------------------------------------------------------------------------
    def set_flag(self, event: str, i: int, span: Span | None, location: Any) -> None:
        flags = self.flags
        key = (event, i)
        if key in flags:
            _, sspan, sloc = flags[key]
            where = f" (set at line {sloc[1]})" if sloc else ""
            err = SyncError(f"set_flag(\"{event}\", {i}): the flag is already set{where}; "
                            "a flag is one bit", code="APK574",
                            help=f"wait_flag(\"{event}\", {i}) before setting it again, or use "
                            "another event id (ping-pong buffers use ids 0 and 1)",
                            event=event, id=i)
            raise err.with_label(sspan, "set here, not waited for since")
        flags[key] = (self.snapshot(_EVENT_SRC[event]), span, location)

    def snapshot(self, pipe: int) -> list[int]:
        """What this core's pipe `pipe` (a local index) knows, its own instructions issued so
        far included: what a flag it sets carries."""
        snap = self.clock[pipe][:]
        snap[self.base + pipe] = self.count[self.base + pipe]
        return snap

    def snapshot_all(self) -> list[int]:
        """What all this core's pipes know together, every instruction it issued so far
        included (a barrier of every pipe, as `sync_all` is)."""
        rows = self.clock
        snap = [max(col) for col in zip(*rows)]
        b = self.base
        snap[b:b + _N] = self.count[b:b + _N]
        return snap

    def join_all(self, snap: list[int]) -> None:
        """Every pipe of this core now knows what `snap` knew (a cross-core wait blocks every
        pipe on Atlas A2: the CrossCoreWaitFlag docs)."""
        for p in range(_N):
            self.join(p, snap)

    def join(self, pipe: int, snap: list[int]) -> None:
        """This core's pipe `pipe` (a local index) now knows what `snap` knew (a queue's
        deque, a buffer's alloc after its free)."""
        row = self.clock[pipe]
        n = len(snap)  # (a snapshot taken before the launch split its cores is shorter)
        for q in self.world.used:
            if q < n:
                v = snap[q]
                if v > row[q]:
                    row[q] = v

    def wait_flag(self, event: str, i: int) -> None:
        got = self.flags.pop((event, i), None)
        if got is None:
            raise SyncError(f"deadlock: wait_flag(\"{event}\", {i}) waits for a flag that no "
                            "set_flag has set", code="APK575",
                            notes=["a wait consumes its flag; the pipe would wait forever"],
                            help=f"set_flag(\"{event}\", {i}) on pipe {split_event(event)[0]} "
                            "before this wait (CATLASS pre-sets the 'buffer free' flags before "
                            "its loops)", event=event, id=i)
        dst = self.clock[_EVENT_DST[event]]
        snap = got[0]
        for q in self.world.used:  # join: the destination now knows what the source knew
            v = snap[q]
            if v > dst[q]:
                dst[q] = v

    def barrier(self, pipe: str) -> None:
        if pipe == "ALL":
            if self.world.cores == 1:
                for row in self.clock:
                    row[:] = self.count
                self.regions.clear()  # everything before is ordered before everything after
            else:  # this core's pipes only: the other cores run on
                snap = self.snapshot_all()
                for row in self.clock:
                    row[:] = snap
        elif pipe == "V":
            self.clock[_V][self.base + _V] = self.count[self.base + _V]
        # other pipes already run in program order

    def finish(self) -> list[Warning_]:
        """The end of the kernel: it orders everything; a flag still set is a warning."""
        out = []
        for (event, i), (_, span, _loc) in ({} if self.failed else self.flags).items():
            out.append(Warning_(f"set_flag(\"{event}\", {i}) is never waited for before the "
                                "end of the kernel", code="APK578", span=span,
                                help=f"wait_flag(\"{event}\", {i}) on pipe "
                                f"{split_event(event)[1]} before the kernel ends (CATLASS waits "
                                "its pre-set flags at the end)", event=event, id=i))
        self.flags.clear()
        if self.world.cores == 1:  # (a launch's cores: the launch ends them all)
            self.regions.clear()
        return out


# -- the builtins ------------------------------------------------------------------------------

def active() -> Sync | None:
    """The checker of the current machine: the kernel's, or one `apdsl.options(sync=True)`
    asks for outside kernels (made on first use)."""
    m = current()
    s = m.sync
    if s is None and m.options.sync is True:
        s = m.sync = Sync(m.targets.get("ascend", "ascend-a2"))
        s.session = True  # ends when the option does (apdsl.runtime.core.options)
    return s


def set_flag(event: str, id: int) -> None:  # noqa: A002 - AscendC's parameter name
    """Set flag `id` of hard event `event` (`"SRC_DST"`): the destination pipe's instructions
    after the matching `wait_flag` follow the source pipe's instructions before this set.

    >>> with apdsl.pipes():
    ...     apdsl.set_flag("MTE2_MTE1", 0)
    ...     apdsl.wait_flag("MTE2_MTE1", 0)
    """
    m = current()
    s = m.sync
    # a valid event in a checked kernel, decided cheaply (the checker's target's event ids),
    # and set here when the flag is clear (`Sync.set_flag` without its call; it reports a
    # flag already set)
    if s is not None and type(id) is int and 0 <= id < s.ids and type(event) is str:
        src = _EVENT_SRC.get(event)
        if src is not None:
            flags = s.flags
            key = (event, id)
            if key in flags:
                s.set_flag(event, id, m.span, m.location)  # reports it set (APK574)
                return
            snap = s.clock[src][:]
            snap[s.base + src] = s.count[s.base + src]
            flags[key] = (snap, m.span, m.location)
            return
    ev, i = check_event(event, id, "set_flag")
    s = active()
    if s is not None:
        s.set_flag(ev, i, m.span, m.location)


def wait_flag(event: str, id: int) -> None:  # noqa: A002
    """Wait on the destination pipe of `event` until flag `id` is set, and clear it.

    >>> with apdsl.pipes():
    ...     apdsl.set_flag("MTE1_M", 1)
    ...     apdsl.wait_flag("MTE1_M", 1)
    """
    s = current().sync
    if s is not None and type(id) is int and 0 <= id < s.ids and type(event) is str:
        dst = _EVENT_DST.get(event)
        if dst is not None:  # a valid event in a checked kernel: `Sync.wait_flag` inline
            got = s.flags.pop((event, id), None)
            if got is None:
                s.wait_flag(event, id)  # reports the deadlock (APK575)
                return
            row = s.clock[dst]
            snap = got[0]
            for q in s.world.used:  # (a pipe that never ran knows nothing: its entries are 0)
                v = snap[q]
                if v > row[q]:
                    row[q] = v
            return
    ev, i = check_event(event, id, "wait_flag")
    s = active()
    if s is not None:
        s.wait_flag(ev, i)


def pipe_barrier(pipe: str) -> None:
    """Order the pipe's later instructions after its earlier ones (`"V"`), or everything
    (`"ALL"`); `"S"` is an error, as on hardware.

    >>> with apdsl.pipes():
    ...     apdsl.pipe_barrier("ALL")
    """
    if isinstance(pipe, str) and pipe.startswith("PIPE_"):  # asc.PipeID.PIPE_V
        pipe = pipe[5:]
    if pipe == "S":
        raise SyncError("pipe_barrier(\"S\") faults the hardware", code="APK577",
                        notes=["the AscendC PipeBarrier docs: the scalar pipe's order is "
                               "guaranteed by hardware, and a PIPE_S barrier raises a "
                               "hardware error"],
                        help="remove it; scalar instructions are already in order")
    if not isinstance(pipe, str) or pipe not in BARRIER_PIPES:
        text = pipe if isinstance(pipe, str) else repr(pipe)
        from difflib import get_close_matches
        close = get_close_matches(text.upper(), BARRIER_PIPES, n=2) if isinstance(pipe, str) \
            else []
        raise SyncError(f"pipe_barrier: unknown pipe {text!r}", code="APK576",
                        help=(f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                              else "pipes: " + ", ".join(f'"{p}"' for p in BARRIER_PIPES
                                                         if p != "S")), pipe=text)
    s = active()
    if s is not None:
        s.barrier(pipe)


@contextmanager
def checking(force: bool = False) -> Iterator[Sync | None]:
    """Check synchronisation inside the block (a kernel: unless `sync` is off; `force`:
    `apdsl.pipes()`), ending it as a kernel ends: leftover flags warn."""
    from .warn import warn
    m = current()
    if m.sync is not None or (m.options.sync is False and not force):
        yield m.sync
        return
    s = m.sync = Sync(m.targets.get("ascend", "ascend-a2"))
    ok = False
    try:
        yield s
        ok = True
    finally:
        m.sync = None
        if ok:
            for w in s.finish():
                warn(w)


def pipes() -> Any:
    """Check Ascend synchronisation for Python-API code inside the block, as inside a kernel.

    >>> with apdsl.pipes():
    ...     apdsl.pipe_barrier("ALL")
    """
    return checking(force=True)
