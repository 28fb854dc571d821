"""Issue 22: an Ascend race between a copy and an earlier tensor whose freed bytes a new tensor
reuses names both tensors, says it is a reuse, and (in a loop) the iteration."""

from __future__ import annotations

import pytest

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

LOOP = """\
kernel k(A: f16[2, 32, 32] @ gm) -> f16[32, 32] @ gm:
    a0 = ndarray((32, 32), f16, l0a, "ZZ")
    for i in range(2):
        a1: f16[32, 32] @ l1 as NZ
        dma_copy(a1, A[i, :, :])
        set_flag("MTE2_MTE1", 0)
        wait_flag("MTE2_MTE1", 0)
        dma_copy(a0, a1)
    return A[0, :, :]
"""

AFTER = """\
kernel k(A: f16[2, 32, 32] @ gm) -> f16[32, 32] @ gm:
    a0 = ndarray((32, 32), f16, l0a, "ZZ")
    for i in range(1):
        x1: f16[32, 32] @ l1 as NZ
        dma_copy(x1, A[0, :, :])
        set_flag("MTE2_MTE1", 0)
        wait_flag("MTE2_MTE1", 0)
        dma_copy(a0, x1)
    y1: f16[32, 32] @ l1 as NZ
    dma_copy(y1, A[1, :, :])
    return A[0, :, :]
"""


def _race(tmp_path, text):
    (tmp_path / "k.apk").write_text(text)
    with pytest.raises(ApdslError) as e:
        Program.from_path(str(tmp_path / "k.apk")).run(None, {})
    return e.value


def test_the_previous_iterations_tensor_is_named_with_the_reuse_and_the_iteration(tmp_path):
    e = _race(tmp_path, LOOP)
    assert e.code == "APK570" and e.span.line == 5 and e.labels[0].span.line == 8
    assert e.message.endswith("may still read them as the earlier a1")
    notes = " ".join(e.notes)
    assert "a1 of this iteration reuses the bytes a1 had in an earlier iteration" in notes
    assert "i = 1" in notes


def test_a_new_tensor_on_freed_bytes_names_both(tmp_path):
    e = _race(tmp_path, AFTER)
    assert e.code == "APK570" and e.span.line == 10 and e.labels[0].span.line == 8
    assert "writes y1" in e.message and e.message.endswith("as x1")
    notes = " ".join(e.notes)
    assert "y1 (declared at line 9) reuses the bytes of x1 (declared at line 4)" in notes


def test_a_race_on_one_tensor_says_nothing_of_reuse(tmp_path):
    text = LOOP.replace("    for i in range(2):\n        a1: f16[32, 32] @ l1 as NZ\n",
                        "    a1: f16[32, 32] @ l1 as NZ\n    for i in range(2):\n")
    e = _race(tmp_path, text)
    assert e.code == "APK570" and "reuses" not in " ".join(e.notes)
    assert e.message.endswith("may still read them")
