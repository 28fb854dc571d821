"""`nisa.sequence_bounds` (NKI isa docstring) against a brute-force NumPy model: a segment is a
run of equal consecutive IDs; each element gets the run's first index and one past its last;
padding (ID 0) gets n and -1.  Both API forms: `dst=` and the legacy form returning its tile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from tests.support import raises_code


def brute_force(ids: np.ndarray) -> np.ndarray:
    n = len(ids)
    out = np.zeros((2, n), np.int64)
    for i, v in enumerate(ids):
        if v == 0:
            out[:, i] = (n, -1)
            continue
        lo = i
        while lo > 0 and ids[lo - 1] == v:
            lo -= 1
        hi = i
        while hi + 1 < n and ids[hi + 1] == v:
            hi += 1
        out[:, i] = (lo, hi + 1)
    return out


@nki.jit
def bounds_current(ids):
    n = ids.shape[1]
    out = nl.ndarray((1, 2, n), dtype=ids.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=ids)
    b = nl.ndarray((1, 2, n), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=b, segment_ids=t)
    nisa.dma_copy(dst=out, src=b)
    return out


@nki.jit
def bounds_legacy(ids):
    n = ids.shape[1]
    out = nl.ndarray((1, 2, n), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.sequence_bounds(segment_ids=nl.load(ids), dtype=nl.float32))
    return out


def test_the_docstrings_example():
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.int32)
    want = np.array([[[9, 1, 1, 3, 3, 3, 9, 7, 7], [-1, 3, 3, 6, 6, 6, -1, 9, 9]]])
    np.testing.assert_array_equal(nki.simulate(bounds_current)(ids), want)
    np.testing.assert_array_equal(nki.simulate(bounds_legacy)(ids), want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=64), st.booleans())
def test_against_brute_force(values, as_float):
    ids = np.array([values], np.float32 if as_float else np.int32)
    want = brute_force(ids[0])[None]
    np.testing.assert_array_equal(nki.simulate(bounds_current)(ids), want.astype(ids.dtype))
    np.testing.assert_array_equal(nki.simulate(bounds_legacy)(ids), want.astype(np.float32))


def test_refusals():
    with raises_code("APK930"):  # more than one partition
        nki.simulate(bounds_legacy)(np.ones((2, 4), np.int32))
    with raises_code("APK930"):  # a negative ID
        nki.simulate(bounds_current)(np.array([[1, -2, 3]], np.int32))
    with raises_code("APK930"):  # a fractional one
        nki.simulate(bounds_current)(np.array([[1, 1.5, 3]], np.float32))


@pytest.mark.parametrize("dtype", [np.int16, np.float16])
def test_other_dtypes_are_refused(dtype):
    with raises_code("APK461"):
        nki.simulate(bounds_current)(np.ones((1, 4), dtype))
