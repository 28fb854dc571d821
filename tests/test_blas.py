"""NumPy's BLAS reached directly (`apdsl.runtime.core.blas`): `add_product` adds a float32
product into its destination bit for bit as `np.add(out, a.T @ b, out=out)` does, refuses
what it cannot do that way, and `nc_matmul`'s accumulation through it gives what the general
path (plans off) gives."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.runtime.core import blas

pytestmark = pytest.mark.plans  # (compares the fast path with the general one itself)

needs_sgemm = pytest.mark.skipif(blas._sgemm() is None, reason="NumPy's BLAS is not OpenBLAS")


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


@needs_sgemm
@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, blas.MAX_K), m=st.integers(2, 130), n=st.integers(2, 520),
       pad=st.sampled_from([0, 3]), seed=st.integers(0, 2**32 - 1))
def test_add_product_is_numpys_product_and_add_bit_for_bit(k, m, n, pad, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    base = (rng.standard_normal((m, n + pad)) * 8).astype(np.float32)
    want = base.copy()
    np.add(want[:, :n], np.matmul(a.T, b), out=want[:, :n])
    got = base.copy()
    assert blas.add_product(got[:, :n], a, b)  # (with pad: a row stride past n)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@needs_sgemm
@pytest.mark.parametrize("why, k, m, n", [("one row: NumPy takes sgemv", 16, 1, 64),
                                          ("one column", 16, 64, 1),
                                          ("K past one block", blas.MAX_K + 1, 8, 8)])
def test_add_product_refuses_what_numpy_would_compute_otherwise(why, k, m, n):
    a, b = np.ones((k, m), np.float32), np.ones((k, n), np.float32)
    out = np.zeros((m, n), np.float32)
    assert not blas.add_product(out, a, b), why
    assert not out.any()


def test_add_product_refuses_layouts_blas_cannot_address():
    a, b = np.ones((4, 8), np.float32), np.ones((4, 6), np.float32)
    out = np.zeros((8, 12), np.float32)
    assert not blas.add_product(out[:, ::2], a, b)  # columns not adjacent
    assert not blas.add_product(np.zeros((8, 6), np.float64), a, b)
    assert not blas.add_product(out[:, :6], np.asfortranarray(a), b)
    assert not blas.add_product(None, a, b)
    assert not out.any()


def _accumulated(seed: int, k: int, n: int, steps: int) -> np.ndarray:
    """An nc_matmul accumulation over `steps` bf16 tiles into a (128, n) PSUM tile."""
    rng = np.random.default_rng(seed)
    acc = apdsl.ndarray((128, n), "float32", "psum")
    for _ in range(steps):
        st_ = apdsl.from_numpy(rng.standard_normal((k, 128)).astype(ml_dtypes.bfloat16), "sbuf")
        mv = apdsl.from_numpy(rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16), "sbuf")
        apdsl.nc_matmul(acc, st_, mv)
    return acc.numpy()


@needs_sgemm
@pytest.mark.parametrize("k, n, steps", [(128, 512, 4), (32, 64, 3), (1, 2, 2)])
def test_nc_matmul_accumulation_is_the_general_paths(k, n, steps, monkeypatch):
    added = []
    real = blas.add_product

    def spy(out, a, b):
        added.append(real(out, a, b))
        return added[-1]
    monkeypatch.setattr(blas, "add_product", spy)
    fast = _accumulated(7, k, n, steps)
    assert added == [True] * (steps - 1)  # every matmul after the first added by BLAS
    with apdsl.options(plans=False):
        slow = _accumulated(7, k, n, steps)
    np.testing.assert_array_equal(_bits(fast), _bits(slow))
