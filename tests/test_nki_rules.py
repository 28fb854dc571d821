"""NKI refusals the docs require (iota, DMA and PSUM, vector_offset, the trn1 start-partition
rule) and register_load from the tensors the docs allow; values against NumPy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import raises_code

from apdsl.runtime.instructions import (
    dma_copy,
    iota,
    memset,
    nc_matmul,
    register_alloc,
    register_load,
    tensor_copy,
)
from apdsl.tensor import targets
from apdsl.tensor.view import from_numpy, ndarray

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(3)


# -- iota -----------------------------------------------------------------------------------

def test_iota_into_psum_refused():
    with raises_code("APK339"):
        iota(ndarray((8, 4), "int32", "psum"), [[1, 4]], 0, 0)


def test_iota_pattern_of_at_most_4_entries():
    t = ndarray((4, 16), "int32", "sbuf")
    iota(t, [[8, 2], [4, 2], [2, 2], [1, 2]], 5, 100)
    expect = 5 + 100 * np.arange(4)[:, None] + np.arange(16)[None, :]
    np.testing.assert_array_equal(t.numpy(), expect)
    with raises_code("APK340"):
        iota(ndarray((4, 32), "int32", "sbuf"), [[16, 2], [8, 2], [4, 2], [2, 2], [1, 2]], 0, 0)


# -- DMA and PSUM ---------------------------------------------------------------------------

def test_dma_copy_from_or_to_psum_refused():
    p = ndarray((8, 16), "float32", "psum")
    memset(p, 1.0)
    with raises_code("APK342") as err:
        dma_copy(ndarray((8, 16), "float32", "hbm"), p)
    assert "tensor_copy" in err.value.help
    with raises_code("APK342"):
        dma_copy(p, from_numpy(np.ones((8, 16), np.float32)))


def test_matmul_example_evicts_through_sbuf():
    text = (ROOT / "examples" / "matmul.apk").read_text()
    assert "tensor_copy" in text
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(ROOT / "examples" /
                                                                  "matmul.apk")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# -- vector_offset --------------------------------------------------------------------------

def test_vector_offset_only_on_hbm():
    idx = from_numpy(np.array([[2], [0], [1]], np.int32), "sbuf")
    for buffer in ("sbuf", "psum"):
        t = ndarray((3, 8), "float32", buffer)
        with raises_code("APK341"):
            t.ap(pattern=[[8, 3], [1, 8]], vector_offset=idx, indirect_dim=0)
    data = RNG.standard_normal((3, 8)).astype(np.float32)
    h = from_numpy(data, "hbm")
    out = ndarray((3, 8), "float32", "sbuf")
    dma_copy(out, h.ap(pattern=[[8, 3], [1, 8]], vector_offset=idx, indirect_dim=0))
    np.testing.assert_array_equal(out.numpy(), data[[2, 0, 1]])


# -- the start-partition rule (trn1) --------------------------------------------------------

@pytest.mark.parametrize("start,count,ok", [
    (0, 128, True), (0, 100, True), (32, 96, False), (0, 64, True), (64, 64, True),
    (32, 64, False), (16, 48, False), (96, 32, True), (32, 32, True), (8, 16, False),
    (33, 1, False), (64, 1, True)])
def test_start_partition_rule_on_trn1(start, count, ok):
    data = RNG.standard_normal((128, 16)).astype(np.float32)
    with targets.target("trn1"):
        src = from_numpy(data, "sbuf")
        dst = ndarray((128, 16), "float32", "sbuf")
        view = src[start:start + count]
        if ok:
            tensor_copy(dst[0:count], view)
            np.testing.assert_array_equal(dst[0:count].numpy(), data[start:start + count])
            memset(dst[start:start + count], 2.0)
            assert (dst[start:start + count].numpy() == 2.0).all()
        else:
            with raises_code("APK343"):
                tensor_copy(dst[0:count], view)
            with raises_code("APK343"):
                memset(dst[start:start + count], 2.0)
            with raises_code("APK343"):
                iota(ndarray((128, 16), "int32", "sbuf")[start:start + count], [[1, 16]], 0, 0)
            if count <= 128:
                with raises_code("APK343"):
                    nc_matmul(ndarray((16, 16), "float32", "psum"), view,
                              from_numpy(data[:count], "sbuf"))
    # later targets: their guides state no such rule
    for tgt in ("trn2", "trn3"):
        with targets.target(tgt):
            src = from_numpy(data, "sbuf")
            dst = ndarray((128, 16), "float32", "sbuf")
            tensor_copy(dst[0:count], src[start:start + count])
            np.testing.assert_array_equal(dst[0:count].numpy(), data[start:start + count])


def test_start_partition_rule_leaves_dma_alone():
    data = RNG.standard_normal((128, 16)).astype(np.float32)
    with targets.target("trn1"):
        dst = ndarray((128, 16), "float32", "sbuf")
        dma_copy(dst[8:24], from_numpy(data[8:24]))  # DMA moves across partitions freely
        moved = ndarray((32, 16), "float32", "sbuf")
        dma_copy(moved[0:16], dst[8:24])  # the cross_partition_copy way round the rule
        np.testing.assert_array_equal(moved[0:16].numpy(), data[8:24])


# -- register_load --------------------------------------------------------------------------

@pytest.mark.parametrize("shape,buffer", [((1,), "hbm"), ((1, 1), "hbm"), ((1,), "sbuf"),
                                          ((1, 1), "sbuf"), ((1, 1), "shared_hbm")])
def test_register_load_from_one_element(shape, buffer):
    t = from_numpy(np.full(shape, 37, np.int32), buffer)
    r = register_alloc()
    register_load(r, t)
    assert r.value == 37


def test_register_load_from_one_element_view_steers_an_access():
    table = from_numpy(np.array([[5, 1, 2]], np.int32), "sbuf")
    r = register_alloc()
    register_load(r, table[0:1, 0:1])
    data = np.arange(64, dtype=np.float32).reshape(8, 8)
    src = from_numpy(data)
    out = ndarray((1, 8), "float32", "sbuf")
    dma_copy(out, src.ap([[8, 1], [1, 8]], offset=0, scalar_offset=r, indirect_dim=0))
    np.testing.assert_array_equal(out.numpy(), data[5:6])


def test_a_one_element_sbuf_tile_is_the_only_1d_on_chip_shape():
    """The NKI docs load registers from a (1,) SBUF tile; other 1-D on-chip shapes leave the
    partition/free split unsaid and stay refused."""
    one = ndarray((1,), "int32", "sbuf")
    memset(one, 9)
    assert one.get_pattern() == [[1, 1]] and one.numpy().tolist() == [9]
    with raises_code("APK202"):
        ndarray((4,), "int32", "sbuf")


def test_register_load_refusals():
    r = register_alloc()
    with raises_code("APK344"):
        p = ndarray((1, 1), "int32", "psum")
        memset(p, 1)
        register_load(r, p)
    for dt in ("int64", "float32"):
        with raises_code("APK319"):
            register_load(r, from_numpy(np.ones((1, 1)), "hbm", dtype=dt))
    with raises_code("APK319"):
        register_load(r, from_numpy(np.ones((1, 2), np.int32), "hbm"))


def test_iota_wraps_as_int32_then_casts():
    t = ndarray((4, 8), "int32", "sbuf")
    offset, cm, step = 2**70 + 5, 2**31 - 1, -(2**33) + 3
    iota(t, [[step, 8]], offset, cm)
    expect = [[(offset + p * cm + i * step + 2**31) % 2**32 - 2**31 for i in range(8)]
              for p in range(4)]
    np.testing.assert_array_equal(t.numpy(), expect)
    small = ndarray((4, 8), "int8", "sbuf")  # the int32 values then saturate into int8
    iota(small, [[100, 8]], -200, 1)
    expect8 = np.clip(-200 + np.arange(4)[:, None] + 100 * np.arange(8)[None, :], -128, 127)
    np.testing.assert_array_equal(small.numpy(), expect8)


# -- Tensor Indirection base partitions and matmul operands (trn3, NKI docstrings) -----------

def _ti(data, index, n, group=16):
    """out[p, i] = data[p, index[i % group, i // group]] (SPEC section 4)."""
    i = np.arange(n)
    return data[:, index[i % group, i // group]]


def test_indirect_index_starts_on_a_quadrant_and_with_its_operand():
    with targets.target("trn3"):
        data = RNG.standard_normal((128, 40)).astype(np.float32)
        index = RNG.integers(0, 40, (128, 2)).astype(np.int32)
        t, idx = from_numpy(data, "sbuf"), from_numpy(index, "sbuf")
        out = ndarray((128, 32), "float32", "sbuf")
        tensor_copy(out[32:64], t[32:64].indirect(idx[32:64], num_elem=32))
        np.testing.assert_array_equal(out[32:64].numpy(),
                                      _ti(data[32:64], index[32:64], 32))
        with raises_code("APK345"):  # the index starts at 16
            tensor_copy(out[16:32], t[16:32].indirect(idx[16:32], num_elem=32))
        with raises_code("APK345"):  # src at 0, its index at 32
            tensor_copy(out[0:32], t[0:32].indirect(idx[32:64], num_elem=32))
        with raises_code("APK345"):  # an indirect dst's index starts where the SBUF src does
            tensor_copy(ndarray((128, 40), "float32", "sbuf")[0:32].indirect(idx[32:64],
                                                                              num_elem=32),
                        t[0:32, 0:32])


def test_indirect_matmul_operand_rules():
    with targets.target("trn3"):
        idx = from_numpy(RNG.integers(0, 16, (64, 2)).astype(np.int32), "sbuf")
        st32, mv32 = _ti_ones((64, 16), "float32"), _ti_ones((64, 16), "float32")
        with raises_code("APK346"):  # float32 is not an indirect matmul dtype
            nc_matmul(ndarray((16, 32), "float32", "psum"), st32, mv32.indirect(idx, 32))
        st, mv = _ti_ones((64, 16), "bfloat16"), _ti_ones((64, 16), "bfloat16")
        with raises_code("APK346"):  # no tiling with indirection
            nc_matmul(ndarray((16, 32), "float32", "psum"), st, mv.indirect(idx, 32),
                      tile_position=(64, 0), tile_size=(64, 128))
        with raises_code("APK346"):  # transpose mode: moving is not indirect
            nc_matmul(ndarray((16, 32), "bfloat16", "psum"), st, mv.indirect(idx, 32),
                      is_transpose=True)
        dst = ndarray((16, 32), "float32", "psum")
        nc_matmul(dst, st, mv.indirect(idx, 32))
        np.testing.assert_array_equal(dst.numpy(), np.full((16, 32), 64.0, np.float32))


def _ti_ones(shape, dtype):
    return from_numpy(np.ones(shape, np.float32), "sbuf", dtype=dtype)


# -- hint keywords (engine=, dge_mode=, oob_mode=, priority=) ---------------------------------

def test_hints_paste_in_from_the_nki_docs():
    import apdsl
    src = """
kernel k(A: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:
    t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=A, dge_mode=nisa.dge_mode.hwdge, engine=nisa.engine.scalar)
    p = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=t, engine=nisa.engine.vector)
    u = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=p, engine=nisa.engine.scalar)
    nisa.memset(dst=t, value=2.0, engine=nisa.engine.gpsimd)
    out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=u, oob_mode=nisa.oob_mode.skip, dge_mode=nisa.dge_mode.swdge)
    return out
"""
    a = RNG.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_array_equal(apdsl.run(src, inputs={"A": a}), a)


def test_engine_rules():
    t = from_numpy(np.ones((4, 8), np.float32), "sbuf")
    p = ndarray((4, 8), "float32", "psum")
    with raises_code("APK348"):  # GpSimd cannot access PSUM
        tensor_copy(p, t, engine="gpsimd")
    with raises_code("APK348"):
        memset(p, 0.0, engine="gpsimd")
    with raises_code("APK348"):  # memset runs on Vector or GpSimd
        memset(t, 0.0, engine="scalar")
    with targets.target("trn1"):
        t1 = from_numpy(np.ones((4, 8), np.float32), "sbuf")
        with raises_code("APK348"):  # NeuronCore-v2: no tensor_copy on the Scalar engine
            tensor_copy(ndarray((4, 8), "float32", "sbuf"), t1, engine="scalar")
        with raises_code("APK348"):  # no hardware DGE on trn1
            dma_copy(ndarray((4, 8), "float32", "hbm"), t1, dge_mode="hwdge")
    with raises_code("APK348"):  # a DMA engine only picks the HWDGE trigger
        dma_copy(ndarray((4, 8), "float32", "hbm"), t, engine="sync")
    with raises_code("APK348"):
        dma_copy(ndarray((4, 8), "float32", "hbm"), t, dge_mode="hwdge", engine="vector")
    with targets.target("trn3"):
        data = RNG.standard_normal((32, 40)).astype(np.float32)
        idx = from_numpy(RNG.integers(0, 40, (32, 2)).astype(np.int32), "sbuf")
        with raises_code("APK348"):  # Tensor Indirection on Vector or Scalar only
            tensor_copy(ndarray((32, 32), "float32", "sbuf"),
                        from_numpy(data, "sbuf").indirect(idx, num_elem=32), engine="gpsimd")


def test_dma_hint_values():
    t = from_numpy(np.arange(32, dtype=np.float32).reshape(4, 8), "sbuf")
    with raises_code("APK347"):  # hardware DGE moves equal dtypes
        dma_copy(ndarray((4, 8), "bfloat16", "hbm"), t, dge_mode="hwdge")
    h = ndarray((4, 8), "bfloat16", "hbm")
    dma_copy(h, t, dge_mode="swdge")  # converts through float32
    np.testing.assert_array_equal(h.numpy().astype(np.float32), t.numpy())
    with raises_code("APK347"):
        dma_copy(ndarray((4, 8), "float32", "hbm"), t, dge_mode="fast")
    with raises_code("APK347"):  # priority is trn3 only
        dma_copy(ndarray((4, 8), "float32", "hbm"), t, priority=1)
    with targets.target("trn3"):
        t3 = from_numpy(np.ones((4, 8), np.float32), "sbuf")
        dma_copy(ndarray((4, 8), "float32", "hbm"), t3, priority=0)
        with raises_code("APK347"):
            dma_copy(ndarray((4, 8), "float32", "hbm"), t3, priority=4)
        with raises_code("APK347"):
            dma_copy(ndarray((4, 8), "float32", "hbm"), t3, priority=1, dge_mode="none")
