"""The pyasc frontend, `apdsl.asc` (APK660-APK669, APK670-APK674)."""

from . import entry

ENTRIES = [
    entry("APK660", "a pyasc name apdsl does not model yet", """
The kernel uses a pyasc name (`asc.X`) that apdsl.asc does not have yet: for example
`asc.adv.softmax` (of `asc.adv` apdsl models the Matmul API), or `asc.TBufPool`.
The diagnostic is at the line that names it.  apdsl.asc runs the names SPEC 17 covers:
`data_copy`, `data_copy_pad`, the vector instructions, `set_flag`/`wait_flag`/`pipe_barrier`,
`GlobalTensor`, `LocalTensor`, `TPipe`/`TQue`/`TBuf`, the block index functions, the AIC/AIV
functions, cross-core flags, `sync_all` and pyasc's enums.
""", """
# python
import apdsl.asc as asc
asc.TBufPool
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
address addr of the position's buffer (VECIN/VECOUT/VECCALC: UB).  LocalTensors over some of
the same bytes share them, as on hardware (a write through one is read through the others,
whatever their dtypes).  The address is a byte offset >= 0 on a 32-byte block (64 bytes in the
bias table), tile_size a positive element count, and the tensor ends inside the buffer.  The
AscendC docs do not say where `TPipe.init_buffer` puts its buffers: apdsl places them around
the LocalTensors made before them, and refuses a LocalTensor made later over one of them.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 128)
    b = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 260, 128)
kernel[1, None](np.zeros(8, np.float32))
"""),
    entry("APK665", "a pyasc platform apdsl does not know", """
`asc.runtime.config.set_platform(backend, soc_version, device_id, check)` takes pyasc's two
backends -- `Backend.Model` (pyasc's simulator) and `Backend.NPU` (the device) -- and both run
the kernel on apdsl, which computes what the device computes; under `Backend.NPU` torch's
"npu" device is the CPU when torch_npu is not installed, so an NPU test runs unchanged.  Every
platform pyasc lists (the Atlas A2 and A3 parts) has the AI core apdsl's `ascend-a2` target
models; `device_id` and `check` change no result and are accepted.  A backend or platform
pyasc does not list, or a device id that is not a number, is this error.
""", """
# python
import apdsl.asc as asc
asc.runtime.config.set_platform("GPU")
"""),
    entry("APK666", "a pyasc helper given values it does not take", """
`asc.ceildiv(x, y)` is pyasc's `(x + y - 1) // y` on two ints (the number of y-sized blocks
that cover x, for y > 0); another value, or y = 0, has no such number.  The scalar bit
functions (`scalar_get_sff_value`, `scalar_get_count_of_value`, `scalar_count_leading_zero`,
`count_bits_cnt_same_as_sign_bit`) take an int that fits their 64-bit word, and a
`count_value` of 0 or 1.
""", """
# python
import apdsl.asc as asc
asc.ceildiv(5, 0)
"""),
    entry("APK667", "a LocalTensorAuto the compiler would not place or synchronise", """
`asc.LocalTensorAuto(dtype, shape)` is a UB tensor pyasc's compiler places and synchronises:
its `insert_sync` pass, on for a kernel that makes one (or with `@asc.jit(insert_sync=True)`),
gives each `LocalTensorAuto` operation one buffer, sized when the kernel starts, and orders
the tensor's on-chip dependencies itself.  A kernel compiled with `insert_sync=False` has
nothing that does so; an operation that makes a bigger tensor than the first time it ran
does not fit its buffer; the shape is a positive element count or a tuple of them.
""", """
# python
import apdsl.asc as asc
@asc.jit(insert_sync=False)
def kernel(x: asc.GlobalAddress):
    asc.LocalTensorAuto(asc.float32, 64)
kernel[1, None](np.zeros(64, np.float32))
"""),
    entry("APK670", "an MmadParams pyasc builds empty", """
pyasc's `asc.MmadParams` passes m, n and k to the device only together with one whole flag
set: `unit_flag`, `cmatrix_source` and `cmatrix_init_val`, or `is_bias`, `fm_offset`,
`en_ssparse`, `en_winograd_a` and `en_winograd_b`.  With neither set whole its constructor
emits no arguments, so the device's Mmad gets AscendC's defaults (m = n = k = 0) and computes
nothing.  apdsl refuses such a `mmad` rather than compute what the kernel says but the device
would not.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    a = asc.LocalTensor(asc.float16, asc.TPosition.A2, 0, 256)
    b = asc.LocalTensor(asc.float16, asc.TPosition.B2, 0, 256)
    c = asc.LocalTensor(asc.float32, asc.TPosition.CO1, 0, 256)
    asc.mmad(c, a, b, asc.MmadParams(16, 16, 16))
kernel[1, None](np.zeros(8, np.float32))
"""),
    entry("APK671", "a cube instruction's LocalTensor form misused", """
`mmad(dst, fm, filter[, bias], asc.MmadParams(...))` takes pyasc's LocalTensors (a start
address and a length): the parameters say how the L0A, L0B and L0C bytes are laid out (A as
ZZ, B as ZN, C as NZ from each tensor's start).  A multi-dimensional view is the `.apk` form
`mmad(dst, a, b)`; `cmatrix_source=True` (start L0C from the bias table) needs the bias
tensor, in the form with `bias`.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    a = asc.LocalTensor(asc.float16, asc.TPosition.A2, 0, 256)
    b = asc.LocalTensor(asc.float16, asc.TPosition.B2, 0, 256)
    c = asc.LocalTensor(asc.float32, asc.TPosition.CO1, 0, 256)
    asc.mmad(c, a, b, asc.MmadParams(16, 16, 16, unit_flag=0, cmatrix_source=True,
                                     cmatrix_init_val=False))
kernel[1, None](np.zeros(8, np.float32))
"""),
    entry("APK672", "cube parameters out of range or past a tensor", """
The parameter records of pyasc's cube instructions (`Nd2NzParams`, `LoadData2DParams`,
`MmadParams`) take integers in the ranges the AscendC pages document, and what they describe
must lie inside the operands: the elements a DataCopy ND2NZ reads and writes, the fractals a
LoadData moves (start_index, repeat_times, src_stride, dst_gap in 512-byte fractals), the
matrices an Mmad reads.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    g = asc.GlobalTensor()
    g.set_global_buffer(x)
    l1 = asc.LocalTensor(asc.float16, asc.TPosition.A1, 0, 256)
    asc.data_copy(l1, g, asc.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0))
kernel[1, None](np.zeros(64, np.float16))
"""),
    entry("APK673", "a cube move apdsl does not model", """
apdsl models the cube path's moves as the AscendC pages describe them for Atlas A2: DataCopy
with Nd2NzParams from GM to L1 (A1/B1), LoadData 2D from L1 or GM to L0A/L0B with a fractal
transpose for 16-bit data from L1 only, Fixpipe of one NZ matrix (nd_num=1) row-major or, for
16-bit results, as NZ.  Another path, a transposed load of other data, addr_mode=1, 4-bit data
or F32 channel split is refused: the data would not be what the device moves.
""", """
# python
import apdsl.asc as asc
@asc.jit
def kernel(x: asc.GlobalAddress):
    g = asc.GlobalTensor()
    g.set_global_buffer(x)
    u = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, 256)
    asc.data_copy(u, g, asc.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0))
kernel[1, None](np.zeros(256, np.float16))
"""),
    entry("APK674", "the Matmul API used in a way apdsl does not model", """
`asc.adv.Matmul` computes each core's block C = A @ B (+ bias) of ND matrices in GM, from the
tiling `register_matmul` (or `init`) gave and the tensors `set_tensor_a`/`set_tensor_b` set:
`iterate_all(c)` into GM, or `with matmul.iterate() as count:` once per base block with
`get_tensor_c(t, en_sequential_write=True)` into UB or `get_tensor_c(c)` into GM.  Atomic
accumulation (`en_atomic`), partial sums, other formats and a `with matmul.iterate()` apdsl
could not turn into a loop (a nested function) are refused, as are the host tiling's calls
out of order (get_tiling before set_shape) and a `set_fix_split` base block that breaks the
AscendC TCubeTiling constraints (its A and B blocks, double-buffered, within L0A/L0B, its C
block within L0C, base_n bias values within the bias table).
""", """
# python
import apdsl.asc as asc
asc.adv.Matmul(a=None, b=None, c=None)
"""),
]
