"""DMA rows of SPEC section 10: apdsl's `dma_copy` against the NumPy copy a user would write.

    python bench/bench_dma.py [--repeats N] [--attempts N] [-k TEXT]

The destination is allocated (and touched) beforehand on both sides, init checking on.
- strided copy of every other column of 4096 x 4096 float32 vs `np.copyto(d, a[:, ::2])`: <= 1.2x
- transposing copy of 4096 x 4096 float32 vs `np.copyto(d, a.T)`: <= 0.6x
- `vector_select` gather of 128 rows of (8192, 512) float32, the view made in the timed call,
  vs NumPy fancy indexing `np.copyto(out, a[rows])`: <= 2x
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


def _strided() -> tuple[Side, Side]:
    a = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
    d = np.zeros((4096, 2048), np.float32)
    A = from_numpy(a)
    D = ndarray((4096, 2048), "float32", "hbm")
    src = A[:, ::2]
    dma_copy(D, src)
    np.copyto(d, a[:, ::2])
    assert np.array_equal(D.numpy(), d), "strided copy"
    return (lambda: dma_copy(D, src)), (lambda: np.copyto(d, a[:, ::2]))


def _transpose() -> tuple[Side, Side]:
    a = np.random.default_rng(1).standard_normal((4096, 4096), dtype=np.float32)
    d = np.zeros((4096, 4096), np.float32)
    A = from_numpy(a)
    D = ndarray((4096, 4096), "float32", "hbm")
    src = A.permute((1, 0))
    dma_copy(D, src)
    np.copyto(d, a.T)
    assert np.array_equal(D.numpy(), d), "transposing copy"
    return (lambda: dma_copy(D, src)), (lambda: np.copyto(d, a.T))


def _gather() -> tuple[Side, Side]:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8192, 512), dtype=np.float32)
    rows = rng.integers(0, 8192, 128)
    out = np.zeros((128, 512), np.float32)
    A = from_numpy(a)
    idx = from_numpy(rows.astype(np.int32).reshape(128, 1), "sbuf")
    D = ndarray((128, 512), "float32", "sbuf")

    def ours() -> None:
        dma_copy(D, A.vector_select(0, idx))  # the view is made in the timed call

    def numpy() -> None:
        np.copyto(out, a[rows])

    ours()
    numpy()
    assert np.array_equal(D.numpy(), out), "gather"
    return ours, numpy


def cases(args: object = None) -> list[Case]:
    assert current().options.init_check, "the targets are measured with init checking on"
    return [
        Case("dma_copy 4096x4096 f32 a[:, ::2]", "np.copyto(d, a[:, ::2])", 1.2, _strided),
        Case("transposing dma_copy 4096x4096 f32", "np.copyto(d, a.T)", 0.6, _transpose),
        Case("vector_select gather 128 of (8192, 512) f32, view in the call",
             "np.copyto(out, a[rows])", 2.0, _gather),
    ]


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0]))
