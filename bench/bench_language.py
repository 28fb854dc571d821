"""Language speed, as ratios in one run (SPEC section 10):

1. `check` of a generated 10,000-line file (parse, static checks and the dry run) next to a
   bare Lark LALR parse of the same file.                                  target <= 1.5x
2. Interpreter statements per second on a loop-heavy kernel.                target >= 500,000
   and its time next to CPython running the same statements (SPEC 10).      target <= 15x
3. Cold start of `apdsl check` on a small file next to `python -c "import numpy"`, both as
   fresh processes with bytecode compiled.                                 target <= 1.5x

    python bench/bench_language.py [--lines N] [--repeat R]
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_parse import generate  # noqa: E402

from apdsl.semantics.program import Program  # noqa: E402

LOOP_KERNEL = """\
kernel busy(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    total = 0
    for i in range(N):
        x = i * 3
        y = x + 1
        total = total + y
        z = total % 7
    assert total == 3 * N * (N - 1) // 2 + N
    return A
"""
STATEMENTS_PER_ITERATION = 4 + 1  # four assignments plus the loop step itself


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def bench_check(lines: int, repeat: int) -> tuple[float, float]:
    """In fresh processes, as `apdsl check FILE` runs (the command line freezes what it
    compiled, see apdsl.gcpause); the bare parse is timed in the same way."""
    text = "M = 128\nK = 512\n" + generate(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gen.apk"
        path.write_text(text)
        check = ("import sys, time\nfrom apdsl.surfaces.cli import main\n"
                 "t = time.perf_counter()\nmain(['check', sys.argv[1]])\n"
                 "print(time.perf_counter() - t, file=sys.stderr)\n")
        bare = ("import sys, time\nfrom apdsl.syntax.parser import bare_parser\n"
                "p = bare_parser()\ntext = open(sys.argv[1]).read()\n"
                "t = time.perf_counter()\np.parse(text)\n"
                "print(time.perf_counter() - t, file=sys.stderr)\n")

        def timed(code: str) -> float:
            r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                               text=True)
            return float(r.stderr.strip().splitlines()[-1])

        t_check = t_bare = float("inf")
        for _ in range(repeat):  # alternate, so machine load hits both alike
            t_check = min(t_check, timed(check))
            t_bare = min(t_bare, timed(bare))
    return t_check, t_bare


def python_busy(n: int) -> int:
    """The loop of LOOP_KERNEL in Python: the CPython baseline of SPEC section 10."""
    total = 0
    for i in range(n):
        x = i * 3
        y = x + 1
        total = total + y
        z = total % 7  # noqa: F841 - the same statements as the kernel
    return total


def bench_statements(n: int, repeat: int) -> tuple[float, float, float]:
    """Statements per second, and the times of the apdsl kernel and of the same loop in
    CPython, interleaved (best of `repeat` each)."""
    program = Program(f"N = {n}\n" + LOOP_KERNEL, "busy.apk")
    t_apdsl = t_python = float("inf")
    for _ in range(repeat):
        t_apdsl = min(t_apdsl, best(lambda: program.run("busy"), 1))
        t_python = min(t_python, best(lambda: python_busy(n), 1))
    return n * STATEMENTS_PER_ITERATION / t_apdsl, t_apdsl, t_python


def bench_cold(repeat: int) -> tuple[float, float]:
    compileall.compile_dir(str(ROOT / "apdsl"), quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.apk"
        small.write_text((ROOT / "examples" / "views.apk").read_text())
        apdsl_cmd = [sys.executable, "-m", "apdsl", "check", str(small)]
        numpy_cmd = [sys.executable, "-c", "import numpy"]
        subprocess.run(apdsl_cmd, capture_output=True, env=env)  # warm the parser cache

        def run(cmd: list[str]) -> None:
            subprocess.run(cmd, capture_output=True, env=env, check=True)

        t_apdsl = t_numpy = float("inf")
        for _ in range(repeat):  # alternate, so machine load hits both alike
            t_apdsl = min(t_apdsl, best(lambda: run(apdsl_cmd), 1))
            t_numpy = min(t_numpy, best(lambda: run(numpy_cmd), 1))
    return t_apdsl, t_numpy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t_check, t_bare = bench_check(args.lines, args.repeat)
    per_s, t_interp, t_python = bench_statements(200_000, max(args.repeat, 7))
    t_cold, t_numpy = bench_cold(max(args.repeat, 5) * 2)
    print(f"{'case':<52}{'apdsl':>11}{'baseline':>11}{'ratio':>8}  target")
    case = f"check of a {args.lines}-line file vs bare Lark parse"
    print(f"{case:<52}"
          f"{t_check:>10.3f}s{t_bare:>10.3f}s{t_check / t_bare:>7.2f}x  <= 1.5x")
    print(f"{'interpreter, simple statements per second':<52}{per_s:>11,.0f}{'':>11}"
          f"{'':>8}  >= 500,000")
    print(f"{'interpreter loop vs the same statements in CPython':<52}"
          f"{t_interp:>10.3f}s{t_python:>10.3f}s{t_interp / t_python:>7.2f}x  <= 15x")
    cold = 'cold apdsl check vs python -c "import numpy"'
    print(f"{cold:<52}"
          f"{t_cold:>10.3f}s{t_numpy:>10.3f}s{t_cold / t_numpy:>7.2f}x  <= 1.5x")


if __name__ == "__main__":
    main()
