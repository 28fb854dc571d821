"""Ascend rows of SPEC section 10: the cube unit and the stdlib tiled GEMM on NumPy.

    python bench/bench_ascend.py [--size N] [--repeats N] [--attempts N] [-k TEXT]

- `mmad` of float16 tiles, a (128, 256) in L0A as ZZ by b (256, 128) in L0B as ZN into a
  float32 NZ tile in L0C, vs `np.matmul` of the same tiles cast to float32 (casts included):
  <= 1.5x.
- The stdlib tiled GEMM (stdlib/gemm.apk: CATLASS basic_matmul tiles, L1 128 x 256 x 256, L0
  128 x 256 x 64, double-buffered, synchronised) at 2048^3 float16, run on an already parsed
  program, vs the same tile-by-tile data path in plain NumPy (the same tiles, fractal layouts,
  casts and accumulation): <= 1.5x.  One `np.matmul` of the whole product is printed for scale.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.runtime.ascend.mmad import mmad  # noqa: E402
from apdsl.runtime.core import execute  # noqa: E402
from apdsl.semantics.program import Program  # noqa: E402
from apdsl.tensor.machine import current  # noqa: E402
from apdsl.tensor.view import ndarray  # noqa: E402

TILE_M, TILE_K, TILE_N = 128, 256, 128

GEMM_SOURCE = """
from gemm import gemm

kernel matmul(A: f16[M, K] @ gm, B: f16[K, N] @ gm) -> f32[M, N] @ gm:
    C = ndarray((A.shape[0], B.shape[1]), f32, gm)
    return gemm(A, B, C)
"""


def _mmad() -> tuple[Side, Side]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((TILE_M, TILE_K)).astype(np.float16)
    b = rng.standard_normal((TILE_K, TILE_N)).astype(np.float16)
    machine = current().child()
    with machine.active():
        a0 = ndarray((TILE_M, TILE_K), "float16", "l0a", "ZZ")
        b0 = ndarray((TILE_K, TILE_N), "float16", "l0b", "ZN")
        c0 = ndarray((TILE_M, TILE_N), "float32", "l0c", "NZ")
        execute.write_view(a0, a)
        execute.write_view(b0, b)
        mmad(c0, a0, b0)
        want = np.matmul(a.astype(np.float32), b.astype(np.float32))
        assert np.allclose(c0.numpy(), want, rtol=1e-5, atol=1e-4), "mmad vs np.matmul"

    def ours() -> None:
        with machine.active():
            mmad(c0, a0, b0)

    def numpy() -> None:
        np.matmul(a.astype(np.float32), b.astype(np.float32))

    return ours, numpy


_F16_TO_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def numpy_data_path(a: np.ndarray, b: np.ndarray, TM: int = 128, TN: int = 256,
                    TK: int = 64, TK1: int = 256) -> np.ndarray:
    """stdlib/gemm.apk's loops in plain NumPy (sizes multiples of the tiles): GM -> L1 (NZ)
    -> L0A (ZZ) / L0B (ZN), cast to float32, tile product, accumulate in L0C (NZ) -> GM."""
    M, K = a.shape
    N = b.shape[1]
    c = np.empty((M, N), np.float32)
    l1a = np.empty((TK1 // 16, TM // 16, 16, 16), np.float16)  # NZ of (TM, TK1)
    l1b = np.empty((TN // 16, TK1 // 16, 16, 16), np.float16)  # NZ of (TK1, TN)
    l0a = np.empty((TM // 16, TK // 16, 16, 16), np.float16)   # ZZ of (TM, TK)
    l0b = np.empty((TK // 16, TN // 16, 16, 16), np.float16)   # ZN of (TK, TN)
    l0c = np.empty((TN // 16, TM // 16, 16, 16), np.float32)   # NZ of (TM, TN)
    left = np.empty((TM, TK), np.float32)
    right = np.empty((TK, TN), np.float32)
    kt = TK // 16
    for m in range(M // TM):
        rows = slice(m * TM, (m + 1) * TM)
        for n in range(N // TN):
            cols = slice(n * TN, (n + 1) * TN)
            first = True
            for k1 in range(K // TK1):
                ks = slice(k1 * TK1, (k1 + 1) * TK1)
                np.copyto(l1a.transpose(1, 2, 0, 3), a[rows, ks].reshape(TM // 16, 16, -1, 16))
                np.copyto(l1b.transpose(1, 2, 0, 3), b[ks, cols].reshape(-1, 16, TN // 16, 16))
                for k0 in range(TK1 // TK):
                    np.copyto(l0a, l1a[k0 * kt:(k0 + 1) * kt].transpose(1, 0, 2, 3))
                    np.copyto(l0b, l1b[:, k0 * kt:(k0 + 1) * kt].transpose(1, 0, 3, 2))
                    _F16_TO_F32.take(l0a.transpose(0, 2, 1, 3).view(np.uint16),
                                     out=left.reshape(TM // 16, 16, kt, 16), mode="clip")
                    _F16_TO_F32.take(l0b.transpose(0, 3, 1, 2).view(np.uint16),
                                     out=right.reshape(kt, 16, TN // 16, 16), mode="clip")
                    product = (left @ right).reshape(TM // 16, 16, TN // 16, 16)
                    product = product.transpose(2, 0, 1, 3)
                    if first:
                        np.copyto(l0c, product)
                        first = False
                    else:
                        np.add(l0c, product, out=l0c)
            c[rows, cols] = l0c.transpose(1, 2, 0, 3).reshape(TM, TN)
    return c


def _gemm(size: int, notes: list[str]) -> tuple[Side, Side]:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    program = Program(GEMM_SOURCE, "bench_gemm.apk")
    inputs = {"A": a, "B": b}
    want = np.matmul(a.astype(np.float32), b.astype(np.float32))
    start = time.perf_counter()
    np.matmul(a.astype(np.float32), b.astype(np.float32))
    t_matmul = time.perf_counter() - start
    got = program.run("matmul", inputs).value.numpy()
    assert np.allclose(got, want, rtol=1e-4, atol=1e-3), "stdlib GEMM vs np.matmul"
    assert np.allclose(numpy_data_path(a, b), want, rtol=1e-4, atol=1e-3), "NumPy data path"
    notes.append(f"one np.matmul of the whole {size}^3 product (casts included) takes "
                 f"{t_matmul * 1e3:.0f} ms")
    return (lambda: program.run("matmul", inputs)), (lambda: numpy_data_path(a, b))


def cases(args: object = None) -> list[Case]:
    size = getattr(args, "size", 2048)
    gemm_notes: list[str] = []
    return [
        Case(f"mmad {TILE_M}x{TILE_K} @ {TILE_K}x{TILE_N} f16 (ZZ x ZN -> NZ)",
             "np.matmul of the tiles cast to f32", 1.5, _mmad),
        Case(f"stdlib GEMM {size}^3 f16, CATLASS tiles", "the plain-NumPy tile data path", 1.5,
             lambda: _gemm(size, gemm_notes), notes=gemm_notes),
    ]


def add_arguments(ap: object) -> None:
    ap.add_argument("--size", type=int, default=2048, help="the GEMM's size (default 2048)")


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0], add_arguments=add_arguments))
