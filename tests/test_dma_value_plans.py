"""`dma_copy` plans matched by value (`runtime.plans.dmaplan`): a tile declared in a loop is a new
view of new storage every iteration, and still finds the plan of the view it is copied from
or into.  A plan is reused only for a view equal in every fact its checks depended on
(layout, dtype, buffer, storage size, no runtime index) and never carries state over from
an earlier tile: the results equal NumPy, and every error of the full path (an unwritten or
freed tile, a count or bounds mismatch, a PSUM operand) is raised on the planned path too."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import error_code

import apdsl
from apdsl.runtime.copies import dma_copy, memset
from apdsl.runtime.core import trace
from apdsl.runtime.plans.dmaplan import DmaPlan
from apdsl.runtime.plans.table import kept
from apdsl.semantics.program import Program
from apdsl.tensor.dtypes import dtype as to_dtype
from apdsl.tensor.layout import Layout
from apdsl.tensor.storage import Storage
from apdsl.tensor.view import Tensor

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

P, F, T = 16, 8, 4


def _world():
    a = np.random.default_rng(4).standard_normal((P, T * F), dtype=np.float32)
    return a, apdsl.from_numpy(a, "hbm"), apdsl.ndarray((T * P, F), "float32", "hbm")


def _round(A, B, dtype="float32", buffer="sbuf"):
    tiles = []
    for i in range(T):
        t = apdsl.ndarray((P, F), dtype, buffer)
        dma_copy(t, A[:, i * F:(i + 1) * F])
        dma_copy(B[i * P:(i + 1) * P, :], t)
        tiles.append(t)
    return tiles


def _planned(A, B):
    """Three rounds of the loop: the plans are kept on the recurring slices."""
    for _ in range(3):
        for t in _round(A, B):
            t.storage.free()
    for view in (A[:, 0:F], B[0:P, :]):
        assert kept("dma_copy", view) and all(type(p) is DmaPlan for p in kept("dma_copy", view))


def _expected(a):
    return np.concatenate([a[:, i * F:(i + 1) * F] for i in range(T)], axis=0)


def test_a_tile_declared_in_the_loop_uses_the_plans_and_equals_numpy():
    a, A, B = _world()
    _planned(A, B)
    np.testing.assert_array_equal(B.numpy(), _expected(a))
    tiles = _round(A, B)  # each new tile holds its own slice, nothing of an earlier one
    for i, t in enumerate(tiles):
        assert t.storage.all_written
        np.testing.assert_array_equal(t.numpy(), a[:, i * F:(i + 1) * F])
    # the source rewritten in between: the plan copies what is there now
    dma_copy(B, apdsl.from_numpy(np.zeros((T * P, F), np.float32)))
    dma_copy(A[:, 0:F], apdsl.from_numpy(np.full((P, F), 6.5, np.float32)))
    a[:, 0:F] = 6.5
    _round(A, B)
    np.testing.assert_array_equal(B.numpy(), _expected(a))


def test_a_new_tile_is_unwritten_even_when_the_previous_one_was_written():
    a, A, B = _world()
    _planned(A, B)
    fresh = apdsl.ndarray((P, F), "float32", "sbuf")
    assert error_code(lambda: dma_copy(B[0:P, :], fresh)) == "APK404"
    memset(fresh[:, 0:F // 2], 1.0)  # half written: still refused
    assert error_code(lambda: dma_copy(B[0:P, :], fresh)) == "APK404"
    memset(fresh, 2.0)
    dma_copy(B[0:P, :], fresh)
    assert (B.numpy()[0:P] == 2.0).all()
    with apdsl.options(init_check=False):  # unwritten reads as 0 with the check off
        dma_copy(B[P:2 * P, :], apdsl.ndarray((P, F), "float32", "sbuf"))
    assert (B.numpy()[P:2 * P] == 0.0).all()


def test_a_freed_tile_is_refused_as_source_and_destination():
    a, A, B = _world()
    _planned(A, B)
    t = apdsl.ndarray((P, F), "float32", "sbuf")
    dma_copy(t, A[:, 0:F])
    t.storage.free()
    assert error_code(lambda: dma_copy(B[0:P, :], t)) == "APK408"
    assert error_code(lambda: dma_copy(t, A[:, 0:F])) == "APK408"
    A.storage.free()  # the recurring side freed
    assert error_code(lambda: dma_copy(apdsl.ndarray((P, F), "float32", "sbuf"), A[:, 0:F])) == \
        "APK408"


def test_another_dtype_converts_as_the_full_path():
    a, A, B = _world()
    _planned(A, B)
    # int32 first: the storage size of float32, so only the dtype tells them apart
    for dtype, np_dtype in (("int32", np.int32), ("bfloat16", ml_dtypes.bfloat16),
                            ("float16", np.float16)):
        tiles = _round(A, B, dtype)
        for i, t in enumerate(tiles):
            want = a[:, i * F:(i + 1) * F]
            want = (np.rint(want) if dtype == "int32" else want).astype(np_dtype)
            np.testing.assert_array_equal(t.numpy(), want)
            np.testing.assert_array_equal(B.numpy()[i * P:(i + 1) * P], want.astype(np.float32))


def test_a_source_of_another_dtype_and_the_same_size_is_converted():
    a, A, _ = _world()
    Bi = apdsl.ndarray((T * P, F), "int32", "hbm")
    for dtype in ("int32", "int32", "float32"):  # float32: the storage size of int32
        for i in range(T):
            t = apdsl.ndarray((P, F), dtype, "sbuf")
            dma_copy(t, A[:, i * F:(i + 1) * F])
            dma_copy(Bi[i * P:(i + 1) * P, :], t)
        assert all(type(p) is DmaPlan for p in kept("dma_copy", Bi[0:P, :]))
        assert kept("dma_copy", Bi[0:P, :])
    np.testing.assert_array_equal(Bi.numpy(), np.rint(_expected(a)).astype(np.int32))


def test_another_shape_or_buffer_is_checked_again():
    a, A, B = _world()
    _planned(A, B)
    narrow = apdsl.ndarray((P, F - 1), "float32", "sbuf")
    assert error_code(lambda: dma_copy(narrow, A[:, 0:F])) == "APK306"
    assert error_code(lambda: dma_copy(B[0:P, :], narrow)) == "APK306"
    acc = apdsl.ndarray((P, F), "float32", "psum")  # the same layout object, in PSUM
    assert acc.layout is apdsl.ndarray((P, F), "float32", "sbuf").layout
    assert error_code(lambda: dma_copy(acc, A[:, 0:F])) == "APK342"
    assert error_code(lambda: dma_copy(B[0:P, :], acc)) == "APK342"
    tiles = _round(A, B, buffer="hbm")  # HBM -> HBM is a DMA too
    np.testing.assert_array_equal(tiles[2].numpy(), a[:, 2 * F:3 * F])
    np.testing.assert_array_equal(B.numpy(), _expected(a))


def test_the_same_layout_over_a_smaller_storage_is_bounds_checked():
    a, A, B = _world()
    _planned(A, B)
    f32 = to_dtype("float32")
    layout = Layout.row_major((P, F))
    small = Tensor(Storage((P, F - 1), f32, "sbuf"), f32, layout)  # a tile's facts but size
    big = Tensor(Storage((P, 2 * F), f32, "sbuf"), f32, layout)
    assert error_code(lambda: dma_copy(small, A[:, 0:F])) == "APK401"
    assert error_code(lambda: dma_copy(B[0:P, :], small)) == "APK401"
    dma_copy(big, A[:, F:2 * F])  # a bigger storage: in bounds, half of it written
    assert not big.storage.all_written
    dma_copy(B[0:P, :], big)
    np.testing.assert_array_equal(B.numpy()[0:P], a[:, F:2 * F])


def test_tracing_records_every_copy_of_the_fresh_tiles():
    a, A, B = _world()
    _planned(A, B)
    with trace.tracing() as tr:
        _round(A, B)
    assert [r.op for r in tr] == ["dma_copy"] * (2 * T)


def _kernel(n: int) -> str:
    return f"""
kernel tiles(A: f32[{P}, {T * F}] @ hbm) -> f32[{T * P}, {F}] @ hbm:
    B = ndarray(({T * P}, {F}), f32, hbm)
    for r in range(4):
        for i in range({T}):
            t = ndarray(({P}, {F}), f32, sbuf)
            if r < {n}:
                dma_copy(t, A[:, i * {F}:(i + 1) * {F}])
            dma_copy(B[i * {P}:(i + 1) * {P}, :], t)
    return B
"""


def test_the_apk_tile_loop_equals_numpy_and_refuses_an_unwritten_tile():
    a = np.random.default_rng(8).standard_normal((P, T * F), dtype=np.float32)
    got = Program(_kernel(4), "<fresh tiles>").run("tiles", {"A": a}).value.numpy()
    np.testing.assert_array_equal(got, _expected(a))
    # rounds 0-2 write their tiles (the plans form), round 3 copies a tile never written
    program = Program(_kernel(3), "<fresh tiles>")
    assert error_code(lambda: program.run("tiles", {"A": a})) == "APK404"


_TILE = st.tuples(st.sampled_from(["float32", "bfloat16"]), st.sampled_from(["sbuf", "hbm"]),
                  st.sampled_from([(P, F), (P, F // 2)]),
                  st.sampled_from(["load", "none", "half", "free"]))


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(_TILE, st.integers(0, T - 1), st.integers(0, T - 1)),
                      min_size=1, max_size=16))
def test_fresh_tiles_follow_the_full_path(steps):
    """Tiles of a few dtypes, buffers and shapes, loaded or not, half written or freed, copied
    in and out of recurring slices: every copy raises the same code, and leaves the same
    bytes and written state, by the plans as by the full path (forced by tracing)."""
    outcomes = []
    for traced in (False, True):
        a, A, B = _world()
        seen = []
        for _rep in range(2):  # the second pass finds the plans the first one left
            for (dtype, buffer, shape, how), i, j in steps:
                t = apdsl.ndarray(shape, dtype, buffer)

                def one(t=t, i=i, j=j, how=how, shape=shape, A=A, B=B) -> None:
                    if how == "load":
                        dma_copy(t, A[:, i * F:i * F + shape[1]])
                    elif how == "half":
                        memset(t[:, 0:1], 1.0)
                    elif how == "free":
                        t.storage.free()
                    dma_copy(B[j * P:(j + 1) * P, 0:shape[1]], t)

                if traced:
                    with trace.tracing():
                        seen.append(error_code(one))
                else:
                    seen.append(error_code(one))
        outcomes.append((seen, B.storage.data.tobytes(),
                         B.storage.all_written or B.storage.mask.tobytes()))
    assert outcomes[0] == outcomes[1]
