"""DMA benchmarks of SPEC section 10: apdsl's NumPy execution against plain NumPy, in one run.

    python bench/bench_dma.py [--repeats N]

Each case runs both sides best-of-N with the destination allocated (and touched) beforehand on
both sides, and init checking on.  Targets: strided copy <= 1.5x, transposing copy <= 0.6x,
vector_select gather <= 1.5x.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from apdsl.runtime.instructions import dma_copy
from apdsl.tensor.machine import current
from apdsl.tensor.view import from_numpy, ndarray


def best(fn: Callable[[], object], repeats: int, number: int = 1) -> float:
    fn()  # warm-up: first-touch page faults and lazy allocation are not what we measure
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def strided(repeats: int) -> tuple[float, float]:
    a = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
    d = np.empty((4096, 2048), np.float32)
    A = from_numpy(a)
    D = ndarray((4096, 2048), "float32", "hbm")
    src = A[:, ::2]
    ours = best(lambda: dma_copy(D, src), repeats)
    ref = best(lambda: np.copyto(d, a[:, ::2]), repeats)
    assert np.array_equal(D.numpy(), d)
    return ours, ref


def transpose(repeats: int) -> tuple[float, float]:
    a = np.random.default_rng(1).standard_normal((4096, 4096), dtype=np.float32)
    d = np.empty((4096, 4096), np.float32)
    A = from_numpy(a)
    D = ndarray((4096, 4096), "float32", "hbm")
    src = A.permute((1, 0))
    ours = best(lambda: dma_copy(D, src), repeats)
    ref = best(lambda: np.copyto(d, a.T), repeats)
    assert np.array_equal(D.numpy(), d)
    return ours, ref


def gather(repeats: int) -> tuple[float, float]:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8192, 512), dtype=np.float32)
    rows = rng.integers(0, 8192, 128)
    out = np.empty((128, 512), np.float32)
    A = from_numpy(a)
    idx = from_numpy(rows.astype(np.int32).reshape(128, 1), "sbuf")
    D = ndarray((128, 512), "float32", "sbuf")
    src = A.vector_select(0, idx)
    ours = best(lambda: dma_copy(D, src), repeats, number=50)
    ref = best(lambda: np.take(a, rows, axis=0, out=out), repeats, number=50)
    assert np.array_equal(D.numpy(), out)
    return ours, ref


CASES = [
    ("strided copy a[:, ::2], 4096x4096 f32", "np.copyto(d, a[:, ::2])", strided, 1.5),
    ("transposing copy 4096x4096 f32", "np.copyto(d, a.T)", transpose, 0.6),
    ("vector_select gather 128 of (8192, 512) f32", "np.take(a, idx, axis=0, out=)", gather,
     1.5),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    assert current().options.init_check, "the targets are measured with init checking on"
    print(f"{'case':46} {'apdsl':>10} {'numpy':>10} {'ratio':>7} {'target':>7}  baseline")
    failed = 0
    for label, baseline, fn, target in CASES:
        ours, ref = fn(args.repeats)
        ratio = ours / ref
        ok = ratio <= target
        failed += not ok
        print(f"{label:46} {ours * 1e3:8.3f}ms {ref * 1e3:8.3f}ms {ratio:6.2f}x "
              f"{'<=' if ok else '> '}{target:4.1f}x  {baseline}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
