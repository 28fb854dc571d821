"""The plan table (`apdsl.runtime.plans.table`): views keyed by value, one bounded table of
plans that hold no view or storage, shared by equal views however they are spelled."""

import gc
import weakref

import numpy as np
import pytest

import apdsl
from apdsl.runtime.copies import dma_copy
from apdsl.runtime.nki.elementwise import tensor_tensor
from apdsl.runtime.nki.matmul import nc_matmul
from apdsl.runtime.plans import table
from apdsl.runtime.table.operators import OPERATORS

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)
F32 = np.float32


@pytest.fixture(autouse=True)
def _empty_table():
    table.PLANS.clear()


def test_equal_views_share_a_key_however_spelled():
    h = apdsl.ndarray((128, 256), "float32", "hbm")
    a = table.key_of(h[:, 64:128])
    assert a is table.key_of(h.slice(1, 64, 128))
    assert a is table.key_of(h.reshape((128, 4, 64))[:, 1])
    assert a is table.key_of(h.ap([[256, 128], [1, 64]], offset=64))
    assert a is not table.key_of(h[:, 0:64])  # another base offset
    assert a is not table.key_of(h.view("int32")[:, 64:128])  # another dtype
    other = apdsl.ndarray((128, 256), "float32", "hbm")
    if other.storage.address != h.storage.address:
        assert a is not table.key_of(other[:, 64:128])  # another address


def test_no_key_for_a_runtime_index_or_with_plans_off():
    a = apdsl.from_numpy(np.ones((8, 4), F32), "hbm")
    idx = apdsl.from_numpy(np.zeros((2, 1), np.int32), "sbuf")
    assert table.key_of(a.vector_select(0, idx)) is None
    with apdsl.options(plans=False):
        t = apdsl.ndarray((4, 4), "float32", "sbuf")
        assert table.key_of(t) is None and getattr(t, "key", None) is None


def test_a_tile_declared_in_the_loop_takes_the_plan_of_its_first_round():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128), dtype=F32)
    y = rng.standard_normal((64, 128), dtype=F32)
    X, Y = apdsl.from_numpy(x, "sbuf"), apdsl.from_numpy(y, "sbuf")
    out = apdsl.ndarray((64, 8 * 128), "float32", "hbm")
    sizes = []
    for i in range(8):
        t = apdsl.ndarray((64, 128), "float32", "sbuf")  # new storage every round
        tensor_tensor(t, X, Y, OPERATORS["add"] if i % 2 else OPERATORS["multiply"])
        dma_copy(out[:, i * 128:(i + 1) * 128], t)
        sizes.append(len(table.kept("tensor_tensor")))
    assert sizes[-1] == sizes[3] <= 4  # (two operators, tiles at up to two addresses)
    want = np.concatenate([x + y if i % 2 else x * y for i in range(8)], axis=1)
    np.testing.assert_array_equal(out.numpy(), want)


def test_fresh_psum_tiles_accumulate_as_numpy_by_the_matmul_plan():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 32, 16), dtype=F32)
    b = rng.standard_normal((4, 32, 24), dtype=F32)
    got = []
    for i in range(4):
        acc = apdsl.ndarray((16, 24), "float32", "psum")
        for k in range(i + 1):
            nc_matmul(acc, apdsl.from_numpy(a[k], "sbuf"), apdsl.from_numpy(b[k], "sbuf"))
        got.append(acc.numpy())
    assert table.kept("nc_matmul")
    for i in range(4):
        want = sum(a[k].T @ b[k] for k in range(i + 1))
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-5)


def test_a_plan_keeps_no_storage_alive():
    s = apdsl.from_numpy(np.ones((8, 8), F32), "sbuf")
    d = apdsl.ndarray((8, 8), "float32", "hbm")
    for _ in range(2):
        dma_copy(d, s)
        tensor_tensor(s, s, s, OPERATORS["add"])
    assert table.kept("dma_copy") and table.kept("tensor_tensor")
    gone = [weakref.ref(s.storage), weakref.ref(d.storage)]
    del s, d
    gc.collect()
    assert all(r() is None for r in gone)


def test_the_table_is_bounded(monkeypatch):
    monkeypatch.setattr(table, "LIMIT", 4)
    h = apdsl.ndarray((8, 64), "float32", "hbm")
    s = apdsl.from_numpy(np.ones((8, 64), F32), "sbuf")
    for i in range(16):
        dma_copy(h[:, i * 4:(i + 1) * 4], s[:, i * 4:(i + 1) * 4])
        assert len(table.PLANS) <= 4
    np.testing.assert_array_equal(h.numpy(), np.ones((8, 64), F32))
