"""NKI module paths and names apdsl provides or lacks (APK920-APK939): `nki.*` and the legacy
`neuronxcc.nki.*` modules, `nki.collectives`, `nl.NKIObject` classes, the legacy compiler's
direct allocation, and the instructions and `nl` functions added for published kernels."""

from . import entry

ENTRIES = [
    entry("APK920", "no such NKI module", """
A kernel imports an `nki.*` or `neuronxcc.*` module apdsl does not provide. apdsl provides
`nki`, `nki.language`, `nki.isa`, `nki.isa.constants`, `nki.typing`, `nki.compiler`,
`nki.collectives` and the legacy `neuronxcc.nki` with `.language`, `.isa`, `.typing`,
`.compiler` (the same modules). Other modules of the Neuron compiler package
(`neuronxcc.starfish`, `neuronxcc.nki._private_kernels`, ...) are internal to it, not NKI's
public API, and `neuronxcc.nki.kernels` is the kernels it bundles. Where torch is installed without them, apdsl stands in for `torch_xla`
(its device, `torch_xla.core.xla_model`) and `torch_neuronx.utils.get_platform_target`; their
other modules (model tracing, XLA ops, distributed training) are this error too. It is still a
`ModuleNotFoundError`, so code that tries an import and falls back keeps working; `apdsl
corpus` counts a kernel stopped at one of these non-NKI modules as an environment row.
""", """
# python
import sys
import apdsl.nki
before = sys.modules.get("nki") is apdsl.nki
apdsl.nki.install()
try:
    import neuronxcc.starfish.support.dtype
finally:
    if not before:
        apdsl.nki.uninstall()
"""),
    entry("APK922", "NKIObject constructor arguments", """
A class derived from `nl.NKIObject` is built like a Python data class: its fields are the
names its class body declares (annotated or not, in order, after those of its NKIObject
bases), each taken positionally or by keyword; a field not given takes its class-level default,
or None. An argument that names no field, more positional arguments than fields, or a field
given twice is this error.
""", """
# python
import apdsl.nki.language as nl
class Tile(nl.NKIObject):
    rows = 128
    cols = None
Tile(rows=64, depth=2)
"""),
    entry("APK923", "legacy compiler scheduling control not supported", """
The legacy compiler API's allocation controls (`ncc.allocation_scope`, `ncc.multi_buffer`)
steer how the compiler allocates, which apdsl does not model, so a kernel that uses one stops
where it calls it, naming it (naming one without calling it is fine).  `ncc.no_reorder()` does
run: it keeps a loop body in program order, which is how apdsl runs and profiles it anyway.  Its direct allocation (`ncc.sbuf.mod_alloc(...)`, `ncc.psum.alloc(func)`) does run:
each tile is placed where it says.
""", """
# python
import apdsl.nki.compiler as ncc
ncc.multi_buffer(2)
"""),
    entry("APK924", "accumulating Vector Engine instruction arguments", """
`tensor_scalar_reduce`, `tensor_scalar_cumulative` and `exponential` reduce into the Vector
Engine's accumulator lanes. Their docstrings set the initial value (`reduce_init`, `imm1`) only
with `reduce_cmd=load_reduce`, and that command needs it; `tensor_scalar_reduce` does not
support `reverse0` yet; `exponential` exists on NeuronCore-v4 (trn3) only.
""", """
# python
x = apdsl.from_numpy(np.ones((2, 4), np.float32), "sbuf")
d = apdsl.ndarray((2, 4), "float32", "sbuf")
from apdsl.runtime.nki.vector_reduce import tensor_scalar_reduce
tensor_scalar_reduce(d, x, apdsl.operator("add"), 1.0, apdsl.operator("add"),
                     reduce_cmd="load_reduce")
"""),
    entry("APK925", "nonzero_with_count arguments", """
`nonzero_with_count` runs on GpSimd of NeuronCore-v3 and later (trn2, trn3); `index_offset`
and `padding_val` are int32 numbers.
""", """
# python
x = apdsl.from_numpy(np.ones((1, 4), np.float32), "sbuf")
d = apdsl.ndarray((1, 5), "int32", "sbuf")
from apdsl.runtime.nki.nonzero import nonzero_with_count
nonzero_with_count(d, x, index_offset=2**40)
"""),
    entry("APK937", "topk arguments", """
`nisa.topk(val_dst, idx_dst, src, n)` (NKI 0.6.0, GpSimd) finds the K largest of each group of
16 partitions of `src`, read as a snake: element e at partition e % 16, column e // 16. Its
docstring's constraints: `8 <= n < 65536`; K, the free size of `val_dst`, with
`1 <= K < 32768` and `K <= n`; `src`'s free size at least `ceil(n / 16)`; a partition count
that is a multiple of 16; `val_dst` and `idx_dst` of one shape `[par_dim, k]` (bfloat16 SBUF
src and val_dst, uint32 SBUF idx_dst). The outputs are written as a snake too (position q at
partition q % 16, column q // 16), ascending; the hardware's order within it differs
(nki-library's gpsimd_topk relies on the set only), so do the same. A NaN among the n elements
is this error at run time: the docs do not say how it orders.
""", """
# python
import ml_dtypes
x = apdsl.from_numpy(np.ones((16, 1), ml_dtypes.bfloat16), "sbuf")
v = apdsl.ndarray((16, 4), "bfloat16", "sbuf")
i = apdsl.ndarray((16, 4), "uint32", "sbuf")
from apdsl.runtime.nki.topk import topk
topk(v, i, x, n=7)
"""),
    entry("APK936", "topk's order of results is apdsl's (warning)", """
`nisa.topk` writes the K largest values of each 16-partition snake, and their indices, back as
a snake. Which result lands at which position is not documented consistently: the docstring
says each partition gets them "in ascending order", and nki-library's gpsimd_topk kernel says
the hardware's order within the snake differs from a plain ascending snake (and from AWS's
simulator), so it uses the results as a set of (value, index) pairs. apdsl writes an ascending
snake and warns once per call site: the values and indices are right as a set, their positions
are apdsl's. Sort the results, or use them as a set, where the order matters.
""", """
# python
import ml_dtypes
x = apdsl.from_numpy(np.ones((16, 1), ml_dtypes.bfloat16), "sbuf")
v = apdsl.ndarray((16, 4), "bfloat16", "sbuf")
i = apdsl.ndarray((16, 4), "uint32", "sbuf")
from apdsl.runtime.nki.topk import topk
topk(v, i, x, n=8)
"""),
    entry("APK938", "NkiInstruction.depends_on is not modelled", """
An `nisa` instruction call returns its `nisa.NkiInstruction` handle, and the reference's
`c.depends_on(b, ...)` makes c wait for each producer with a hardware semaphore. apdsl runs
instructions in program order, so the values never depend on such an edge, and its profile
orders instructions by their data (read after write, write after read or write) and each
engine's program order; it has no explicit edges, so `depends_on` stops here, naming the
instructions, rather than leaving the edge out of the timeline silently. A producer that is not
an `NkiInstruction` is this error too.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl

@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    b = nisa.dma_copy(dst=t, src=a)
    nisa.tensor_copy(dst=t, src=t).depends_on(b)
    return a

k(np.zeros((128, 4), np.float32))
"""),
    entry("APK930", "sequence_bounds arguments", """
`nisa.sequence_bounds(dst, segment_ids)` takes a tile of one partition (its docstring: "the
partition dimension must always be 1"), float32 or int32, and writes two values per ID into
dst (the starts, then the ends: a (1, 2, n) tile for n IDs). Every ID must be a non-negative
integer; 0 marks padding (start n, end -1).
""", """
# python
ids = apdsl.from_numpy(np.array([[1, 1, 2], [3, 3, 0]], np.int32), "sbuf")
d = apdsl.ndarray((2, 6), "int32", "sbuf")
from apdsl.runtime.nki.sequence import sequence_bounds
sequence_bounds(d, ids)
"""),
    entry("APK931", "nc_n_gather / nl.gather_flattened arguments", """
`nisa.nc_n_gather(dst, data, indices)` gathers, in each partition, the flattened free elements
of `data` at the uint32 `indices` of that partition; `dst` has data's dtype and one element per
index. Every index must lie in [0, data's elements a partition): the docs define no result for
another (the legacy reference: "garbage"), so apdsl stops there. `nl.gather_flattened` issues
it; its `axis` has no documented meaning beyond the default.
""", """
# python
x = apdsl.from_numpy(np.ones((2, 4), np.float32), "sbuf")
i = apdsl.from_numpy(np.array([[0, 4], [1, 2]], np.uint32), "sbuf")
d = apdsl.ndarray((2, 2), "float32", "sbuf")
from apdsl.runtime.nki.gather import nc_n_gather
nc_n_gather(d, x, i)
"""),
    entry("APK932", "dma_compute arguments", """
`nisa.dma_compute(dst, srcs, reduce_op)` adds its sources element by element in float32 with
the DMA engines: the reference supports only `reduce_op=nl.add`, scales of 1.0 (or none), at
most 16 sources, and with an indirect operand (`vector_offset`) exactly two sources with
`unique_indices=True`. The legacy `dma_copy(..., dst_rmw_op=np.add)` is the same instruction
(sources dst and src) and takes only `np.add`.
""", """
# python
a = apdsl.from_numpy(np.ones((2, 4), np.float32), "sbuf")
d = apdsl.ndarray((2, 4), "float32", "sbuf")
from apdsl.runtime.nki.dma_compute import dma_compute
dma_compute(d, [a, a], apdsl.operator("multiply"))
"""),
    entry("APK926", "nl.broadcast_to or a shared constant that cannot be made", """
`nl.broadcast_to(x, shape)` follows NumPy: the same rank, each dimension equal to x's or
broadcast from 1. apdsl broadcasts a tile across partitions with the Tensor Engine (a ones
row times the tile, exact; an integer tile through float32 in 16-bit pieces, bit for bit).
`nl.shared_constant` takes a NumPy array or a `.npy` file, and `nl.shared_identity_matrix(n)`
an n of 1 to 128.
""", """
# python
import apdsl.nki.language as nl
nl.shared_identity_matrix(500)
"""),
]
