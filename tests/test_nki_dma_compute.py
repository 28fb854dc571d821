"""`nisa.dma_compute` (NKI isa docstring) and the legacy `dma_copy(..., dst_rmw_op=np.add)`
(the migration guide: the same instruction with sources dst and src) against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from tests.support import raises_code


@nki.jit
def three_sum(a, b, c):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_compute(out, (a, b, c), scales=(1.0, 1.0, 1.0), reduce_op=nl.add)
    return out


@nki.jit
def into_sbuf(a, b):
    t = nl.ndarray((a.shape[0], a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_compute(dst=t, srcs=[a, b.reshape(a.shape)], reduce_op=nl.add)
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_sums_in_float32_then_casts_to_dst():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((6, 40)).astype(np.float32) for _ in range(3))
    np.testing.assert_array_equal(nki.simulate(three_sum)(a, b, c), (a + b) + c)
    x, y, z = (rng.standard_normal((6, 40)).astype(ml_dtypes.bfloat16) for _ in range(3))
    want = ((x.astype(np.float32) + y.astype(np.float32)) + z.astype(np.float32)).astype(
        ml_dtypes.bfloat16)
    got = nki.simulate(three_sum)(x, y, z)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_operands_match_element_by_element_in_row_major_order():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 12)).astype(np.float32)
    b = rng.standard_normal((8, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(into_sbuf)(a, b), a + b.reshape(8, 12))


def test_the_legacy_read_modify_write_scatter():
    """dma_copy(dst=out[idx, cols], src=tile, dst_rmw_op=np.add): rows 0, 2, 4, ... of out
    get the tile added to what they hold."""
    import apdsl.nki.isa as lisa

    @nki.jit
    def scatter_add(x):
        n, m = x.shape
        out = nl.ndarray((2 * n, m), dtype=x.dtype, buffer=nl.shared_hbm)
        rows, cols = nl.mgrid[0:n, 0:m]
        tile = nl.load(x[rows, cols])
        idx = lisa.iota(2 * nl.arange(n)[:, None], dtype=np.int32)
        nl.store(out, value=lisa.memset(shape=(2 * n, m), value=1, dtype=x.dtype))
        lisa.dma_copy(dst=out[idx, cols], src=tile, dst_rmw_op=np.add)
        return out

    x = np.random.default_rng(2).standard_normal((16, 24)).astype(np.float32)
    want = np.ones((32, 24), np.float32)
    want[0::2] += x
    np.testing.assert_array_equal(nki.simulate(scatter_add)(x), want)


@pytest.mark.parametrize("call", [
    "nisa.dma_compute(out, [a, a], reduce_op=nl.multiply)",
    "nisa.dma_compute(out, [a, a], reduce_op=nl.add, scales=[1.0, 2.0])",
    "nisa.dma_compute(out, [a] * 17, reduce_op=nl.add)",
    "nisa.dma_copy(dst=out, src=a, dst_rmw_op=np.multiply)",
])
def test_refusals(call):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        eval(call, {"nisa": nisa, "nl": nl, "np": np, "a": a, "out": out})
        return out

    with raises_code("APK932"):
        nki.simulate(kernel)(np.ones((4, 4), np.float32))


def test_operands_of_different_sizes_are_refused():
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_compute(out, [a, b], reduce_op=nl.add)
        return out

    with raises_code("APK306"):
        nki.simulate(kernel)(np.ones((4, 4), np.float32), np.ones((4, 5), np.float32))
