"""APK570-APK579: Ascend pipes and events (SPEC section 13): data races, deadlocks, invalid
events and barriers, flags never waited for."""

from __future__ import annotations

from . import entry

# A GM -> L1 -> L0A load as a kernel; each example breaks one synchronisation rule.
_HEAD = """kernel k(A: f16[16, 16] @ gm) -> f16[16, 16] @ gm:
    a1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
"""

ENTRIES = [
    entry("APK570", "data race between two pipes", """
Inside a kernel that uses Ascend buffers every instruction runs on its pipe (MTE2: GM -> L1,
UB, L0A, L0B; MTE1: L1 -> L0A/L0B and L1/L0 InitConstValue; M: mmad; FIX: L0C -> GM/L1; MTE3:
UB -> GM; V: vector work, UB memset, UB -> UB), and the pipes run concurrently.  Two accesses to
overlapping bytes from different pipes, at least one a write, race unless events order them:
`set_flag("SRC_DST", id)` on the earlier instruction's pipe after it, `wait_flag("SRC_DST",
id)` on the later one's pipe before it.  The error points at both instructions, names both
pipes, the tensor and the bytes, and the help names the event.  Read-after-write,
write-after-read (a double-buffered loop refilling a buffer the cube unit still reads) and
write-after-write are all races.  `--sync off` runs as if every instruction waited for all
earlier ones.
""", _HEAD + """    dma_copy(a1, A)
    dma_copy(a0, a1)
    return A
"""),
    entry("APK571", "dependent vector instructions without a barrier", """
On the V pipe instructions are issued in order but may overlap: two dependent vector
instructions (a write and a later read or write of the same bytes) need `pipe_barrier("V")`
(or `"ALL"`, or a `V_V` event) between them, as the AscendC PipeBarrier docs say.
""", """kernel k(A: f16[16, 16] @ gm) -> f16[16, 16] @ gm:
    u = ndarray((16, 16), f16, ub)
    w = ndarray((16, 16), f16, ub)
    memset(u, 1)
    dma_copy(w, u)
    return A
"""),
    entry("APK572", "unknown hard event", """
`set_flag` and `wait_flag` take one of AscendC's `HardEvent` names, SRC_DST: the source pipe
sets the flag and the destination pipe waits for it (`"MTE2_MTE1"`, `"MTE1_M"`, `"M_MTE1"`,
`"MTE1_MTE2"`, `"M_FIX"`, `"FIX_M"`, `"MTE2_V"`, `"V_MTE3"`, `"MTE3_MTE2"`, ...: exactly the
enum of the SetFlag/WaitFlag docs).  The help names the closest names.
""", _HEAD + """    set_flag("MTE2_MTE", 0)
    return A
"""),
    entry("APK573", "event id out of range", """
An event id is an int in the target's range: 0-7 on ascend-a2 (the SetFlag/WaitFlag docs).
Each event name has its own ids (CATLASS uses ids 0 and 1 of `MTE1_MTE2` for A's ping-pong
buffers and 2 and 3 for B's).
""", _HEAD + """    set_flag("MTE2_MTE1", 8)
    return A
"""),
    entry("APK574", "flag set twice", """
A flag is one bit: a `set_flag` of an event id that is set and not yet waited for is an error
(the second set would be lost, and the second wait would hang).  Wait for it first, or use the
other id of a ping-pong pair.
""", _HEAD + """    set_flag("MTE2_MTE1", 0)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    return A
"""),
    entry("APK575", "wait for a flag nothing set: deadlock", """
`wait_flag` blocks its pipe until the flag is set and then clears it.  A wait with no matching
`set_flag` before it would wait forever.  CATLASS kernels pre-set the "buffer free" flags
(`MTE1_MTE2`, `M_MTE1`, `FIX_M`) before their loops so the first wait of each returns, and wait
for the last ones at the end.
""", _HEAD + """    wait_flag("MTE1_MTE2", 0)
    return A
"""),
    entry("APK576", "unknown pipe", """
`pipe_barrier` takes a pipe: `"V"`, `"M"`, `"MTE1"`, `"MTE2"`, `"MTE3"`, `"FIX"` or `"ALL"`
(`"ALL"` orders every pipe's earlier instructions before every later one).
""", _HEAD + """    pipe_barrier("VEC")
    return A
"""),
    entry("APK577", "pipe_barrier on the scalar pipe", """
The AscendC PipeBarrier docs: the scalar pipe's order is guaranteed by hardware, and a barrier
on PIPE_S raises a hardware error.  Remove it.
""", _HEAD + """    pipe_barrier("S")
    return A
"""),
    entry("APK578", "flag never waited for", """
A warning: a `set_flag` that nothing waits for by the end of the kernel.  SetFlag and WaitFlag
come in pairs (the SetFlag docs); a leftover flag is usually a missing wait, or a pre-set
"buffer free" flag whose final wait is missing after the loop.  The end of the kernel orders
everything, so it is not a race.
""", _HEAD + """    set_flag("MTE2_MTE1", 0)
    return A
"""),
]
