"""Groups of ranks (APK965-APK971, APK973): `nki.collectives`, `nisa.sendrecv` and `nisa.core_barrier`
on a simulated group of ranks (`apdsl run FILE.py --ranks N`, `apdsl.nki.simulate_ranks`)."""

from . import entry

_KERNELS = '''
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
import apdsl.nki.collectives as ncc
'''

ENTRIES = [
    entry("APK965", "deadlock between ranks", """
The ranks of a group meet at each collective: a rank's k-th collective over a replica group
meets the k-th of every other rank of that group (and `sendrecv` waits for its peer's message,
`core_barrier` for the other core). When every rank still running waits and none can go on,
the run stops here, naming the ranks that wait, where, and the ranks that ended without
arriving. The usual cause is a collective that only some ranks call (under an `if` on the
rank), or ranks calling collectives in different orders.
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=a)
    if ncc.rank_id().value == 0:
        ncc.all_reduce(srcs=[a], dsts=[t], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
    return t
nki.simulate_ranks(k, 2, np.ones((4, 4), np.float32))
"""),
    entry("APK966", "ranks disagree at a collective", """
The ranks meeting at one collective give tensors of the same shapes and dtypes and the same
arguments (op, collective_dim, pairs); only the data differs. The error is located on the rank
whose call differs from the others' (the most common form is taken as the intended one), and
says what it gave and what another rank gave.
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[a], dsts=[t], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
    return t
nki.simulate_ranks(k, 2, per_rank=lambda r: ((np.ones((4, 4 + r), np.float32),), {}))
"""),
    entry("APK967", "the replica group and the run's ranks disagree", """
A collective's replica group names ranks the run does not have (a kernel run on its own is rank
0 of 1), or leaves the rank under way out; `sendrecv` and `core_barrier` join ranks 0 and 1,
so they need a group of two. Run the kernel on a group: `apdsl run FILE.py --ranks N`, or
`apdsl.nki.simulate_ranks(kernel, N, ...)`. `ReplicaGroup` takes lists of ranks that do not
overlap.
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[a], dsts=[t], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
    return t
k(np.ones((4, 4), np.float32))
"""),
    entry("APK968", "a collective's operands or arguments", """
The rules of the `nki.collectives` reference: `srcs` and `dsts` are lists of tensors, one dst
per src, all in HBM or all in SBUF (never mixed, never PSUM); several tensors in one call
(coalesced) only in HBM; `all_to_all` and `collective_permute` move HBM tensors only;
`collective_dim` is 0 for HBM tensors (all_gather on SBUF also takes 1); reductions take
`nl.add`, `nl.minimum` or `nl.maximum`; `sendrecv` moves SBUF tiles between ranks 0 and 1
(NeuronCore-v3 on); `core_barrier` takes `cores=(0, 1)` and its `data` in HBM or SBUF, never
PSUM (its docstring says shared HBM, nki-library's moe_cte passes an SBUF tile; the barrier
orders the two cores the same either way).
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[a], dsts=[t], replica_group=ncc.ReplicaGroup([[0]]), op=nl.multiply)
    return t
k(np.ones((4, 4), np.float32))
"""),
    entry("APK969", "a collective's destination shape", """
Each collective writes a destination of a shape its source decides: `all_reduce`,
`all_to_all` and the permutes write the source's shape; `all_gather` over k ranks multiplies
the `collective_dim` by k; `reduce_scatter` divides it by k (it must divide). Source and
destination have one dtype.
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[a], dsts=[t], replica_group=ncc.ReplicaGroup([[0, 1]]),
                   collective_dim=0)
    return t
nki.simulate_ranks(k, 2, np.ones((4, 4), np.float32))
"""),
    entry("APK970", "variable-length collective not simulated", """
`all_gather_v` and `all_to_all_v` take their per-rank counts and displacements from a metadata
tensor at run time, with hardware restrictions (LNC=2, four ranks per list, intra- or
inter-node groups) that apdsl does not model yet, so a kernel using one stops there.
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_gather_v(srcs=[a], dsts=[t], replica_group=ncc.ReplicaGroup([[0]]),
                     metadata_tensor=a)
    return t
k(np.ones((4, 4), np.float32))
"""),
    entry("APK971", "simulate_ranks arguments", """
`apdsl.nki.simulate_ranks(kernel, n, *args, **kwargs)` runs `kernel` on n ranks (n an int of at
least 1) with the same arguments on every rank; `simulate_ranks(kernel, n, per_rank=f)` gives
rank r the arguments `f(r)`, a pair `(args, kwargs)`. Giving both is this error.
""", """
# python
import apdsl.nki as nki
@nki.jit
def k(a):
    return a
nki.simulate_ranks(k, 0, np.ones((4, 4), np.float32))
"""),
    entry("APK973", "race between the two programs of an LNC=2 launch", """
The two programs of an LNC=2 launch (`kernel[2]`) run at the same time on the two NeuronCores
of one logical core, and share its HBM. Only `nisa.core_barrier` and `nisa.sendrecv` order what
one does before them against what the other does after them. apdsl runs the programs by turns,
which is one order of many, so it stops at the first access whose outcome depends on the
order: a program writing bytes the other wrote since they last met (with other values: both
writing one value is no race), reading bytes the other wrote (unless it wrote the same value
there too, or the other's write put back the value it had read there, as a copy of a tensor
onto itself does), or writing other values into bytes the other read. The error is at the later
access in apdsl's turns; the label shows the other program's access. Put a
`core_barrier(data, (0, 1))` between the two in both programs, or give each program its own
part of the tensor.
""", """
# python""" + _KERNELS + """
@nki.jit
def k(a):
    me = nl.program_id(0)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=me)
    nisa.dma_copy(dst=out, src=t)  # both programs write all of out, with other values
    return out
k[2](np.ones((4, 4), np.float32))
"""),
]
