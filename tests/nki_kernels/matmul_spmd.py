# Ported from the NKI SPMD matmul example `matmul_128x128x512_spmd`
# (aws-neuron/aws-neuron-sdk nki/examples/mm-nisa-spmd.py) to the current API: nl.load /
# nl.store / nl.copy become nisa.dma_copy / nisa.tensor_copy into nl.ndarray tiles (the
# migration guide's replacements), and the [4, 2] grid becomes the kernel[2] launch of
# logical NeuronCores the current docs allow: program p computes columns p*512.. of B.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_128x128x512_spmd(A_T, B):
    K, N = A_T.shape
    K_, M = B.shape
    assert K == K_
    result = nl.ndarray((N, M), dtype=A_T.dtype, buffer=nl.shared_hbm)

    i_B_col = nl.program_id(0) * 512

    A_T_tile = nl.ndarray((128, 128), dtype=A_T.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=A_T_tile, src=A_T[0:128, 0:128])
    B_tile = nl.ndarray((128, 512), dtype=B.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=B_tile, src=B[0:128, i_B_col:i_B_col + 512])

    result_psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(result_psum, A_T_tile, B_tile)

    result_sbuf = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result_sbuf, src=result_psum)
    nisa.dma_copy(dst=result[0:128, i_B_col:i_B_col + 512], src=result_sbuf)
    return result
