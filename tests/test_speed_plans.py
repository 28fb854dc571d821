"""Row-gather plans are shared by equal views (layouts are values) and stay correct: a gather
whose view is made afresh in every call moves what NumPy's fancy indexing moves, and an
out-of-range index is still refused."""

from __future__ import annotations

import numpy as np
import pytest

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.core import resolve as rs
from apdsl.tensor.layout import Layout

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


def test_fresh_gather_views_share_one_plan_and_gather_like_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 16), dtype=np.float32)
    A = apdsl.from_numpy(a)
    D = apdsl.ndarray((8, 16), "float32", "sbuf")
    plans = set()
    for _ in range(5):
        rows = rng.integers(0, 64, (8, 1)).astype(np.int32)
        idx = apdsl.from_numpy(rows, "sbuf")
        view = A.vector_select(0, idx)
        apdsl.dma_copy(D, view)
        np.testing.assert_array_equal(D.numpy(), a[rows[:, 0]])
        plans.add(id(view.memo))
    assert len(plans) == 1
    bad = apdsl.from_numpy(np.array([[64]] * 8, np.int32), "sbuf")
    with pytest.raises(ApdslError) as e:
        apdsl.dma_copy(D, A.vector_select(0, bad))
    assert e.value.code == "APK402"


def test_the_plan_table_of_a_storage_is_bounded():
    A = apdsl.ndarray((4096, 4), "float32", "hbm")
    idx = apdsl.from_numpy(np.zeros((1, 1), np.int32), "sbuf")
    for k in range(3 * rs._ROW_PLANS_PER_STORAGE):
        rs.resolve(A[k:k + 1, :].vector_select(0, idx), "read", "src")
        assert len(rs._row_plans[A.storage]) <= rs._ROW_PLANS_PER_STORAGE


def test_layout_hash_and_equality_are_by_value():
    a = apdsl.ndarray((8, 8), "float32", "hbm")
    x, y = a[2:6, 1:3].layout, a.slice(0, 2, 6)[:, 1:3].layout  # equal values, two objects
    assert x is not y and x == y and hash(x) == hash(y)
    assert x != a[2:6, 1:4].layout and x != Layout(x.dims, x.base + 1)
    assert x.dims[0] == y.dims[0] and hash(x.dims[0]) == hash(y.dims[0])


def test_row_major_layouts_are_shared_values():
    a = Layout.row_major((4, 8))
    assert a is Layout.row_major([4, 8])  # made once per shape
    assert a.strides == (8, 1) and Layout.row_major((4, 8), 3).base == 3
    t = apdsl.ndarray((4, 8), "float32", "hbm")
    u = apdsl.ndarray((4, 8), "float32", "hbm")
    assert t.layout is u.layout and t.storage is not u.storage
    with pytest.raises(ApdslError):
        apdsl.ndarray((4, True), "float32", "hbm")
    assert apdsl.ndarray([np.int64(4), 8], "float32", "hbm").shape == (4, 8)
