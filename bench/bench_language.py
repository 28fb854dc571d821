"""Language rows of SPEC section 10.

    python bench/bench_language.py [--lines N] [--repeats N] [--attempts N] [-k TEXT]

- `check` of a generated 10,000-line file (parse, static checks and the dry run) vs a bare Lark
  LALR parse of the same file, each in a fresh process timing its own work: <= 1.5x.
- the interpreter on a loop of simple statements vs CPython running the same statements: <= 15x
  (statements per second are printed too).
- cold start: `apdsl check` of a small correct file vs `python -c "import numpy"`, both fresh
  processes with bytecode compiled: <= 1.5x.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_parse import generate  # noqa: E402
from harness import Case, Side, main  # noqa: E402

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
LOOP_N = 200_000

_CHECK = ("import sys, time\nfrom apdsl.surfaces.cli import main\n"
          "t = time.process_time()\nmain(['check', sys.argv[1]])\n"
          "print(time.process_time() - t, file=sys.stderr)\n")
_BARE = ("import sys, time\nfrom apdsl.syntax.parser import bare_parser\n"
         "p = bare_parser()\ntext = open(sys.argv[1]).read()\n"
         "t = time.process_time()\np.parse(text)\n"
         "print(time.process_time() - t, file=sys.stderr)\n")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _check(lines: int, tmp: Path) -> tuple[Side, Side]:
    """In fresh processes, as `apdsl check FILE` runs (the command line sets its own
    collector policy, see apdsl.surfaces.collector); the bare parse is timed in the same way."""
    path = tmp / "gen.apk"
    path.write_text("M = 128\nK = 512\n" + generate(lines))
    env = _env()

    def timed(code: str) -> float:
        r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                           text=True, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        return float(r.stderr.strip().splitlines()[-1])

    timed(_CHECK)  # warm the parser cache
    return (lambda: timed(_CHECK)), (lambda: timed(_BARE))


def python_busy(n: int) -> int:
    """The loop of LOOP_KERNEL in Python: the CPython baseline of SPEC section 10."""
    total = 0
    for i in range(n):
        x = i * 3
        y = x + 1
        total = total + y
        z = total % 7  # noqa: F841 - the same statements as the kernel
    return total


def _interpreter(notes: list[str]) -> tuple[Side, Side]:
    program = Program(f"N = {LOOP_N}\n" + LOOP_KERNEL, "busy.apk")
    program.run("busy")

    def ours() -> None:
        program.run("busy")

    import time
    start = time.perf_counter()
    ours()
    per_s = LOOP_N * STATEMENTS_PER_ITERATION / (time.perf_counter() - start)
    notes.append(f"{per_s:,.0f} simple statements per second")
    return ours, (lambda: python_busy(LOOP_N))


def _cold(tmp: Path) -> tuple[Side, Side]:
    compileall.compile_dir(str(ROOT / "apdsl"), quiet=1)
    env = _env()
    small = tmp / "small.apk"
    small.write_text((ROOT / "examples" / "views.apk").read_text())
    apdsl_cmd = [sys.executable, "-m", "apdsl", "check", str(small)]
    numpy_cmd = [sys.executable, "-c", "import numpy"]
    subprocess.run(apdsl_cmd, capture_output=True, env=env, check=True)  # warm the caches

    def run(cmd: list[str]) -> None:
        subprocess.run(cmd, capture_output=True, env=env, check=True)

    return (lambda: run(apdsl_cmd)), (lambda: run(numpy_cmd))


def cases(args: object = None) -> list[Case]:
    lines = getattr(args, "lines", 10_000)
    tmp = Path(tempfile.mkdtemp(prefix="apdsl-bench-"))
    interp_notes: list[str] = []
    return [
        Case(f"check of a {lines}-line file", "bare Lark LALR parse", 1.5,
             lambda: _check(lines, tmp), self_timed=True),
        Case("interpreter: a loop of simple statements", "CPython", 15.0,
             lambda: _interpreter(interp_notes), notes=interp_notes),
        Case("cold apdsl check of a small file", 'python -c "import numpy"', 1.5,
             lambda: _cold(tmp)),
    ]


def add_arguments(ap: object) -> None:
    ap.add_argument("--lines", type=int, default=10_000, help="lines of the generated file")


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0], add_arguments=add_arguments))
