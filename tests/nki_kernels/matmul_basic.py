# Re-typed from the NKI matrix multiplication tutorial, `nki_matmul_basic_`
# (aws-neuron/aws-neuron-sdk nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py,
# NKI_EXAMPLE_16): a 64x128x512 matmul with one nc_matmul.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def nki_matmul_basic_(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, f"Expected contraction dimension to match on both lhsT ({K}) and rhs ({K})"
    assert K == 128, f"Expected contraction dimension to be 128, but got {K}"
    assert M == 64, f"Expected lhsT matrix to have dimension M of 64, but got {M}"
    assert N == 512, f"Expected rhs matrix to have dimension N of 512, but got {N}"

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    lhs_tile = nl.ndarray(lhsT.shape, dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_tile = nl.ndarray(rhs.shape, dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=lhs_tile, src=lhsT)
    nisa.dma_copy(dst=rhs_tile, src=rhs)

    result_psum = nl.ndarray(result.shape, dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(result_psum, lhs_tile, rhs_tile)

    result_sbuf = nl.ndarray(result_psum.shape, dtype=result.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result_sbuf, src=result_psum)
    nisa.dma_copy(dst=result, src=result_sbuf)
    return result
