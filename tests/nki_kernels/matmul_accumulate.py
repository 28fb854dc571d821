# Re-typed from the `nki.isa.nc_matmul` docstring example `nc_matmul_accumulate_kernel`
# (aws-neuron/aws-neuron-sdk nki/api/nki/isa/__init__.py): K=512 in 4 tiles of 128,
# accumulate=(i > 0).
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def nc_matmul_accumulate_kernel(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    TILE_K = 128

    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    res_psum = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)

    for i in nl.static_range(K // TILE_K):
        lhs_sb = nl.ndarray((TILE_K, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        rhs_sb = nl.ndarray((TILE_K, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=lhs_sb, src=lhsT[i * TILE_K:(i + 1) * TILE_K, :])
        nisa.dma_copy(dst=rhs_sb, src=rhs[i * TILE_K:(i + 1) * TILE_K, :])
        nisa.nc_matmul(dst=res_psum, stationary=lhs_sb, moving=rhs_sb, accumulate=(i > 0))

    res_sb = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res_sb, src=res_psum)
    nisa.dma_copy(dst=result, src=res_sb)
    return result
