"""z = x + y in pyasc style, written for apdsl: run unchanged with pyasc on an NPU, or on
apdsl where pyasc is absent (`apdsl run examples/asc_python/vector_add.py -i ...`, or the
pytest test next to this file with `pytest -p apdsl.asc`).

The tiles are double-buffered: buffer b of x, y and z is reused every second tile, so the
copy in of tile i + 2 waits (MTE3_MTE2, b) until the copy out of tile i has read z[b]."""

import asc

TILE = 256           # elements per tile: 512 bytes of float16, whole 32-byte blocks
BUFFERS = 2


@asc.jit
def vadd(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    x_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    z_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x, n)
    y_gm.set_global_buffer(y, n)
    z_gm.set_global_buffer(z, n)
    size = TILE * BUFFERS * x.dtype.sizeof()
    x_ub = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, TILE * BUFFERS)
    y_ub = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, size, TILE * BUFFERS)
    z_ub = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, 2 * size, TILE * BUFFERS)
    for i in range(n // TILE):
        b = i % BUFFERS
        if i >= BUFFERS:  # the copy out of tile i - 2 has read z[b]: x[b], y[b] are free
            asc.wait_flag(asc.HardEvent.MTE3_MTE2, b)
        asc.data_copy(x_ub[b * TILE:], x_gm[i * TILE:], TILE)
        asc.data_copy(y_ub[b * TILE:], y_gm[i * TILE:], TILE)
        asc.set_flag(asc.HardEvent.MTE2_V, b)
        asc.wait_flag(asc.HardEvent.MTE2_V, b)
        asc.add(z_ub[b * TILE:], x_ub[b * TILE:], y_ub[b * TILE:], TILE)
        asc.set_flag(asc.HardEvent.V_MTE3, b)
        asc.wait_flag(asc.HardEvent.V_MTE3, b)
        asc.data_copy(z_gm[i * TILE:], z_ub[b * TILE:], TILE)
        asc.set_flag(asc.HardEvent.MTE3_MTE2, b)
    for b in range(min(BUFFERS, n // TILE)):
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, b)
