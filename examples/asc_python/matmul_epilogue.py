"""D = (A @ B) * ALPHA + R across the cube and vector cores, in pyasc style (written for apdsl).

    apdsl run examples/asc_python/matmul_epilogue.py --grid 2 -i a=a.npy -i b=b.npy \\
        -i r=r.npy -i w=w.npy -i d=d.npy -o out.npz
    pytest -p apdsl.asc examples/asc_python          # the test next to this file

Each AI core takes TM rows of A (float16, TM x K row-major in GM).  Its cube core (AIC) moves
them and all of B into L1 converting ND to NZ (`data_copy` with `Nd2NzParams`), then into L0A
and L0B a row of fractals at a time (`load_data` with `LoadData2DParams`: L0A holds A as ZZ,
so each row of A's fractals is gathered from L1's columns; L0B holds B as ZN, so B's fractals
are transposed on the way), multiplies them into L0C (`mmad` with `MmadParams`: float32) and
writes the block to the GM workspace W row-major (`fixpipe`: NZ -> ND).  A cross-core flag
(mode 2) tells the core's two vector cores (AIV) that W is ready; each scales half of the
rows by ALPHA and adds R on UB, and stores them to D.  Inside each core, events order the
pipes (MTE2 -> MTE1 -> M -> FIX on the AIC, MTE2 -> V -> MTE3 on an AIV): delete one and
`apdsl run` reports the race at both lines.
"""

import asc

TM = 32          # rows of A an AI core takes: two 16-row fractals
K = 48           # A's columns: three 16-element (32-byte) fractal columns of float16
N = 32           # B's columns
ALPHA = 0.5


@asc.jit
def matmul_epilogue(a: asc.GlobalAddress, b: asc.GlobalAddress, r: asc.GlobalAddress,
                    w: asc.GlobalAddress, d: asc.GlobalAddress):
    if asc.ascend_is_aic():
        cube(a, b, w)
    if asc.ascend_is_aiv():
        epilogue(r, w, d)


@asc.jit
def cube(a: asc.GlobalAddress, b: asc.GlobalAddress, w: asc.GlobalAddress):
    core = asc.get_block_idx()
    a_gm = asc.GlobalTensor()
    b_gm = asc.GlobalTensor()
    w_gm = asc.GlobalTensor()
    a_gm.set_global_buffer(a + core * TM * K, TM * K)
    b_gm.set_global_buffer(b, K * N)
    w_gm.set_global_buffer(w + core * TM * N, TM * N)
    a1 = asc.LocalTensor(asc.float16, asc.TPosition.A1, 0, TM * K)
    b1 = asc.LocalTensor(asc.float16, asc.TPosition.B1, TM * K * 2, K * N)
    a2 = asc.LocalTensor(asc.float16, asc.TPosition.A2, 0, TM * K)
    b2 = asc.LocalTensor(asc.float16, asc.TPosition.B2, 0, K * N)
    c1 = asc.LocalTensor(asc.float32, asc.TPosition.CO1, 0, TM * N)
    # GM -> L1, ND -> NZ: one matrix, rows of K (N) elements, fractal columns TM (K) rows apart
    asc.data_copy(a1, a_gm, asc.Nd2NzParams(1, TM, K, 0, K, TM, 1, 0))
    asc.data_copy(b1, b_gm, asc.Nd2NzParams(1, K, N, 0, N, K, 1, 0))
    asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    # L1 -> L0A: fractal row i of A is fractals i, i + TM/16, ... of its NZ columns
    for i in range(TM // 16):
        asc.load_data(a2[i * K * 16:], a1, asc.LoadData2DParams(i, K // 16, TM // 16))
    # L1 -> L0B: fractal row k of B, each fractal transposed (NZ -> ZN)
    for k in range(K // 16):
        asc.load_data(b2[k * N * 16:], b1,
                      asc.LoadData2DParams(k, N // 16, K // 16, if_transpose=True))
    asc.set_flag(asc.HardEvent.MTE1_M, 0)
    asc.wait_flag(asc.HardEvent.MTE1_M, 0)
    asc.mmad(c1, a2, b2, asc.MmadParams(TM, N, K, unit_flag=0, cmatrix_source=False,
                                        cmatrix_init_val=True))
    asc.set_flag(asc.HardEvent.M_FIX, 0)
    asc.wait_flag(asc.HardEvent.M_FIX, 0)
    # L0C -> GM: n_size N, m_size TM, fractal columns TM rows apart, rows N elements apart
    asc.fixpipe(w_gm, c1, asc.FixpipeParamsV220(N, TM, TM, N))
    asc.cross_core_set_flag(0, 2, asc.PipeID.PIPE_FIX)


@asc.jit
def epilogue(r: asc.GlobalAddress, w: asc.GlobalAddress, d: asc.GlobalAddress):
    half = TM // 2
    row = asc.get_block_idx() // 2 * TM + asc.get_sub_block_idx() * half
    w_gm = asc.GlobalTensor()
    r_gm = asc.GlobalTensor()
    d_gm = asc.GlobalTensor()
    w_gm.set_global_buffer(w + row * N, half * N)
    r_gm.set_global_buffer(r + row * N, half * N)
    d_gm.set_global_buffer(d + row * N, half * N)
    x = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, half * N)
    res = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, half * N * 4, half * N)
    y = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 2 * half * N * 4, half * N)
    asc.cross_core_wait_flag(0, 2)          # the AIC's Fixpipe has written W
    asc.data_copy(x, w_gm, half * N)
    asc.data_copy(res, r_gm, half * N)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.muls(x, x, ALPHA, half * N)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.add(y, x, res, half * N)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(d_gm, y, half * N)
