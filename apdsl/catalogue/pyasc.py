"""The pyasc frontend, `apdsl.asc` (APK660-APK669)."""

from . import entry

ENTRIES = [
    entry("APK660", "a pyasc name apdsl does not model yet", """
The kernel uses a pyasc name (`asc.X`) that apdsl.asc does not have yet: for example
`asc.adv.Matmul` and its host tiling (`asc.lib.host.MultiCoreMatmulTiling`), or `asc.TQueBind`.
The diagnostic is at the line that names it.  apdsl.asc runs the names SPEC 17 covers:
`data_copy`, `data_copy_pad`, the vector instructions, `set_flag`/`wait_flag`/`pipe_barrier`,
`GlobalTensor`, `LocalTensor`, `TPipe`/`TQue`/`TBuf`, the block index functions, the AIC/AIV
functions, cross-core flags, `sync_all` and pyasc's enums.
""", """
# python
import apdsl.asc as asc
asc.TQueBind
"""),
    entry("APK661", "a pyasc launch on no number of AI cores", """
`kernel[n_cores, stream](...)` launches a pyasc kernel on n_cores AI cores (AscendC's
numBlocks): an int from 1 to 65535.  The kernel runs once per core, each core with its own
buffers, pipes and flags and global memory shared; `get_block_idx()` tells each core which it
is and `get_block_num()` is n_cores.  `apdsl run FILE.py --grid N` launches on N cores.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    pass
kernel[0, None]
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
    entry("APK665", "a pyasc platform apdsl does not run", """
`asc.runtime.config.set_platform(backend, soc_version)`: apdsl.asc is pyasc's model backend,
`Backend.Model`; there is no NPU to run on, so `Backend.NPU` is refused, as is a backend or
platform pyasc does not list.  Every platform pyasc lists (the Atlas A2 and A3 parts) has the
AI core apdsl's `ascend-a2` target models; set_platform changes nothing else.
""", """
# python
import apdsl.asc as asc
asc.runtime.config.set_platform(asc.runtime.config.Backend.NPU)
"""),
]
