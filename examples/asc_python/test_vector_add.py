"""The pyasc vector add against NumPy: `pytest -p apdsl.asc` runs it on apdsl."""

import asc.lib.runtime as rt
import numpy as np
import pytest
from vector_add import TILE, vadd


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("tiles", [1, 2, 5])
def test_vadd(dtype, tiles):
    rng = np.random.default_rng(tiles)
    n = tiles * TILE
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    z = np.zeros_like(x)
    vadd[1, rt.current_stream()](x, y, z, n)
    np.testing.assert_array_equal(z, x + y)  # one rounding to dtype, as NumPy's
