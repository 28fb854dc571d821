"""The `apdsl corpus` command: its checks of the command line, the table or JSON, progress on
stderr when it is a terminal.  `--jsonl` writes each kernel's verdict the moment it is
measured (one JSON object a line, flushed), then the counts: a run of hours that is stopped
keeps what it measured."""

from __future__ import annotations

import json
import os
import sys

from ..plumbing import usage
from .run import Measured, counts, discover, json_document, kernel_json, measure_all, summary, table


def corpus(directory: str, *, as_json: bool = False, timeout: float = 120.0,
           jobs: int = 1, lines: bool = False, only: tuple[str, ...] = ()) -> int:
    if not os.path.isdir(directory):
        raise usage(f"corpus needs a folder; {directory!r} is not one")
    if timeout <= 0:
        raise usage("--timeout must be a positive number of seconds")
    if jobs < 1:
        raise usage("--jobs must be at least 1")
    root = os.path.realpath(directory)
    live = sys.stderr.isatty()
    done = [0]

    def progress(m: Measured) -> None:
        done[0] += 1
        if lines:
            print(json.dumps(kernel_json(m)), flush=True)
        if live:
            print(f"\r{done[0]} measured: {m.label[-60:]:<60}", end="", file=sys.stderr,
                  flush=True)

    entries = discover(root)
    if only:
        entries = [e for e in entries if any(t in e.label(root) for t in only)]
        if not entries:
            raise usage(f"no kernel entry point under {directory!r} matches "
                        + " or ".join(repr(t) for t in only)
                        + " (`apdsl corpus DIR` with no --kernel lists them all)")
    results = measure_all(root, timeout, jobs, progress, entries)
    if live:
        print("\r" + " " * 80 + "\r", end="", file=sys.stderr)
    if lines:
        print(json.dumps({"root": root, "counts": counts(results), "total": len(results)}))
    elif as_json:
        print(json.dumps(json_document(root, results), indent=1))
    else:
        print(table(results))
        print()
        print(summary(results))
    return 0

