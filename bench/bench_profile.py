"""Benchmark: `apdsl profile` of the stdlib GEMM vs `apdsl run` of it (SPEC section 10).

The stdlib tiled GEMM (stdlib/gemm.apk, default tiles) at SIZE^3 float16 on ascend-a2, the
program parsed once: profiling (the run with the instruction trace on, then the schedule) against
a plain run.  Method of SPEC section 10: the two sides interleaved, each timed over a loop of
at least 20 ms, best of 7 per side; a miss is reported only after three consecutive misses.
Target: <= 1.3x.  Prints the ratio, the target and ok/MISS; exits 1 on a miss.
Usage: python bench/bench_profile.py [SIZE]   (default 2048)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from apdsl.profile import profile_run
from apdsl.semantics.program import Program

TARGET = 1.3
SOURCE = """
from gemm import gemm

kernel matmul(A: f16[{n}, {n}] @ gm, B: f16[{n}, {n}] @ gm) -> f32[{n}, {n}] @ gm:
    C = ndarray(({n}, {n}), f32, gm)
    return gemm(A, B, C)
"""


def _loop_time(fn: Callable[[], object]) -> float:
    """Seconds per call, over a loop of at least 20 ms."""
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= 0.02:
            return elapsed / calls


def measure(program: Program, repeats: int = 7) -> tuple[float, float, int]:
    instructions = 0

    def run() -> None:
        program.run()

    def prof() -> None:
        nonlocal instructions
        instructions = len(profile_run(program.run(trace=True)).slots)

    plain, profiled = [], []
    for _ in range(repeats):  # interleaved
        plain.append(_loop_time(run))
        profiled.append(_loop_time(prof))
    return min(plain), min(profiled), instructions


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 2048
    program = Program(SOURCE.format(n=n), "<bench>")
    misses = 0
    for _ in range(3):
        plain, profiled, count = measure(program)
        ratio = profiled / plain
        ok = ratio <= TARGET
        print(f"profile vs run, stdlib GEMM {n}^3 float16 ({count} instructions): run "
              f"{plain * 1e3:.1f} ms, profile {profiled * 1e3:.1f} ms, ratio {ratio:.2f}x "
              f"(target <= {TARGET}x) {'ok' if ok else 'MISS'}")
        if ok:
            return 0
        misses += 1
    return 1 if misses == 3 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
