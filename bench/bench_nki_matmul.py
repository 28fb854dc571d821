"""The NKI tutorial row of SPEC section 10.

The kernel `nki_matmul_tiled_` of the NKI "Matrix multiplication" tutorial (aws-neuron-sdk,
nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py), written in `.apk`
and run on an already parsed program, at 2048 x 2048 x 2048 bfloat16, against the same tile
loop in plain NumPy (the same tiles, bf16 -> f32 casts included).  Target: <= 1.5x.

    python bench/bench_nki_matmul.py [--size N] [--repeats N] [--attempts N]
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.semantics.program import Program  # noqa: E402

SOURCE = """
kernel nki_matmul_tiled_(lhsT: bf16[K, M] @ hbm, rhs: bf16[K, N] @ hbm) -> f32[M, N] @ shared_hbm:
    TILE_M = 128
    TILE_K = 128
    TILE_N = 512
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k * TILE_K:(k + 1) * TILE_K,
                                                      m * TILE_M:(m + 1) * TILE_M])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * TILE_K:(k + 1) * TILE_K,
                                                    n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sb = nl.ndarray(res_psum.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(dst=result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                          src=res_sb)
    return result
"""


def numpy_tiles(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The tutorial's tile loop in plain NumPy: copy each bf16 tile, cast it to float32,
    multiply, accumulate, store."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = np.empty((M, N), np.float32)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = np.empty((128, 512), np.float32)
            for k in range(K // 128):
                lt = lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128].copy()
                rt = rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512].copy()
                prod = lt.astype(np.float32).T @ rt.astype(np.float32)
                if k:
                    acc += prod
                else:
                    acc[...] = prod
            out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512] = acc
    return out


def _tutorial(size: int) -> tuple[Side, Side]:
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((size, size)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((size, size)).astype(ml_dtypes.bfloat16)
    program = Program(SOURCE, "<bench>")
    inputs = {"lhsT": lhsT, "rhs": rhs}
    got = program.run("nki_matmul_tiled_", inputs).value.numpy()
    assert np.allclose(got, numpy_tiles(lhsT, rhs), rtol=1e-4, atol=1e-2), "kernel vs NumPy"
    return (lambda: program.run("nki_matmul_tiled_", inputs)), (lambda: numpy_tiles(lhsT, rhs))


def cases(args: object = None) -> list[Case]:
    size = getattr(args, "size", 2048)
    return [Case(f"NKI tiled-matmul tutorial {size}^3 bf16", "its NumPy tile loop", 1.5,
                 lambda: _tutorial(size))]


def add_arguments(ap: object) -> None:
    ap.add_argument("--size", type=int, default=2048, help="the matrices' size (default 2048)")


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0], add_arguments=add_arguments))
