"""The NKI Python frontend, `apdsl.nki`, and launch on logical NeuronCores (APK140-APK149)."""

from . import entry

ENTRIES = [
    entry("APK140", "float64 array given to a kernel", """
A NumPy float64 array was passed to a kernel parameter. NKI tensors have no float64 (the
accelerator has none), and casting it silently would change the numbers the kernel sees: cast
it yourself to the dtype the kernel expects (usually `a.astype(np.float32)`).
""", """
# python
import apdsl.nki as nki
@nki.jit
def kernel(a):
    return a
kernel(np.zeros((4, 4)))
"""),
    entry("APK141", "launch grid not available", """
`kernel[n](...)` launches the kernel on n logical NeuronCores: n is 1 or 2 on trn2 and trn3
(LNC=2), and 1 on trn1, which has no logical NeuronCore configuration.  The legacy API's SPMD
grid, `kernel[gx, gy]`, runs one program per position.  A launch with no program
(`kernel[0]`, `kernel[2, 0]`) would never run the kernel, and neither reference defines what
it returns: it is refused too.
""", """
# python
import apdsl.nki as nki
@nki.jit
def kernel(a):
    return a
kernel[8]
"""),
    entry("APK142", "program axis outside the launch grid", """
`nl.program_id(axis)` and `nl.num_programs(axes)` take axes of the launch grid: axis 0 for a
`kernel[n]` launch (and for a kernel launched without a grid, which is the one program 0).
""", """
kernel k() -> i32[1, 1] @ hbm:
    out: i32[1, 1] @ hbm
    t: i32[1, 1] @ sbuf
    memset(t, program_id(1))
    dma_copy(out, t)
    return out
"""),
    entry("APK143", "kernel returns an on-chip tensor", """
A kernel's outputs live in HBM: a returned SBUF or PSUM tile has no existence after the kernel
ends. Allocate the output with `nl.ndarray(shape, dtype, buffer=nl.shared_hbm)`, copy the
result into it with `nisa.dma_copy` and return that.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl
@nki.jit
def kernel():
    t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
    return t
kernel()
"""),
    entry("APK144", "name not in nki.language or nki.isa", """
`nl.X` or `nisa.X` names something apdsl's NKI namespaces do not have (a misspelling, a name
of the other namespace, or an NKI name apdsl does not implement). The note lists what the
namespace offers.
""", """
# python
import apdsl.nki.isa as nisa
nisa.dma_cpy
"""),
    entry("APK145", "programs of a launch allocate different shared HBM tensors", """
Every program of a `kernel[n]` launch allocates the same `nl.shared_hbm` tensors (the kernel's
outputs, shared by the programs), in the same order and with the same shape and dtype.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl
@nki.jit
def kernel():
    out = nl.ndarray((4 + nl.program_id(0), 4), dtype=nl.float32, buffer=nl.shared_hbm)
    return out
kernel[2]()
"""),
    entry("APK146", "programs of a launch return different tensors", """
The programs of a `kernel[n]` launch must return the same tensors: outputs in `nl.shared_hbm`
that every program writes its part of. A tensor in private HBM is each program's own, so
returning it would drop what the other programs wrote.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl
@nki.jit
def kernel():
    out = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.hbm)
    return out
kernel[2]()
"""),
    entry("APK147", "nl.ds takes an int start and a positive size", """
`nl.ds(start, size)` indexes `size` elements from `start`; both are ints (a loop variable, a
shape) and size is at least 1.
""", """
kernel k() -> f32[4, 4] @ hbm:
    out: f32[4, 4] @ hbm
    t: f32[4, 4] @ sbuf
    memset(t, 0.0)
    dma_copy(out[ds(0, 0), :], t[0:0, :])
    return out
"""),
    entry("APK148", "your Python code raised an exception", """
An exception raised by the kernel file's own Python (a NameError in a helper, a failing
assert, an IndexError of a list), not by an apdsl check, while `apdsl run|check|lower` ran a
`.py` file. It is shown as the traceback of your frames only, apdsl's own left out.
""", """
# python
from apdsl.nki.program import PyProgram
with open("user_kernel.py", "w") as f:
    f.write("import nki; undefined_name + 1")
PyProgram("user_kernel.py")
"""),
    entry("APK149", "Python syntax error in a kernel file", """
The `.py` file given to `apdsl run|check|lower` is not valid Python.
""", """
# python
from apdsl.nki.program import PyProgram
with open("user_kernel.py", "w") as f:
    f.write("def kernel(:")
PyProgram("user_kernel.py")
"""),
    entry("APK171", "torch tensor a kernel cannot read", """
A kernel launched from PyTorch reads its torch tensors in place on the CPU (apdsl's XLA device,
`torch_xla.device()`, is the CPU when torch_xla is absent): a tensor on another device, or of a
dtype with no NumPy or ml_dtypes form (a complex or quantized tensor), cannot be given to it.
Move it to the CPU, or cast it to a dtype NKI has (`t.to(torch.bfloat16)`).
""", """
# python
import torch
import apdsl.nki as nki
@nki.jit
def kernel(a):
    return a
kernel(torch.zeros((4, 4), device="meta"))
"""),
]
