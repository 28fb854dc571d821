"""The pyasc frontend, `apdsl.asc` (APK660-APK669)."""

from . import entry

ENTRIES = [
    entry("APK660", "a pyasc name apdsl does not model yet", """
The kernel uses a pyasc name (`asc.X`) that apdsl.asc does not have yet: for example
`asc.TPipe`, `asc.TQue`, `asc.TBuf` (AscendC's queues), `asc.adv.Matmul` and its host tiling,
or the AIC/AIV cross-core functions.  The diagnostic is at the line that names it.  apdsl.asc
runs the names SPEC 17 covers: `data_copy`, `data_copy_pad`, the vector instructions,
`set_flag`/`wait_flag`/`pipe_barrier`, `GlobalTensor`, `LocalTensor` and pyasc's enums.
""", """
# python
import apdsl.asc as asc
asc.TPipe
"""),
    entry("APK661", "a pyasc launch on more than one core", """
`kernel[n_cores, stream](...)` launches a pyasc kernel on n_cores AI cores.  apdsl.asc runs a
kernel on one core for now (`get_block_idx()` is 0, `get_block_num()` is 1): the multi-core
model, with per-core buffers and the race checker across cores, is not in apdsl yet.  Launch
with `kernel[1, stream]` and a block length covering the whole input.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    pass
kernel[8, None]
"""),
    entry("APK662", "a pyasc global-memory parameter without an array", """
A kernel parameter annotated `asc.GlobalAddress` is global memory: on apdsl it takes a NumPy
array (or a CPU torch tensor), whose elements the kernel reads and, on success, writes back in
place.  Another value (a list, a number) has no global memory to address.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    pass
kernel[1, None]([1.0, 2.0])
"""),
    entry("APK663", "a GlobalTensor or LocalTensor used outside its buffer", """
`set_global_buffer(address, length)` must lie inside the array passed to the kernel; a
GlobalTensor is used only after it has a buffer; `t[k]` and `t[k:]` (the tensor from element k
on, AscendC's operator[]) take an int offset within the tensor, and no stop or step.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    g = asc.GlobalTensor()
    g.set_global_buffer(x + 4, 8)
kernel[1, None](np.zeros(8, np.float32))
"""),
    entry("APK664", "a LocalTensor apdsl cannot place", """
`asc.LocalTensor(dtype, TPosition.X, addr, tile_size)` puts tile_size elements at byte
address addr of the position's buffer (VECIN/VECOUT/VECCALC: UB).  apdsl gives each
LocalTensor its own storage: two at the same address, size and dtype share one; a partial
overlap of two LocalTensors is refused, since apdsl does not model it.  The address is a byte
offset >= 0 and tile_size a positive element count.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 128)
    b = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 256, 128)
kernel[1, None](np.zeros(8, np.float32))
"""),
]
