"""What a kernel returns and how its instructions are called: results never written, outputs
not returned, `tensor_copy(dtype=)`, `nl.divide`, tiles released by loop iterations
(APK180-APK189)."""

from . import entry

ENTRIES = [
    entry("APK180", "the kernel's result was never written", """
A kernel (`.apk` or Python) returned a tensor that nothing wrote, or wrote only in part: a
store is missing (the result was computed into a tile and never copied out with
`dma_copy`/`nl.store`), or it writes another tensor. The diagnostic points at the kernel's
`return` and at the allocation of the result, and says how many elements were never written.
`run` and `check` say the same: check mode follows which elements each instruction's
destination covers, without data. A result holding data computed from unwritten memory is
APK412. `--no-init-check` (or `apdsl.options(init_check=False)`) reads unwritten memory as 0
instead.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl
@nki.jit
def kernel(a):
    t = nl.load(a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    return out
kernel(np.ones((4, 4), np.float32))
"""),
    entry("APK181", "a shared_hbm tensor written and not returned (warning)", """
A kernel wrote into an `nl.shared_hbm` tensor that it does not return. A kernel's outputs are
the tensors it returns: whatever it wrote into one it does not return is lost when the kernel
ends, and a kernel without a `return` gives None. Return the tensor (or a tuple of them).
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl
@nki.jit
def kernel(a):
    t = nl.load(a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, t)
kernel(np.ones((4, 4), np.float32))
"""),
    entry("APK182", "tensor_copy's dtype= is not dst's dtype (warning)", """
`nisa.tensor_copy(dst=..., src=..., dtype=...)` is written by kernels of the NKI samples: the
legacy reference's `tensor_copy(src, dtype=)` names the dtype of the tile the copy returns; the
current reference takes no `dtype=`. With `dst=` given, the instruction has one output dtype,
dst's: src is converted to dst's dtype (through FP32 when they differ), and a `dtype=` naming
another has no effect. The SDK's own matmul tutorial copied PSUM into an fp32 tile with
`dtype=result.dtype` (bf16), then dropped the keyword with nothing else changed. apdsl runs such
a call as the copy into dst's dtype and warns; allocate dst in the dtype wanted to copy into it.
A `dtype=` that is not a dtype at all is an argument error (APK420).
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl
import apdsl.nki.isa as nisa
@nki.jit
def kernel(a):
    t = nl.load(a)
    u = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, dtype=nl.bfloat16)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, u)
    return out
kernel(np.ones((4, 4), np.float32))
"""),
    entry("APK183", "nl.divide: the compiler rejects divide", """
`nl.divide` is in nki.language but in no instruction's operator table: the Neuron compiler
rejects `op=nl.divide` ("unsupported operator 'divide'"), even where NKI's own simulator
accepts it, so a kernel that divides runs in the simulator and fails to compile. apdsl refuses
it as the compiler does. Multiply by the reciprocal instead: `inv = nl.reciprocal(b)` then
`nl.multiply(a, inv)` (as instructions: `nisa.reciprocal(dst=inv, data=b)`, then
`nisa.tensor_tensor(dst=out, data1=a, data2=inv, op=nl.multiply)`); by a number, multiply by
its inverse.

The legacy API (a file that imports `neuronxcc`) lists the function `nl.divide(x, y)` as
supported, and there it runs (with `/` and `/=` on tiles): as that reciprocal, then that
multiply, the legacy tutorials' form of a division. Its integer tiles are refused (APK183: the
legacy reference does not say how an integer quotient rounds); `op=nl.divide` is refused in
both APIs.
""", """
a: f32[4, 8] @ sbuf = 2.0
c: f32[4, 8] @ sbuf
nisa.tensor_tensor(dst=c, data1=a, data2=a, op=nl.divide)
"""),
]
