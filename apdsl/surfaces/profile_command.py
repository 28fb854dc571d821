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
