"""The spelling row of SPEC section 10: a tile `dma_copy` costs the same however its views are
spelled.

    python bench/bench_spelling.py [--repeats N] [--attempts N] [-k TEXT]

The tile loop of `bench_tiles.py` (64 `dma_copy`s of (128, 64) float32 tiles SBUF -> HBM, the
views made in the loop), its views made by `.slice`, by `.permute`, by `.reshape` and by `.ap`,
each against the same loop with the views made by indexing: <= 1.3x.  (`.permute` permutes
the 3-d shapes of the two tensors, `D.reshape((TILES, P, F))` and `S.reshape((P, TILES, F))`,
made once, and selects tile i.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.runtime.copies import dma_copy  # noqa: E402
from apdsl.tensor.machine import current  # noqa: E402
from apdsl.tensor.view import from_numpy, ndarray  # noqa: E402

P, F, TILES = 128, 64, 64


def _tiles(i: int) -> tuple[slice, slice]:
    return slice(i * P, (i + 1) * P), slice(i * F, (i + 1) * F)


# Each spelling: the parents its views are made of (declared once, outside the loop: D and S
# themselves, or for `.permute` their 3-d shapes), and tile i's views of them (destination in D
# (TILES * P, F), source in S (P, TILES * F)).
SPELLINGS = {
    "indexing": (None, lambda D, S, i: (D[i * P:(i + 1) * P, :], S[:, i * F:(i + 1) * F])),
    ".slice": (None, lambda D, S, i: (D.slice(0, i * P, (i + 1) * P),
                                      S.slice(1, i * F, (i + 1) * F))),
    ".permute": (lambda D, S: (D.reshape((TILES, P, F)), S.reshape((P, TILES, F))),
                 lambda D3, S3, i: (D3.permute((1, 0, 2)).select(1, i),
                                    S3.permute((0, 2, 1)).select(2, i))),
    ".reshape": (None, lambda D, S, i: (D.reshape((TILES, P, F)).select(0, i),
                                        S.reshape((P, TILES, F)).select(1, i))),
    ".ap": (None, lambda D, S, i: (D.ap([[F, P], [1, F]], offset=i * P * F),
                                   S.ap([[TILES * F, P], [1, F]], offset=i * F))),
}


def _loop(spelling: str) -> Side:
    s = np.random.default_rng(0).standard_normal((P, TILES * F), dtype=np.float32)
    S = from_numpy(s, "sbuf")
    D = ndarray((TILES * P, F), "float32", "hbm")
    parents, views = SPELLINGS[spelling]
    d, src = (D, S) if parents is None else parents(D, S)

    def run() -> None:
        for i in range(TILES):
            dst, source = views(d, src, i)
            dma_copy(dst, source)

    run()
    want = np.concatenate([s[:, i * F:(i + 1) * F] for i in range(TILES)])
    assert np.array_equal(D.numpy(), want), f"tile loop spelled with {spelling}"
    return run


def _against_indexing(spelling: str):
    def prepare() -> tuple[Side, Side]:
        return _loop(spelling), _loop("indexing")
    return prepare


def cases(args: object = None) -> list[Case]:
    assert current().options.init_check, "the targets are measured with init checking on"
    assert current().options.plans, "the targets are measured with the fast paths on"
    return [Case(f"tile loop, views by {spelling}: 64 dma_copy (128, 64) f32 SBUF -> HBM",
                 "the same loop, views by indexing", 1.3, _against_indexing(spelling))
            for spelling in SPELLINGS if spelling != "indexing"]


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0]))
