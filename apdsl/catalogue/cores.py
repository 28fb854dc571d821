"""APK583-APK590: Ascend cores (SPEC 17): races between cores, the AIC/AIV split, cross-core
flags, deadlocks between cores, the launch shape."""

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
]
