"""Tile-loop rows of SPEC section 10: the per-instruction cost of apdsl at kernel tile sizes.

    python bench/bench_tiles.py [--repeats N] [--attempts N] [-k TEXT]

- Python API: 64 `dma_copy`s of (128, 64) float32 slices of an SBUF tile into HBM, the views
  made in the loop, vs the same loop of `np.copyto` on NumPy slices: <= 5x.
- `.apk`: 20 x 64 pairs of such copies (HBM -> an SBUF tile declared in the loop -> HBM), run
  on an already parsed program, vs the same NumPy loop (the tile allocated in it too): <= 8x.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.runtime.copies import dma_copy  # noqa: E402
from apdsl.semantics.program import Program  # noqa: E402
from apdsl.tensor.machine import current  # noqa: E402
from apdsl.tensor.view import from_numpy, ndarray  # noqa: E402

P, F, TILES, ROUNDS = 128, 64, 64, 20


def _python_api() -> tuple[Side, Side]:
    s = np.random.default_rng(0).standard_normal((P, TILES * F), dtype=np.float32)
    d = np.zeros((TILES * P, F), np.float32)
    S = from_numpy(s, "sbuf")
    D = ndarray((TILES * P, F), "float32", "hbm")

    def ours() -> None:
        for i in range(TILES):
            dma_copy(D[i * P:(i + 1) * P, :], S[:, i * F:(i + 1) * F])

    def numpy() -> None:
        for i in range(TILES):
            np.copyto(d[i * P:(i + 1) * P, :], s[:, i * F:(i + 1) * F])

    ours()
    numpy()
    assert np.array_equal(D.numpy(), d), "Python API tile loop"
    return ours, numpy


KERNEL = f"""
kernel tiles(A: f32[{P}, {TILES * F}] @ hbm) -> f32[{TILES * P}, {F}] @ hbm:
    B = ndarray(({TILES * P}, {F}), f32, hbm)
    for r in range({ROUNDS}):
        for i in range({TILES}):
            t = ndarray(({P}, {F}), f32, sbuf)
            dma_copy(t, A[:, i * {F}:(i + 1) * {F}])
            dma_copy(B[i * {P}:(i + 1) * {P}, :], t)
    return B
"""


def numpy_tiles(a: np.ndarray) -> np.ndarray:
    """KERNEL in plain NumPy: the same copies through a tile allocated in the loop."""
    b = np.empty((TILES * P, F), np.float32)
    for _ in range(ROUNDS):
        for i in range(TILES):
            t = np.empty((P, F), np.float32)
            np.copyto(t, a[:, i * F:(i + 1) * F])
            np.copyto(b[i * P:(i + 1) * P, :], t)
    return b


def _apk() -> tuple[Side, Side]:
    a = np.random.default_rng(1).standard_normal((P, TILES * F), dtype=np.float32)
    program = Program(KERNEL, "<bench_tiles>")
    inputs = {"A": a}
    got = program.run("tiles", inputs).value.numpy()
    assert np.array_equal(got, numpy_tiles(a)), ".apk tile loop"
    return (lambda: program.run("tiles", inputs)), (lambda: numpy_tiles(a))


def cases(args: object = None) -> list[Case]:
    assert current().options.init_check, "the targets are measured with init checking on"
    return [
        Case("tile loop, Python API: 64 dma_copy (128, 64) f32 SBUF -> HBM",
             "the np.copyto loop", 5.0, _python_api),
        Case("tile loop, .apk: 20 x 64 pairs through an SBUF tile", "the NumPy loop", 8.0,
             _apk),
    ]


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0]))
