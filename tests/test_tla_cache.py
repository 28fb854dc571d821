"""TLA tiles kept on their parent view: `tile_view`, `get_tile` and `make_tensor_like` asked
again with equal arguments return the very object they returned before, so every plan the
runtime keeps on a view serves a loop that cuts its tiles afresh each step.

Oracles: the same construction made uncached (a fresh parent object of the same value, or
arguments of another int type, which are not keys), NumPy slicing of the logical matrix, and
the errors the arguments raise when nothing is kept.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.tensor.tla import get_tile, make_tensor_like, tile_view
from apdsl.tensor.view import Tensor, from_numpy, ndarray
from apdsl.tensor.view.cache import KIDS_PER_VIEW

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


def value(t: Tensor) -> tuple:
    """Everything a view is (views compare by identity)."""
    return (t.storage, t.dtype, t.layout, t.dynamic, t.label, t.coord, t.origin_shape)


def twin(t: Tensor) -> Tensor:
    """A new view object equal in value to `t`, with nothing kept on it."""
    return Tensor(t.storage, t.dtype, t.layout, t.dynamic, t.label, t.coord, t.origin_shape)


# ------------------------------------------------------------------ cached equals uncached

@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 70), cols=st.integers(1, 70), tm=st.sampled_from([16, 32, 48]),
       tk=st.sampled_from([16, 32]), data=st.data())
def test_tiles_equal_the_uncached_construction_and_numpy(rows, cols, tm, tk, data):
    arr = np.arange(rows * cols, dtype=np.float16).reshape(rows, cols)
    A = from_numpy(arr, "gm")
    m = data.draw(st.integers(0, (rows - 1) // tm + 1))   # one past the last tile too
    k = data.draw(st.integers(0, (cols - 1) // tk + 1))
    t = tile_view(A, (m, k), (tm, tk))
    assert tile_view(A, (m, k), (tm, tk)) is t and tile_view(A, [m, k], [tm, tk]) is t
    fresh = tile_view(twin(A), (np.int64(m), k), (tm, tk))    # not a key: built afresh
    assert fresh is not t and value(fresh)[1:] == value(t)[1:] and fresh.storage is A.storage
    o = t.origin_shape
    assert o == (max(0, min(tm, rows - m * tm)), max(0, min(tk, cols - k * tk)))
    if 0 not in o:
        np.testing.assert_array_equal(t.numpy(), arr[m * tm:m * tm + o[0], k * tk:k * tk + o[1]])
    g = get_tile(A, (m * tm, k * tk), (tm, tk))
    assert get_tile(A, (m * tm, k * tk), (tm, tk)) is g and value(g) == value(t)


# (buffer, format, dtype) of the GEMM's on-chip tiles
ON_CHIP = [("l1", "NZ", "float16"), ("l0a", "ZZ", "float16"), ("l0b", "ZN", "float16"),
           ("l0c", "NZ", "float32"), ("l1", "NZ", "int8"), ("l0a", "ZZ", "int8")]


@settings(max_examples=60, deadline=None)
@given(where=st.sampled_from(ON_CHIP), rows=st.integers(1, 100), cols=st.integers(1, 100),
       m=st.integers(0, 1), k=st.integers(0, 1), base=st.booleans())
def test_bound_tiles_equal_the_uncached_construction(where, rows, cols, m, k, base):
    buffer, fmt, dtype = where
    A = ndarray((rows, cols), dtype, "gm")
    like = tile_view(A, (m, k), (64, 64))
    buf = ndarray((64, 64), dtype, buffer, fmt)
    lb = buf if base and buffer == "l1" else None
    try:
        fresh = make_tensor_like(twin(buf), like, fmt, layout_base=lb and twin(buf))
    except apdsl.ApdslError as e:  # the same error, made or kept
        with raises_code(e.code):
            make_tensor_like(buf, like, fmt, layout_base=lb)
        with raises_code(e.code):
            make_tensor_like(buf, like, fmt, layout_base=lb)
        return
    t = make_tensor_like(buf, like, fmt, layout_base=lb)
    assert value(t) == value(fresh) and t.storage is buf.storage
    # the same object for the same like, for an equal like, and with the dtype spelt out
    assert make_tensor_like(buf, like, fmt, layout_base=lb) is t
    assert make_tensor_like(buf, twin(like), fmt, layout_base=lb) is t
    assert make_tensor_like(buf, like, fmt, dtype, layout_base=lb) is t
    assert t.origin_shape == like.origin_shape and t.coord == (0, 0)


def test_a_gemm_loop_gets_one_object_per_distinct_tile():
    """The stdlib GEMM's calls, per L0 step: each returns one object per distinct value."""
    M, K, N, TM, TN, TK, TK1 = 80, 96, 72, 32, 32, 16, 32
    A, B = ndarray((M, K), "float16", "gm"), ndarray((K, N), "float16", "gm")
    l1_a = [ndarray((TM, TK1), "float16", "l1", "NZ") for _ in range(2)]
    l0_a = [ndarray((TM, TK), "float16", "l0a", "ZZ") for _ in range(2)]
    l1_b = [ndarray((TK1, TN), "float16", "l1", "NZ") for _ in range(2)]
    seen: dict[str, dict[tuple, set[int]]] = {}
    kept = []  # (every object stays alive, so an id is never reused)

    def note(kind, key, obj):
        kept.append(obj)
        seen.setdefault(kind, {}).setdefault(key, set()).add(id(obj))

    for _ in range(2):
        for m in range(-(-M // TM)):
            for n in range(-(-N // TN)):
                for k1 in range(-(-K // TK1)):
                    s = k1 % 2
                    a_tile = tile_view(A, (m, k1), (TM, TK1))
                    a1 = make_tensor_like(l1_a[s], a_tile, "NZ", layout_base=l1_a[s])
                    b1 = make_tensor_like(l1_b[s], tile_view(B, (k1, n), (TK1, TN)), "NZ",
                                          layout_base=l1_b[s])
                    note("a_tile", (m, k1), a_tile)
                    note("a1", (s, a_tile.origin_shape), a1)
                    note("b1", (s, k1, n), b1)
                    for k0 in range(-(-a1.origin_shape[1] // TK)):
                        i = k0 % 2
                        a_sub = tile_view(a1, (0, k0), (TM, TK))
                        a0 = make_tensor_like(l0_a[i], a_sub, "ZZ")
                        note("a_sub", (id(a1), k0), a_sub)
                        note("a0", (i, a_sub.origin_shape), a0)
    for kind, per in seen.items():
        assert all(len(ids) == 1 for ids in per.values()), kind
    # distinct values, distinct objects
    assert len({next(iter(v)) for v in seen["a1"].values()}) == len(seen["a1"])


# ------------------------------------------------------------------ bounded, weakly held

def test_the_kept_tiles_are_bounded_per_parent():
    A = ndarray((4096, 4096), "float16", "gm")
    for i in range(3 * KIDS_PER_VIEW):
        tile_view(A, (i % 64, i // 64), (64, 64))
        assert len(A.kids) <= KIDS_PER_VIEW
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    for i in range(1, 3 * KIDS_PER_VIEW):
        make_tensor_like(buf, get_tile(A, (0, 0), (1 + i % 64, 1 + i // 64)), "NZ")
        assert len(buf.kids) <= KIDS_PER_VIEW
    # after the table starts over, asking again still gives an equal tile
    t = tile_view(A, (5, 5), (64, 64))
    for i in range(KIDS_PER_VIEW + 1):
        tile_view(A, (i % 64, 1 + i // 64), (32, 32))
    again = tile_view(A, (5, 5), (64, 64))
    assert value(again) == value(t)


def test_nothing_kept_holds_the_like_or_the_layout_base_or_the_parent():
    A = ndarray((256, 256), "float16", "gm")
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    base = ndarray((64, 64), "float16", "l1", "NZ")
    like = tile_view(A, (1, 1), (64, 64))
    bound = make_tensor_like(buf, like, "NZ", layout_base=base)
    assert make_tensor_like(buf, like, "NZ", layout_base=base) is bound
    refs = [weakref.ref(base), weakref.ref(base.storage)]
    del base
    gc.collect()
    assert all(r() is None for r in refs)
    parent_refs = [weakref.ref(A), weakref.ref(like)]
    del A, like
    gc.collect()
    assert all(r() is None for r in parent_refs)  # tiles die with their parent
    assert bound.storage is buf.storage


def test_a_layout_base_of_another_layout_is_another_tile():
    A = ndarray((64, 64), "float16", "gm")
    like = tile_view(A, (0, 0), (32, 32))
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    whole = make_tensor_like(buf, like, "NZ", layout_base=buf)
    small = ndarray((32, 32), "float16", "l1", "NZ")
    other = make_tensor_like(buf, like, "NZ", layout_base=small)
    assert other is not whole and other.layout == small.layout
    assert whole.layout == buf.layout
    assert make_tensor_like(buf, like, "NZ", layout_base=buf) is whole
    assert make_tensor_like(buf, like, "NZ", layout_base=twin(small)) is other


# ------------------------------------------------------------------ errors unchanged

@pytest.mark.parametrize("coord, code", [((True, 0), "APK111"), ((1.0, 0), "APK111"),
                                         ((1, 0, 0), "APK532"), ((-1, 0), "APK532"),
                                         ("10", "APK111")])
def test_bad_tile_arguments_raise_after_good_equal_ones(coord, code):
    A = ndarray((64, 64), "float16", "gm")
    t = tile_view(A, (1, 0), (16, 16))     # (1, 0) is kept; (True, 0) hashes alike
    for _ in range(2):
        with raises_code(code):
            tile_view(A, coord, (16, 16))
        with raises_code(code):
            get_tile(A, coord, (16, 16))
    with raises_code("APK532"):
        tile_view(A, (1, 0), (0, 16))
    with raises_code("APK111"):
        tile_view(A, (1, 0), (16, False))
    assert tile_view(A, (1, 0), (16, 16)) is t
    assert value(tile_view(A, (np.int64(1), 0), (16, 16))) == value(t)


def test_bad_bind_arguments_raise_every_time():
    A = ndarray((100, 100), "float16", "gm")
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    good = tile_view(A, (0, 0), (64, 64))
    make_tensor_like(buf, good, "NZ", layout_base=buf)
    big = tile_view(ndarray((128, 128), "float16", "gm"), (0, 0), (128, 128))
    for _ in range(2):
        with raises_code("APK536"):
            make_tensor_like(buf, big, "NZ")
        with raises_code("APK537"):
            make_tensor_like(buf, good, "ZZ")
        with raises_code("APK537"):
            make_tensor_like(buf, tile_view(ndarray((64, 64), "float32", "gm"), (0, 0),
                                            (64, 64)), "NZ")
        with raises_code("APK535"):
            make_tensor_like(ndarray((64, 64), "float16", "l0a", "ZZ"), good, "ZZ",
                             layout_base=buf)
        with raises_code("APK534"):
            make_tensor_like(buf, ndarray((2, 64, 64), "float16", "gm"), "NZ")
        with raises_code("APK111"):
            make_tensor_like(buf, "good", "NZ")


def test_a_kept_bound_tile_still_starts_unwritten_and_still_meets_freed_storage():
    data = np.arange(64 * 64, dtype=np.float16).reshape(64, 64)
    A = from_numpy(data, "gm")
    buf = ndarray((32, 32), "float16", "l1", "NZ")
    first = make_tensor_like(buf, tile_view(A, (0, 0), (32, 32)), "NZ")
    for _ in range(3):  # kept (the same object) and forgotten every time it is bound
        apdsl.dma_copy(first, tile_view(A, (0, 0), (32, 32)))
        np.testing.assert_array_equal(first.numpy(), data[:32, :32])
        assert make_tensor_like(buf, tile_view(A, (0, 0), (32, 32)), "NZ") is first
        with raises_code("APK404"):
            first.numpy()
    apdsl.dma_copy(first, tile_view(A, (0, 0), (32, 32)))
    buf.storage.free()
    kept = make_tensor_like(buf, tile_view(A, (0, 0), (32, 32)), "NZ")
    fresh = make_tensor_like(twin(buf), tile_view(A, (0, 0), (32, 32)), "NZ")
    for t in (kept, fresh):  # the kept tile and a fresh one: the same error at first use
        with raises_code("APK408"):
            apdsl.dma_copy(t, tile_view(A, (0, 0), (32, 32)))


def test_a_repeat_builds_nothing(monkeypatch):
    """The GEMM's calls asked again (the like an equal new object, as a tile cut from another
    parent view of the same value is) are found by key alone: no argument normalising, no
    layout, no format lookup, no value key."""
    import apdsl.tensor.tla as tla
    A = ndarray((256, 256), "float16", "gm")
    l1 = ndarray((128, 64), "float16", "l1", "NZ")
    l0 = ndarray((128, 32), "float16", "l0a", "ZZ")
    a_tile = tile_view(A, (1, 3), (128, 64))
    a1 = make_tensor_like(l1, a_tile, "NZ", layout_base=l1)
    a_sub = tile_view(a1, (0, 1), (128, 32))
    a0 = make_tensor_like(l0, a_sub, "ZZ")

    def boom(*_a, **_k):
        raise AssertionError("built again")

    for name in ("_ints", "_tile", "_bind", "_base_key", "valid_shape", "Layout", "formats"):
        monkeypatch.setattr(tla, name, boom)
    assert tile_view(A, (1, 3), (128, 64)) is a_tile
    assert make_tensor_like(l1, twin(a_tile), "NZ", layout_base=l1) is a1
    assert tile_view(a1, (0, 1), (128, 32)) is a_sub
    assert make_tensor_like(l0, twin(a_sub), "ZZ") is a0


@pytest.mark.parametrize("shape, coord, tile", [((40,), (2,), (16,)), ((6, 20, 30), (1, 0, 1),
                                                                         (4, 16, 16))])
def test_tiles_of_other_ranks_are_kept_and_equal_the_uncached_ones(shape, coord, tile):
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    A = from_numpy(arr, "gm")
    t = tile_view(A, coord, tile)
    assert tile_view(A, list(coord), list(tile)) is t
    fresh = tile_view(twin(A), tuple(np.int32(c) for c in coord), tile)
    assert fresh is not t and value(fresh)[1:] == value(t)[1:]
    want = arr[tuple(slice(c * n, c * n + o) for c, n, o in zip(coord, tile, t.origin_shape))]
    np.testing.assert_array_equal(t.numpy(), want)
    # the same key on a parent of another rank is that parent's mistake, every time
    other = ndarray((64, 64), "float32", "gm")
    for _ in range(2):
        with raises_code("APK532"):
            tile_view(other, coord, tile)


def test_dtypes_are_one_object_per_name():
    """DTypes compare by identity (views and plans compare them on every instruction), which
    is name equality because each name has one DType: by name, alias, NumPy dtype or pickle."""
    import pickle

    from apdsl.tensor.dtypes import DTYPES, dtype
    for name, d in DTYPES.items():
        assert dtype(name) is d and pickle.loads(pickle.dumps(d)) is d
        assert d == dtype(d.name) and hash(d) == hash(dtype(name))
        assert all((d == e) == (d.name == e.name) for e in DTYPES.values())
    assert dtype("f16") is dtype(np.float16) is DTYPES["float16"]
    assert dtype("float32") != "float32"
