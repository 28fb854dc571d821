"""A DMA scatter whose runtime row index repeats (SPEC 4, dynamic access): rows that share an
index and carry the same bytes leave those bytes whatever order the DMA engines write them in,
so the copy runs and matches NumPy's fancy assignment; rows that share an index and differ are
APK405 (the order of a transfer's writes across engines is not defined), and so is any other
destination that touches an element twice (an overlapping pattern, overlapping rows of
different indices) whatever it holds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.instructions import dma_copy, memset
from apdsl.tensor.view import from_numpy, ndarray

F = 6


def sbuf(values: np.ndarray, dtype: str) -> ndarray:
    t = ndarray(values.shape, dtype, "sbuf")
    dma_copy(t, from_numpy(values))
    return t


def row_of(index: np.ndarray) -> np.ndarray:
    """The row a scatter writes for an index: a function of the index alone, so rows that
    share an index are equal (as a MoE kernel's padding rows, all made from one token)."""
    return (index.reshape(-1, 1) * 10.0 + np.arange(F) + 0.25).astype(np.float32)


def scatter(out, idx_values: np.ndarray, rows: np.ndarray, how: str, dtype: str = "float32",
            **hints) -> None:
    idx = sbuf(idx_values.reshape(-1, 1).astype(np.int32), "int32")
    src = sbuf(rows, dtype)
    n = rows.shape[0]
    if how == "ap":
        dst = out.ap([[F, n], [1, F]], vector_offset=idx, indirect_dim=0)
    else:
        dst = out.vector_select(0, idx)
    dma_copy(dst, src, **hints)


@settings(deadline=None, max_examples=40)
@given(index=st.lists(st.integers(0, 7), min_size=1, max_size=24),
       how=st.sampled_from(["ap", "select"]), plans=st.booleans())
def test_repeated_index_with_equal_rows_matches_numpy(index, how, plans):
    idx = np.array(index)
    base = np.full((8, F), -1.0, np.float32)
    out = from_numpy(base.copy())
    with apdsl.options(plans=plans):
        scatter(out, idx, row_of(idx), how)
    want = base.copy()
    want[idx] = row_of(idx)
    np.testing.assert_array_equal(out.numpy(), want)


@settings(deadline=None, max_examples=30)
@given(index=st.lists(st.integers(-3, 10), min_size=1, max_size=24), plans=st.booleans())
def test_skipped_rows_and_repeated_equal_rows(index, plans):
    idx = np.array(index)
    out = from_numpy(np.zeros((8, F), np.float32))
    with apdsl.options(plans=plans):
        scatter(out, idx, row_of(idx), "ap", oob_mode="skip")
    want = np.zeros((8, F), np.float32)
    ok = (idx >= 0) & (idx < 8)
    want[idx[ok]] = row_of(idx[ok])
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("plans", [True, False])
@pytest.mark.parametrize("skip", [False, True])
def test_repeated_index_with_different_rows_is_refused(plans, skip):
    idx = np.array([5, 2, 7, 2])
    rows = row_of(idx)
    rows[3, 4] += 1.0  # row 3 shares index 2 with row 1 and differs from it in one element
    out = from_numpy(np.zeros((8, F), np.float32))
    hints = {"oob_mode": "skip"} if skip else {}
    with apdsl.options(plans=plans), raises_code("APK405") as info:
        scatter(out, idx, rows, "ap", **hints)
    err = info.value
    assert f"storage element {2 * F + 4} twice" in err.message
    assert "[1, 4]" in err.message and "[3, 4]" in err.message
    note = " ".join(err.notes)
    assert "same runtime index 2" in note and "parallelized up to 16 DMA engines" in note
    # nothing was written: the check comes first
    np.testing.assert_array_equal(out.numpy(), np.zeros((8, F), np.float32))


def test_equal_bytes_are_compared_in_the_destination_dtype():
    # 1.0 and 1.0039 differ in float32 and round to the same bfloat16: the same bytes land
    idx = np.array([3, 3])
    rows = np.array([[1.0] * F, [1.0039] * F], np.float32)
    out = ndarray((8, F), "bfloat16", "hbm")
    memset_hbm = from_numpy(np.zeros((8, F), np.float32))
    dma_copy(out, memset_hbm)
    scatter(out, idx, rows, "ap")
    assert out.numpy()[3].astype(np.float32).tolist() == [1.0] * F
    rows[1] = 1.01  # 1.0078125 in bfloat16: different bytes
    with raises_code("APK405"):
        scatter(out, idx, rows, "ap")


def test_negative_zero_is_not_zero():
    idx = np.array([1, 1])
    rows = np.zeros((2, F), np.float32)
    rows[1, 0] = -0.0  # equal as numbers, different bytes: which lands is not defined
    out = from_numpy(np.ones((4, F), np.float32))
    with raises_code("APK405"):
        scatter(out, idx, rows, "ap")


@pytest.mark.parametrize("plans", [True, False])
def test_a_row_no_index_names_stays_unwritten(plans):
    # four rows into a four-row tensor, index 1 twice: row 3 is never written, though as many
    # elements were written as the tensor holds
    out = ndarray((4, F), "float32", "hbm")
    idx = np.array([0, 1, 1, 2])
    with apdsl.options(plans=plans):
        scatter(out, idx, row_of(idx), "ap")
    np.testing.assert_array_equal(out[0:3].numpy(), row_of(np.arange(3)))
    with raises_code("APK404") as info:
        out.numpy()
    assert "[3, 0]" in info.value.message


@pytest.mark.parametrize("plans", [True, False])
def test_an_overlapping_row_pattern_is_refused_even_with_equal_values(plans):
    out = from_numpy(np.zeros((8, F), np.float32))
    idx = sbuf(np.array([[1], [4]], np.int32), "int32")
    src = ndarray((2, 3), "float32", "sbuf")
    memset(src, 2.0)
    with apdsl.options(plans=plans), raises_code("APK405") as info:
        # each row writes its first element three times (a stride-0 pattern)
        dma_copy(out.ap([[F, 2], [0, 3]], vector_offset=idx, indirect_dim=0), src)
    assert "[0, 0] and [0, 1]" in info.value.message
    assert "same runtime index" not in " ".join(info.value.notes)


@pytest.mark.parametrize("plans", [True, False])
def test_rows_of_different_indices_that_overlap_are_refused(plans):
    out = from_numpy(np.zeros((8, F), np.float32))
    idx = sbuf(np.array([[2], [3]], np.int32), "int32")
    src = ndarray((2, 2 * F), "float32", "sbuf")
    memset(src, 2.0)
    with apdsl.options(plans=plans), raises_code("APK405") as info:
        # a row of 2F elements from row 2 runs into row 3, which index 3 writes too
        dma_copy(out.ap([[F, 2], [1, 2 * F]], vector_offset=idx, indirect_dim=0), src)
    assert "[0, 6] and [1, 0]" in info.value.message


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.sampled_from(["uint8", "float16", "float32", "float64", "bfloat16", "complex128"]),
       st.binary(min_size=16, max_size=256), st.data())
def test_pairs_of_elements_differ_in_bits_against_their_bytes(dtype, blob, data):
    # which pairs of a scatter's repeated writes differ, against their bytes one by one (NaN
    # payloads and -0.0 included: bits, not values)
    from apdsl.runtime.core.scatter import bits_differ
    np_dtype = np.dtype(getattr(__import__("ml_dtypes"), dtype)) if dtype == "bfloat16" \
        else np.dtype(dtype)
    n = len(blob) // np_dtype.itemsize
    raw = np.frombuffer(blob[:n * np_dtype.itemsize], np.uint8)
    flat = raw.view(np_dtype)
    # (a pair may name one element twice)
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                               min_size=1, max_size=20))
    a = np.array([i for i, _ in pairs], np.int64)
    b = np.array([j for _, j in pairs], np.int64)
    got = bits_differ(flat, a, b)
    size = np_dtype.itemsize
    want = [raw[i * size:(i + 1) * size].tobytes() != raw[j * size:(j + 1) * size].tobytes()
            for i, j in pairs]
    assert got.tolist() == want


def _scatter_outcome(idx, rows, dtype, general):
    """What a repeated-index scatter leaves: the error's code and message, or the output's
    bits and written state; `general`: with the by-rows check turned off."""
    from apdsl.runtime.core import scatter as module
    with pytest.MonkeyPatch.context() as m:
        if general:
            m.setattr(module, "rows_agree", lambda *a: None)
        out = ndarray((8, F), dtype, "hbm")
        dma_copy(out[0:4, :], from_numpy(np.zeros((4, F), np.float32)))  # rows 4-7 unwritten
        try:
            scatter(out, idx, rows, "ap", dtype="float32")
        except apdsl.ApdslError as e:
            import re
            unnamed = re.compile(r"%\d+")  # (a made tensor's name counts the tensors made)
            return e.code, unnamed.sub("%", e.message), tuple(unnamed.sub("%", n)
                                                             for n in e.notes)
        view = out.storage.data.copy()
        return view.tobytes(), out.storage.mask.copy().tobytes()


@settings(deadline=None, max_examples=80, derandomize=True)
@given(index=st.lists(st.integers(0, 7), min_size=1, max_size=12),
       dtype=st.sampled_from(["float32", "bfloat16", "float16"]), data=st.data())
def test_the_check_by_rows_agrees_with_the_check_by_elements(index, dtype, data):
    # rows sharing an index made equal, or one of them changed in one element (NaN, -0.0 and
    # values that round to the same destination bits among the changes)
    idx = np.array(index)
    rows = row_of(idx)
    if data.draw(st.booleans()):
        r = data.draw(st.integers(0, len(index) - 1))
        c = data.draw(st.integers(0, F - 1))
        rows[r, c] = data.draw(st.sampled_from([np.nan, -0.0, 0.0, rows[r, c] + 1e-4,
                                                rows[r, c] + 1.0]))
    fast = _scatter_outcome(idx, rows.copy(), dtype, False)
    general = _scatter_outcome(idx, rows.copy(), dtype, True)
    assert fast == general
