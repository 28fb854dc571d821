"""`oob_mode=skip` on indirect DMA (SPEC 4): out-of-range rows are not moved, the rest are, as
NumPy fancy indexing of the in-range rows says; with the default (`error`) the same program is
an error."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.instructions import dma_copy, dma_transpose, memset
from apdsl.tensor.view import from_numpy, ndarray

RNG = np.random.default_rng(5)


def sbuf_index(values: np.ndarray, dtype: str = "int32"):
    t = ndarray(values.shape, dtype, "sbuf")
    dma_copy(t, from_numpy(values.astype(np.int64)))
    return t


@settings(deadline=None)  # the first example's imports take seconds on a loaded machine
@given(rows=st.lists(st.integers(-3, 12), min_size=1, max_size=16))
def test_gather_skips_out_of_range_rows(rows):
    table = RNG.standard_normal((8, 6)).astype(np.float32)
    idx = sbuf_index(np.array(rows).reshape(-1, 1))
    n = len(rows)
    dst = ndarray((n, 6), "float32", "sbuf")
    memset(dst, -1.0)
    dma_copy(dst, from_numpy(table).ap([[6, n], [1, 6]], vector_offset=idx, indirect_dim=0),
             oob_mode="skip")
    want = np.full((n, 6), -1.0, np.float32)
    ok = [i for i, r in enumerate(rows) if 0 <= r < 8]
    want[ok] = table[[rows[i] for i in ok]]
    np.testing.assert_array_equal(dst.numpy(), want)


def test_a_skipped_row_stays_unwritten():
    table = from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    idx = sbuf_index(np.array([[2], [9]]))
    dst = ndarray((2, 4), "float32", "sbuf")
    dma_copy(dst, table.vector_select(0, idx), oob_mode="skip")
    with apdsl.options(init_check="strict"), raises_code("APK404"):  # row 1 was skipped: nothing wrote it
        dst.numpy()
    np.testing.assert_array_equal(dst[0:1].numpy(), [[8, 9, 10, 11]])


def test_scatter_skips_out_of_range_rows():
    out = from_numpy(np.zeros((5, 3), np.float32))
    idx = sbuf_index(np.array([[4], [7], [0], [-1]]))
    src = from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3) + 1)
    s = ndarray((4, 3), "float32", "sbuf")
    dma_copy(s, src)
    dma_copy(out.ap([[3, 4], [1, 3]], vector_offset=idx, indirect_dim=0), s, oob_mode="skip")
    want = np.zeros((5, 3), np.float32)
    want[4], want[0] = [1, 2, 3], [7, 8, 9]
    np.testing.assert_array_equal(out.numpy(), want)


def test_scalar_offset_out_of_range_skips_the_transfer():
    table = from_numpy(np.arange(64, dtype=np.float32).reshape(8, 8))
    at = sbuf_index(np.array([[6]]))
    dst = ndarray((4, 8), "float32", "sbuf")
    memset(dst, 5.0)
    view = table.ap([[8, 4], [1, 8]], scalar_offset=at, indirect_dim=0)
    dma_copy(dst, view, oob_mode="skip")  # rows 6..9 leave the table: nothing moves
    np.testing.assert_array_equal(dst.numpy(), np.full((4, 8), 5.0, np.float32))
    with raises_code("APK403"):
        dma_copy(dst, view)


def test_without_skip_the_index_is_an_error():
    table = from_numpy(np.zeros((3, 8), np.float32))
    idx = sbuf_index(np.array([[0], [5]]))
    with raises_code("APK402"):
        dma_copy(ndarray((2, 8), "float32", "sbuf"), table.vector_select(0, idx))
    with raises_code("APK403"):
        dma_copy(ndarray((2, 8), "float32", "sbuf"),
                 table.ap([[8, 2], [1, 8]], vector_offset=idx, indirect_dim=0))


def test_skip_still_checks_the_rows_that_move():
    table = ndarray((4, 8), "float32", "hbm")  # never written
    idx = sbuf_index(np.array([[1], [9]]))
    with apdsl.options(init_check="strict"), raises_code("APK404"):
        dma_copy(ndarray((2, 8), "float32", "sbuf"), table.vector_select(0, idx),
                 oob_mode="skip")
    with raises_code("APK306"):
        dma_copy(ndarray((3, 8), "float32", "sbuf"),
                 from_numpy(np.zeros((4, 8), np.float32)).vector_select(0, idx),
                 oob_mode="skip")


def test_indirect_transpose_skips_out_of_range_rows():
    table = RNG.standard_normal((40, 16)).astype(np.float16)
    rows = np.array([3, 50, 7, 39] * 4, np.uint32)
    idx = sbuf_index(rows.reshape(16, 1), "uint32")
    src = from_numpy(table).ap([[16, 16], [1, 16]], vector_offset=idx, indirect_dim=0)
    dst = ndarray((16, 16), "float16", "sbuf")
    memset(dst, 0.0)
    dma_transpose(dst, src, oob_mode="skip")
    gathered = np.zeros((16, 16), np.float16)
    ok = rows < 40
    gathered[ok] = table[rows[ok]]
    np.testing.assert_array_equal(dst.numpy(), gathered.T)


def test_gathers_and_scatters_take_software_dge_only():
    table = from_numpy(np.zeros((8, 4), np.float32))
    idx = sbuf_index(np.array([[1], [2]]))
    for mode in ("hwdge", "none"):
        with raises_code("APK495"):
            dma_copy(ndarray((2, 4), "float32", "sbuf"), table.vector_select(0, idx),
                     dge_mode=mode)
        with raises_code("APK495"):
            dma_copy(table.ap([[4, 2], [1, 4]], vector_offset=idx, indirect_dim=0),
                     ndarray((2, 4), "float32", "sbuf"), dge_mode=mode)
    dst = ndarray((2, 4), "float32", "sbuf")
    dma_copy(dst, table.vector_select(0, idx), dge_mode="swdge")
    np.testing.assert_array_equal(dst.numpy(), np.zeros((2, 4), np.float32))
