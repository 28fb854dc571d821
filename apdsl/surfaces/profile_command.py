"""`apdsl profile FILE [KERNEL] [-i ...] [--trace OUT.json] [--json]` (SPEC sections 2, 14).

A command of the command line (it reports and exits as the others do, through `plumbing`); its
options are declared with the other commands' in `arguments.py`, so that building the command
line imports nothing of the profiler."""

from __future__ import annotations

import argparse
import json
import sys


def command(args: argparse.Namespace) -> int:
    from ..errors import ApdslError
    from ..profile import profile_run
    from ..profile.chrome import events
    from ..runtime.core.files import write_text
    from .plumbing import execute, fail
    _, result = execute(args, trace=True, out=sys.stderr if args.json else None)
    if result.ranks is not None:
        return _ranks(args, [profile_run(one) for one in result.ranks])
    p = profile_run(result)
    if args.trace:
        try:
            write_text(args.trace, json.dumps(events(p)))
        except ApdslError as e:
            raise fail([e], {}, args.trace) from None
    if args.svg:
        from ..profile.svg import render
        try:
            write_text(args.svg, render(p))
        except ApdslError as e:
            raise fail([e], {}, args.svg) from None
    if args.json:
        print(json.dumps(p.to_json()))
    else:
        print(p.text())
        if args.trace:
            print(f"wrote {args.trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
        if args.svg:
            print(f"wrote {args.svg}")
    return 0


# How a group of ranks is estimated: each rank is its own device, so the ranks run in parallel
# and the group takes as long as its slowest rank.  A collective is priced on each rank as a DMA
# of its own bytes (the cost model's DMA rates); neither the time a rank waits for the others
# at a meeting nor the links between devices are modelled: the NKI docs publish no collective
# latency or link bandwidth figure to take them from.
RANKS_ASSUMPTION = ("ranks run in parallel; each collective is priced as a DMA of the rank's "
                    "own bytes (waiting for other ranks and the links between devices are not "
                    "modelled)")


def _ranks(args: argparse.Namespace, ps: list) -> int:
    """`profile --ranks N`: each rank's estimate, then the group's (the slowest rank's)."""
    from ..errors import ApdslError
    from ..profile.chrome import events
    from ..runtime.core.files import write_text
    from .plumbing import fail, usage
    slowest = max(range(len(ps)), key=lambda r: ps[r].total_ns)
    total = ps[slowest].total_ns
    if args.svg:
        raise usage("--svg draws one rank's timeline: leave out --ranks, or use --trace")
    if args.trace:
        out = {"traceEvents": [], "displayTimeUnit": "ns",
               "otherData": {"estimate": True, "ranks": len(ps), "total_ns": total,
                             "assumption": RANKS_ASSUMPTION}}
        for r, p in enumerate(ps):  # one process per rank and engine: pid = rank * 100 + pid
            for e in events(p)["traceEvents"]:
                e = dict(e)
                e["pid"] = r * 100 + int(e.get("pid", 0))
                if e.get("name") == "process_name":
                    e["args"] = {"name": f"rank {r}: {e['args']['name']}"}
                out["traceEvents"].append(e)
        try:
            write_text(args.trace, json.dumps(out))
        except ApdslError as e:
            raise fail([e], {}, args.trace) from None
    if args.json:
        print(json.dumps({"ranks": [p.to_json() for p in ps], "total_ns": total,
                          "slowest_rank": slowest, "assumption": RANKS_ASSUMPTION}))
        return 0
    for r, p in enumerate(ps):
        print(f"== rank {r} ==")
        print(p.text())
    print(f"group of {len(ps)} ranks: estimated {total / 1000:.3f} us, the slowest rank's "
          f"(rank {slowest}); {RANKS_ASSUMPTION}")
    if args.trace:
        print(f"wrote {args.trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
    return 0
