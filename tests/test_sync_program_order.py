"""The sync checker's cheap test relies on program order: an earlier access of the same pipe
(but V) is always ordered before a later instruction of that pipe, by its clock; V needs a
barrier.  And an instruction that races records none of its accesses (its other operands were
checked, not kept), so a program that catches the error goes on as if it never ran."""

from __future__ import annotations

import numpy as np
from support import raises_code

import apdsl
from apdsl.semantics.program import Program

# One pipe (MTE2) writes a1 again and again with no event, and MTE1 reads it after an event:
# program order on MTE2 and the event order everything (kept plans from the second trip).
SAME_PIPE = """\
kernel k(A: f16[16, 16] @ gm) -> f16[16, 16] @ gm:
    a1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    set_flag("MTE1_MTE2", 0)
    for k in range(4):
        wait_flag("MTE1_MTE2", 0)
        dma_copy(a1, A)
        dma_copy(a1, A)
        set_flag("MTE2_MTE1", 0)
        wait_flag("MTE2_MTE1", 0)
        dma_copy(a0, a1)
        dma_copy(a0, a1)
        set_flag("MTE1_MTE2", 0)
    wait_flag("MTE1_MTE2", 0)
    return A  # the copies are the subject: no result is computed
"""


def test_one_pipe_in_program_order_needs_no_event_across_trips():
    a = np.ones((16, 16), np.float16)
    assert Program(SAME_PIPE, "k.apk").run("k", {"A": a}).warnings == []


# Vector instructions in a loop: the copy reads u after a barrier; on V the next trip's memset
# needs one too (END), or it may overwrite u while the copy still reads it.
VECTOR = """\
kernel k(A: f16[16, 16] @ gm) -> f16[16, 16] @ gm:
    C = ndarray((16, 16), f16, gm)
    u = ndarray((16, 16), f16, ub)
    w = ndarray((16, 16), f16, ub)
    for k in range(3):
        memset(u, 1)
        pipe_barrier("V")
        dma_copy(w, u)
        END
    set_flag("V_MTE3", 0)
    wait_flag("V_MTE3", 0)
    dma_copy(C, w)
    return C
"""
LINES = VECTOR.splitlines()
MEMSET = LINES.index("        memset(u, 1)") + 1
COPY = LINES.index("        dma_copy(w, u)") + 1


def test_vector_instructions_of_a_loop_race_without_a_barrier_at_both_lines():
    a = np.zeros((16, 16), np.float16)
    ok = Program(VECTOR.replace("END", 'pipe_barrier("V")'), "k.apk").run("k", {"A": a})
    assert ok.warnings == [] and (ok.value.numpy() == 1).all()
    with raises_code("APK571") as err:
        Program(VECTOR.replace("END", "k = k"), "k.apk").run("k", {"A": a})
    e = err.value
    assert "write-after-read" in str(e) and "memset" in str(e)
    assert e.span.line == MEMSET
    assert any(label.span.line == COPY for label in e.labels)


def test_an_instruction_that_races_records_none_of_its_accesses():
    with apdsl.pipes():
        u = apdsl.ndarray((16, 16), "float16", "ub")
        w = apdsl.ndarray((16, 16), "float16", "ub")
        apdsl.memset(u, 1)
        # dst w passes its check, src u races with the memset: w's write is not kept
        with raises_code("APK571"):
            apdsl.dma_copy(w, u)
        apdsl.memset(w, 2)  # would race with the copy's write of w, had it been kept
        apdsl.pipe_barrier("V")
        apdsl.dma_copy(w, u)  # ordered now
    assert (w.numpy() == 1).all()
