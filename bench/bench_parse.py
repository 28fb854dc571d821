"""Parse speed: `apdsl.syntax.parser.parse` against a bare Lark LALR parse of the same file.

Generates a 10,000-line `.apk` file (declarations, assignments, view chains, loops, asserts,
kernels) and times apdsl's parse next to the bare one (`bench/harness.py`).  The bare parse
uses the same grammar and post-lexer but no transformer and no position propagation: it builds
a plain Lark tree, the least any Lark-based front end can do.  Target: ratio <= 1.3 (not a
SPEC row; `check` of the same file is, in bench_language.py).

    python bench/bench_parse.py [--lines N] [--repeats R] [--write FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.syntax.parser import bare_parser, parse  # noqa: E402

_BLOCK = '''\
# block {i}
a{i}: f32[128, 512] @ hbm
b{i}: nl.bfloat16[128, 2, 64] @ nl.sbuf = zeros
g{i}: f16[256, 256] @ gm as NZ = random({i})
v{i} = a{i}.slice(1, 8, 264).reshape([128, 4, 64])[0:64, ::2, ...]
w{i} = b{i}.rearrange("p (a b) c -> p b a c", a=2).ap([[128, 128], [1, 64]], offset=8)
n{i} = (v{i}.shape[0] * 2 + 3) // 4 - (1 << 2) if v{i}.offset >= 0 else -1
assert v{i}.get_pattern() == [[512, 64], [128, 2], [1, 64]], "pattern of v{i}"
assert not (n{i} < 0 or n{i} > 1_000) and w{i}.offset in (8, 16)
for k, j in enumerate(range(4)):
    if k % 2 == 0:
        dma_copy(dst=a{i}[k:k + 1, 0:64], src=b{i}[k, 0, :])
    elif k == 3:
        continue
    else:
        pass
kernel add{i}(A: f32[M, K] @ hbm, B: f32[M, K] @ hbm) -> f32[M, K] @ shared_hbm:
    out = nl.ndarray((M, K), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[...], src=A)
    return out
'''


def generate(lines: int) -> str:
    """At least `lines` lines of varied, valid `.apk` source."""
    per_block = _BLOCK.count("\n")
    blocks = -(-lines // per_block)
    return "".join(_BLOCK.format(i=i) for i in range(blocks))


def _parse(lines: int, write: str | None) -> tuple[Side, Side]:
    source = generate(lines)
    if write:
        with open(write, "w", encoding="utf-8") as f:
            f.write(source)
    bare = bare_parser()
    parse(source, "bench.apk")  # build (or load) the parser outside the timing
    bare.parse(source)
    return (lambda: parse(source, "bench.apk")), (lambda: bare.parse(source))


def cases(args: object = None) -> list[Case]:
    lines = getattr(args, "lines", 10_000)
    return [Case(f"parse of a {lines}-line file (AST)", "bare Lark LALR parse", 1.3,
                 lambda: _parse(lines, getattr(args, "write", None)))]


def add_arguments(ap: object) -> None:
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--write", help="also write the generated file here")


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0], add_arguments=add_arguments))
