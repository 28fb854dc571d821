"""Microscaling on Trainium 3 (APK960-APK964): the packed MX dtypes, `quantize_mx` and
`nc_matmul_mx` (NKI isa docstrings, the MXFP deep dive)."""

from . import entry

ENTRIES = [
    entry("APK960", "a copy would convert into or out of a packed MX dtype", """
`float8_e4m3fn_x4`, `float8_e5m2_x4` and `float4_e2m1fn_x4` hold four values in each element
(four float8 values in 32 bits, four float4 values in 16). Converting such an element as one
number through float32 (as `dma_copy`, `tensor_copy` and `memset` convert other dtypes) would
give a wrong answer, so every converting copy into or out of one is refused, as is giving
numbers where packed data is expected. `quantize_mx` writes MX data from bfloat16/float16 and
`nc_matmul_mx` reads it. Copies between tensors of the same packed dtype move the bits; to load
MX data prepared on the host (as uint8 or uint32 arrays), view the tensor as the packed dtype
(`t.view(nl.float8_e4m3fn_x4)`) so both sides agree. `memset(t, 0)` is allowed: all bits zero
is four zeros in every MX dtype.
""", """
a: f32[4, 8] @ sbuf = 1.0
q: float8_e4m3fn_x4[4, 8] @ sbuf
tensor_copy(q, a)
"""),
    entry("APK961", "quantize_mx / nc_matmul_mx target, shape or operand rule", """
`quantize_mx` and `nc_matmul_mx` exist on NeuronCore-v4 (trn3) only. `quantize_mx` reads a
bfloat16/float16 `src` of a multiple of 32 partitions (at most 128) and a multiple of 4 elements
a partition and writes `dst` of the same partitions and a quarter of the elements, as
float8_e4m3fn_x4 or float8_e5m2_x4 (no FP4 output). apdsl models both on static views: a
runtime-indexed operand (`.ap` with registers, `indirect()`) is refused.
""", """
# python
import numpy as np
import apdsl
with apdsl.target("trn2"):
    x = apdsl.ndarray((32, 8), "bfloat16", "sbuf")
    q = apdsl.ndarray((32, 2), "float8_e4m3fn_x4", "sbuf")
    s = apdsl.ndarray((4, 2), "uint8", "sbuf")
    apdsl.quantize_mx(q, x, s)
"""),
    entry("APK962", "MX scale tile layout", """
A scaling group is 8 partitions x the 4 values of one packed element, and its scale stays in the
SBUF quadrant its data came from: group g (data partitions 8g..8g+7) keeps its scale at partition
32 * (g // 4) + g % 4 of the scale view. So data of at most 32 partitions needs a scale tile of
[P / 8, F] (or larger), and more than 32 partitions need the spread layout, [P, F] with only the
first 4 partitions of each quadrant used. A scale view may start 0, 4, 8 or 12 partitions into
a quadrant, which lets up to four tensors' scales share one tile (`scale[4:, :]`). The scale's
free size is the data's packed free size (one scale per packed column).
""", """
# python
import apdsl
with apdsl.target("trn3"):
    x = apdsl.ndarray((64, 8), "bfloat16", "sbuf")
    apdsl.memset(x, 1.0)
    q = apdsl.ndarray((64, 2), "float8_e4m3fn_x4", "sbuf")
    s = apdsl.ndarray((8, 2), "uint8", "sbuf")
    apdsl.quantize_mx(q, x, s)
"""),
    entry("APK963", "quantize_mx input the docs leave undefined", """
quantize_mx computes a group's scale as 2**(floor(log2(max |V|)) - (Emax - 1)), the docstring's
rule and neuronx-cc's `--enable-mx-alternative-emax` (its default since Neuron SDK 2.31), or with
`apdsl.options(mx_alternative_emax=False)` / `--no-mx-alternative-emax` as the OCP rule
2**(floor(log2(max |V|)) - Emax), quotients clamped to the element type's largest finite value
(the default up to SDK 2.30); 2**-127 for an all-zero group under both. Neither the docs nor the
OCP sample algorithm say what a group holding NaN or infinity gives, nor what happens when the
scale is below float8_e8m0fnu's smallest (2**-127: a bfloat16 group whose largest magnitude is
below about 2**-120), so apdsl stops there, naming the element or the group, rather than guess.
""", """
# python
import numpy as np, ml_dtypes
import apdsl
with apdsl.target("trn3"):
    x = apdsl.from_numpy(np.full((32, 4), np.inf, ml_dtypes.bfloat16), "sbuf")
    q = apdsl.ndarray((32, 1), "float8_e4m3fn_x4", "sbuf")
    s = apdsl.ndarray((4, 1), "uint8", "sbuf")
    apdsl.quantize_mx(q, x, s)
"""),
    entry("APK964", "nc_matmul_mx shapes and row tiling", """
`nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale)`: stationary [K, M] and
moving [K, N] are MX data (K partitions, a multiple of 32 up to 128; each element holds four
values of the contraction, so it is 4K long), dst [M, N] in PSUM, float32 or bfloat16; M is even
and at most 128; N at most 4096 (8192 for a bfloat16 dst). Only row tiling exists:
`tile_size=(rows, 128)` with rows 32, 64 or 128 and `tile_position=(a multiple of rows, 0)`,
both or neither; K must fit the rows.
""", """
# python
import numpy as np
import apdsl
with apdsl.target("trn3"):
    a = apdsl.from_numpy(np.zeros((32, 3), np.uint32), "sbuf").view("float8_e4m3fn_x4")
    s = apdsl.from_numpy(np.full((4, 3), 127, np.uint8), "sbuf")
    d = apdsl.ndarray((3, 3), "float32", "psum")
    apdsl.nc_matmul_mx(d, a, a, s, s)
"""),
]
