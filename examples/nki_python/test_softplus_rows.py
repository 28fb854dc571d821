import numpy as np
import pytest
from softplus_rows import softplus_rows


@pytest.mark.parametrize("rows", [128, 300])
def test_softplus_rows(rows):
    x = np.random.default_rng(1).standard_normal((rows, 64)).astype(np.float32)
    np.testing.assert_allclose(softplus_rows(x), np.log1p(np.exp(x)), rtol=1e-5, atol=1e-6)
