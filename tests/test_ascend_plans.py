"""The Ascend plans (apdsl.runtime.plans.ascend_plans): a copy's or an mmad's rules checked once per
operand views.  The cached path must compute what the first (fully checked) call computes, equal
to NumPy, and must still raise every error that depends on the call: unwritten data (APK404),
duplicate writes (APK405), freed storage (APK408), races and unsynchronised reads (APK570)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.ascend import dma as ascend
from apdsl.runtime.ascend import mmad
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.plans import ascend_plans as plans

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

F16 = "float16"


def _views(m: int, k: int, n: int) -> dict:
    """One GEMM step's views through the Python API: GM -> L1 (Nd2Nz) -> L0 (LoadData) ->
    mmad -> L0C -> GM (Fixpipe, to float32 and to float16)."""
    v = {"ga": apdsl.ndarray((m, k), F16, "gm"), "gb": apdsl.ndarray((k, n), F16, "gm"),
         "gc": apdsl.ndarray((m, n), "float32", "gm"), "gh": apdsl.ndarray((m, n), F16, "gm")}
    v["l1a"] = apdsl.make_tensor_like("l1", v["ga"], "NZ")
    v["l1b"] = apdsl.make_tensor_like("l1", v["gb"], "NZ")
    v["l0a"] = apdsl.make_tensor_like("l0a", v["l1a"], "ZZ")
    v["l0b"] = apdsl.make_tensor_like("l0b", v["l1b"], "ZN")
    v["acc"] = apdsl.make_tensor_like("l0c", v["gc"], "NZ")
    return v


def _step(v: dict, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    write_view(v["ga"], a)
    write_view(v["gb"], b)
    apdsl.memset(v["l1b"], 0)  # B's K tail: rows no copy writes (the stdlib GEMM's memset)
    apdsl.dma_copy(v["l1a"], v["ga"])
    apdsl.dma_copy(v["l1b"], v["gb"])
    apdsl.dma_copy(v["l0a"], v["l1a"])
    apdsl.dma_copy(v["l0b"], v["l1b"])
    apdsl.mmad(v["acc"], v["l0a"], v["l0b"])
    apdsl.mmad(v["acc"], v["l0a"], v["l0b"], accumulate=True)
    apdsl.dma_copy(v["gc"], v["acc"])
    apdsl.dma_copy(v["gh"], v["acc"])
    return v["gc"].numpy(), v["gh"].numpy()


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40),
       strict=st.booleans(), seed=st.integers(0, 2**16))
def test_the_cached_step_equals_the_first_and_numpy(m, k, n, strict, seed):
    rng = np.random.default_rng(seed)
    with apdsl.options(strict_padding=strict):
        v = _views(m, k, n)
        for _ in range(3):  # the first call checks and plans, the others use the plans
            a = rng.standard_normal((m, k)).astype(np.float16)
            b = rng.standard_normal((k, n)).astype(np.float16)
            want = 2 * (a.astype(np.float32) @ b.astype(np.float32))
            c32, c16 = _step(v, a, b)
            np.testing.assert_allclose(c32, want, rtol=1e-5, atol=1e-4)
            np.testing.assert_array_equal(c16, want.astype(np.float16))
            # the Nd2Nz copy into L1 is the formula's NZ in every written row (row tails
            # zero-filled up to the fractal); rows past M are not written
            nz = apdsl.formats.convert(a, "ND", "NZ")
            got = np.asarray(v["l1a"].storage.data).view(np.float16)[:nz.size]
            rows = np.arange(nz.shape[1] * 16).reshape(nz.shape[1], 16) < m
            assert np.array_equal(got.reshape(nz.shape)[:, rows], nz[:, rows])
        assert plans.lookup(ascend.COPY_PLANS, v["l0a"], (v["l1a"],)) is not None
        assert plans.lookup(mmad.PLANS, v["acc"], (v["l0a"], v["l0b"]), strict) is not None


def test_a_cached_mmad_still_init_checks_its_operands():
    v = _views(32, 32, 32)
    a = np.ones((32, 32), np.float16)
    _step(v, a, a)
    again = apdsl.make_tensor_like(v["l0a"], v["l1a"], "ZZ")  # a tile bound to L0A's buffer
    apdsl.dma_copy(again, v["l1a"])
    apdsl.mmad(v["acc"], again, v["l0b"])  # checked and planned
    assert plans.lookup(mmad.PLANS, v["acc"], (again, v["l0b"]), False) is not None
    assert apdsl.make_tensor_like(v["l0a"], v["l1a"], "ZZ") is again  # bound again: unwritten
    with apdsl.options(init_check="strict"), pytest.raises(ApdslError) as e:
        apdsl.mmad(v["acc"], again, v["l0b"])
    assert e.value.code == "APK404"


def test_a_cached_copy_still_init_checks_its_source():
    g = apdsl.ndarray((16, 32), F16, "gm")
    buf = apdsl.ndarray((16, 32), F16, "ub")
    t = apdsl.make_tensor_like(buf, g, "ND")
    apdsl.memset(t, 1.0)
    apdsl.dma_copy(g, t)  # checked and planned
    assert plans.lookup(ascend.COPY_PLANS, g, (t,)) is not None
    assert apdsl.make_tensor_like(buf, g, "ND") is t  # the same tile, unwritten again
    with pytest.raises(ApdslError) as e:
        apdsl.dma_copy(g, t)
    assert e.value.code == "APK404"


def test_a_cached_copy_still_refuses_duplicate_writes_and_freed_storage():
    u = apdsl.ndarray((2, 16), F16, "ub")
    apdsl.memset(u, 2.0)
    twice = apdsl.ndarray((2, 16), F16, "ub").ap([[0, 2], [1, 16]])
    for _ in range(2):  # the second call finds the plan: the write is still checked
        with pytest.raises(ApdslError) as e:
            apdsl.dma_copy(twice, u)
        assert e.value.code == "APK405"
    v = _views(16, 16, 16)
    _step(v, np.ones((16, 16), np.float16), np.ones((16, 16), np.float16))
    v["l1a"].storage.free()
    with pytest.raises(ApdslError) as e:
        apdsl.dma_copy(v["l0a"], v["l1a"])
    assert e.value.code == "APK408"


def _synchronised_load(v: dict, wait: bool) -> None:
    apdsl.dma_copy(v["l1a"], v["ga"])                 # MTE2
    apdsl.set_flag("MTE2_MTE1", 0)
    if wait:
        apdsl.wait_flag("MTE2_MTE1", 0)
    apdsl.dma_copy(v["l0a"], v["l1a"])                # MTE1 reads what MTE2 wrote
    apdsl.set_flag("MTE1_MTE2", 0)
    apdsl.wait_flag("MTE1_MTE2", 0)


def test_a_race_is_still_found_on_cached_plans():
    v = _views(32, 32, 32)
    write_view(v["ga"], np.ones((32, 32), np.float16))
    with pytest.raises(ApdslError) as e, apdsl.pipes():
        for _ in range(3):
            _synchronised_load(v, wait=True)
        _synchronised_load(v, wait=False)
    assert e.value.code == "APK570"
    assert "read-after-write" in str(e.value) and "MTE1" in str(e.value)


def test_an_unsynchronised_mmad_read_is_still_found_on_cached_plans():
    v = _views(32, 32, 32)
    a = np.ones((32, 32), np.float16)
    _step(v, a, a)  # plans for every instruction (unchecked: outside pipes())
    with pytest.raises(ApdslError) as e, apdsl.pipes():
        apdsl.dma_copy(v["l0a"], v["l1a"])            # MTE1 writes L0A ...
        apdsl.dma_copy(v["l0b"], v["l1b"])
        apdsl.mmad(v["acc"], v["l0a"], v["l0b"])      # ... M reads it with no MTE1_M event
    assert e.value.code == "APK570" and "read-after-write" in str(e.value)
    assert "MTE1_M" in (e.value.help or "")


def test_the_plans_of_a_view_are_bounded_and_die_with_their_views():
    dst = apdsl.ndarray((16, 16), F16, "gm")
    buf = apdsl.ndarray((16, 16), F16, "ub")
    apdsl.memset(buf, 1.0)
    kept = []
    for _ in range(3 * plans.LIMIT):
        # a fresh equal view each time, a new plan (a NumPy int offset: a call the view's
        # kept children do not key, so the view is made afresh)
        src = buf.ap([[16, 16], [1, 16]], np.int64(0))
        apdsl.dma_copy(dst, src)
        kept.append(src)
        assert len(ascend.COPY_PLANS[dst]) <= plans.LIMIT
    assert dst.numpy().sum() == 256
    kept.clear()
    del src
    gc.collect()
    assert len(ascend.COPY_PLANS[dst]) == 0  # each entry went with its source view


class _Forgetful(dict):
    """A signature memo that keeps nothing: every instruction is lowered afresh."""

    def __setitem__(self, key, value) -> None:
        pass


def test_a_traced_loop_records_what_fresh_lowering_records():
    from apdsl.runtime.core import trace
    v = _views(24, 40, 20)
    a = np.ones((24, 40), np.float16)
    b = np.ones((40, 20), np.float16)
    got = []
    for memo in (True, False):
        with trace.tracing() as t:
            if not memo:
                t.signatures = _Forgetful()
            for _ in range(3):
                _step(v, a, b)
        assert bool(t.signatures) is memo
        got.append([(r.to_json(), r.engine, r.storages) for r in t.records])
    assert got[0] == got[1] and len(got[0]) == 3 * 9
