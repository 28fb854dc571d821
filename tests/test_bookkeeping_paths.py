"""The per-instruction bookkeeping on its fast paths (issue 16): operands resolved from the
access kept on each view, written state forgotten and counted without a table entry per
storage.  The checks they feed report what they reported before: freed storage (APK408),
unwritten reads (APK404), duplicate writes (APK405), and results equal NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from support import raises_code

import apdsl
from apdsl.runtime.core import written

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

F16 = "float16"


@pytest.mark.parametrize("other_counted", [False, True])
def test_a_rebound_tile_counts_only_what_was_written_since(other_counted):
    # half the buffer written, the tile bound again (all unwritten), the other half written:
    # the storage is not whole, so reading the tile reports the first half as unwritten
    buf = apdsl.ndarray((32, 16), F16, "ub")
    g = apdsl.from_numpy(np.arange(512, dtype=np.float16).reshape(32, 16), "gm")
    out = apdsl.ndarray((32, 16), F16, "gm")
    other = apdsl.ndarray((32, 16), F16, "ub")
    if other_counted:  # another storage partly written all along: its count is kept
        apdsl.dma_copy(other[0:8, :], g[0:8, :])
    for _ in range(3):  # again and again on the same views (their accesses kept)
        apdsl.dma_copy(buf[0:16, :], g[0:16, :])
        tile = apdsl.make_tensor_like(buf, g, "ND")
        assert not written.has_written(buf.storage)
        apdsl.dma_copy(buf[16:32, :], g[16:32, :])
        assert written.has_written(buf.storage) and not buf.storage.all_written
        with raises_code("APK404") as err:
            apdsl.dma_copy(out, tile)
        assert err.value.facts["coord"] == (0, 0)
    apdsl.dma_copy(buf[0:16, :], g[0:16, :])
    apdsl.dma_copy(out, tile)  # now whole
    np.testing.assert_array_equal(out.numpy(), g.numpy())
    assert buf.storage.all_written
    # written whole at once, bound again, half written: the other half is unwritten
    for _ in range(2):
        apdsl.dma_copy(buf, g)
        tile = apdsl.make_tensor_like(buf, g, "ND")
        assert not written.has_written(buf.storage)
        apdsl.dma_copy(buf[0:16, :], g[0:16, :])
        with raises_code("APK404") as err:
            apdsl.dma_copy(out, tile)
        assert err.value.facts["coord"] == (16, 0)
    if other_counted:
        assert written.has_written(other.storage) and not other.storage.all_written
        apdsl.dma_copy(other[8:32, :], g[8:32, :])  # the rest: whole now
        assert other.storage.all_written


def test_cached_operands_still_refuse_freed_storage_and_duplicate_writes():
    a = apdsl.from_numpy(np.ones((4, 8), np.float32), "sbuf")
    d = apdsl.ndarray((4, 8), "float32", "sbuf")
    for _ in range(2):
        apdsl.tensor_copy(d, a)  # resolved, then found on the views
    np.testing.assert_array_equal(d.numpy(), a.numpy())
    twice = apdsl.ndarray((4, 8), "float32", "sbuf").ap([[8, 4], [0, 8]])
    for _ in range(2):
        with raises_code("APK405"):
            apdsl.tensor_copy(twice, a)
    a.storage.free()
    for _ in range(2):
        with raises_code("APK408"):
            apdsl.tensor_copy(d, a)


@pytest.mark.parametrize("check", [False, True])
def test_check_mode_resolves_without_reading(check):
    a = apdsl.from_numpy(np.full((4, 8), 3, np.float32), "sbuf")
    d = apdsl.ndarray((4, 8), "float32", "sbuf")
    apdsl.tensor_copy(d, a)  # the accesses are kept on the views
    from apdsl.runtime.core.operands import resolve_operands
    from apdsl.tensor.machine import current
    m = current()
    was = m.check
    m.check = check
    try:
        got = resolve_operands("tensor_copy", 16, ("src", a), ("dst", d))
    finally:
        m.check = was
    if check:
        assert got is None  # check mode returns nothing to execute
    else:
        assert [x.storage for x in got] == [a.storage, d.storage]
