"""`apdsl profile FILE [KERNEL] [-i ...] [--trace OUT.json] [--json]` (SPEC sections 2, 14)."""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction, program_options: object,
               inputs_option: object) -> None:
    pf = sub.add_parser("profile", help="estimate where a kernel's time goes on the target")
    pf.add_argument("file", metavar="FILE")
    pf.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(pf, "missing inputs get seeded data")  # type: ignore[operator]
    pf.add_argument("--json", action="store_true", help="the profile as one JSON object")
    pf.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace-event file "
                    "(Perfetto, chrome://tracing) of the estimated timeline (atomically)")
    program_options(pf)  # type: ignore[operator]


def command(args: argparse.Namespace) -> int:
    from ..errors import ApdslError
    from ..runtime.files import write_text
    from ..surfaces.cli import _execute, fail
    from . import profile_run
    from .chrome import events
    _, result = _execute(args, trace=True, out=sys.stderr if args.json else None)
    p = profile_run(result)
    if args.trace:
        try:
            write_text(args.trace, json.dumps(events(p)))
        except ApdslError as e:
            raise fail([e], {}, args.trace) from None
    if args.json:
        print(json.dumps(p.to_json()))
    else:
        print(p.text())
        if args.trace:
            print(f"wrote {args.trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
    return 0
