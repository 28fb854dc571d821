"""Instructions on kept plans hand the sync checker its plan (`trace.record_kept`): the
checker still sees every access, so a race that only appears once the plans are kept is
reported at both lines, and the trace is the one `trace.record` makes."""

from __future__ import annotations

import numpy as np
import pytest
from support import raises_code

from apdsl.runtime.core import trace
from apdsl.semantics.program import Program

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

# A tile moved to L0A/L0B and multiplied, four times, ping-ponged by events; on trip SKIP the
# product's wait for the moves is left out.
LOOP = """\
kernel k(A: f16[16, 16] @ gm) -> f32[16, 16] @ gm:
    C = ndarray((16, 16), f32, gm)
    a1 = ndarray((16, 16), f16, l1, "NZ")
    b1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    b0 = ndarray((16, 16), f16, l0b, "ZN")
    c0 = ndarray((16, 16), f32, l0c, "NZ")
    dma_copy(a1, A)
    dma_copy(b1, A)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    set_flag("M_MTE1", 0)
    for k in range(4):
        wait_flag("M_MTE1", 0)
        dma_copy(a0, a1)
        dma_copy(b0, b1)
        set_flag("MTE1_M", 0)
        if k != SKIP:
            wait_flag("MTE1_M", 0)
        mmad(c0, a0, b0, accumulate=k > 0)
        set_flag("M_MTE1", 0)
        if k == SKIP:
            wait_flag("MTE1_M", 0)
    wait_flag("M_MTE1", 0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    dma_copy(C, c0)
    return C
"""
MMAD = LOOP.splitlines().index("        mmad(c0, a0, b0, accumulate=k > 0)") + 1
MOVE_A = LOOP.splitlines().index("        dma_copy(a0, a1)") + 1


def run(skip: int, traced: bool = False):
    a = np.arange(256, dtype=np.float16).reshape(16, 16) / 64
    return Program(LOOP.replace("SKIP", str(skip)), "loop.apk").run("k", {"A": a}, trace=traced)


def test_kept_plans_compute_the_product_and_skip_the_general_record(monkeypatch):
    seen = []
    real = trace.record
    monkeypatch.setattr(trace, "record", lambda op, *a, **k: (seen.append(op), real(op, *a, **k)))
    a = np.arange(256, dtype=np.float16).reshape(16, 16).astype(np.float32) / 64
    got = run(-1).value.numpy()
    np.testing.assert_allclose(got, 4 * (a @ a), rtol=1e-6)
    # the first trip records through trace.record; the later ones hand their kept plans over
    assert seen.count("mmad") < 4 and seen.count("dma_copy") < 2 + 2 * 4


@pytest.mark.parametrize("skip", [1, 3])
def test_a_race_on_kept_plans_is_reported_at_both_lines(skip):
    with raises_code("APK570") as err:
        run(skip)
    e = err.value
    assert "read-after-write" in str(e) and "mmad" in str(e)
    assert e.span.line == MMAD
    assert any(label.span.line == MOVE_A for label in e.labels)


def test_the_trace_of_kept_plans_is_the_general_one():
    records = run(-1, traced=True).trace
    ops = [r.op for r in records if r.op in ("dma_copy", "mmad")]
    assert ops == ["dma_copy"] * 2 + ["dma_copy", "dma_copy", "mmad"] * 4 + ["dma_copy"]
    assert all(r.order is not None for r in records if r.op in ("dma_copy", "mmad"))
