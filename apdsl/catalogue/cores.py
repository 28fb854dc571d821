"""APK583-APK597: Ascend cores (SPEC 17): races between cores, the AIC/AIV split, cross-core
flags, deadlocks between cores, the launch shape; TPipe/TQue/TBuf misuse; scalar access."""

from __future__ import annotations

from . import entry

# One AI core's vector work: zero a UB tile and store it to GM (V, then MTE3).
_STORE = """    u = ndarray((8,), f32, ub)
    memset(u, 0)
    set_flag("V_MTE3", 0)
    wait_flag("V_MTE3", 0)
"""

ENTRIES = [
    entry("APK583", "data race between cores", """
A kernel launched on n AI cores (`kernel[n](...)`, `apdsl run --grid N`) runs once per core,
and the cores run concurrently: each has its own L1, L0, UB, pipes and flags, and GM is shared.
Two accesses to overlapping GM bytes from different cores, at least one a write, race unless
a cross-core flag or `sync_all()` orders them.  The error points at both instructions, names
both cores and pipes, and the help names the flag that would order them: mode 0 for cores of
one kind (every AIC, or every AIV), mode 1 for the two AIVs of an AI core, mode 2 for an AIC and
its AIVs (`cross_core_set_flag(flag_id, mode_id, pipe)` after the earlier access, on its
pipe; `cross_core_wait_flag(flag_id, mode_id)` before the later one).  Give each core its own
part of the output (`get_block_idx()`), or order the cores.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    C = ndarray((8,), f32, gm)
""" + _STORE + """    dma_copy(C, u)          # every core writes all of C
    return C

A = ndarray((8,), f32, gm)
C = k[2](A)
"""),
    entry("APK584", "the AIC/AIV split asked for too late", """
A kernel that asks which part of the AI core it runs on (`ascend_is_aic()`, `ascend_is_aiv()`,
`get_sub_block_idx()`, a mode 1 or 2 cross-core flag, `sync_all(is_aiv_only=False)`) runs on
each AI core as one AIC and two AIVs; one that never asks runs once per AI core.  The first
core decides, when it first asks, waits or ends.  Here it waited (`sync_all()`) before asking,
so the launch was already one of whole cores when another core asked.  Ask before the first
cross-core wait, on every core.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    asc.sync_all()
    if asc.ascend_is_aiv():
        pass
    return A

A = ndarray((8,), f32, gm)
C = k[2](A)
"""),
    entry("APK585", "an instruction on a pipe the core does not have", """
On Atlas A2 an AI core is one cube core (AIC: pipes MTE1, MTE2, M, FIX; L1 and L0) and two
vector cores (AIV: MTE2, MTE3, V; a UB each).  In a kernel split into AIC and AIV parts, vector
work (pipe V, MTE3) on the AIC, or cube work (MTE1, M, FIX) on an AIV, is an error: put it
under `if ascend_is_aiv():` or `if ascend_is_aic():`.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    if asc.ascend_is_aic():
        u = ndarray((8,), f32, ub)
        memset(u, 0)       # vector work on the cube core
    return A
"""),
    entry("APK586", "invalid cross-core synchronisation", """
`cross_core_set_flag(flag_id, mode_id, pipe)` and `cross_core_wait_flag(flag_id, mode_id=0,
pipe="S")` (pyasc's names and parameters) take a flag id 0-15 and a mode of Atlas A2: 0
(every AIC, or every AIV, of the launch), 1 (the two AIVs of an AI core), 2 (an AIC and its
AIVs).  The set's pipe is the pipe whose earlier work the flag releases: V, M, MTE1, MTE2,
MTE3 or FIX (not S, not ALL), and one the core has.  They act between the cores of a kernel
launch; `sync_all()` on an AIC of a split kernel needs `is_aiv_only=False`.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    asc.cross_core_set_flag(16, 0, "MTE3")
    return A
"""),
    entry("APK587", "cross-core flag counter past 15", """
Each cross-core flag id is a counter per core, 0-15: a round of sets adds one on the cores it
releases, a wait takes one.  Setting a flag a 16th time before its waiter has taken any raises
an exception on hardware (the CrossCoreSetFlag docs); wait for the flag between sets.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    if asc.ascend_is_aic():
        for i in range(16):
            asc.cross_core_set_flag(0, 2, "FIX")
    return A
"""),
    entry("APK588", "deadlock between cores", """
A cross-core wait (`cross_core_wait_flag`, `sync_all`) blocks its core until the flag's
counter is non-zero.  When every core that has not ended waits, and none of the cores still
running will set what they wait for, the launch never ends: the error names every waiting
core and where it waits.  A set of mode 0 counts only when every core of the kind has set the
flag; of mode 2 on the AIVs, only when both have.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    asc.cross_core_wait_flag(0)
    return A
"""),
    entry("APK589", "cross-core flag set but never waited for", """
A warning: at the end of the launch a core's cross-core flag counter is still above zero (it
was set more often than it was waited for), or a round of a flag was set by some cores of its
group and never by the others.  The docs ask for sets and waits in pairs; a leftover set is
usually a missing wait.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    if asc.ascend_is_aic():
        asc.cross_core_set_flag(0, 2, "FIX")
    return A
"""),
    entry("APK590", "launch shape of an Ascend kernel", """
An Ascend kernel launches on n AI cores (AscendC's numBlocks, `kernel<<<n, ...>>>`; pyasc's
`kernel[n, stream]`): `kernel[n](...)` or `apdsl run FILE --grid N` with n an int from 1 to
65535.  More cores than the chip has (20 on ascend-a2) run in rounds.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    return A

A = ndarray((8,), f32, gm)
C = k[70000](A)
"""),
    entry("APK591", "a TPosition without a queue buffer", """
A queue lives in the memory of its position: VECIN and VECOUT in UB, A1 and B1 in L1, A2 in L0A,
B2 in L0B, CO1 in L0C.  GM, C2 and CO2 have no queue buffer on Atlas A2 (Fixpipe writes CO1 to
GM directly).  A VECCALC queue (temporary buffers, as the AscendC API docs allocate them) runs
from the vector pipe to itself and orders nothing; `asc.TBuf` is the queue-less scratch buffer.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    q = asc.TQue(asc.TPosition.GM, 1)
    return A
"""),
    entry("APK592", "a queue or buffer without its memory", """
`pipe.init_buffer(que, num, len)` gives a queue `num` buffers (at most 8 on Atlas A2, one
event id each) of `len` bytes; `pipe.init_buffer(tbuf, len)` a TBuf its bytes.  A queue used
before `init_buffer`, given twice, or given sizes that are not positive ints is an error.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    q = asc.TQue(asc.TPosition.VECIN, 1)
    x = q.alloc_tensor(f32)
    return A
"""),
    entry("APK593", "alloc_tensor with every buffer in use", """
`alloc_tensor` takes the queue's next free buffer; a buffer is free again after `free_tensor`.
With every buffer allocated, enqueued or dequeued and not freed, there is none to give: free a
tensor of the queue first (the consumer frees each tensor it dequeued), or give the queue more
buffers (2 for double buffering).
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 32)
    x = q.alloc_tensor(f32)
    y = q.alloc_tensor(f32)
    return A
"""),
    entry("APK594", "more tensors enqueued than the queue's depth", """
A queue's depth is how many tensors it holds at once: `enque` of one more than the depth
without a `deque` between is an error (the TQue docs: n enqueues in a row need depth n).
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 2, 32)
    x = q.alloc_tensor(f32)
    y = q.alloc_tensor(f32)
    dma_copy(x, A)
    dma_copy(y, A)
    q.enque(x)
    q.enque(y)
    return A
"""),
    entry("APK595", "a tensor not in the state the queue call needs", """
`enque` takes a tensor the queue allocated and that is not enqueued yet; `free_tensor` one of
the queue's tensors that is not still in the queue (deque it first); a tensor another queue
allocated, or one already freed, is neither.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 32)
    x = q.alloc_tensor(f32)
    dma_copy(x, A)
    q.enque(x)
    q.free_tensor(x)
    return A
"""),
    entry("APK596", "deque of an empty queue", """
`deque` hands the consumer the oldest enqueued tensor; on hardware it waits for the producer's
EnQue event, so a deque with nothing enqueued waits forever: a deadlock.  The note names the
tensor that was allocated and never enqueued.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 32)
    x = q.alloc_tensor(f32)
    dma_copy(x, A)
    y = q.deque(f32)
    return A
"""),
    entry("APK597", "invalid scalar access", """
`t.get_value(offset)` and `t.set_value(offset, value)` read and write one element on the scalar
unit (pipe S), as AscendC's GetValue/SetValue: `offset` counts elements in the tensor's
row-major order (or is a coordinate tuple) and must lie inside it; the value is a number.
""", """kernel k(A: f32[8] @ gm) -> f32[8] @ gm:
    x = A.get_value(8)
    return A
"""),
]
