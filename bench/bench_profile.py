"""The profile row of SPEC section 10: `apdsl profile` of the stdlib GEMM vs `apdsl run` of it.

The stdlib tiled GEMM (stdlib/gemm.apk, default tiles) at SIZE^3 float16 on ascend-a2, the
program parsed once: profiling (the run with the instruction trace on, then the schedule) against
a plain run.  Target: <= 1.3x.

    python bench/bench_profile.py [--size N] [--repeats N] [--attempts N]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.profile import profile_run  # noqa: E402
from apdsl.semantics.program import Program  # noqa: E402

SOURCE = """
from gemm import gemm

kernel matmul(A: f16[{n}, {n}] @ gm, B: f16[{n}, {n}] @ gm) -> f32[{n}, {n}] @ gm:
    C = ndarray(({n}, {n}), f32, gm)
    return gemm(A, B, C)
"""


def _profile(n: int, notes: list[str]) -> tuple[Side, Side]:
    program = Program(SOURCE.format(n=n), "<bench>")
    program.run()
    count = len(profile_run(program.run(trace=True)).slots)
    notes.append(f"{count} instructions scheduled")
    return (lambda: profile_run(program.run(trace=True))), (lambda: program.run())


def cases(args: object = None) -> list[Case]:
    n = getattr(args, "size", 2048)
    notes: list[str] = []
    return [Case(f"apdsl profile of the stdlib GEMM {n}^3 f16", "apdsl run of it", 1.3,
                 lambda: _profile(n, notes), notes=notes)]


def add_arguments(ap: object) -> None:
    ap.add_argument("--size", type=int, default=2048, help="the GEMM's size (default 2048)")


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0], add_arguments=add_arguments))
