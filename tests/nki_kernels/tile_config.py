# The tiled matmul of the NKI matrix multiplication tutorial (`nki_matmul_tiled_`,
# aws-neuron/aws-neuron-sdk nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py),
# with its tile sizes in a frozen dataclass config, as nki-library kernels pass their
# configs (aws-neuron/nki-library); the loop body is the tutorial's.
from dataclasses import dataclass

import nki
import nki.isa as nisa
import nki.language as nl


@dataclass(frozen=True)
class MatmulConfig:
    tile_m: int = 128
    tile_k: int = 128
    tile_n: int = 512


@nki.jit
def matmul_with_config(lhsT, rhs, cfg=MatmulConfig()):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % cfg.tile_m == 0 and N % cfg.tile_n == 0 and K % cfg.tile_k == 0
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // cfg.tile_m):
        for n in nl.affine_range(N // cfg.tile_n):
            res_psum = nl.ndarray((cfg.tile_m, cfg.tile_n), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // cfg.tile_k):
                lhsT_tile = nl.ndarray((cfg.tile_k, cfg.tile_m), dtype=lhsT.dtype,
                                       buffer=nl.sbuf)
                rhs_tile = nl.ndarray((cfg.tile_k, cfg.tile_n), dtype=rhs.dtype,
                                      buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k * cfg.tile_k:(k + 1) * cfg.tile_k,
                                                      m * cfg.tile_m:(m + 1) * cfg.tile_m])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * cfg.tile_k:(k + 1) * cfg.tile_k,
                                                    n * cfg.tile_n:(n + 1) * cfg.tile_n])
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sb = nl.ndarray(res_psum.shape, dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(dst=result[m * cfg.tile_m:(m + 1) * cfg.tile_m,
                                     n * cfg.tile_n:(n + 1) * cfg.tile_n], src=res_sb)
    return result
