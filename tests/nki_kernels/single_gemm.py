"""One Tensor Engine matmul, written for apdsl's tests: C[M, N] = lhsT.T @ rhs with the
contraction K on the partitions (K = 128, M <= 128, N <= 512: one stationary and one moving
tile)."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gemm_one_tile(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    assert rhs.shape[0] == K == nl.tile_size.pmax, "one contraction tile of 128 partitions"
    assert M <= nl.tile_size.gemm_stationary_fmax and N <= nl.tile_size.gemm_moving_fmax

    stationary = nl.ndarray((K, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    moving = nl.ndarray((K, N), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=stationary, src=lhsT)
    nisa.dma_copy(dst=moving, src=rhs)

    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=stationary, moving=moving)

    out_sb = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out_sb, src=acc)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=out_sb)
    return out
