"""The fast paths of planned Ascend instructions (apdsl.runtime.plans.ascend_plans.run_fast,
apdsl.runtime.ascend.mmad.run_fast): from the second call of a pair of static views on, LoadData, Nd2Nz,
Fixpipe and mmad run on the accesses and NumPy arrays of their first call.  They must compute
what NumPy computes and still raise every error that depends on the call, with the code the
full path raises: unwritten data (APK404), freed storage (APK408); and a plan kept for some views
must never stand in for other views (APK520, APK522, APK525)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.ascend import dma as ascend
from apdsl.runtime.ascend import mmad
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.plans import ascend_plans as plans
from apdsl.tensor.machine import current

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

F16 = "float16"


def _gemm_views(m: int, k: int, n: int) -> dict:
    """The stdlib GEMM's shape of one block: GM tiles, L1 buffers bound with layout_base, L0
    tiles of them, an L0C accumulator and a GM result."""
    v = {"ga": apdsl.ndarray((m, k), F16, "gm"), "gb": apdsl.ndarray((k, n), F16, "gm"),
         "gc": apdsl.ndarray((m, n), "float32", "gm")}
    tm, tk, tn = (-(-x // 16) * 16 for x in (m, k, n))
    v["l1a_buf"] = apdsl.ndarray((tm, tk), F16, "l1", "NZ")
    v["l1b_buf"] = apdsl.ndarray((tk, tn), F16, "l1", "NZ")
    v["l0a_buf"] = apdsl.ndarray((tm, tk), F16, "l0a", "ZZ")
    v["l0b_buf"] = apdsl.ndarray((tk, tn), F16, "l0b", "ZN")
    v["l0c_buf"] = apdsl.ndarray((tm, tn), "float32", "l0c", "NZ")
    return v


def _bind(v: dict) -> None:
    """Bind this iteration's tiles (make_tensor_like: each starts unwritten)."""
    v["l1a"] = apdsl.make_tensor_like(v["l1a_buf"], v["ga"], "NZ", layout_base=v["l1a_buf"])
    v["l1b"] = apdsl.make_tensor_like(v["l1b_buf"], v["gb"], "NZ", layout_base=v["l1b_buf"])
    v["l0a"] = apdsl.make_tensor_like(v["l0a_buf"], v["l1a"], "ZZ")
    v["l0b"] = apdsl.make_tensor_like(v["l0b_buf"], v["l1b"], "ZN")
    v["acc"] = apdsl.make_tensor_like(v["l0c_buf"], v["gc"], "NZ")


def _step(v: dict, accumulate: bool) -> None:
    apdsl.memset(v["l1b_buf"], 0)  # B's K tail (the stdlib GEMM's memset)
    apdsl.dma_copy(v["l1a"], v["ga"])   # Nd2Nz
    apdsl.dma_copy(v["l1b"], v["gb"])
    apdsl.dma_copy(v["l0a"], v["l1a"])  # LoadData
    apdsl.dma_copy(v["l0b"], v["l1b"])
    apdsl.mmad(v["acc"], v["l0a"], v["l0b"], accumulate=accumulate)


def _fast_plans(v: dict) -> list:
    return [plans.lookup(ascend.COPY_PLANS, v["l1a"], (v["ga"],)),
            plans.lookup(ascend.COPY_PLANS, v["l0a"], (v["l1a"],)),
            plans.lookup(ascend.COPY_PLANS, v["l0b"], (v["l1b"],)),
            plans.lookup(mmad.PLANS, v["acc"], (v["l0a"], v["l0b"]), False),
            plans.lookup(ascend.COPY_PLANS, v["gc"], (v["acc"],))]


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 48), k=st.integers(1, 48), n=st.integers(1, 48),
       seed=st.integers(0, 2**16))
def test_the_fast_paths_equal_numpy_call_after_call(m, k, n, seed):
    _run_steps(m, k, n, seed)


def test_whole_fractal_tiles_take_every_fast_path():
    v = _run_steps(32, 64, 48, 5)
    assert all(p is not None and p.fast is not None for p in _fast_plans(v))


def _run_steps(m: int, k: int, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    v = _gemm_views(m, k, n)
    _bind(v)
    apdsl.memset(v["l1a_buf"], 7.0)  # garbage where Nd2Nz must zero each row's tail
    want = np.zeros((m, n), np.float32)
    for it in range(4):  # the first calls check and plan; the others run the fast paths
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        write_view(v["ga"], a)
        write_view(v["gb"], b)
        _step(v, accumulate=it > 0)
        want += a.astype(np.float32) @ b.astype(np.float32)
        apdsl.dma_copy(v["gc"], v["acc"])  # Fixpipe
        np.testing.assert_allclose(v["gc"].numpy(), want, rtol=1e-5, atol=1e-3)
        # Nd2Nz: every written row of L1 is the formula's NZ, its tail zero-filled
        nz = apdsl.formats.convert(a, "ND", "NZ")
        got = np.asarray(v["l1a_buf"].storage.data).view(np.float16)[:nz.size]
        rows = np.arange(nz.shape[1] * 16).reshape(nz.shape[1], 16) < m
        assert np.array_equal(got.reshape(nz.shape)[:, rows], nz[:, rows])
    return v


def test_loaddata_of_a_never_written_l1_tile_is_still_an_uninitialised_read():
    v = _gemm_views(32, 32, 32)
    _bind(v)
    write_view(v["ga"], np.ones((32, 32), np.float16))
    write_view(v["gb"], np.ones((32, 32), np.float16))
    for _ in range(2):
        _step(v, accumulate=False)
    assert all(p.fast is not None for p in _fast_plans(v)[:4])
    _bind(v)  # the same tiles again: unwritten
    apdsl.dma_copy(v["l1b"], v["gb"])
    apdsl.dma_copy(v["l0a"], v["l1a"])  # LoadData moves the unwritten state with the bytes
    apdsl.dma_copy(v["l0b"], v["l1b"])
    with apdsl.options(init_check="strict"), raises_code("APK404") as err:
        apdsl.mmad(v["acc"], v["l0a"], v["l0b"])
    assert "mmad: a reads" in str(err.value)
    apdsl.dma_copy(v["l1a"], v["ga"])   # written now: the fast paths run again
    apdsl.dma_copy(v["l0a"], v["l1a"])
    apdsl.mmad(v["acc"], v["l0a"], v["l0b"])
    apdsl.dma_copy(v["gc"], v["acc"])
    np.testing.assert_array_equal(v["gc"].numpy(), np.full((32, 32), 32, np.float32))


def test_a_fast_copy_still_init_checks_its_source_and_mmad_its_accumulator():
    v = _gemm_views(16, 16, 16)
    _bind(v)
    write_view(v["ga"], np.ones((16, 16), np.float16))
    write_view(v["gb"], np.ones((16, 16), np.float16))
    for _ in range(2):
        _step(v, accumulate=False)
        apdsl.dma_copy(v["gc"], v["acc"])
    _bind(v)  # the accumulator unwritten again
    with apdsl.options(init_check="strict"), raises_code("APK404"):
        apdsl.dma_copy(v["gc"], v["acc"])  # Fixpipe reads it
    _step(v, accumulate=False)
    apdsl.dma_copy(v["gc"], v["acc"])
    _bind(v)
    apdsl.dma_copy(v["l1a"], v["ga"])
    apdsl.dma_copy(v["l1b"], v["gb"])
    apdsl.dma_copy(v["l0a"], v["l1a"])
    apdsl.dma_copy(v["l0b"], v["l1b"])
    with apdsl.options(init_check="strict"), raises_code("APK404") as err:
        apdsl.mmad(v["acc"], v["l0a"], v["l0b"], accumulate=True)
    assert "dst reads" in str(err.value)


def test_without_the_init_check_a_fast_accumulation_adds_to_what_is_there():
    v = _gemm_views(16, 16, 16)
    _bind(v)
    write_view(v["ga"], np.ones((16, 16), np.float16))
    write_view(v["gb"], np.ones((16, 16), np.float16))
    for _ in range(2):
        _step(v, accumulate=False)
    _bind(v)  # unwritten, but still holding 16s
    with apdsl.options(init_check=False):
        _step(v, accumulate=True)
        apdsl.dma_copy(v["gc"], v["acc"])
    np.testing.assert_array_equal(v["gc"].numpy(), np.full((16, 16), 32, np.float32))


_USES = {"ga": lambda v: apdsl.dma_copy(v["l1a"], v["ga"]),         # Nd2Nz
         "l1a_buf": lambda v: apdsl.dma_copy(v["l0a"], v["l1a"]),   # LoadData
         "l0a_buf": lambda v: apdsl.mmad(v["acc"], v["l0a"], v["l0b"]),
         "l0c_buf": lambda v: apdsl.dma_copy(v["gc"], v["acc"])}    # Fixpipe


def test_the_fast_paths_still_refuse_freed_storage():
    for free, use in _USES.items():
        v = _gemm_views(16, 16, 16)
        _bind(v)
        write_view(v["ga"], np.ones((16, 16), np.float16))
        write_view(v["gb"], np.ones((16, 16), np.float16))
        for _ in range(2):
            _step(v, accumulate=False)
            apdsl.dma_copy(v["gc"], v["acc"])
        v[free].storage.free()
        with raises_code("APK408"):
            use(v)


def test_a_view_with_a_fast_plan_still_has_its_other_operands_checked():
    v = _gemm_views(32, 32, 32)
    _bind(v)
    write_view(v["ga"], np.ones((32, 32), np.float16))
    write_view(v["gb"], np.ones((32, 32), np.float16))
    for _ in range(2):
        _step(v, accumulate=False)
    wrong_format = apdsl.ndarray((32, 32), F16, "l0a", "ZZ")  # b in L0A
    with raises_code("APK520"):
        apdsl.mmad(v["acc"], v["l0a"], wrong_format)
    narrow = apdsl.make_tensor_like(apdsl.ndarray((16, 32), F16, "l0b", "ZN"),
                                    apdsl.ndarray((16, 32), F16, "gm"), "ZN")
    with raises_code("APK522"):
        apdsl.mmad(v["acc"], v["l0a"], narrow)
    with raises_code("APK525"):  # valid extents 32 x 32 and 16 x 32
        apdsl.dma_copy(v["l0a"], apdsl.make_tensor_like(
            v["l1a_buf"], apdsl.ndarray((16, 32), F16, "gm"), "NZ", layout_base=v["l1a_buf"]))
    _step(v, accumulate=False)  # and the plans of the right views still run
    apdsl.dma_copy(v["gc"], v["acc"])
    np.testing.assert_array_equal(v["gc"].numpy(), np.full((32, 32), 32, np.float32))


def test_in_check_mode_a_fast_plan_moves_no_data():
    v = _gemm_views(16, 16, 16)
    _bind(v)
    write_view(v["ga"], np.ones((16, 16), np.float16))
    write_view(v["gb"], np.ones((16, 16), np.float16))
    for _ in range(2):
        _step(v, accumulate=False)
    before = np.asarray(v["l0c_buf"].storage.data).copy()
    write_view(v["ga"], np.full((16, 16), 2, np.float16))
    with current().child(check=True).active():
        _step(v, accumulate=True)
    assert np.array_equal(np.asarray(v["l0c_buf"].storage.data), before)


def test_a_fast_plan_lets_its_source_storage_go():
    g = apdsl.ndarray((16, 32), F16, "gm")
    write_view(g, np.ones((16, 32), np.float16))
    dst = apdsl.ndarray((16, 32), F16, "l1", "NZ")
    src = apdsl.ndarray((16, 32), F16, "l1", "NZ")
    l0 = apdsl.ndarray((16, 32), F16, "l0a", "ZZ")
    for _ in range(2):
        apdsl.dma_copy(src, g)
        apdsl.dma_copy(l0, src)
    assert plans.lookup(ascend.COPY_PLANS, l0, (src,)).fast is not None
    alive = weakref.ref(src.storage)
    del src
    gc.collect()
    assert alive() is None  # the plan kept on l0 went with its source
    assert dst.storage is not None


GEMM = """
from gemm import gemm

kernel matmul(A: f16[M, K] @ gm, B: f16[K, N] @ gm) -> f32[M, N] @ gm:
    C = ndarray((A.shape[0], B.shape[1]), f32, gm)
    gemm(A, B, C, 32, 48, 32, 64)
    return C
"""


def _traced_gemm(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, list]:
    from apdsl.runtime.core import trace
    from apdsl.semantics.program import Program
    with trace.tracing() as t:
        got = Program(GEMM, "gemm.apk").run("matmul", {"A": a, "B": b}).value.numpy()
    ids: dict = {}  # storage ids numbered by first use (each run allocates new storages)
    return got, [(r.to_json(), r.engine, r.storages and {
        role: ids.setdefault(i, len(ids)) for role, i in r.storages.items()})
        for r in t.records]


@settings(max_examples=4, deadline=None)
@given(m=st.integers(1, 80), k=st.integers(1, 150), n=st.integers(1, 100),
       seed=st.integers(0, 2**16))
def test_the_stdlib_gemm_on_fast_paths_is_the_gemm_on_full_paths(m, k, n, seed):
    """The oracle for the fast paths is the full path: the same result (and NumPy's), the same
    trace of instructions, the same synchronisation verdict (none: the GEMM is race-free)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    fast, fast_trace = _traced_gemm(a, b)
    with apdsl.options(plans=False):
        full, full_trace = _traced_gemm(a, b)
    np.testing.assert_array_equal(fast, full)
    np.testing.assert_allclose(fast, a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-4, atol=1e-3)
    assert fast_trace == full_trace


def test_a_pair_copied_before_is_copied_by_its_plan_before_the_checks(monkeypatch):
    """`copies.dma_copy` runs a pair's kept fast plan first (`ascend_plans.run_kept`); the
    steps still equal NumPy (checked in `_run_steps`), and most copies take that path."""
    served = []
    real = plans.run_kept

    def spy(dst, src, name):
        served.append(real(dst, src, name))
        return served[-1]
    monkeypatch.setattr(plans, "run_kept", spy)
    _run_steps(32, 64, 48, 3)
    assert served.count(True) >= 10  # (4 rounds of 5 copies; the first round plans them)


def test_under_atomic_add_a_kept_pair_adds_as_the_general_path_does():
    """A UB -> GM pair copied plainly (its fast plan kept), then again under set_atomic_add:
    the second copy adds, as the general path's atomic copy does, not overwrite."""
    from apdsl.runtime.ascend.atomic import set_atomic_add, set_atomic_none
    x = np.arange(64, dtype=np.float32)
    ub = apdsl.ndarray((64,), "float32", "ub")
    gm = apdsl.ndarray((64,), "float32", "gm")
    write_view(ub, x)
    for _ in range(3):  # plans, then the fast plan
        apdsl.dma_copy(gm, ub)
    set_atomic_add("float32")
    apdsl.dma_copy(gm, ub)
    set_atomic_none()
    np.testing.assert_array_equal(gm.numpy(), 2 * x)
