"""A 2-D transpose on the Tensor Engine, as an NKI kernel.

nc_matmul computes dst = stationary.T @ moving with the contraction on the partitions; with
the tile as the stationary operand and an identity as the moving one, dst = x.T @ I = x.T.
Products by 1 and 0 and sums of zeros are exact in float32, so the transpose is exact.
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose_kernel(x, identity):
    P, F = x.shape  # P on the partitions (<= 128), F <= 128 (the stationary free size)
    out = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.shared_hbm)

    x_sb = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    id_sb = nl.ndarray((P, P), dtype=identity.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=id_sb, src=identity)

    t_psum = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=t_psum, stationary=x_sb, moving=id_sb)

    t_sb = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t_sb, src=t_psum)
    nisa.dma_copy(dst=out, src=t_sb)
    return out
