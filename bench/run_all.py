"""Every benchmark of `bench/` in one run, as one table (SPEC section 10).

    python bench/run_all.py [--repeats N] [--attempts N] [-k TEXT]

Runs the cases of each bench script with the method of `bench/harness.py`, printing each row as
it is measured (on stderr) and the whole table at the end; exits 1 when any case misses.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

# In the order of SPEC section 10's table.
MODULES = ("bench_dma", "bench_tiles", "bench_spelling", "bench_elementwise", "bench_formats",
           "bench_ascend", "bench_nki_matmul", "bench_language", "bench_profile", "bench_parse",
           "bench_calibration")  # (SPEC section 14's table last: its full rows take minutes)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__.splitlines()[0])
    for name in ("bench_ascend", "bench_language", "bench_calibration"):
        add = getattr(importlib.import_module(name), "add_arguments", None)
        if add is not None:
            add(ap)
    args = ap.parse_args(argv)
    cases: list[harness.Case] = []
    for name in MODULES:
        if not (Path(__file__).resolve().parent / f"{name}.py").exists():
            continue  # a row whose script has not landed yet
        module = importlib.import_module(name)
        cases.extend(module.cases(args))
    results = harness.run_cases(cases, args,
                                progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(harness.table(results))
    for line in harness.notes(cases):
        print(line)
    return 0 if results and all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
