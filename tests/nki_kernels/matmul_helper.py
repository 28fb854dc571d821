# The hoisted-load matmul of the NKI matrix multiplication tutorial (`nki_matmul_hoist_load_`,
# aws-neuron/aws-neuron-sdk nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py,
# NKI_EXAMPLE_19) with its two load loops moved into a helper module, tile_helpers.py.
import nki
import nki.isa as nisa
import nki.language as nl
from tile_helpers import load_column_tiles


@nki.jit
def matmul_hoisted_helper(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        lhsT_tiles = load_column_tiles(lhsT, m, TILE_K, TILE_M)
        for n in nl.affine_range(N // TILE_N):
            rhs_tiles = load_column_tiles(rhs, n, TILE_K, TILE_N)
            res_psum = nl.ndarray(shape=(TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tiles[k], moving=rhs_tiles[k])
            res_sb = nl.ndarray(shape=(TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(dst=result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                          src=res_sb)
    return result
