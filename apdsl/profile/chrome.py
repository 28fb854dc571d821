"""The profile as a Chrome trace-event file (the JSON object format that Perfetto and
chrome://tracing open): one thread per engine, DMA queue or pipe, named by metadata events,
one complete ("X") event per instruction, named by its op and source line, with its operands'
access patterns as arguments.  An Ascend kernel's events are flow arrows: from the last
instruction the set's pipe issued before `set_flag` to the first one the wait's pipe issues
after `wait_flag` (the happens-before edges the schedule follows); an NKI kernel's data
dependencies are flow arrows from each instruction to the ones that read its output.  A flow
event binds to the slice that encloses its time on its thread (Perfetto's model), so each end
of an arrow lies strictly inside its slice: the start just before its source ends, the finish
just after its destination starts.  Times are microseconds, as the format wants."""

from __future__ import annotations

from typing import Any

from ..runtime.core.trace import EVENT_ROW
from .result import ProfileResult

PID = 1


def events(p: ProfileResult) -> dict[str, Any]:
    tracks = list(p.busy_ns)
    for s in p.slots:
        if s.track not in tracks:
            tracks.append(s.track)
    tid = {t: i + 1 for i, t in enumerate(tracks)}
    # the cores of an Ascend launch: one track group (process) per core, its pipes threads
    groups = {t: t.split(": ", 1)[0] for t in tracks if ": " in t}
    pids = {g: PID + 1 + i for i, g in enumerate(dict.fromkeys(groups.values()))}
    pid = {t: pids[groups[t]] if t in groups else PID for t in tracks}
    title = f"apdsl profile {p.kernel or ''} on {p.target} (estimate)".replace("  ", " ")
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": title}}]
    for g, i in pids.items():
        out.append({"ph": "M", "name": "process_name", "pid": i, "tid": 0,
                    "args": {"name": f"{g} (estimate)"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": i, "tid": 0,
                    "args": {"sort_index": i}})
    for t, i in tid.items():
        shown = t.split(": ", 1)[1] if t in groups else t
        out.append({"ph": "M", "name": "thread_name", "pid": pid[t], "tid": i,
                    "args": {"name": shown}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid[t], "tid": i,
                    "args": {"sort_index": i}})
    for s in p.slots:
        loc = s.location
        where = f"{loc[0]}:{loc[1]}" if loc else "?"
        label = f" {s.name!r}" if s.name else ""
        args: dict[str, Any] = {role: ap.to_json() for role, ap in s.operands.items()}
        if s.piece[1] > 1:
            args["piece"] = list(s.piece)
        c = s.cost
        if c.descriptors:
            args["bytes"] = c.bytes
            args["descriptors"] = c.descriptors
            args["run_bytes"] = c.run_bytes
        args["estimated_ns"] = s.end - s.start
        out.append({"name": f"{s.op}{label} {where}", "cat": s.track, "ph": "X",
                    "ts": s.start / 1000, "dur": (s.end - s.start) / 1000,
                    "pid": pid[s.track], "tid": tid[s.track], "args": args})
    out.extend(_flows(p, tid, pid))
    out.extend(_data_flows(p, tid, pid, len(out)))
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"estimate": True, "target": p.target, "total_ns": p.total_ns}}


def _flows(p: ProfileResult, tid: dict[str, int], pid: dict[str, int]) -> list[dict[str, Any]]:
    """Flow events (`_arrow`), one per wait_flag that is followed by an instruction on its
    pipe."""
    trace = getattr(p, "_trace", None)
    rows = trace.rows if trace is not None else ()
    by_record: dict[int, list[Any]] = {}
    for s in p.slots:
        by_record.setdefault(s.record, []).append(s)
    last: dict[str, Any] = {}        # pipe -> its last slot so far
    flags: dict[tuple[Any, ...], Any] = {}
    waiting: dict[str, list[tuple[Any, str]]] = {}  # pipe -> (source slot, event) to draw
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        if len(row) == EVENT_ROW:  # an event row of the trace: (op, file, line, arguments, pipe)
            op, _, _, event, pipe = row
            if op == "set_flag":
                flags[event] = last.get(pipe)
            elif op == "wait_flag":
                src = flags.pop(event, None)
                if src is not None:
                    waiting.setdefault(pipe, []).append((src, f"{event[0]} {event[1]}"))
            continue
        slots = by_record.get(i)
        if not slots:
            continue
        first = min(slots, key=lambda s: s.start)
        for src, name in waiting.pop(first.track, ()):
            out.extend(_arrow(len(out) // 2, name, "event", src, first, tid, pid))
        last[first.track] = max(slots, key=lambda s: s.end)
    return out


def _data_flows(p: ProfileResult, tid: dict[str, int], pid: dict[str, int], first_id: int
                ) -> list[dict[str, Any]]:
    """An NKI kernel's data dependencies: an arrow from each instruction to every later one
    that reads what it wrote."""
    out: list[dict[str, Any]] = []
    slots = p.slots
    for i, producers in sorted(p.producers.items()):
        for j in producers:
            out.extend(_arrow(first_id + len(out) // 2, "data", "dependency", slots[j],
                              slots[i], tid, pid))
    return out


# how far inside its slice an arrow's end lies (us): 1 ns, or half a shorter slice
_INSIDE_US = 0.001


def _arrow(n: int, name: str, cat: str, src: Any, dst: Any, tid: dict[str, int],
           pid: dict[str, int]) -> list[dict[str, Any]]:
    """A flow arrow from slot `src` to slot `dst`: its start just before src ends, its finish
    just after dst starts, each strictly inside its slice."""
    a = src.end / 1000 - min(_INSIDE_US, (src.end - src.start) / 2000)
    b = dst.start / 1000 + min(_INSIDE_US, (dst.end - dst.start) / 2000)
    return [{"ph": "s", "id": n, "name": name, "cat": cat, "pid": pid[src.track],
             "tid": tid[src.track], "ts": a},
            {"ph": "f", "bp": "e", "id": n, "name": name, "cat": cat, "pid": pid[dst.track],
             "tid": tid[dst.track], "ts": b}]
