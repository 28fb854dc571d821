# Re-typed from the NKI matrix multiplication tutorial, `nki_matmul_block_free_dimension_`
# (aws-neuron/aws-neuron-sdk nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py,
# NKI_EXAMPLE_20): the free dimensions blocked, 2 x 2 tiles per block.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def nki_matmul_block_free_dimension_(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must have the same contraction dimension"

    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = nl.tile_size.gemm_moving_fmax  # 512

    TILES_IN_BLOCK_M = 2
    TILES_IN_BLOCK_N = 2
    BLOCK_M = TILE_M * TILES_IN_BLOCK_M  # 256
    BLOCK_N = TILE_N * TILES_IN_BLOCK_N  # 1024
    assert M % BLOCK_M == 0
    assert N % BLOCK_N == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    for m in nl.affine_range(M // BLOCK_M):
        lhsT_tiles = []
        for bm in nl.affine_range(TILES_IN_BLOCK_M):
            lhsT_tiles_internal = []
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray(shape=(TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile,
                              src=lhsT[k * TILE_K:(k + 1) * TILE_K,
                                       (m * TILES_IN_BLOCK_M + bm) *
                                       TILE_M:((m * TILES_IN_BLOCK_M + bm) + 1) * TILE_M])
                lhsT_tiles_internal.append(lhsT_tile)
            lhsT_tiles.append(lhsT_tiles_internal)

        for n in nl.affine_range(N // BLOCK_N):
            rhs_tiles = []
            for bn in nl.affine_range(TILES_IN_BLOCK_N):
                rhs_tiles_internal = []
                for k in nl.affine_range(K // TILE_K):
                    rhs_tile = nl.ndarray(shape=(TILE_K, TILE_N), dtype=rhs.dtype,
                                          buffer=nl.sbuf)
                    nisa.dma_copy(dst=rhs_tile,
                                  src=rhs[k * TILE_K:(k + 1) * TILE_K,
                                          (n * TILES_IN_BLOCK_N + bn) *
                                          TILE_N:((n * TILES_IN_BLOCK_N + bn) + 1) * TILE_N])
                    rhs_tiles_internal.append(rhs_tile)
                rhs_tiles.append(rhs_tiles_internal)

            for bm in nl.affine_range(TILES_IN_BLOCK_M):
                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    result_tile = nl.ndarray(shape=(TILE_M, TILE_N), dtype=nl.float32,
                                             buffer=nl.psum)
                    for k in nl.affine_range(K // TILE_K):
                        nisa.nc_matmul(dst=result_tile, stationary=lhsT_tiles[bm][k],
                                       moving=rhs_tiles[bn][k])
                    result_tmp = nl.ndarray(shape=result_tile.shape, dtype=result.dtype,
                                            buffer=nl.sbuf)
                    nisa.tensor_copy(dst=result_tmp, src=result_tile)
                    nisa.dma_copy(dst=result[(m * TILES_IN_BLOCK_M + bm) *
                                             TILE_M:((m * TILES_IN_BLOCK_M + bm) + 1) * TILE_M,
                                             (n * TILES_IN_BLOCK_N + bn) *
                                             TILE_N:((n * TILES_IN_BLOCK_N + bn) + 1) * TILE_N],
                                  src=result_tmp)
    return result
