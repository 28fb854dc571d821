"""A microscaled matmul on Trainium 3: both operands quantized on the Vector Engine
(`nisa.quantize_mx`: groups of 8 partitions x 4 values share one power-of-two scale), then
multiplied on the Tensor Engine with the scales applied (`nisa.nc_matmul_mx`).

The inputs are in the MX layout already: the contraction of 4 * K values is K partitions times
the 4 values each packed element holds.  Run: apdsl run mx_matmul.py -i st=st.npy -i mv=mv.npy
--target trn3 (st float32 [K, 4 * M], mv float32 [K, 4 * N], K a multiple of 32)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def mx_matmul(st, mv):
    K, M4 = st.shape
    _, N4 = mv.shape
    a = nl.ndarray((K, M4), dtype=nl.bfloat16, buffer=nl.sbuf)
    b = nl.ndarray((K, N4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=st)
    nisa.dma_copy(dst=b, src=mv)
    qa = nl.ndarray((K, M4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    qb = nl.ndarray((K, N4 // 4), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    # one scale tile for both: a's scales 0 partitions into each quadrant, b's 4 into it
    scales = nl.ndarray((K, max(M4, N4) // 4), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=qa, src=a, dst_scale=scales[0:, :M4 // 4])
    nisa.quantize_mx(dst=qb, src=b, dst_scale=scales[4:, :N4 // 4])
    acc = nl.ndarray((M4 // 4, N4 // 4), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=qa, moving=qb, stationary_scale=scales[0:, :M4 // 4],
                      moving_scale=scales[4:, :N4 // 4])
    res = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    out = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
