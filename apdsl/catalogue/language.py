"""Names, calls and language rules (APK1xx) and assertions (APK9xx)."""

from . import entry

ENTRIES = [
    entry("APK101", "unknown name", """
A name is used that is neither defined in the program nor a builtin. The message lists close
matches. Kernel parameters' named dimensions (`A: f16[M, K] @ gm`) are names inside the kernel.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(1, 0, 8)
dma_copy(dst=u, src=tt)
"""),
    entry("APK102", "wrong arguments", """
A call passes too many positional arguments, an unknown keyword, the same argument twice, or
misses a required one. The help shows the parameters.
""", """
t: f32[128, 64] @ sbuf
s: f32[128, 64] @ sbuf = 0
dma_copy(dst=t, srcc=s)
"""),
    entry("APK103", "unknown or private attribute", """
A value has no such attribute (tensors have the NkiTensor methods and attributes; host arrays
shape, T, astype, sum, ...), or the attribute is private (names starting with `_` are never
accessible: the language is sandboxed).
""", """
t: f32[128, 64] @ sbuf
u = t.slcie(1, 0, 8)
"""),
    entry("APK107", "cannot assign to this expression", """
A tensor's elements are not assigned: views are made by methods (`u = t.slice(...)`) and data
moves only through instructions (`dma_copy(dst=t[0:4], src=...)`), so `t[0] = 1`, `t[0] += 1`
and `del t[0]` are errors.  (Elements of lists, dicts and host arrays can be assigned.)
""", """
t: f32[128, 64] @ sbuf
t[0] = 1
"""),
    entry("APK108", "name not in module", """
`from M import name` names something module M does not define.
""", """
from helpers import not_there
"""),
    entry("APK109", "not callable", """
Something that is not a function was called, for example a tensor or a number.
""", """
t: f32[128, 64] @ sbuf
u = t(0)
"""),
    entry("APK110", "wrong value kind", """
A builtin got a value of the wrong kind, for example host() of a number, or a file name that is
not a string.
""", """
x = host("text")
"""),
    entry("APK113", "bad declaration initialiser", """
A declaration `= INIT` takes a number, `zeros`, `ones`, `arange`, `random(seed)` or
`load("file.npy")`.
""", """
t: f32[4, 4] @ hbm = "zeros"
"""),
    entry("APK114", "loaded data does not fit", """
An array from `load(...)` or `-i NAME=FILE.npy` has another shape than the declaration, or a
dtype apdsl cannot convert.
""", """
# apdsl run kernel.apk -i A=wrong_shape.npy
x: f32[4, 4] @ hbm = arange
save(x, "_apk114.npy")
y: f32[2, 8] @ hbm = load("_apk114.npy")
"""),
    entry("APK120", "invalid operation", """
An operator or call got values it cannot combine, such as adding a string to a number, or
testing a whole host array for truth (use allclose, equal or .all()).
""", """
x = "a" + 1
"""),
    entry("APK121", "division by zero", """
Integer or float division by zero.
""", """
n = 0
x = 4 // n
"""),
    entry("APK122", "index out of range", """
A list, tuple or dict index that does not exist.
""", """
xs = [1, 2, 3]
y = xs[5]
"""),
    entry("APK123", "recursion too deep", """
More than 1,000 calls of helpers (`def` functions) are under way at once: usually a helper
that calls itself without reaching its base case. The limit is fixed (SPEC section 15) and is
reported the same way by `run`, `check` and `check --json`: at the innermost call, labelled
with the program's outermost call. Write deep recursions as loops.
""", """
def f(n):
    return f(n + 1)
x = f(0)
"""),
    entry("APK124", "break, continue or return in the wrong place", """
`break` and `continue` belong inside a `for` loop, `return` inside a kernel or a `def`.
""", """
x = 1
break
"""),
    entry("APK131", "input does not match the parameter", """
An input array has another number of dimensions than the kernel parameter, or a dimension
differs from its declared value or from the value a named dimension got from another input.
""", """
# apdsl run k.apk -i A=a_4x8.npy -i B=b_5x8.npy
kernel k(A: f32[M, N] @ hbm, B: f32[M, 3] @ hbm) -> f32[M, N] @ hbm:
    return A
"""),
    entry("APK132", "input size unknown", """
A kernel input was not given and one of its dimensions is a name that no other input binds and
no top-level integer defines, so apdsl cannot make seeded data for it. Pass the input with
`-i NAME=FILE.npy` or define the dimension at the top level (`M = 256`).
""", """
kernel k(A: f32[M, 64] @ hbm) -> f32[M, 64] @ hbm:
    return A
"""),
    entry("APK133", "kernel result does not match its declared type", """
The tensor a kernel returns must have the dtype, buffer and number of dimensions of its
`-> TYPE`.
""", """
kernel k(A: f32[128, 64] @ hbm) -> f16[128, 64] @ hbm:
    return A
"""),
    entry("APK901", "assertion failed", """
An `assert` in the program was false. For comparisons both sides are shown as notes.
""", """
t: f32[128, 64] @ sbuf
assert t.shape == [128, 32], "wrong shape"
"""),
    entry("APK902", "allclose of different shapes", """
`allclose(x, y)` compares values of the same shape; different shapes are a mistake, not a
False.
""", """
x: f32[4, 4] @ hbm = 0
y: f32[4, 2] @ hbm = 0
ok = allclose(x, y)
"""),
]
