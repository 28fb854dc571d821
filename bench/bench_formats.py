"""The format row of SPEC section 10: `formats.convert` ND -> NZ at 4096 x 4096 float16
against the pad-reshape-transpose formula of seed 003 made contiguous.  Target: <= 1.2x.

    python bench/bench_formats.py [--repeats N] [--attempts N]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.tensor import formats  # noqa: E402

M = N = 4096
FRACTAL, C0 = 16, 16


def formula(a: np.ndarray) -> np.ndarray:
    m1, n1 = -(-a.shape[0] // FRACTAL), -(-a.shape[1] // C0)
    padded = np.pad(a, [[0, m1 * FRACTAL - a.shape[0]], [0, n1 * C0 - a.shape[1]]])
    return np.ascontiguousarray(padded.reshape(m1, FRACTAL, n1, C0).transpose(2, 0, 1, 3))


def _convert() -> tuple[Side, Side]:
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float16)
    assert np.array_equal(formats.convert(a, "ND", "NZ"), formula(a)), "convert vs formula"
    return (lambda: formats.convert(a, "ND", "NZ")), (lambda: formula(a))


def cases(args: object = None) -> list[Case]:
    return [Case(f"formats.convert ND -> NZ {M}x{N} f16", "pad-reshape-transpose", 1.2,
                 _convert)]


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0]))
