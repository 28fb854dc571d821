"""A kernel library laid out as libraries are (tests/nki_kernels/kernelpkg/: a package whose
kernel imports helper modules by relative imports and is re-exported from `ops`), written for
these tests, runs unchanged on apdsl.nki: a running sum along the last axis, tiled with
partition and free-dimension tails, against NumPy's cumsum."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import apdsl.nki as nki

KERNELS = Path(__file__).parent / "nki_kernels"


@pytest.fixture
def prefix_sum(monkeypatch):
    monkeypatch.syspath_prepend(str(KERNELS))
    assert nki.install()
    from kernelpkg.ops import prefix_sum
    yield prefix_sum
    nki.uninstall()
    for name in [m for m in sys.modules if m == "kernelpkg" or m.startswith("kernelpkg.")]:
        del sys.modules[name]


@pytest.mark.parametrize("shape, dtype", [
    ((1, 256), np.float32),
    ((16, 3, 700), ml_dtypes.bfloat16),
    ((128, 1024), np.float32),
    ((130, 1100), np.float32),  # a partition tail and a free-dimension tail
])
def test_prefix_sum_matches_numpy(prefix_sum, shape, dtype):
    x = np.random.default_rng(42).standard_normal(shape).astype(dtype)
    y = nki.simulate(prefix_sum)(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    expect = np.cumsum(x.astype(np.float64), axis=-1)
    if dtype == ml_dtypes.bfloat16:  # each element stored as bf16: compare in kind
        atol = float(np.abs(expect).max()) * 2 ** -7
        np.testing.assert_allclose(y.astype(np.float64), expect, rtol=1e-2, atol=atol)
    else:
        np.testing.assert_allclose(y, expect, rtol=1e-4, atol=1e-4)


def test_the_librarys_own_check_is_its_own_exception(prefix_sum):
    from kernelpkg.util.checks import KernelArgumentError
    with pytest.raises(KernelArgumentError, match="last axis only"):
        nki.simulate(prefix_sum)(np.ones((4, 8), np.float32), axis=0)
