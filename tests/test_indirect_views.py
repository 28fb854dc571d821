"""A runtime index given to `.ap` on a view steps by that view's own dim (NKI reference:
"indirect_dim: dimension in self.shape whose stride scales the indirect offset").  A KV-cache
update reshapes the cache (B, S, D) to (B * S, D) and scatters one row per batch at
`b * S + position`: each step is one row of D elements, not one batch of S * D.  Oracles:
NumPy's fancy indexing of the reshaped array."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.runtime.instructions import dma_copy
from apdsl.tensor.view import from_numpy, ndarray


def sbuf_of(values: np.ndarray, dtype: str):
    t = ndarray(values.shape, dtype, "sbuf")
    dma_copy(t, from_numpy(values))
    return t


@st.composite
def caches(draw):
    b, s, d = draw(st.integers(1, 4)), draw(st.integers(1, 8)), draw(st.integers(1, 6))
    rows = draw(st.lists(st.integers(0, b * s - 1), min_size=1, max_size=8, unique=True))
    return b, s, d, rows


@settings(deadline=None, max_examples=40)
@given(caches())
def test_a_scatter_into_a_reshaped_cache_steps_by_its_rows(case):
    b, s, d, rows = case
    rng = np.random.default_rng(len(rows))
    cache = rng.standard_normal((b, s, d)).astype(np.float32)
    new = rng.standard_normal((len(rows), d)).astype(np.float32)
    out = from_numpy(cache.copy())
    idx = sbuf_of(np.array(rows, np.uint32).reshape(-1, 1), "uint32")
    dma_copy(out.reshape((b * s, d)).ap([[d, len(rows)], [1, d]], offset=0, vector_offset=idx,
                                         indirect_dim=0),
             sbuf_of(new, "float32"))
    want = cache.reshape(b * s, d).copy()
    want[rows] = new
    np.testing.assert_array_equal(out.numpy(), want.reshape(b, s, d))


@settings(deadline=None, max_examples=40)
@given(caches())
def test_a_gather_from_a_reshaped_table_steps_by_its_rows(case):
    b, s, d, rows = case
    table = np.arange(b * s * d, dtype=np.float32).reshape(b, s, d)
    idx = sbuf_of(np.array(rows, np.int32).reshape(-1, 1), "int32")
    dst = ndarray((len(rows), d), "float32", "sbuf")
    dma_copy(dst, from_numpy(table).reshape((b * s, d)).ap([[d, len(rows)], [1, d]], offset=0,
                                                            vector_offset=idx, indirect_dim=0))
    np.testing.assert_array_equal(dst.numpy(), table.reshape(b * s, d)[rows])


def test_a_scalar_offset_on_a_reshape_moves_whole_rows_of_the_reshape():
    table = np.arange(2 * 6 * 4, dtype=np.float32).reshape(2, 6, 4)
    at = sbuf_of(np.array([[7]], np.int32), "int32")
    dst = ndarray((3, 4), "float32", "sbuf")
    dma_copy(dst, from_numpy(table).reshape((12, 4)).ap([[4, 3], [1, 4]], offset=0,
                                                        scalar_offset=at, indirect_dim=0))
    np.testing.assert_array_equal(dst.numpy(), table.reshape(12, 4)[7:10])


def test_a_column_slice_keeps_its_storage_row_stride():
    table = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    idx = sbuf_of(np.array([[5], [0], [3]], np.int32), "int32")
    dst = ndarray((3, 3), "float32", "sbuf")
    # offset=None: the slice's own offset (column 2) is kept, rows step by 6
    dma_copy(dst, from_numpy(table)[:, 2:5].ap([[6, 3], [1, 3]], vector_offset=idx,
                                               indirect_dim=0))
    np.testing.assert_array_equal(dst.numpy(), table[[5, 0, 3], 2:5])


def test_a_view_whose_step_the_docs_leave_open_is_refused():
    table = from_numpy(np.zeros((8, 6), np.float32))
    idx = sbuf_of(np.array([[1], [2]], np.int32), "int32")
    with raises_code("APK222"):  # every other row: a step of 12 or of 6?
        table[::2].ap([[12, 2], [1, 6]], vector_offset=idx, indirect_dim=0)
    with raises_code("APK222"):  # a permuted view's dim 0 steps by 1
        table.permute((1, 0)).ap([[1, 2], [6, 8]], vector_offset=idx, indirect_dim=0)
    with raises_code("APK222"):
        table.reshape((48,)).ap([[1, 2]], vector_offset=idx, indirect_dim=1)
