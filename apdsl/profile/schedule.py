"""Scheduling: every executed instruction on its engine, DMA queue or Ascend pipe.

List scheduling in program order.  An instruction starts when (1) every earlier instruction it
depends on has ended -- a read after a write, a write after a read or a write, of overlapping
storage bytes (RAW/WAR/WAW) -- and (2) its engine or pipe is free: each runs its instructions in
program order.  NKI DMAs go to the least-loaded of the DMA queues, and a transfer also waits
for the DMA engines it spreads over (the 16 engines are shared by all queues), so concurrent
DMAs share bandwidth.  Ascend pipes are ordered across pipes by the kernel's events: an
instruction checked by the synchroniser (`apdsl.runtime.sync`) carries its place in the
happens-before order, and it starts when every instruction that happens before it has ended
(a kernel whose events order more than its data needs is estimated as slow as it runs).  Ascend
instructions outside the checker (`--sync off`, top-level statements) run one after another,
as SPEC section 13 says they behave.

Storage bytes are compared as intervals: per storage, the partitions an on-chip operand covers
and, within a partition (or in HBM/GM), the byte interval from its lowest to its highest
element -- conservative for strided views.  An operand with a runtime index (scalar_offset,
vector_offset) may touch any byte of its storage.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from heapq import heapify, heappop, heappush
from math import inf
from typing import Any

from ..records import record
from ..runtime.core.trace import AFTER, EVENT_ROW, PART, PIPE
from ..runtime.sync.pipes import PIPE_INDEX
from ..runtime.table import outputs
from .costs import FAST_PATHS
from .model import Cost, Model, as_int


@record
class Slot:
    """One scheduled hardware instruction: a trace record's piece."""

    index: int          # position in program order (over pieces)
    record: int         # the trace record it belongs to
    piece: tuple[int, int]
    op: str
    name: str | None
    location: Any
    track: str          # the engine, DMA queue or pipe it ran on
    start: float        # ns
    end: float
    cost: Cost
    operands: dict[str, Any]
    pred: int           # the slot whose end fixed this start (-1: none): the critical path


def footprint(ap: Any) -> tuple[float, float, float, float]:
    """(first partition, last partition + 1, first byte, last byte + 1) an operand touches."""
    bits = _bits_of(ap)
    if ap.scalar_offset is not None or ap.vector_offset is not None:
        return (0, inf, -inf, inf)
    try:
        offset = int(ap.offset)
    except (TypeError, ValueError):  # a register offset: anywhere
        return (0, inf, -inf, inf)
    pattern = ap.pattern
    p0, p1 = 0, 1
    if ap.buffer in ("sbuf", "psum") and pattern:
        pstride, pcount = as_int(pattern[0][0]), as_int(pattern[0][1])
        p0 = offset // pstride if pstride > 0 else 0
        offset -= p0 * pstride
        p1 = p0 + pcount
        pattern = pattern[1:]
    lo = hi = offset
    for s, c in pattern:
        span = (as_int(c) - 1) * as_int(s)
        if span < 0:
            lo += span
        else:
            hi += span
    return (p0, p1, lo * bits // 8, ((hi + 1) * bits + 7) // 8)


_BITS: dict[str, int] = {}


def _bits_of(ap: Any) -> int:
    b = _BITS.get(ap.dtype)
    if b is None:
        from ..tensor.dtypes import dtype
        b = _BITS[ap.dtype] = dtype(ap.dtype).bits
    return b


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def _covers(a: tuple, b: tuple) -> bool:
    return a[0] <= b[0] and b[1] <= a[1] and a[2] <= b[2] and b[3] <= a[3]


class Scheduler:
    """Schedules pieces one at a time, in program order."""

    def __init__(self, model: Model, serial_order: bool = False) -> None:
        self.model = model
        self.serial_order = serial_order
        self.last_end: tuple[float, int] = (0.0, -1)
        self.table = SlotTable()  # the slots so far, as compact rows
        self.free: dict[str, tuple[float, int]] = {}        # track -> (free at, last slot)
        nq = int(model.f["dma_queues"].value) if "dma_queues" in model.f else 0
        self.queues = [f"DMA q{i}" for i in range(nq)]
        ne = int(model.f["dma_engines"].value) if "dma_engines" in model.f else 0
        self.dma_engines: list[list[tuple[float, float, int]]] = [[] for _ in range(ne)]
        # the bandwidth every transfer shares (NKI: HBM; Ascend: the chip's GM, all cores), in
        # bytes/ns, and when it is taken: a transfer of b shared bytes holds it b / rate ns
        # somewhere between its start and its end, so no stretch of time carries more bytes
        # than the rate allows, and a transfer alone is not slowed
        key = "hbm_bandwidth" if "hbm_bandwidth" in model.f else "gm_bandwidth"
        self.shared_rate = model.f[key].value if key in model.f else 0.0
        self.shared = Timeline()
        # storage key -> ([(footprint, end, slot)] writes, [...] reads)
        self.accesses: dict[Any, tuple[list, list]] = {}
        self._costs: dict[tuple, Cost] = {}
        # (trace part, dge_mode) -> its pieces and their costs
        self._part_costs: dict[tuple[int, Any], tuple[list[dict[str, Any]], list[Cost]]] = {}
        self.pipe_last: tuple[float, int] = (0.0, -1)
        self.unordered = 0  # Ascend instructions the synchroniser did not order
        # each source line's location: the slots of a loop share it (the garbage collector
        # walks, and is called in sooner by, every object the schedule keeps)
        self._locations: dict[tuple[str, int], tuple[str, int]] = {}
        self._footprints: dict[int, tuple] = {}
        # Ascend: per checker (the index of a trace's `syncs`), per pipe index, the (end, last
        # slot) of each of the pipe's instructions by sequence number; a new checker (the next
        # kernel) starts after everything before it
        # (the ends and the slots in two lists each: floats and ints the collector never walks)
        self.pipe_ends: dict[int, tuple[list[list[float]], list[list[int]]]] = {}
        self._worlds: list[Any] = []
        self.syncs: list[Any] = []
        self.epoch: tuple[int, tuple[float, int]] = (-1, (0.0, -1))
        # a launch on several cores: each core's track prefix and its place in the launch
        # (the report lists the pipes of the cores that ran something, in core order)
        self.cores: dict[str, int] = {}

    def _engines(self, t: float, dur: float, k: int) -> tuple[float, list[int], int]:
        """The earliest time >= t when k DMA engines are free for `dur`; which ones; and the
        transfer waited for (-1: none)."""
        waited, first = -1, t
        while True:
            cands = sorted((*_gap(b, t, dur), e) for e, b in enumerate(self.dma_engines))
            tk, w, _ = cands[k - 1]
            chosen = [e for _, _, e in cands[:k]]
            if all(_gap(self.dma_engines[e], tk, dur)[0] == tk for e in chosen):
                if tk > first:
                    waited = w
                return tk, chosen, waited
            t = tk

    def run(self, trace: Any) -> None:
        """Schedule every instruction of a trace, in program order; the instructions of a
        launch on several Ascend cores in the order of time (`_interleave`)."""
        add = self.add
        self.syncs = trace.syncs
        parts, hints, rows, args = trace.parts, trace.hints, trace.rows, trace.arguments
        i, n = 0, len(rows)
        while i < n:
            row = rows[i]
            if len(row) == EVENT_ROW:  # (an event takes no time: its ordering is in `after`)
                i += 1
                continue
            world = self._launch(row)
            if world is None:
                add(i, row, parts[row[PART]], hints.get(i), args.get(i))
                i += 1
                continue
            j = i + 1  # the launch's rows: up to the first instruction of something else
            while j < n and (len(rows[j]) == EVENT_ROW or self._launch(rows[j]) is world):
                j += 1
            self._interleave(trace, range(i, j))
            i = j

    def _launch(self, row: tuple[Any, ...]) -> Any:
        """The world of a launch on several cores that trace row `row` ran in, else None."""
        if row[PIPE] is None:
            return None
        sync = row[AFTER - 1]
        world = getattr(self.syncs[sync], "world", None) if sync < len(self.syncs) else None
        return world if getattr(world, "cores", 1) > 1 else None

    def _interleave(self, trace: Any, span: range) -> None:
        """The instructions of one launch on several cores, the next one always of the core
        whose last instruction started earliest (of those whose events' instructions are all
        scheduled).  The interpreter runs the cores one after another; scheduled in that order,
        the first core's transfers would take the shared GM bandwidth at its full rate and the
        last core's would find it taken, where the hardware serves the cores' concurrent
        requests together: in time order each transfer takes its share when it asks for it."""
        rows, parts, hints = trace.rows, trace.parts, trace.hints
        queues: dict[int, deque[int]] = {}
        for i in span:
            if len(rows[i]) != EVENT_ROW:
                queues.setdefault(self.syncs[rows[i][AFTER - 1]].base, deque()).append(i)
        heap = [(0.0, q[0], core) for core, q in queues.items()]
        heapify(heap)
        waiting: list[tuple[float, int, int]] = []
        while heap or waiting:
            if not heap:  # (every head waits: the first in program order cannot)
                waiting.sort(key=lambda w: w[1])
                heap, waiting = waiting[:1], waiting[1:]
                first = True
            else:
                first = False
            clock, i, core = heappop(heap)
            if not first and not self._ready(rows[i]):
                waiting.append((clock, i, core))
                continue
            queue = queues[core]
            queue.popleft()
            self.add(i, rows[i], parts[rows[i][PART]], hints.get(i), trace.arguments.get(i))
            if queue:
                heappush(heap, (self.table.rows[-1][9], queue[0], core))
            for w in waiting:  # what it waited for may be scheduled now
                heappush(heap, w)
            waiting.clear()

    def _ready(self, row: tuple[Any, ...]) -> bool:
        """Every instruction that happens before Ascend row `row` (its events) is scheduled."""
        checker = self.syncs[row[AFTER - 1]]
        own = AFTER + checker.base  # (its own core's pipes are scheduled in program order)
        if not any(row[AFTER:own]) and not any(row[own + len(PIPE_INDEX):]):
            return True
        got = self.pipe_ends.get(id(checker.world))
        ends = got[0] if got is not None else []
        pi = PIPE_INDEX[row[PIPE]] + checker.base
        return all(not k or q == pi or (q < len(ends) and k <= len(ends[q]))
                   for q, k in enumerate(row[AFTER:]))

    def add(self, index: int, row: tuple[Any, ...], part: tuple[Any, ...],
            hints: dict[str, Any] | None, arguments: tuple[Any, ...] | None = None) -> None:
        """Schedule the pieces of instruction row `index` of a trace (`apdsl.runtime.core.trace`):
        `part` its lowered operands, pieces, storages and engine, `hints` its hint keywords,
        `arguments` its non-tensor operands as (name, value) pairs."""
        op, name, file, line, p, pipe, _, sync = row[:AFTER]
        location = None
        if file is not None:  # one tuple per source line, shared by its slots
            location = (file, line)
            location = self._locations.setdefault(location, location)
        dge = hints.get("dge_mode") if hints else None
        pieces, costs, refs = self._part_cost(op, p, part, dge, _fast_arguments(op, arguments))
        if pipe is not None:  # an Ascend instruction the synchroniser ordered: its events
            # the cores of a launch share one order (their checkers' world): pipe q of it is
            # core q // 7's pipe q % 7, each core's pipes tracks of their own
            checker = self.syncs[sync] if sync < len(self.syncs) else None
            world = getattr(checker, "world", sync)
            base = getattr(checker, "base", 0)
            key = id(world)
            got_ends = self.pipe_ends.get(key)
            if got_ends is None:
                got_ends = self.pipe_ends[key] = ([], [])
                self._worlds.append(world)  # (kept alive, so its id stays its own)
            ends, ends_slot = got_ends
            width = len(row) - AFTER
            while len(ends) < width:  # (a launch that split its cores grew its order)
                ends.append([])
                ends_slot.append([])
            pi = PIPE_INDEX[pipe] + base
            prefix = self._core_prefix(world, base)
            # when the events let it start: the latest end of an instruction of another pipe
            # that happens before it (`after[q]`: how many of pipe q's; `ends[q]`, `ends_slot[q]`:
            # the end and slot of each of pipe q's so far), and of everything before its kernel
            if key != self.epoch[0]:
                self.epoch = (key, self.last_end)
            start, pred = self.epoch[1]
            for q, k in enumerate(row[AFTER:]):
                if k and q != pi:
                    done = ends[q]
                    if k <= len(done) and done[k - 1] > start:
                        start, pred = done[k - 1], ends_slot[q][k - 1]
            if len(pieces) == 1 and not self.serial_order:  # `_ordered` of one piece, inline
                cost = costs[0]
                track = prefix + cost.engine if prefix else cost.engine
                free_at, last = self.free.get(track, _IDLE)
                if free_at > start:
                    start, pred = free_at, last
                end = start + cost.ns
                if cost.shared_bytes and self.shared_rate:
                    end = self._share(start, end, cost.shared_bytes)
                rows = self.table.rows
                n = len(rows)
                self.free[track] = latest = (end, n)
                if end > self.last_end[0]:
                    self.last_end = latest
                rows.append((n, index, 0, 1, op, name, location, track, start, end, refs[0][1],
                             refs[0][0], pred))
                ends[pi].append(end)
                ends_slot[pi].append(n)
                return
            self._ordered(index, op, name, location, costs, refs, (start, pred), prefix)
            ends[pi].append(self.pipe_last[0])
            ends_slot[pi].append(self.pipe_last[1])
        elif self.model.family == "ascend":  # unchecked: as if it waited for all before it
            self.unordered += 1
            self._ordered(index, op, name, location, costs, refs, self.last_end)
        else:
            keys = part[2] or {}
            n = len(pieces)
            # the roles it writes, from the instruction table: every declared output (a second
            # output such as reduce_res is a write); an instruction the table does not know
            # is taken to write every operand, which can only order it later, never earlier
            written = outputs(op)
            for i, piece in enumerate(pieces):
                self._add(index, op, name, location, costs[i], i, n, piece, refs[i], keys,
                          piece.keys() if written is None else written)

    def _core_prefix(self, world: Any, base: int) -> str:
        """The track prefix of the core of `base` in its launch (`core_prefix`), noted with
        the core's place for the report's order."""
        prefix = core_prefix(world, base)
        if prefix:
            self.cores.setdefault(prefix, base)
        return prefix

    def _part_cost(self, op: str, p: int, part: tuple[Any, ...], dge: str | None,
                   arguments: tuple[Any, ...] | None
                   ) -> tuple[list[dict[str, Any]], list[Cost], list[tuple[int, int]]]:
        """`_costs_of` trace part `p`, kept per part, DGE mode and fast-row arguments."""
        key = p if dge is None and arguments is None else (p, dge, arguments)
        got = self._part_costs.get(key)
        if got is None:
            got = self._part_costs[key] = self._costs_of(op, part, dge, arguments)
        return got

    def _costs_of(self, op: str, part: tuple[Any, ...], dge: str | None,
                  arguments: tuple[Any, ...] | None = None
                  ) -> tuple[list[dict[str, Any]], list[Cost], list[tuple[int, int]]]:
        """The pieces of a trace part, each one's cost, and where the slot table keeps each
        (piece, cost).  The trace shares lowered operands
        between the executions of a loop's instruction, and between instructions on the same
        views: costs are computed once per distinct operand (the objects are kept alive by
        the trace, so their ids are stable)."""
        _, pieces, _, engine = part
        pieces = pieces or [{}]
        costs = []
        for piece in pieces:
            ckey = (op, engine, dge, arguments, *map(id, piece.values()))
            cost = self._costs.get(ckey)
            if cost is None:
                cost = self._costs[ckey] = self.model.cost(
                    op, piece, engine, dge, None if arguments is None else dict(arguments))
            costs.append(cost)
        table = self.table
        return pieces, costs, [(table.ref(piece), table.ref(cost))
                               for piece, cost in zip(pieces, costs)]

    def _ordered(self, rec_index: int, op: str, name: str | None, location: Any,
                 costs: list[Cost], refs: list[tuple[int, int]],
                 after: tuple[float, int], prefix: str = "") -> None:
        """An Ascend instruction's pieces, each starting after `after` (its events, or every
        earlier instruction) and its pipe's previous instruction.  The storage accesses are not
        compared: with `after` they would order nothing more, and no later instruction reads
        them (an NKI instruction never touches an Ascend storage).  `pipe_last`: the (end,
        slot) of the piece that ends last."""
        rows, free = self.table.rows, self.free
        n = len(costs)
        latest = (-inf, -1)
        for i, cost in enumerate(costs):
            ready, pred = after
            if self.serial_order and self.last_end[0] > ready:
                ready, pred = self.last_end
            track = prefix + cost.engine if prefix else cost.engine
            free_at, last = free.get(track, _IDLE)
            if free_at > ready:
                ready, pred = free_at, last
            end = ready + cost.ns
            if cost.shared_bytes and self.shared_rate:
                end = self._share(ready, end, cost.shared_bytes)
            index = len(rows)
            free[track] = (end, index)
            if end > self.last_end[0]:
                self.last_end = (end, index)
            if end > latest[0]:
                latest = (end, index)
            rows.append((index, rec_index, i, n, op, name, location, track, ready, end,
                         refs[i][1], refs[i][0], pred))
        self.pipe_last = latest

    def _add(self, rec_index: int, op: str, name: str | None, location: Any, cost: Cost,
             i: int, n: int, piece: dict[str, Any], ref: tuple[int, int],
             keys: dict[str, Any], written: Any) -> None:
        """An NKI instruction's piece: after the instructions whose storage bytes it reads or
        writes (`written`: the roles it writes), on its engine or the least-loaded DMA
        queue."""
        index = len(self.table.rows)
        ready, pred = 0.0, -1
        touched = []
        # the instruction its engine ran last: reading its output costs the dependent overhead
        previous = self.free.get(cost.engine, _IDLE)[1] if cost.dependent_ns else -2
        dependent = False
        producers: list[int] = []  # the slots whose output it reads (the trace's flow arrows)
        for role, ap in piece.items():
            key = keys.get(role, (ap.tensor, ap.buffer))
            fp = self._footprints.get(id(ap))
            if fp is None:
                fp = self._footprints[id(ap)] = footprint(ap)
            write = role in written
            writes, reads = self.accesses.setdefault(key, ([], []))
            for other in (writes, reads) if write else (writes,):
                for ofp, end, slot in other:
                    if _overlap(fp, ofp):
                        if end > ready:
                            ready, pred = end, slot
                        if not write:
                            producers.append(slot)
                            dependent = dependent or slot == previous
            touched.append((writes, reads, fp, write))
        if self.serial_order and self.last_end[0] > ready:
            ready, pred = self.last_end
        track = cost.engine
        if track == "DMA" and self.queues:
            track = min(self.queues, key=lambda q: self.free.get(q, (0.0, -1))[0])
        free_at, last = self.free.get(track, (0.0, -1))
        if free_at > ready:
            ready, pred = free_at, last
        start = ready
        end = start + cost.ns + (cost.dependent_ns if dependent else 0.0)
        if cost.engine == "DMA" and self.dma_engines:
            # the transfer waits for the DMA engines it spreads over (shared by the queues);
            # an engine idle between earlier-issued transfers takes it in the gap.  An engine
            # runs one transfer at a time (ARCH1), so it is held until the transfer ends, later
            # than its own rate allows when the shared bandwidth holds it back
            k = max(1, min(cost.dma_engines, len(self.dma_engines)))
            t0, chosen, waited, end = self._transfer(start + cost.fixed_ns,
                                                     cost.ns - cost.fixed_ns, k,
                                                     cost.shared_bytes)
            if waited >= 0:
                # its engines were busy with an earlier transfer: it starts its fixed latency
                # (setup, semaphore to start: DMABW) so that the latency ends as they come
                # free, under that transfer, and its queue is not shown busy while it waits
                pred = waited
                start = t0 - cost.fixed_ns
            for e in chosen:
                insort(self.dma_engines[e], (t0, end, index))
        elif cost.shared_bytes and self.shared_rate:
            end = self._share(start + cost.fixed_ns, end, cost.shared_bytes)
        self.free[track] = (end, index)
        if end > self.last_end[0]:
            self.last_end = (end, index)
        for writes, reads, fp, write in touched:
            if write:  # accesses this write covers are ordered before it: forget them
                writes[:] = [w for w in writes if not _covers(fp, w[0])]
                reads[:] = [r for r in reads if not _covers(fp, r[0])]
                writes.append((fp, end, index))
            else:
                reads.append((fp, end, index))
        if producers:
            self.table.producers[index] = tuple(sorted(set(producers)))
        self.table.rows.append((index, rec_index, i, n, op, name, location, track, start, end,
                                ref[1], ref[0], pred))

    def _transfer(self, t: float, dur: float, k: int, nbytes: int
                  ) -> tuple[float, list[int], int, float]:
        """When a DMA's transfer of `dur` ns on `k` engines, moving `nbytes` through the shared
        bandwidth, starts (>= t), on which engines, the transfer it waited for, and when it
        ends: its engines are held from start to end, the shared bandwidth for its bytes'
        share somewhere in between."""
        need = nbytes / self.shared_rate if nbytes and self.shared_rate else 0.0
        held = dur
        for _ in range(8):  # (the engines' gap and the bandwidth's agree within a few rounds)
            t0, chosen, waited = self._engines(t, held, k)
            at = self.shared.peek(t0, need) if need else t0
            end = max(t0 + dur, at + need)
            if end - t0 <= held + 1e-9:
                break
            held = end - t0
        if need:
            at = self.shared.take(t0, need)
            end = max(end, at + need)
        return t0, chosen, waited, end

    def _share(self, start: float, end: float, nbytes: int) -> float:
        """The end of a transfer moving `nbytes` through the shared bandwidth, which would end
        at `end` on its own engines or pipe, having started at `start`: it holds the shared
        bandwidth for nbytes / rate ns at the first time from `start` it is free that long."""
        need = nbytes / self.shared_rate
        at = self.shared.take(start, need)
        return max(end, at + need)

    @property
    def slots(self) -> list[Slot]:
        """The slots scheduled so far."""
        return self.table.slots()


def core_prefix(world: Any, base: int) -> str:
    """The track prefix of a core's pipes in a launch on several cores ("AIV 3: "), or "".

    Each core's pipes are tracks of their own and run in parallel.  GM bandwidth: every core's
    transfers (MTE2, MTE3, FIX) are costed at the per-core rates of the cost model and share
    the chip's GM bandwidth (`Scheduler.shared`), taken in the order of time
    (`Scheduler._interleave`)."""
    if getattr(world, "cores", 1) <= 1:
        return ""
    return f"{world.name(base)}: "


class Timeline:
    """When a shared resource is held: disjoint busy intervals, sorted, neighbours merged (a
    saturated stretch is one interval, so finding a gap stays cheap however many transfers
    held it)."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def _find(self, t: float, need: float) -> tuple[float, int]:
        """The earliest time >= t the resource is free for `need` ns, and the index of the
        first interval after it."""
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, t)  # the first interval ending at or after t
        while i < len(starts) and starts[i] < t + need:
            t = max(t, ends[i])
            i += 1
        return t, i

    def peek(self, t: float, need: float) -> float:
        """When `take(t, need)` would hold the resource (nothing held)."""
        return self._find(t, need)[0]

    def take(self, t: float, need: float) -> float:
        """Hold the resource for `need` ns at the earliest time >= t it is free that long;
        return that time."""
        starts, ends = self.starts, self.ends
        t, i = self._find(t, need)
        # [t, t + need] lies between interval i - 1 (ending <= t) and interval i
        merge_left = i > 0 and ends[i - 1] >= t - 1e-9
        merge_right = i < len(starts) and starts[i] <= t + need + 1e-9
        if merge_left and merge_right:
            ends[i - 1] = ends[i]
            del starts[i], ends[i]
        elif merge_left:
            ends[i - 1] = t + need
        elif merge_right:
            starts[i] = t
        else:
            starts.insert(i, t)
            ends.insert(i, t + need)
        return t


_IDLE = (0.0, -1)  # a track that has run nothing yet: free from 0, after no slot
_ONE = (0, 1)  # the piece number of an instruction in one piece


def _gap(busy: list[tuple[float, float, int]], t: float, dur: float) -> tuple[float, int]:
    """The earliest time >= t at which `busy` (sorted intervals) leaves `dur` free, and the
    interval whose end it waited for (-1: none)."""
    i = max(0, bisect_left(busy, (t,)) - 1)
    waited = -1
    for s, e, slot in busy[i:]:
        if s >= t + dur:
            break
        if e > t:
            t, waited = e, slot
    return t, waited


class SlotTable:
    """A schedule's slots as compact rows, made into `Slot`s when read (`slots`, `slot`).

    A traced GEMM schedules some fifteen thousand instructions; a row of plain values -- `(index,
    record, piece i, of n, op, name, location, track, start, end, cost, piece, pred)`, the cost
    and the piece (its operands) as indexes into `objects` -- is left alone by the
    garbage collector, which every kept object would otherwise call in sooner and slow down.
    """

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.objects: list[Any] = []  # each a `Cost` or a piece's operands, by index (`ref`)
        # NKI: slot -> the slots that wrote what it reads (its data dependencies)
        self.producers: dict[int, tuple[int, ...]] = {}
        self._refs: dict[int, int] = {}  # id -> index (the list keeps each object alive)
        self._made: list[Slot] = []
        self._some: dict[int, Slot] = {}  # slots read one by one before `slots()`

    def ref(self, obj: Any) -> int:
        """The index of `obj` (a cost or a piece) in the table's objects, added if new."""
        i = self._refs.get(id(obj))
        if i is None:
            i = self._refs[id(obj)] = len(self.objects)
            self.objects.append(obj)
        return i

    def slot(self, i: int) -> Slot:
        """Slot `i` (made once: the same object however it is read)."""
        if i < len(self._made):
            return self._made[i]
        got = self._some.get(i)
        if got is None:
            got = self._some[i] = self._make(i)
        return got

    def _make(self, i: int) -> Slot:
        got = self._some.get(i)
        if got is not None:
            return got
        index, record, k, n, op, name, location, track, start, end, cost, piece, pred = \
            self.rows[i]
        objs = self.objects
        return Slot(index, record, _ONE if n == 1 else (k, n), op, name, location, track,
                    start, end, objs[cost], objs[piece], pred)

    def slots(self) -> list[Slot]:
        """Every slot, in program order (made once, as far as the rows go)."""
        made = self._made
        if len(made) < len(self.rows):
            made.extend(map(self._make, range(len(made), len(self.rows))))
        return made


def schedule(trace: Any, model: Model, *, serial_order: bool = False) -> list[Slot]:
    """Every piece of every instruction of a trace (`apdsl.runtime.core.trace.Trace`), read from its
    rows, scheduled; with `serial_order` each waits for all earlier ones."""
    s = Scheduler(model, serial_order)
    s.run(trace)
    return s.slots


def critical_path(slots: list[Slot]) -> list[Slot]:
    """The chain of slots, each waiting for the previous one, that ends last."""
    if not slots:
        return []
    cur = max(slots, key=lambda s: s.end)
    path = [cur]
    while cur.pred >= 0:
        cur = slots[cur.pred]
        path.append(cur)
    return path[::-1]


def _fast_arguments(op: str, arguments: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """The (name, value) pairs of an instruction's arguments that its ISA fast row looks at
    (`costs.FAST_PATHS`; None when it has none): part of the key its cost is kept under."""
    fast = FAST_PATHS.get(op)
    if fast is None or not arguments:
        return None
    names = {name for name, _ in fast.arguments}
    return tuple((k, v) for k, v in arguments
                 if k in names and isinstance(v, (str, int, float))) or None
