"""Catalogue entries: the rest of the Ascend cube path -- Fixpipe with ReLU and quantisation,
the unit flag, atomic add, LoadData 3D (img2col) and the bias table (APK511-APK519,
APK527-APK528)."""

from __future__ import annotations

from . import entry

_HEAD = """
kernel k(A: f16[16, 16] @ gm, B: f16[16, 16] @ gm) -> f16[16, 16] @ gm:
    C = ndarray((16, 16), f16, gm)
    a1 = ndarray((16, 16), f16, l1, "NZ")
    b1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    b0 = ndarray((16, 16), f16, l0b, "ZN")
    c0 = ndarray((16, 16), f32, l0c, "NZ")
    dma_copy(a1, A)
    dma_copy(b1, B)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    dma_copy(a0, a1)
    dma_copy(b0, b1)
    set_flag("MTE1_M", 0)
    wait_flag("MTE1_M", 0)
"""

ENTRIES = [
    entry("APK511", "Fixpipe parameters that do not describe the move",
          """
`asc.fixpipe(dst, src, params[, config])` moves the top-left `m_size` x `n_size` block of
the L0C matrix `src` to `dst`.  Its `asc.FixpipeParamsV220` must describe the views it is
given: `m_size` and `n_size` within both valid extents, `src_stride` the rows of the L0C matrix
(the distance between its fractal columns), `dst_stride` the destination's row pitch in
elements, each field in its documented range, and the config's layout the destination's
format (`cfg_row_major()`: an ND matrix, the NZ -> ND conversion; `cfg_nz()`: an NZ one).
apdsl computes from the views, so parameters that disagree with them would describe another
move than the one simulated.
""",
          _HEAD + """    mmad(c0, a0, b0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    asc.fixpipe(C, c0, asc.FixpipeParamsV220(16, 16, 16, 8, asc.QuantModes.F322F16))
    return C
"""),
    entry("APK512", "Fixpipe quantisation mode that does not fit the dtypes",
          """
Each Fixpipe conversion (`quant_pre`, an `asc.QuantModes` member) takes one source dtype to
given destination dtypes on Atlas A2: NoQuant a dtype to itself (float32, int32), F322F16 and
F322BF16 float32 to float16 / bfloat16, DEQF16 and VDEQF16 int32 to float16, REQ8 and VREQ8
int32 to int8 / uint8, QF322B8_PRE and VQF322B8_PRE float32 to int8 / uint8.  The V modes
scale each column by its own 64-bit parameter, read from `cbuf_workspace` (an L1 tensor of
uint64, one a column); the others take one, `deq_scalar`.  An 8-bit result's signedness is
bit 46 of the parameter, which must agree with the destination's dtype.
""",
          _HEAD + """    mmad(c0, a0, b0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    asc.fixpipe(C, c0, asc.FixpipeParamsV220(16, 16, 16, 16, asc.QuantModes.DEQF16))
    return C
"""),
    entry("APK513", "unit flag misuse between mmad and Fixpipe",
          """
With `unit_flag` 2 or 3 on an `mmad` and on an `asc.fixpipe`, each 512-byte block of L0C has
a flag that orders them without an M_FIX event: the last mmad of an accumulation (unit_flag=3)
hands its blocks to Fixpipe, and a Fixpipe with unit_flag=3 hands them back.  A Fixpipe that
reads blocks no mmad handed over would wait for ever, as would an mmad that overwrites results
no Fixpipe has read; `unit_flag` is 0 (off), 2 or 3.
""",
          _HEAD + """    mmad(c0, a0, b0, unit_flag=2)
    p = asc.FixpipeParamsV220(16, 16, 16, 16, asc.QuantModes.F322F16, unit_flag=3)
    asc.fixpipe(C, c0, p)
    return C
"""),
    entry("APK514", "Fixpipe quantisation field apdsl does not model",
          """
A quantisation parameter's mode control bit (bit 36: shift the int32 right by N first) and
its 9-bit offset (bits 37-45) are refused: the AscendC page gives N's range as [1, 16] while
its own sample shifts by the field's value, and it does not say whether the offset is signed.
Scale by M1 alone (bits 0-31, a float32 of which the hardware uses the top 19 bits) and add an
offset with a vector instruction.
""",
          """
kernel k(A: i8[16, 32] @ gm, B: i8[32, 16] @ gm) -> i8[16, 16] @ gm:
    C = ndarray((16, 16), i8, gm)
    a1 = ndarray((16, 32), i8, l1, "NZ")
    b1 = ndarray((32, 16), i8, l1, "NZ")
    a0 = ndarray((16, 32), i8, l0a, "ZZ")
    b0 = ndarray((32, 16), i8, l0b, "ZN")
    c0 = ndarray((16, 16), i32, l0c, "NZ")
    dma_copy(a1, A)
    dma_copy(b1, B)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    dma_copy(a0, a1)
    dma_copy(b0, b1)
    set_flag("MTE1_M", 0)
    wait_flag("MTE1_M", 0)
    mmad(c0, a0, b0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    q = 0x3F800000 | (1 << 46) | (1 << 36)     # M1 = 1.0, int8, and the mode control bit
    asc.fixpipe(C, c0, asc.FixpipeParamsV220(16, 16, 16, 16, asc.QuantModes.REQ8, q))
    return C
"""),
    entry("APK515", "atomic add that Atlas A2 does not do",
          """
`asc.set_atomic_add(dtype)` makes this core's MTE3 (UB -> GM) and FIX (L0C -> GM) writes to GM
add to what GM holds, for int8, int16, float16, bfloat16, int32 or float32 data, until
`asc.set_atomic_none()`.  A write of another dtype than the one set, or an integer sum that
leaves its dtype's range (the docs do not say whether it wraps or saturates), is refused.
""",
          """
kernel k(X: f32[64] @ gm) -> f16[64] @ gm:
    Y = ndarray((64,), f16, gm)
    y = ndarray((64,), f16, ub)
    asc.duplicate(y, 1.0, 64)
    set_flag("V_MTE3", 0)
    wait_flag("V_MTE3", 0)
    asc.set_atomic_add(f32)
    asc.data_copy(Y, y, 64)
    return Y
"""),
    entry("APK516", "LoadData 3D parameters that do not describe the feature map",
          """
`asc.load_data(dst, src, asc.LoadData3DParamsV2(...))` unrolls the feature map `src` (L1: an
NC1HWC0 tensor (1, C, H, W), or ND (C1, H, W, C0)) into the img2col matrix and writes a window
of it to the L0A matrix `dst` (ZZ).  `l1_h` x `l1_w` and `channel_size` must be the map's, the
K window must start on a C0 block, the window must fit `dst`, and every field must be in the
range the AscendC page gives (strides 1-63, filters 0-255, dilations 1-255, pads 0-255).
""",
          """
kernel k(X: f16[1, 16, 4, 4] @ gm):
    x = ndarray((1, 16, 4, 4), f16, l1, "NC1HWC0")
    a = ndarray((16, 144), f16, l0a, "ZZ")
    dma_copy(x, X)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    p = asc.LoadData3DParamsV2((1, 1, 1, 1), 5, 4, 16, 144, 16, filter_w=3, filter_h=3)
    asc.load_data(a, x, p)
"""),
    entry("APK517", "LoadData 3D feature apdsl does not model",
          """
apdsl models LoadData 3D v2 into L0A, untransposed, with whole C0 blocks of channels.  The
transposed load (`en_transpose`), L0B as the destination (Atlas A2 transposes there),
`filter_size_w/h` (a kernel 256 larger), `f_matrix_ctrl` and the 4- and 8-channel forms are
refused rather than guessed.
""",
          """
kernel k(X: f16[1, 16, 4, 4] @ gm):
    x = ndarray((1, 16, 4, 4), f16, l1, "NC1HWC0")
    a = ndarray((16, 16), f16, l0a, "ZZ")
    dma_copy(x, X)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    p = asc.LoadData3DParamsV2((0, 0, 0, 0), 4, 4, 16, 16, 16, en_transpose=True)
    asc.load_data(a, x, p)
"""),
    entry("APK518", "mmad bias that the bias table cannot give",
          """
`mmad(dst, a, b, bias=t)` starts the accumulation from the bias table: dst[m, n] = (a @ b)[m,
n] + t[n] (AscendC Mmad with a bias, cmatrixSource).  `t` is a row of at least N elements in
the bias table (`bt`), of the accumulator's dtype (float32; int32 for int8 inputs), copied
there from L1 with `dma_copy`.  A bias replaces L0C's old value, so it does not go with
`accumulate=True`: give it to the first mmad of an accumulation.
""",
          _HEAD + """    bias = ndarray((8,), f32, bt)                # 8 of the 16 columns
    mmad(c0, a0, b0, bias=bias)
    return C
"""),
    entry("APK519", "L1 -> bias table copy that Atlas A2 does not do",
          """
The bias table (`bt`, 1 KiB) is filled from L1 by DataCopy on pipe MTE1, which converts
float16 to float32 on the way (float32 and int32 move as they are); BT operands start 64-byte
aligned.  Other dtype pairs, or a misaligned start, are refused.
""",
          """
kernel k(X: f16[32] @ gm):
    x = ndarray((32,), f16, l1)
    t = ndarray((32,), f16, bt)
    dma_copy(x, X)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    dma_copy(t, x)
"""),
    entry("APK527", "atomic integer add out of the dtype's range",
          """
Under `asc.set_atomic_add` an integer write to GM adds to what GM holds; the AscendC page does
not say whether a sum past the dtype's range wraps or saturates, so apdsl stops rather than
guess.  Keep the sums in range, or accumulate in a wider dtype (int32).
""",
          """
kernel k(X: i16[16] @ gm) -> i16[16] @ gm:
    Y = ndarray((16,), i16, gm)
    y = ndarray((16,), i16, ub)
    asc.duplicate(y, 30000, 16)
    set_flag("V_MTE3", 0)
    wait_flag("V_MTE3", 0)
    asc.data_copy(Y, y, 16)
    asc.set_atomic_add(i16)
    asc.data_copy(Y, y, 16)                      # 30000 + 30000 leaves int16
    asc.set_atomic_none()
    return Y
"""),
    entry("APK528", "Fixpipe parameter read from L1 that apdsl cannot apply",
          """
The per-column quantisation parameters of VDEQF16, VREQ8 and VQF322B8_PRE are read from
`cbuf_workspace` (L1) when the Fixpipe runs, so their fields are checked then: a mode control
bit or offset apdsl does not model (see APK514), or an 8-bit result's sign bit that disagrees
with the destination's dtype, stops the run at the Fixpipe.
""",
          """
kernel k(A: i8[16, 32] @ gm, B: i8[32, 16] @ gm, Q: i64[16] @ gm) -> i8[16, 16] @ gm:
    C = ndarray((16, 16), i8, gm)
    a1 = ndarray((16, 32), i8, l1, "NZ")
    b1 = ndarray((32, 16), i8, l1, "NZ")
    q1 = ndarray((16,), i64, l1)
    a0 = ndarray((16, 32), i8, l0a, "ZZ")
    b0 = ndarray((32, 16), i8, l0b, "ZN")
    c0 = ndarray((16, 16), i32, l0c, "NZ")
    dma_copy(a1, A)
    dma_copy(b1, B)
    dma_copy(q1, Q)                              # seeded values: their bit 46 is not all set
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    dma_copy(a0, a1)
    dma_copy(b0, b1)
    set_flag("MTE1_M", 0)
    wait_flag("MTE1_M", 0)
    mmad(c0, a0, b0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    asc.fixpipe(C, c0, q1, asc.FixpipeParamsV220(16, 16, 16, 16, asc.QuantModes.VREQ8))
    return C
"""),
]
