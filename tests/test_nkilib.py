"""A kernel of the NKI library (aws-neuron/nki-library), re-typed in its own package layout
under tests/nki_kernels/nkilib/ with the helper modules it imports, runs unchanged on
apdsl.nki: the library's fast test cases, checked against NumPy's cumsum with the library's
tolerances."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import apdsl.nki as nki

KERNELS = Path(__file__).parent / "nki_kernels"


@pytest.fixture
def nkilib(monkeypatch):
    monkeypatch.syspath_prepend(str(KERNELS))
    assert nki.install()
    from nkilib.core.cumsum import cumsum
    yield cumsum
    nki.uninstall()
    for name in [m for m in sys.modules if m == "nkilib" or m.startswith("nkilib.")]:
        del sys.modules[name]


# the library's FAST_TEST_PARAMS (test/integration/nkilib/core/cumsum/test_cumsum.py)
@pytest.mark.parametrize("batch, hidden, ndim, seq_len, dtype", [
    (1, 256, 2, 1, np.float32),
    (64, 1024, 3, 4, ml_dtypes.bfloat16),
    (128, 2048, 2, 1, np.float32),
    (130, 2100, 2, 1, np.float32),  # a partition tail and a free-dimension tail (apdsl's case)
])
def test_cumsum_matches_numpy(nkilib, batch, hidden, ndim, seq_len, dtype):
    np.random.seed(42)
    shape = (batch, seq_len, hidden) if ndim == 3 else (batch, hidden)
    x = np.random.randn(*shape).astype(dtype)
    y = nki.simulate(nkilib)(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    expect = np.cumsum(x.astype(np.float64), axis=-1)
    is_bf16 = dtype == ml_dtypes.bfloat16
    atol = 1e-2 if hidden > 5000 else 1e-3
    rtol = 1e-2 if is_bf16 else 1e-3
    if is_bf16:  # each tile's running sum is stored as bf16, as on hardware: compare in kind
        atol = max(atol, float(np.abs(expect).max()) * 2 ** -7)
    np.testing.assert_allclose(y.astype(np.float64), expect, rtol=rtol, atol=atol)


def test_cumsum_refuses_another_axis(nkilib):
    x = np.ones((4, 8), np.float32)
    with pytest.raises(Exception) as info:  # the library's own kernel_assert
        nki.simulate(nkilib)(x, axis=0)
    assert "Only support cumsum over last dim" in str(info.value)
