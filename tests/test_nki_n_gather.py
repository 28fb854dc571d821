"""`nisa.nc_n_gather` and `nl.gather_flattened` (NKI references; the release notes name
nc_n_gather the successor of gather_flattened) against NumPy's take_along_axis over each
partition's flattened free elements."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from tests.support import raises_code


def reference(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    parts = data.shape[0]
    out = np.empty(idx.shape, data.dtype)
    flat_d, flat_i, flat_o = data.reshape(parts, -1), idx.reshape(parts, -1), out.reshape(parts, -1)
    for p in range(parts):
        for k, j in enumerate(flat_i[p]):
            flat_o[p, k] = flat_d[p, int(j)]
    return out


@nki.jit
def isa_gather(data, idx):
    d = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=d, src=data)
    i = nl.ndarray(idx.shape, dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    g = nl.ndarray(idx.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=g, data=d, indices=i)
    out = nl.ndarray(idx.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=g)
    return out


@nki.jit
def nl_gather(data, idx):
    r = nl.gather_flattened(data=nl.load(data), indices=nl.load(idx))
    out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 128), st.sampled_from([(16,), (4, 8), (2, 3, 5)]),
       st.sampled_from([(7,), (3, 4), (2, 2, 2)]), st.integers(0, 2**16))
def test_against_numpy(parts, free, ifree, seed):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((parts, *free)).astype(np.float32)
    idx = rng.integers(0, int(np.prod(free)), (parts, *ifree)).astype(np.uint32)
    want = reference(data, idx)
    np.testing.assert_array_equal(nki.simulate(isa_gather)(data, idx), want)
    np.testing.assert_array_equal(nki.simulate(nl_gather)(data, idx), want)


def test_the_legacy_form_with_per_element_index_writes_and_a_dtype():
    @nki.jit
    def kernel(data):
        d = nl.load(data)
        idx = nl.zeros((8, 5), dtype=nl.uint32)
        for i in nl.static_range(8):
            for j in nl.static_range(5):
                idx[i, j] = (3 * j + i) % 12
        out = nl.ndarray((8, 5), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.gather_flattened(data=d, indices=idx, dtype=nl.float32))
        return out

    data = np.arange(96, dtype=np.int32).reshape(8, 12)
    idx = np.array([[(3 * j + i) % 12 for j in range(5)] for i in range(8)])
    np.testing.assert_array_equal(nki.simulate(kernel)(data),
                                  np.take_along_axis(data, idx, -1).astype(np.float32))


@nki.jit
def gather_loaded(data, idx, loaded, stored):
    """A tile of which only the first `loaded` partitions are loaded, gathered, and the first
    `stored` partitions of the result stored."""
    d = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=d[0:loaded], src=data[0:loaded])
    i = nl.ndarray(idx.shape, dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    g = nl.ndarray(idx.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=g, data=d, indices=i)
    out = nl.ndarray((stored, idx.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=g[0:stored])
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 64), st.integers(0, 2**16))
def test_unwritten_partitions_stay_in_their_partitions(parts, seed):
    # each partition gathers only from its own: the loaded partitions' results are defined
    # whatever the others hold, and a result partition that was not loaded is APK412
    rng = np.random.default_rng(seed)
    loaded = int(rng.integers(1, parts))
    data = rng.standard_normal((parts, 12)).astype(np.float32)
    idx = rng.integers(0, 12, (parts, 5)).astype(np.uint32)
    np.testing.assert_array_equal(nki.simulate(gather_loaded)(data, idx, loaded, loaded),
                                  reference(data, idx)[:loaded])
    with raises_code("APK412") as e:
        nki.simulate(gather_loaded)(data, idx, loaded, loaded + 1)
    assert f"[{loaded}, " in e.value.message and "nc_n_gather" in e.value.message


def test_refusals():
    data = np.ones((4, 6), np.float32)
    with raises_code("APK931"):  # outside the partition's 6 elements
        nki.simulate(isa_gather)(data, np.array([[0, 6]] * 4, np.uint32))
    with raises_code("APK461"):  # indices are uint32
        nki.simulate(isa_gather)(data, np.zeros((4, 2), np.int32))

    @nki.jit
    def mixed(data, idx):
        d, i = nl.load(data), nl.load(idx)
        g = nl.ndarray(idx.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=g, data=d, indices=i)
        return g

    with raises_code("APK931"):  # dst keeps data's dtype
        nki.simulate(mixed)(data, np.zeros((4, 2), np.uint32))


@pytest.mark.parametrize("axis", [2, -2])
def test_an_undocumented_axis_is_refused(axis):
    @nki.jit
    def kernel(data, idx):
        return nl.gather_flattened(nl.load(data), nl.load(idx), axis=axis)

    with raises_code("APK931"):
        nki.simulate(kernel)(np.ones((4, 2, 3), np.float32), np.zeros((4, 2), np.uint32))
