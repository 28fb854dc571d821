"""The profile as a Chrome trace-event file (the JSON object format that Perfetto and
chrome://tracing open): one thread per engine, DMA queue or pipe, named by metadata events,
one complete ("X") event per instruction, named by its op and source line, with its operands'
access patterns as arguments.  Times are microseconds, as the format wants."""

from __future__ import annotations

from typing import Any

from .result import ProfileResult

PID = 1


def events(p: ProfileResult) -> dict[str, Any]:
    tracks = list(p.busy_ns)
    for s in p.slots:
        if s.track not in tracks:
            tracks.append(s.track)
    tid = {t: i + 1 for i, t in enumerate(tracks)}
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
         "args": {"name": f"apdsl profile {p.kernel or ''} on {p.target} (estimate)".replace(
             "  ", " ")}}]
    for t, i in tid.items():
        out.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": i, "args": {"name": t}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": i,
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
                    "ts": s.start / 1000, "dur": (s.end - s.start) / 1000, "pid": PID,
                    "tid": tid[s.track], "args": args})
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"estimate": True, "target": p.target, "total_ns": p.total_ns}}
