"""Ascend copy plans kept by value (apdsl.runtime.plans.ascend_plans.by_value / keep_value): a GM tile
of a loop is a new view at a new base offset, often of a new storage, and finds the plan another
tile of the same layout value made on the same on-chip view.  The oracle is NumPy and the full
path (the value plans switched off): the same bytes on chip, the same trace; every per-call
error is still raised with its code, and a tail never takes a full tile's plan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.ascend import dma as ascend
from apdsl.runtime.core import trace
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.plans import ascend_plans as plans

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

F16 = "float16"


@pytest.fixture
def built(monkeypatch):
    """How many Ascend copy plans were checked and built in full."""
    count = [0]
    full = ascend.copy_plan

    def counting(*args):
        count[0] += 1
        return full(*args)
    monkeypatch.setattr(ascend, "copy_plan", counting)
    return count


def _gm(shape, seed, dtype=np.float16):
    host = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    g = apdsl.ndarray(shape, str(np.dtype(dtype)), "gm")
    write_view(g, host)
    return g, host


def _nd2nz_tiles(a, buf, tm, tk):
    """Every tile of `a` copied GM -> L1 into `buf` (as the stdlib GEMM binds it); per tile the
    L1 tile's values and the whole L1 storage's bytes."""
    out = []
    for i in range(-(-a.shape[0] // tm)):
        for j in range(-(-a.shape[1] // tk)):
            tile = apdsl.tile_view(a, (i, j), (tm, tk))
            l1 = apdsl.make_tensor_like(buf, tile, "NZ", layout_base=buf)
            apdsl.dma_copy(l1, tile)
            out.append(((i, j), l1.numpy().copy(), np.asarray(buf.storage.data).copy()))
    return out


def test_full_gm_tiles_of_other_offsets_and_storages_share_one_plan(built):
    buf = apdsl.ndarray((32, 32), F16, "l1", "NZ")
    for seed in (1, 2):  # a second storage of the same shape takes the same plan
        a, host = _gm((64, 96), seed)
        for (i, j), got, _ in _nd2nz_tiles(a, buf, 32, 32):
            np.testing.assert_array_equal(got, host[32 * i:32 * i + 32, 32 * j:32 * j + 32])
    assert built[0] == 1


def test_fixpipe_into_gm_tiles_of_other_offsets_shares_one_plan(built):
    acc = apdsl.ndarray((32, 48), "float32", "l0c", "NZ")
    c = apdsl.ndarray((96, 96), "float32", "gm")
    want = np.zeros((96, 96), np.float32)
    rng = np.random.default_rng(3)
    for i in range(3):
        for j in range(2):
            values = rng.standard_normal((32, 48)).astype(np.float32)
            write_view(acc, values)
            apdsl.dma_copy(apdsl.tile_view(c, (i, j), (32, 48)), acc)
            want[32 * i:32 * i + 32, 48 * j:48 * j + 48] = values
    np.testing.assert_array_equal(c.numpy(), want)
    assert built[0] == 1


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 80), k=st.integers(1, 80), tm=st.sampled_from([16, 32]),
       tk=st.sampled_from([16, 32, 48]), seed=st.integers(0, 2**16))
def test_tiles_with_tails_equal_numpy_and_the_full_path(m, k, tm, tk, seed):
    """Tails (a tile clipped at the matrix edge) among full tiles: each tile's L1 values are
    NumPy's, and the L1 bytes after each copy (the Nd2Nz zero fill included) are the full
    path's."""
    a, host = _gm((m, k), seed)
    fast = _nd2nz_tiles(a, apdsl.ndarray((tm, tk), F16, "l1", "NZ"), tm, tk)
    with apdsl.options(plans=False):
        full = _nd2nz_tiles(a, apdsl.ndarray((tm, tk), F16, "l1", "NZ"), tm, tk)
    for ((i, j), got, data), (_, got_full, data_full) in zip(fast, full):
        want = host[tm * i:tm * i + tm, tk * j:tk * j + tk]
        np.testing.assert_array_equal(got[:want.shape[0], :want.shape[1]], want)
        np.testing.assert_array_equal(got, got_full)
        np.testing.assert_array_equal(data, data_full)


def test_a_tail_never_takes_a_full_tiles_plan():
    buf = apdsl.ndarray((32, 32), F16, "l1", "NZ")
    a, _ = _gm((40, 64), 4)
    full = apdsl.tile_view(a, (0, 0), (32, 32))
    l1 = apdsl.make_tensor_like(buf, full, "NZ", layout_base=buf)
    apdsl.dma_copy(l1, full)
    apdsl.dma_copy(l1, apdsl.tile_view(a, (0, 1), (32, 32)))  # by value
    tail = apdsl.tile_view(a, (1, 1), (32, 32))  # 8 valid rows, the same layout dims
    assert tail.layout.dims == full.layout.dims and tail.origin_shape != full.origin_shape
    assert plans.by_value(ascend.COPY_PLANS, l1, tail) is None
    with raises_code("APK525"):  # valid extents 32 x 32 and 8 x 32, as without plans
        apdsl.dma_copy(l1, tail)


def _warm(buf):
    a, _ = _gm((64, 64), 5)
    l1 = apdsl.make_tensor_like(buf, apdsl.tile_view(a, (0, 0), (32, 32)), "NZ",
                                layout_base=buf)
    apdsl.dma_copy(l1, apdsl.tile_view(a, (0, 0), (32, 32)))
    apdsl.dma_copy(l1, apdsl.tile_view(a, (1, 1), (32, 32)))
    return l1


def test_a_value_plan_still_refuses_freed_and_unwritten_gm_storage():
    buf = apdsl.ndarray((32, 32), F16, "l1", "NZ")
    l1 = _warm(buf)
    other, _ = _gm((64, 64), 6)
    other.storage.free()
    with raises_code("APK408"):
        apdsl.dma_copy(l1, apdsl.tile_view(other, (1, 0), (32, 32)))
    unwritten = apdsl.ndarray((64, 64), F16, "gm")
    with apdsl.options(init_check="strict"), raises_code("APK404"):
        apdsl.dma_copy(l1, apdsl.tile_view(unwritten, (0, 1), (32, 32)))
    with apdsl.options(init_check=False):
        apdsl.dma_copy(l1, apdsl.tile_view(unwritten, (0, 1), (32, 32)))
    acc = apdsl.ndarray((32, 32), "float32", "l0c", "NZ")
    c = apdsl.ndarray((64, 64), "float32", "gm")
    write_view(acc, np.ones((32, 32), np.float32))
    apdsl.dma_copy(apdsl.tile_view(c, (0, 0), (32, 32)), acc)
    apdsl.dma_copy(apdsl.tile_view(c, (0, 1), (32, 32)), acc)
    acc.storage.free()
    with raises_code("APK408"):
        apdsl.dma_copy(apdsl.tile_view(c, (1, 1), (32, 32)), acc)


def test_a_value_plan_does_not_keep_the_gm_storage_alive():
    import gc
    import weakref
    buf = apdsl.ndarray((32, 32), F16, "l1", "NZ")
    a, _ = _gm((64, 64), 7)
    l1 = apdsl.make_tensor_like(buf, apdsl.tile_view(a, (0, 0), (32, 32)), "NZ",
                                layout_base=buf)
    apdsl.dma_copy(l1, apdsl.tile_view(a, (0, 0), (32, 32)))
    alive = weakref.ref(a.storage)
    del a
    gc.collect()
    assert alive() is None


GEMM = """
from gemm import gemm

kernel matmul(A: f16[M, K] @ gm, B: f16[K, N] @ gm) -> f32[M, N] @ gm:
    C = ndarray((A.shape[0], B.shape[1]), f32, gm)
    gemm(A, B, C, 32, 48, 32, 64)
    return C
"""


def _traced_gemm(a, b):
    from apdsl.semantics.program import Program
    with trace.tracing() as t:
        got = Program(GEMM, "gemm.apk").run("matmul", {"A": a, "B": b}).value.numpy()
    ids: dict = {}
    return got, [(r.to_json(), r.engine, r.storages and {
        role: ids.setdefault(i, len(ids)) for role, i in r.storages.items()})
        for r in t.records]


def test_the_stdlib_gemm_with_value_plans_is_the_gemm_without():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((80, 150)).astype(np.float16)
    b = rng.standard_normal((150, 100)).astype(np.float16)
    fast, fast_trace = _traced_gemm(a, b)
    with apdsl.options(plans=False):
        full, full_trace = _traced_gemm(a, b)
    np.testing.assert_array_equal(fast, full)
    np.testing.assert_allclose(fast, a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-4, atol=1e-3)
    assert fast_trace == full_trace


# GM tiles copied into one L1 tile and moved on to L0A, ping-ponged by events; on trip SKIP the
# move's wait for the copy is left out (that trip's copy runs on a plan made by value).
RACE = """\
kernel k(A: f16[64, 16] @ gm):
    a1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    set_flag("MTE1_MTE2", 0)
    for r in range(4):
        t = tile_view(A, (r, 0), (16, 16))
        wait_flag("MTE1_MTE2", 0)
        dma_copy(a1, t)
        set_flag("MTE2_MTE1", 0)
        if r != SKIP:
            wait_flag("MTE2_MTE1", 0)
        dma_copy(a0, a1)
        set_flag("MTE1_MTE2", 0)
        if r == SKIP:
            wait_flag("MTE2_MTE1", 0)
    wait_flag("MTE1_MTE2", 0)
"""


def _race(skip: int) -> None:
    from apdsl.semantics.program import Program
    a = np.arange(1024, dtype=np.float16).reshape(64, 16)
    Program(RACE.replace("SKIP", str(skip)), "race.apk").run("k", {"A": a})


def test_a_race_on_a_copy_by_a_value_plan_is_reported_at_both_lines(built):
    _race(-1)
    assert built[0] == 2  # Nd2Nz once (the other tiles by value), LoadData once
    lines = RACE.splitlines()
    for skip in (1, 3):
        with raises_code("APK570") as err:
            _race(skip)
        e = err.value
        assert "read-after-write" in str(e)
        assert e.span.line == lines.index("        dma_copy(a0, a1)") + 1
        assert any(label.span.line == lines.index("        dma_copy(a1, t)") + 1
                   for label in e.labels)


def test_a_value_plan_hands_the_sync_checker_its_own_plan():
    buf = apdsl.ndarray((32, 32), F16, "l1", "NZ")
    l1 = _warm(buf)
    a, _ = _gm((64, 64), 9)
    tile = apdsl.tile_view(a, (1, 0), (32, 32))
    apdsl.dma_copy(l1, tile)
    plan = plans.lookup(ascend.COPY_PLANS, l1, (tile,))
    assert plan.fast is not None and plan.fast[1].storage is a.storage
    assert plan.sync == trace.kept_plan("dma_copy", {"dst": l1, "src": tile})
