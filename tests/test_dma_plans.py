"""The cached paths of `dma_copy` (issue 16): children kept on their parent view
(`tensor.view.cache`) and a plan per (dst, src) pair (`runtime.plans.dmaplan`) compute what the full
path computes (against NumPy) and still raise every error it raised, with the same code:
freed storage, the init check, bounds, duplicate writes, hints; also after the storages are
written by other instructions, and on views whose layout repeats elements."""

from __future__ import annotations

import gc
import weakref

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import error_code

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.copies import dma_copy, memset
from apdsl.runtime.core import trace
from apdsl.runtime.core.resolve import resolve
from apdsl.runtime.core.written import forget_all, forget_written
from apdsl.runtime.plans import table
from apdsl.runtime.plans.dmaplan import DmaPlan
from apdsl.runtime.plans.table import kept
from apdsl.tensor.view.cache import GATHERS_PER_VIEW, KIDS_PER_VIEW

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

P, F, T = 16, 8, 4



@pytest.fixture(autouse=True)
def _no_plans_kept_before():
    """Each test starts with an empty plan table (it is keyed by value: another test's views
    of equal value would share their plans)."""
    table.PLANS.clear()


def _tiles():
    s = np.random.default_rng(0).standard_normal((P, T * F), dtype=np.float32)
    return s, apdsl.from_numpy(s, "sbuf"), apdsl.ndarray((T * P, F), "float32", "hbm")


def _loop(D, S):
    for i in range(T):
        dma_copy(D[i * P:(i + 1) * P, :], S[:, i * F:(i + 1) * F])


def _expected(s):
    return np.concatenate([s[:, i * F:(i + 1) * F] for i in range(T)], axis=0)


def test_the_tile_loop_keeps_its_views_and_plans_and_equals_numpy():
    s, S, D = _tiles()
    for _ in range(3):
        _loop(D, S)
    assert D[0:P, :] is D[0:P, :] and S[:, 0:F] is S[:, 0:F]
    assert kept("dma_copy", D[0:P, :]) and all(type(p) is DmaPlan for p in kept("dma_copy", D[0:P, :]))
    np.testing.assert_array_equal(D.numpy(), _expected(s))
    # the storages written by other instructions: the plan copies what is there now
    memset(S[:, F:2 * F], 2.5)
    s[:, F:2 * F] = 2.5
    dma_copy(S[:, 0:F], apdsl.from_numpy(np.full((P, F), -1.0, np.float32)))
    s[:, 0:F] = -1.0
    _loop(D, S)
    np.testing.assert_array_equal(D.numpy(), _expected(s))
    D.slice(0, 0, P).numpy()  # another view of the same data: no plan involved
    dma_copy(D[0:P, :], apdsl.from_numpy(np.zeros((P, F), np.float32)))
    _loop(D, S)  # the dst storage written in between: overwritten again by the plan
    np.testing.assert_array_equal(D.numpy(), _expected(s))


def test_fresh_tiles_a_plan_fills_hold_the_copy_and_unwritten_bytes_read_zero():
    # a tile declared in a loop and wholly written by a planned copy is allocated without its
    # zero fill (Storage.allocate_blank); one written in part by a plan still reads 0 elsewhere
    s, S, _ = _tiles()
    for i in range(T):
        t = apdsl.ndarray((P, F), "float32", "sbuf")
        dma_copy(t, S[:, i * F:(i + 1) * F])
        np.testing.assert_array_equal(t.numpy(), s[:, i * F:(i + 1) * F])
    assert kept("dma_copy", S[:, 0:F])
    for i in range(T):
        w = apdsl.ndarray((P, 2 * F), "float32", "sbuf")
        dma_copy(w[:, 0:F], S[:, i * F:(i + 1) * F])
        with apdsl.options(init_check=False):
            got = w.numpy()
        np.testing.assert_array_equal(got[:, 0:F], s[:, i * F:(i + 1) * F])
        np.testing.assert_array_equal(got[:, F:], np.zeros((P, F), np.float32))


def test_a_fresh_tile_whose_planned_copy_fails_reads_zero(monkeypatch):
    s, S, _ = _tiles()
    for _ in range(2):
        dma_copy(apdsl.ndarray((P, F), "float32", "sbuf"), S[:, 0:F])
    t = apdsl.ndarray((P, F), "float32", "sbuf")

    def fail(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(np, "copyto", fail)
    assert error_code(lambda: dma_copy(t, S[:, 0:F])) == "APK431"  # (out of memory moving)
    monkeypatch.undo()
    with apdsl.options(init_check=False):
        np.testing.assert_array_equal(t.numpy(), np.zeros((P, F), np.float32))


@pytest.mark.parametrize("which", ["src", "dst"])
def test_a_planned_pair_still_refuses_freed_storage(which):
    s, S, D = _tiles()
    _loop(D, S)
    _loop(D, S)
    (S if which == "src" else D).storage.free()
    assert error_code(lambda: _loop(D, S)) == "APK408"
    assert error_code(lambda: _loop(D, S)) == "APK408"


def test_a_planned_pair_still_checks_the_source_is_written():
    S = apdsl.ndarray((P, 2 * F), "float32", "sbuf")
    D = apdsl.ndarray((P, F), "float32", "hbm")
    memset(S[:, 0:F], 1.0)  # half written
    for _ in range(3):
        dma_copy(D, S[:, 0:F])
    assert kept("dma_copy", D) and all(type(p) is DmaPlan for p in kept("dma_copy", D))
    assert error_code(lambda: dma_copy(D, S[:, F:2 * F])) == "APK404"
    forget_written(resolve(S[:, 0:F], "test"))  # the planned source unwritten again
    assert error_code(lambda: dma_copy(D, S[:, 0:F])) == "APK404"
    memset(S, 3.0)
    dma_copy(D, S[:, 0:F])
    assert (D.numpy() == 3.0).all()
    forget_all(S.storage)  # (a reused buffer: its old contents are not data)
    assert error_code(lambda: dma_copy(D, S[:, 0:F])) == "APK404"
    with apdsl.options(init_check=False):
        dma_copy(D, S[:, 0:F])  # unwritten reads 0 with the check off (the bytes are kept)
    np.testing.assert_array_equal(D.numpy(), np.full((P, F), 3.0, np.float32))


def test_hint_errors_are_raised_with_a_plan_in_place():
    s, S, D = _tiles()
    _loop(D, S)
    _loop(D, S)
    d, t = D[0:P, :], S[:, 0:F]
    assert kept("dma_copy", d) and all(type(p) is DmaPlan for p in kept("dma_copy", d))
    assert error_code(lambda: dma_copy(d, t, dge_mode="bogus")) == "APK347"
    assert error_code(lambda: dma_copy(d, t, oob_mode="bogus")) == "APK347"
    assert error_code(lambda: dma_copy(d, t, engine="gpsimd")) == "APK348"
    assert error_code(lambda: dma_copy(d, t, priority=1)) == "APK347"  # trn3 only
    assert error_code(lambda: dma_copy(d, S[:, 0:F].view("int32"), dge_mode="hwdge")) == \
        "APK347"  # equal dtypes
    with apdsl.target("trn1"):
        assert error_code(lambda: dma_copy(d, t, dge_mode="hwdge")) == "APK348"  # no HWDGE
        dma_copy(d, t)
        dma_copy(d, t)  # another target: a plan of its own
        assert len(kept("dma_copy", d, "trn1")) == 1
    dma_copy(d, t, dge_mode="swdge", oob_mode="error")  # hints spelled out: the full path
    np.testing.assert_array_equal(D.numpy(), _expected(s))


def test_indexing_errors_are_not_cached():
    t = apdsl.ndarray((8, 8), "float32", "hbm")
    assert t[1] is t[1] and t[1:3, ::2] is t[1:3, ::2]
    assert error_code(lambda: t[True]) == "APK111"  # True hashes like 1, but is no index
    assert error_code(lambda: t[0:9]) == "APK215"
    assert error_code(lambda: t[0:9]) == "APK215"
    # a NumPy integer is no cache key (the general path), and gives the view an int gives
    assert error_code(lambda: t[np.int64(1)]) is None and t[np.int64(1)].layout == t[1].layout
    for i in range(3 * KIDS_PER_VIEW):  # a loop over ever new keys: the table stays bounded
        t[i % 8, i % 7:]
    assert len(t.kids) <= KIDS_PER_VIEW


def test_views_whose_layout_repeats():
    a = np.arange(2 * F, dtype=np.float32).reshape(2, F)
    A = apdsl.from_numpy(a)
    D = apdsl.ndarray((4, F), "float32", "hbm")
    rep = A.ap([[0, 4], [1, F]], offset=F)  # row 1, four times (a broadcast source)
    for _ in range(3):
        dma_copy(D, rep)
    assert kept("dma_copy", D) and all(type(p) is DmaPlan for p in kept("dma_copy", D))
    np.testing.assert_array_equal(D.numpy(), np.broadcast_to(a[1], (4, F)))
    dma_copy(A[1:2, :], apdsl.from_numpy(np.full((1, F), 7.0, np.float32)))
    dma_copy(D, rep)
    assert (D.numpy() == 7.0).all()
    dst_rep = D.ap([[0, 2], [1, F]])  # a destination that writes each element twice
    for _ in range(3):
        assert error_code(lambda: dma_copy(dst_rep, A)) == "APK405"
    out = D.ap([[F, 4], [1, F]], offset=F)  # past the storage's end
    for _ in range(3):
        assert error_code(lambda: dma_copy(out, rep)) == "APK401"
        assert error_code(lambda: dma_copy(D, A.ap([[F, 4], [1, F]]))) == "APK401"


def test_a_converting_plan_and_a_narrow_destination():
    a = np.random.default_rng(3).standard_normal((4, 8), dtype=np.float32)
    A = apdsl.from_numpy(a)
    B = apdsl.ndarray((4, 8), "bfloat16", "hbm")
    for _ in range(3):
        dma_copy(B, A)  # through float32, round to nearest even
    np.testing.assert_array_equal(B.numpy(), a.astype(ml_dtypes.bfloat16))
    # a bfloat16 view of float32 storage: each copy writes half of every element
    W = apdsl.ndarray((4, 4), "float32", "hbm")
    half = W.view("bfloat16")[:, 0:8:2]
    src = apdsl.from_numpy(np.ones((4, 4), ml_dtypes.bfloat16))
    for _ in range(3):
        dma_copy(half, src)
    assert error_code(W.numpy) == "APK404"  # only half of each element's bytes are written
    dma_copy(W.view("bfloat16")[:, 1:8:2], src)
    assert W.numpy().shape == (4, 4)


def test_tracing_and_check_mode_take_the_full_path():
    s, S, D = _tiles()
    _loop(D, S)
    _loop(D, S)
    with trace.tracing() as tr:
        _loop(D, S)
    assert [r.op for r in tr] == ["dma_copy"] * T


def test_a_planned_gather_reads_its_index_every_call():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 16), dtype=np.float32)
    rows = rng.integers(0, 64, 8)
    A = apdsl.from_numpy(a)
    idx = apdsl.from_numpy(rows.astype(np.int32).reshape(8, 1), "sbuf")
    D = apdsl.ndarray((8, 16), "float32", "sbuf")
    for _ in range(3):
        dma_copy(D, A.vector_select(0, idx))
    assert A.vector_select(0, idx) is A.vector_select(0, idx)
    assert kept("dma_copy", A.vector_select(0, idx)) == kept("dma_copy", D)
    np.testing.assert_array_equal(D.numpy(), a[rows])
    new = rng.integers(0, 64, 8)
    dma_copy(idx, apdsl.from_numpy(new.astype(np.int32).reshape(8, 1)))  # index rewritten
    dma_copy(D, A.vector_select(0, idx))
    np.testing.assert_array_equal(D.numpy(), a[new])
    memset(idx[3:4, :], 64)
    assert error_code(lambda: dma_copy(D, A.vector_select(0, idx))) == "APK402"
    memset(idx[3:4, :], -1)
    assert error_code(lambda: dma_copy(D, A.vector_select(0, idx))) == "APK402"
    forget_all(idx.storage)
    assert error_code(lambda: dma_copy(D, A.vector_select(0, idx))) == "APK404"
    idx.storage.free()
    assert error_code(lambda: dma_copy(D, A.vector_select(0, idx))) == "APK408"
    idx2 = apdsl.from_numpy(rows.astype(np.int32).reshape(8, 1), "sbuf")
    dma_copy(D, A.vector_select(0, idx2))
    dma_copy(D, A.vector_select(0, idx2))
    A.storage.free()
    assert error_code(lambda: dma_copy(D, A.vector_select(0, idx2))) == "APK408"


_KEYS = [(slice(0, 8), slice(0, 8)), (slice(8, 16), slice(0, 8)), (slice(4, 12), slice(8, 16)),
         (slice(0, 8), slice(0, 16, 2)), (slice(0, 8), slice(8, 16))]


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["copy", "back", "set"]),
                                st.integers(0, len(_KEYS) - 1), st.integers(0, len(_KEYS) - 1),
                                st.integers(-3, 3)), min_size=1, max_size=24))
def test_repeated_copies_follow_numpy(steps):
    """Copies among a few views, repeated (so plans form), mixed with other writes: the
    tensors always equal the same sequence run on NumPy."""
    rng = np.random.default_rng(5)
    s, h = rng.standard_normal((16, 16), dtype=np.float32), np.zeros((16, 16), np.float32)
    S, H = apdsl.from_numpy(s, "sbuf"), apdsl.from_numpy(h, "hbm")
    for op, i, j, v in steps:
        (ai, bi), (aj, bj) = _KEYS[i], _KEYS[j]
        if op == "copy":
            dma_copy(H[ai, bi], S[aj, bj])
            h[ai, bi] = s[aj, bj]
        elif op == "back":
            dma_copy(S[ai, bi], H[aj, bj])
            s[ai, bi] = h[aj, bj]
        else:
            memset(S[aj, bj], float(v))
            s[aj, bj] = v
    np.testing.assert_array_equal(S.numpy(), s)
    np.testing.assert_array_equal(H.numpy(), h)


def test_plans_and_kept_children_keep_no_other_tensor_alive():
    """A plan holds its source weakly, row-gather plans hold no storage, and a view keeps the
    gather children of a few index tensors only: storage the program let go is collected (and
    its capacity returned) as before."""
    A = apdsl.from_numpy(np.ones((64, 16), np.float32))
    D = apdsl.ndarray((8, 16), "float32", "sbuf")
    first = apdsl.from_numpy(np.zeros((8, 1), np.int32), "sbuf")
    for _ in range(2):
        dma_copy(D, A.vector_select(0, first))
    gone = weakref.ref(first.storage)
    del first
    for k in range(GATHERS_PER_VIEW):  # other index tensors push the first one out
        idx = apdsl.from_numpy(np.full((8, 1), k, np.int32), "sbuf")
        dma_copy(D, A.vector_select(0, idx))
        np.testing.assert_array_equal(D.numpy(), np.ones((8, 16), np.float32))
    gc.collect()
    assert gone() is None
    table = weakref.ref(A.storage)
    del A, idx
    gc.collect()
    assert table() is None
    S = apdsl.ndarray((8, 16), "float32", "sbuf")
    memset(S, 1.0)
    dma_copy(D, S)
    dma_copy(D, S)
    assert kept("dma_copy", D) and all(type(p) is DmaPlan for p in kept("dma_copy", D))
    src = weakref.ref(S.storage)
    del S
    gc.collect()
    assert src() is None


def _world(seed: int):
    rng = np.random.default_rng(seed)
    S = apdsl.from_numpy(rng.standard_normal((8, 24), dtype=np.float32), "sbuf")
    H = apdsl.from_numpy(rng.standard_normal((4, 48), dtype=np.float32), "hbm")
    return S, H, H.view("bfloat16")


_PAIRS = st.lists(st.tuples(st.integers(-2, 9), st.integers(1, 6)), min_size=1, max_size=3)
_VIEW = st.tuples(st.sampled_from(["S", "H", "H16"]), _PAIRS, st.integers(-4, 200))


def _make(world, spec, counts=None):
    which, pattern, offset = spec
    if counts is not None:  # the other side's counts, this side's strides
        pattern = [(st_, c) for (st_, _), c in zip(pattern * 3, counts)]
    t = dict(zip(["S", "H", "H16"], world))[which]
    if which == "S":  # on chip: the partition pair comes first, its stride the free size
        pattern = [(24, min(pattern[0][1], 8))] + list(pattern[1:])
    return t.ap([list(p) for p in pattern], offset=offset)


@settings(max_examples=200, deadline=None)
@given(dst=_VIEW, src=_VIEW, same=st.booleans(),
       between=st.sampled_from(["nothing", "forget", "memset", "free"]))
def test_the_plan_and_the_full_path_agree(dst, src, same, between):
    """Random views (bounds, duplicates, repeats, dtype conversions), with the source's state
    changed between copies (unwritten again, rewritten, freed): each of four copies of the
    same pair raises the same code, or leaves the same bytes and written state, by the plan as
    by the full path (forced by tracing)."""
    outcomes = []
    for traced in (False, True):
        world = _world(7)
        try:
            d = _make(world, dst)
            s = _make(world, src, [c for _, c in d.get_pattern()] if same else None)
        except ApdslError as e:
            outcomes.append(("view", e.code))
            continue
        seen = []
        for k in range(4):
            if k == 2 and between == "forget":
                forget_written(resolve(world[0][0:4, 0:12], "test"))
                forget_written(resolve(world[1][1:3, 0:20], "test"))
            elif k == 2 and between == "memset":
                memset(world[0][2:6, 4:16], 1.25)
            elif k == 3 and between == "free":
                s.storage.free()
            if traced:
                with trace.tracing():
                    seen.append(error_code(lambda d=d, s=s: dma_copy(d, s)))
            else:
                seen.append(error_code(lambda d=d, s=s: dma_copy(d, s)))
        live = [t for t in world[:2] if not t.storage.freed]
        written = [t.storage.all_written or t.storage.mask.tobytes() for t in live]
        outcomes.append((seen, [t.storage.data.tobytes() for t in live], written))
    assert outcomes[0] == outcomes[1]
