"""The queued vector add on several AI cores against NumPy: `pytest -p apdsl.asc` runs it on
apdsl."""

import asc.lib.runtime as rt
import numpy as np
import pytest
from add_queues import TILE, add_queues


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("cores", "tiles"), [(1, 3), (4, 2), (8, 1)])
def test_add_queues(dtype, cores, tiles):
    rng = np.random.default_rng(cores * 10 + tiles)
    per_core = tiles * TILE
    x = rng.standard_normal(cores * per_core).astype(dtype)
    y = rng.standard_normal(cores * per_core).astype(dtype)
    z = np.zeros_like(x)
    add_queues[cores, rt.current_stream()](x, y, z, per_core)
    np.testing.assert_array_equal(z, x + y)  # one rounding to dtype, as NumPy's
