import numpy as np
import pytest
from transpose_kernel import transpose_kernel

import apdsl


@pytest.mark.parametrize("shape", [(128, 128), (128, 64), (32, 16)])
def test_transpose(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = transpose_kernel(x, np.eye(shape[0], dtype=np.float32))
    np.testing.assert_array_equal(got, x.T)


def test_more_than_128_columns_do_not_fit_on_the_partitions():
    x = np.zeros((128, 256), np.float32)  # the transpose would need 256 partitions
    with pytest.raises(apdsl.ApdslError, match="256 partitions"):
        transpose_kernel(x, np.eye(128, dtype=np.float32))
