"""Instructions of SPEC section 4 and the seed 000/001 examples, each checked against NumPy;
every runtime (APK4xx) and instruction target-rule (APK3xx) code triggered by its own test."""

from __future__ import annotations

import einops
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.catalogue import runtime as runtime_catalogue
from apdsl.catalogue import targets as targets_catalogue
from apdsl.errors import Span, TargetError, Warning_
from apdsl.runtime.core import execute, trace
from apdsl.runtime.core.options import options
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
from apdsl.tensor.dtypes import dtype as to_dtype
from apdsl.tensor.machine import current
from apdsl.tensor.view import from_numpy, ndarray

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RNG = np.random.default_rng(0)


def arange(shape, dtype=np.float32, buffer="hbm"):
    return from_numpy(np.arange(np.prod(shape)).astype(dtype).reshape(shape), buffer)


def code_of(excinfo) -> str:
    return excinfo.value.code




# -- seed 000: access patterns ----------------------------------------------------------------

def test_slice_example_and_equivalent_ap():
    data = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    t = from_numpy(data, "sbuf")
    u = t.slice(1, 8, 24)
    assert u.get_pattern() == [[64, 128], [1, 16]] and u.offset == 8
    v = t.ap(pattern=[[64, 128], [1, 16]], offset=8)
    np.testing.assert_array_equal(u.numpy(), data[:, 8:24])
    np.testing.assert_array_equal(v.numpy(), u.numpy())


def test_concrete_example_ap_pattern_offset_8():
    data = RNG.standard_normal((16, 16)).astype(np.float32)
    t = ndarray((16, 16), "float32", "sbuf")
    dma_copy(t, from_numpy(data))
    access = t.ap(pattern=[[16, 16], [1, 8]], offset=8)
    out = ndarray((16, 8), "float32", "sbuf")
    tensor_copy(out, access)
    np.testing.assert_array_equal(out.numpy(), data[0:16, 8:16])


def test_ap_chaining_replaces_pattern_and_inherits_offset():
    data = np.arange(128 * 256, dtype=np.float32).reshape(128, 256)
    t = from_numpy(data, "sbuf")
    inner = t.ap(pattern=[[256, 128], [2, 128]])
    outer = inner.ap(pattern=[[256, 128], [1, 64]])
    np.testing.assert_array_equal(outer.numpy(), data[:, :64])
    shifted = t.ap([[256, 128], [1, 8]], offset=8).ap([[256, 128], [1, 4]])
    np.testing.assert_array_equal(shifted.numpy(), data[:, 8:12])


def test_int32_to_bf16_reinterpret_with_ap_dtype():
    data = RNG.integers(-2**31, 2**31 - 1, (128, 256), dtype=np.int32)
    t = from_numpy(data, "sbuf")
    cast = t.ap(pattern=[[512, 128], [1, 512]], offset=0, dtype="bfloat16")
    assert cast.shape == (128, 512)
    got = cast.numpy()
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.view(np.uint16), data.view(np.uint16))
    # and written back through the bf16 view, the int32 storage sees the same bits
    t2 = ndarray((128, 256), "int32", "sbuf")
    dst = t2.ap([[512, 128], [1, 512]], dtype="bfloat16")
    tensor_copy(dst, cast)
    np.testing.assert_array_equal(t2.numpy(), data)


def test_partition_stride_rule_example():
    t = ndarray((16, 32), "float32", "sbuf")
    with raises_code("APK303"):
        t.ap(pattern=[[64, 8], [1, 32]], offset=0)


# -- seed 000: dynamic access ------------------------------------------------------------------

def test_scalar_dynamic_select():
    data = RNG.standard_normal((4, 128, 512)).astype(np.float32)
    A = from_numpy(data)
    batch_idx = ndarray((1, 1), "int32", "sbuf")
    memset(batch_idx, value=3)
    src = A.select(0, batch_idx)
    result = ndarray((128, 512), "float32", "shared_hbm")
    dma_copy(src=src, dst=result[...])
    np.testing.assert_array_equal(result.numpy(), data[3])


def test_scalar_dynamic_dma():
    data = RNG.standard_normal((512, 512)).astype(np.float32)
    A = from_numpy(data)
    batch_idx = ndarray((1, 1), "int32", "sbuf")
    memset(batch_idx, value=3 * 128)
    result = ndarray((128, 256), "float32", "shared_hbm")
    dma_copy(src=A.ap(pattern=[[512, 128], [1, 256]], offset=0, scalar_offset=batch_idx,
                      indirect_dim=0), dst=result[...])
    np.testing.assert_array_equal(result.numpy(), data[384:, 0:256])


def test_gather_rows():
    data = RNG.standard_normal((128, 512)).astype(np.float32)
    A = from_numpy(data)
    offsets = ndarray((64, 1), "int32", "sbuf")
    iota(offsets, [[1, 1]], 0, 2)
    src = A.vector_select(0, offsets)
    result = ndarray((64, 512), "float32", "shared_hbm")
    dma_copy(src=src, dst=result[...])
    np.testing.assert_array_equal(result.numpy(), data[0:128:2])


def test_indirect_vector_dynamic_dma_without_warning():
    data = RNG.standard_normal((128, 512)).astype(np.float32)
    A = from_numpy(data)
    idx = ndarray((64, 1), "int32", "sbuf")
    iota(idx, [[1, 1]], 0, 2)
    result_sb = ndarray((64, 512), "float32", "sbuf")
    result_hbm = ndarray((64, 512), "float32", "shared_hbm")
    with trace.collect_warnings() as got:
        dma_copy(src=A.ap([[512, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0),
                 dst=result_sb, name="inst0")
        dma_copy(result_hbm, result_sb, name="copy1")
    assert got == []
    np.testing.assert_array_equal(result_hbm.numpy(), data[0:128:2])


@given(rows=st.lists(st.integers(0, 63), min_size=1, max_size=16),
       lo=st.integers(0, 8), width=st.integers(1, 8))
@FAST
def test_vector_select_gather_matches_numpy_take(rows, lo, width):
    data = np.arange(64 * 16 * 3, dtype=np.int32).reshape(64, 16, 3)
    A = from_numpy(data)
    idx = from_numpy(np.array(rows, np.int32).reshape(-1, 1), "sbuf")
    view = A.slice(1, lo, lo + width).vector_select(0, idx)
    expect = np.take(data[:, lo:lo + width], rows, axis=0)
    np.testing.assert_array_equal(view.numpy(), expect)
    out = ndarray(expect.shape, "int32", "hbm")
    dma_copy(out, view)
    np.testing.assert_array_equal(out.numpy(), expect)


def test_vector_select_scatter_and_duplicate_rows():
    table = from_numpy(np.zeros((16, 4), np.float32))
    idx = from_numpy(np.array([[3], [0], [9]], np.int32), "sbuf")
    vals = RNG.standard_normal((3, 4)).astype(np.float32)
    dma_copy(table.vector_select(0, idx), from_numpy(vals))
    expect = np.zeros((16, 4), np.float32)
    expect[[3, 0, 9]] = vals
    np.testing.assert_array_equal(table.numpy(), expect)
    dup = from_numpy(np.array([[3], [3], [9]], np.int32), "sbuf")
    with raises_code("APK405") as info:
        dma_copy(table.vector_select(0, dup), from_numpy(vals))
    assert "twice" in info.value.message


def test_register_bound_strides_and_counts():
    data = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    sb = from_numpy(data, "sbuf")
    stride0 = register_alloc(32)
    count1 = register_alloc()
    idx = from_numpy(np.array([[16]], np.int32), "sbuf")
    register_load(count1, idx)
    assert count1.value == 16
    view = sb.ap(pattern=[[stride0, 128], [1, count1]])
    out = ndarray((128, 16), "float32", "sbuf")
    tensor_copy(out, view)
    np.testing.assert_array_equal(out.numpy(), data[:, :16])
    # registers are read when the instruction executes, not when the view is made
    count1.value = 8
    out8 = ndarray((128, 8), "float32", "sbuf")
    tensor_copy(out8, view)
    np.testing.assert_array_equal(out8.numpy(), data[:, :8])


def test_register_offset():
    data = np.arange(4096, dtype=np.float32).reshape(64, 64)
    A = from_numpy(data)
    r = register_alloc(64 * 5 + 3)
    out = ndarray((4, 8), "float32", "hbm")
    dma_copy(out, A.ap([[64, 4], [1, 8]], offset=r))
    np.testing.assert_array_equal(out.numpy(), data[5:9, 3:11])


def test_select_with_register_index():
    data = RNG.standard_normal((4, 8, 16)).astype(np.float32)
    A = from_numpy(data)
    r = register_alloc(2)
    out = ndarray((8, 16), "float32", "hbm")
    dma_copy(out, A.select(0, r))
    np.testing.assert_array_equal(out.numpy(), data[2])


def _ti_oracle(data: np.ndarray, index: np.ndarray, n: int, group: int) -> np.ndarray:
    i = np.arange(n)
    col = index[i % group, i // group]
    return data[:, col]


@pytest.mark.parametrize("parts", [32, 64])
def test_indirect_tensor_copy_trn3_group_16(parts):
    with targets.target("trn3"):
        data = RNG.standard_normal((parts, 40)).astype(np.float32)
        index = RNG.integers(0, 40, (parts, 3)).astype(np.int32)
        t = from_numpy(data, "sbuf")
        idx = from_numpy(index, "sbuf")
        n = 40
        view = t.indirect(idx, num_elem=n)
        out = ndarray((parts, n), "float32", "sbuf")
        tensor_copy(out, view)
        np.testing.assert_array_equal(out.numpy(), _ti_oracle(data, index, n, 16))


def test_indirect_nc_matmul_trn3_group_32():
    with targets.target("trn3"):
        k, m, f = 64, 16, 100
        # bfloat16: an indirect matmul operand is a 16- or 8-bit float (NKI docstring)
        stat = RNG.standard_normal((k, m)).astype(ml_dtypes.bfloat16).astype(np.float32)
        mov = RNG.standard_normal((k, f)).astype(ml_dtypes.bfloat16).astype(np.float32)
        index = RNG.integers(0, f, (k, 6)).astype(np.int32)
        n = 96
        dst = ndarray((m, n), "float32", "psum")
        s = from_numpy(stat, "sbuf", dtype="bfloat16")
        mv = from_numpy(mov, "sbuf", dtype="bfloat16")
        nc_matmul(dst, s, mv.indirect(from_numpy(index, "sbuf"), num_elem=n))
        expect = stat.T @ _ti_oracle(mov, index, n, 32)
        np.testing.assert_allclose(dst.numpy(), expect, rtol=1e-5, atol=1e-5)
        # the same view read by a non-matmul instruction uses G = 16: a different result
        other = _ti_oracle(mov, index, n, 16)
        assert not np.array_equal(other, _ti_oracle(mov, index, n, 32))


def test_indirect_index_out_of_range_and_too_small():
    with targets.target("trn3"):
        t = from_numpy(np.zeros((32, 8), np.float32), "sbuf")
        bad = np.zeros((32, 4), np.int32)
        bad[5, 1] = 8
        out = ndarray((32, 64), "float32", "sbuf")
        with raises_code("APK402") as info:
            tensor_copy(out, t.indirect(from_numpy(bad, "sbuf"), num_elem=64))
        msg = info.value.message
        assert "tensor_copy" in msg and "= 8" in msg and "[0, 8)" in msg and "[5, 1]" in msg
        small = from_numpy(np.zeros((8, 4), np.float32), "sbuf")
        few = from_numpy(np.zeros((8, 4), np.int32), "sbuf")
        out2 = ndarray((8, 32), "float32", "sbuf")
        with raises_code("APK407"):
            tensor_copy(out2, small.indirect(few, num_elem=32))


# -- compute instructions ----------------------------------------------------------------------

@given(parts=st.integers(1, 16), steps=st.lists(st.tuples(st.integers(-5, 9), st.integers(1, 4)),
                                                min_size=1, max_size=3),
       offset=st.integers(-100, 100), cm=st.integers(-7, 7),
       dt=st.sampled_from(["int32", "float32", "bfloat16", "int8"]))
@FAST
def test_iota_matches_formula(parts, steps, offset, cm, dt):
    counts = [c for _, c in steps]
    free = int(np.prod(counts))
    dst = ndarray((parts, free), dt, "sbuf")
    iota(dst, [list(p) for p in steps], offset, cm)
    expect = offset + np.arange(parts).reshape(-1, *([1] * len(steps))) * cm
    for k, (s, c) in enumerate(steps):
        expect = expect + (np.arange(c) * s).reshape((c,) + (1,) * (len(steps) - k - 1))
    expect = expect.reshape(parts, free).astype(np.int32)
    want = ndarray((parts, free), dt, "sbuf")
    execute.write_view(want, expect)  # the documented cast of int32 values
    np.testing.assert_array_equal(dst.numpy(), want.numpy())


def test_iota_wraps_in_int32_and_fills_multidim_dst():
    dst = ndarray((2, 2, 3), "int32", "sbuf")
    iota(dst, [[2**30, 6]], 0, 1)
    expect = (np.arange(6, dtype=np.int64) * 2**30 + np.arange(2)[:, None]).astype(np.int32)
    np.testing.assert_array_equal(dst.numpy(), expect.reshape(2, 2, 3))


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float8_e4m3", "float32"])
def test_nc_matmul_matches_numpy(dt):
    k, m, n = 96, 64, 200
    a = RNG.standard_normal((k, m)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    s = ndarray((k, m), dt, "sbuf")
    mv = ndarray((k, n), dt, "sbuf")
    dma_copy(s, from_numpy(a))
    dma_copy(mv, from_numpy(b))
    dst = ndarray((m, n), "float32", "psum")
    nc_matmul(dst, s, mv)
    a_q = s.numpy().astype(np.float32)
    b_q = mv.numpy().astype(np.float32)
    np.testing.assert_allclose(dst.numpy(), a_q.T @ b_q, rtol=1e-5, atol=1e-4)
    nc_matmul(dst, s, mv, accumulate=True)
    np.testing.assert_allclose(dst.numpy(), 2 * (a_q.T @ b_q), rtol=1e-5, atol=1e-4)


def test_nc_matmul_accumulate_needs_initialised_dst():
    s = from_numpy(np.ones((8, 4), np.float32), "sbuf")
    mv = from_numpy(np.ones((8, 4), np.float32), "sbuf")
    dst = ndarray((4, 4), "float32", "psum")
    with raises_code("APK331"):  # no matmul has written dst (SPEC section 4)
        nc_matmul(dst, s, mv, accumulate=True)


def test_nc_matmul_trn3_allows_wide_n():
    with targets.target("trn3"):
        a = np.ones((4, 2), np.float32)
        b = np.ones((4, 1024), np.float32)
        dst = ndarray((2, 1024), "float32", "psum")
        nc_matmul(dst, from_numpy(a, "sbuf"), from_numpy(b, "sbuf"))
        np.testing.assert_array_equal(dst.numpy(), np.full((2, 1024), 4.0, np.float32))


@pytest.mark.parametrize("value,dt,expect", [
    (2.5, "int32", 2), (3.5, "int32", 4), (-2.5, "int8", -2), (300, "int8", 127),
    (-1e10, "int32", -2**31), (float("nan"), "int16", 0), (float("inf"), "uint8", 255),
    (-3, "uint16", 0), (1 + 2**-8, "bfloat16", 1.0), (1 + 3 * 2**-8, "bfloat16", 1 + 2**-6),
    (7.9, "float8_e4m3", 8.0), (1e6, "float16", np.inf)])
def test_memset_casts_by_the_float32_rule(value, dt, expect):
    t = ndarray((4, 3), dt, "sbuf")
    memset(t, value)
    got = t.numpy().astype(np.float64)
    np.testing.assert_array_equal(got, np.full((4, 3), expect, np.float64))


def test_memset_on_views_and_ascend_buffers():
    t = ndarray((8, 8), "float32", "sbuf")
    memset(t, 0.0)
    memset(t[:, 2:6:2], 7.0)
    expect = np.zeros((8, 8), np.float32)
    expect[:, 2:6:2] = 7
    np.testing.assert_array_equal(t.numpy(), expect)
    u = ndarray((16, 16), "float16", "ub")
    memset(u, 1.5)
    np.testing.assert_array_equal(u.numpy(), np.full((16, 16), 1.5, np.float16))


def test_tensor_copy_keeps_partitions_and_converts_dtype():
    data = RNG.standard_normal((32, 6, 4)).astype(np.float32)
    src = from_numpy(data, "sbuf")
    dst = ndarray((32, 24), "bfloat16", "sbuf")
    tensor_copy(dst, src)
    expect = data.reshape(32, 24).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(dst.numpy(), expect)
    back = ndarray((32, 4, 6), "float32", "psum")
    tensor_copy(back, dst.rearrange("p (a b) -> p b a", a=6))
    np.testing.assert_array_equal(back.numpy(), expect.astype(np.float32).reshape(32, 6, 4)
                                  .transpose(0, 2, 1))


# -- dtype conversion through dma_copy -------------------------------------------------------

@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1,
                max_size=40),
       st.sampled_from(["int8", "uint8", "int16", "int32", "uint32", "bfloat16", "float16",
                        "float8_e5m2"]))
@FAST
def test_dma_copy_casts_like_the_rule(values, dt):
    src = np.array(values, np.float32)
    out = ndarray((src.size,), dt, "hbm")
    dma_copy(out, from_numpy(src))
    d = to_dtype(dt)
    if d.kind in "iu":
        info = np.iinfo(d.np)
        wide = np.rint(src.astype(np.float64))
        expect = np.clip(np.where(np.isnan(wide), 0.0, wide), info.min, info.max)
        np.testing.assert_array_equal(out.numpy().astype(np.float64), expect)
    else:
        with np.errstate(over="ignore"):
            expect = src.astype(d.np).astype(np.float32)
        np.testing.assert_array_equal(out.numpy().astype(np.float32), expect)


# -- int4 ---------------------------------------------------------------------------------------

def test_int4_view_two_per_byte_low_nibble_first():
    raw = np.array([[0x21, 0xF7, 0x80, 0x0E]], np.uint8)
    t = from_numpy(raw.view(np.int8), "hbm")
    v = t.view("int4")
    assert v.shape == (1, 8)
    np.testing.assert_array_equal(v.numpy().astype(np.int8), [[1, 2, 7, -1, 0, -8, -2, 0]])
    # writing int4 values through the view packs them back
    out = ndarray((1, 4), "int8", "hbm")
    dst = out.view("int4")
    dma_copy(dst, from_numpy(np.array([[1, 2, 7, -1, 0, -8, -2, 0]], np.int8)))
    np.testing.assert_array_equal(out.numpy().view(np.uint8), raw)


def test_int4_tensor_strided_views_and_saturation():
    vals = np.array([[-8, -3, 0, 5, 7, 1, 2, 3, -1, -2]], np.int8)
    t = ndarray((1, 10), "int4", "hbm")
    dma_copy(t, from_numpy(vals))
    np.testing.assert_array_equal(t.numpy().astype(np.int8), vals)
    np.testing.assert_array_equal(t[:, 1::3].numpy().astype(np.int8), vals[:, 1::3])
    sat = ndarray((1, 3), "int4", "hbm")
    dma_copy(sat, from_numpy(np.array([[100.0, -100.0, 2.5]], np.float32)))
    np.testing.assert_array_equal(sat.numpy().astype(np.int8), [[7, -8, 2]])


# -- memory: init checking, double writes ------------------------------------------------------

def test_uninitialised_read_names_tensor_element_and_allocation():
    span = Span("k.apk", 3, 5, 3, 30)
    t = ndarray((4, 8), "float32", "sbuf", name="tile", span=span)
    memset(t[0:2, :], 1.0)
    memset(t[2:4, 0:3], 2.0)
    out = ndarray((4, 8), "float32", "hbm")
    with raises_code("APK404") as info:
        dma_copy(out, t, name="store")
    err = info.value
    assert "dma_copy 'store'" in err.message and "tile[2, 3]" in err.message
    assert "storage element 19" in err.message
    assert err.facts["coord"] == (2, 3) and err.facts["offset"] == 19
    assert [(lab.span, lab.message) for lab in err.labels] == [(span, "allocated here")]
    # the same read with the check off reads the unwritten part as 0
    with options(init_check=False):
        dma_copy(out, t)
    expect = np.zeros((4, 8), np.float32)
    expect[0:2] = 1
    expect[2:4, 0:3] = 2
    np.testing.assert_array_equal(out.numpy(), expect)
    assert current().options.init_check is True


def test_init_tracking_through_partial_writes_and_reinterpreting_views():
    t = ndarray((2, 8), "int32", "sbuf")
    half = t.view("int16")  # (2, 16)
    memset(half[:, 0:8], 1)
    with raises_code("APK404") as info:
        t.numpy()
    assert info.value.facts["coord"] == (0, 4)
    memset(half[:, 8:16], 2)
    assert t.storage.all_written  # partial writes that add up to everything collapse the mask
    t.numpy()
    u = ndarray((1, 8), "int8", "sbuf")
    wide = u.view("int32")  # (1, 2): one int32 covers four int8
    memset(u[:, 0:5], 3)
    with raises_code("APK404") as info:
        wide.numpy()
    assert info.value.facts["coord"] == (0, 1)


def test_options_setter_and_context_manager():
    assert current().options.init_check is True
    with options(init_check=False):
        assert current().options.init_check is False
        with options(init_check=True):
            assert current().options.init_check is True
        assert current().options.init_check is False
    assert current().options.init_check is True
    options(init_check=False)
    try:
        assert ndarray((2, 2), "float32", "hbm").numpy().tolist() == [[0, 0], [0, 0]]
    finally:
        options(init_check=True)
    with raises_code("APK421") as info:
        options(init_checks=False)
    assert "init_check" in info.value.help
    with raises_code("APK421"):
        options(init_check="no")


def test_double_write_through_broadcast_and_overlapping_ap():
    t = ndarray((128, 1, 64), "float32", "sbuf")
    with raises_code("APK405") as info:
        memset(t.broadcast(1, 4), 0.0)
    assert "twice" in info.value.message
    u = ndarray((8, 16), "float32", "sbuf")
    src = from_numpy(np.zeros((8, 3, 8), np.float32), "sbuf")
    with raises_code("APK405"):
        tensor_copy(u.ap([[16, 8], [4, 3], [1, 8]]), src)  # rows of 8 overlap at stride 4
    # non-overlapping strided destinations pass, and write exactly their elements
    with options(init_check=False):
        tensor_copy(u.ap([[16, 8], [8, 2], [2, 4]]), src.slice(1, 0, 2).slice(2, 0, 4))
    assert not u.storage.all_written


# -- bounds ------------------------------------------------------------------------------------

def test_static_ap_out_of_storage_checked_before_data_moves():
    t = from_numpy(np.zeros((16, 32), np.float32), "sbuf")
    o = from_numpy(np.ones((16, 32), np.float32), "sbuf")
    with raises_code("APK401") as info:
        tensor_copy(o, t.ap([[32, 16], [1, 32]], offset=16))
    err = info.value
    assert err.facts["offset"] == 16 + 15 * 32 + 31 and err.facts["storage_size"] == 512
    assert "527" in err.message and "512" in err.message
    np.testing.assert_array_equal(o.numpy(), np.ones((16, 32)))  # nothing moved
    with raises_code("APK401"):
        tensor_copy(t.ap([[32, 16], [-1, 32]], offset=8), o)


def test_select_index_out_of_range_names_instruction_value_position_range():
    A = from_numpy(np.zeros((4, 128, 512), np.float32))
    idx = ndarray((1, 1), "int32", "sbuf")
    memset(idx, 7)
    out = ndarray((128, 512), "float32", "hbm")
    with raises_code("APK402") as info:
        dma_copy(out, A.select(0, idx), name="load")
    msg = info.value.message
    assert "dma_copy 'load'" in msg and "= 7" in msg and "[0, 4)" in msg and "[0, 0]" in msg
    memset(idx, -1)
    with raises_code("APK402"):
        dma_copy(out, A.select(0, idx))


def test_vector_select_index_out_of_range():
    A = from_numpy(np.zeros((16, 8), np.float32))
    idx = from_numpy(np.array([[0], [3], [16], [2]], np.int32), "sbuf")
    out = ndarray((4, 8), "float32", "hbm")
    with raises_code("APK402") as info:
        dma_copy(out, A.vector_select(0, idx))
    msg = info.value.message
    assert "= 16" in msg and "[2, 0]" in msg and "[0, 16)" in msg
    assert info.value.facts["position"] == (2, 0)


def test_ap_scalar_and_vector_offsets_must_stay_in_storage():
    A = from_numpy(np.zeros((512, 512), np.float32))
    idx = ndarray((1, 1), "int32", "sbuf")
    memset(idx, 400)
    out = ndarray((128, 256), "float32", "hbm")
    with raises_code("APK403") as info:
        dma_copy(out, A.ap([[512, 128], [1, 256]], 0, scalar_offset=idx, indirect_dim=0))
    assert "dma_copy" in info.value.message and "262144" in info.value.message
    vec = from_numpy(np.arange(64, dtype=np.int32).reshape(64, 1) * 8 + 100, "sbuf")
    out2 = ndarray((64, 512), "float32", "sbuf")
    with raises_code("APK403"):
        dma_copy(out2, A.ap([[512, 64], [1, 512]], 0, vector_offset=vec, indirect_dim=0))
    neg = from_numpy(np.full((64, 1), -1, np.int32), "sbuf")
    with raises_code("APK402"):
        dma_copy(out2, A.ap([[512, 64], [1, 512]], 0, vector_offset=neg, indirect_dim=0))


def test_vector_offset_leading_stride_warning_once_per_instruction():
    data = RNG.standard_normal((128, 512)).astype(np.float32)
    A = from_numpy(data)
    idx = ndarray((64, 1), "int32", "sbuf")
    iota(idx, [[1, 1]], 0, 2)
    out = ndarray((64, 512), "float32", "sbuf")
    with trace.collect_warnings() as got:
        for _ in range(3):
            trace.set_location("k.apk", 12)
            dma_copy(out, A.ap([[1024, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0))
        trace.set_location("k.apk", 13)
        dma_copy(out, A.ap([[1024, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0))
    assert [w.code for w in got] == ["APK450", "APK450"]
    assert all(isinstance(w, Warning_) and w.severity == "warning" for w in got)
    assert "1024" in got[0].message and "512" in got[0].message
    np.testing.assert_array_equal(out.numpy(), data[0:128:2])  # stride ignored, as on hardware


def test_vector_offsets_shape_mismatch():
    A = from_numpy(np.zeros((128, 512), np.float32))
    idx = from_numpy(np.zeros((32, 1), np.int32), "sbuf")
    out = ndarray((64, 512), "float32", "sbuf")
    with raises_code("APK407"):
        dma_copy(out, A.ap([[512, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0))


def test_register_errors():
    t = from_numpy(np.zeros((128, 64), np.float32), "sbuf")
    o = ndarray((128, 64), "float32", "sbuf")
    empty = register_alloc()
    with raises_code("APK410"):
        tensor_copy(o, t.ap([[64, 128], [1, empty]]))
    wide = register_alloc(2)
    with raises_code("APK406"):
        tensor_copy(o, t.ap([[64, 128], [wide, 64]]))
    zero = register_alloc(0)
    with raises_code("APK406"):
        tensor_copy(o.slice(1, 0, 1), t.ap([[64, 128], [1, zero]]))
    bad_part = register_alloc(32)
    with raises_code("APK303"):
        tensor_copy(o.slice(1, 0, 2), t.ap([[bad_part, 128], [1, 2]]))
    many = register_alloc(256)
    with raises_code("APK301"):
        tensor_copy(o, t.ap([[64, many], [1, 64]]))


def test_register_load_and_alloc_errors():
    r = register_alloc()
    with raises_code("APK319"):
        register_load(r, from_numpy(np.full((1, 1), 3.0, np.float32), "sbuf"))
    with raises_code("APK319"):
        register_load(r, from_numpy(np.zeros((2, 1), np.int32), "sbuf"))
    with raises_code("APK420"):
        register_load("r", from_numpy(np.zeros((1, 1), np.int32), "sbuf"))
    with raises_code("APK420"):
        register_alloc(1.5)
    with raises_code("APK404"):
        register_load(r, ndarray((1, 1), "int32", "sbuf"))


def test_freed_storage():
    t = from_numpy(np.zeros((4, 4), np.float32), "sbuf")
    view = t[0:2, :]
    t.storage.free()
    with raises_code("APK408"):
        view.numpy()


def test_write_view_size_mismatch():
    t = ndarray((2, 2), "float32", "hbm")
    with raises_code("APK411"):
        execute.write_view(t, np.zeros(16))


def test_argument_errors():
    t = ndarray((8, 8), "float32", "sbuf")
    with raises_code("APK420"):
        memset(t, "zero")
    with raises_code("APK420"):
        dma_copy(t, np.zeros((8, 8)))
    with raises_code("APK420"):
        iota(t, [1, 64])
    with raises_code("APK420"):
        iota(t, [[1, 8]], offset=1.5)


# -- instruction target rules (APK3xx) -----------------------------------------------------------

def test_dma_copy_rules():
    a = from_numpy(np.zeros((16, 16), np.float32), "gm")
    b = ndarray((16, 16), "float32", "hbm")
    with raises_code("APK305"):
        dma_copy(b, a)
    c = from_numpy(np.zeros((128, 64), np.float32))
    d = ndarray((128, 32), "float32", "sbuf")
    with raises_code("APK306") as info:
        dma_copy(d, c)
    assert "(128, 32)" in info.value.message and "(128, 64)" in info.value.message
    # different shapes with equal counts are fine: row-major order
    e = ndarray((64, 128), "float32", "sbuf")
    dma_copy(e, c)
    np.testing.assert_array_equal(e.numpy(), c.numpy().reshape(64, 128))


def test_dma_copy_refuses_tensor_indirection():
    with targets.target("trn3"):
        t = from_numpy(np.zeros((16, 8), np.float32), "sbuf")
        idx = from_numpy(np.zeros((16, 1), np.int32), "sbuf")
        o = ndarray((16, 1), "float32", "hbm")
        with raises_code("APK307"):
            dma_copy(o, t.indirect(idx))


# Per buffer, the format a path's operand has: L0A/L0B take fractals (Load2D from GM needs them
# already in GM), L0C holds NZ; and the dtype (L0C holds an accumulator: Fixpipe keeps float32).
_PATH_FORMAT = {"l0a": "ZZ", "l0b": "ZN", "l0c": "NZ"}


@pytest.mark.parametrize("src,dst,ok", [
    ("gm", "l1", True), ("gm", "ub", True), ("l1", "l0a", True), ("l1", "l0b", True),
    ("gm", "l0a", True), ("gm", "l0b", True),
    ("l0c", "gm", True), ("l0c", "l1", True), ("ub", "gm", True), ("ub", "ub", True),
    ("l1", "gm", False), ("l0a", "l1", False), ("ub", "l1", False),
    ("gm", "gm", False), ("l0b", "gm", False), ("gm", "l0c", False), ("l1", "ub", False)])
def test_ascend_paths(src, dst, ok):
    dt = "float32" if "l0c" in (src, dst) else "float16"
    data = RNG.standard_normal((16, 16)).astype(dt)
    fmt_d = _PATH_FORMAT.get(dst, "ND")
    fmt_s = _PATH_FORMAT.get(src, fmt_d if dst in ("l0a", "l0b") else "ND")
    s = ndarray((16, 16), dt, src, fmt_s)
    execute.write_view(s, data)
    d = ndarray((16, 16), dt, dst, fmt_d)
    if ok:
        dma_copy(d, s)
        np.testing.assert_array_equal(d.numpy(), data)
    else:
        with raises_code("APK308") as info:
            dma_copy(d, s)
        assert src.upper() in info.value.message and dst.upper() in info.value.message


def test_on_chip_only_instructions():
    h = from_numpy(np.zeros((8, 8), np.float32))
    s = ndarray((8, 8), "float32", "sbuf")
    with raises_code("APK309"):
        tensor_copy(s, h)
    with raises_code("APK309"):
        iota(h, [[1, 8]])
    with raises_code("APK312"):
        memset(h, 0.0)
    with raises_code("APK312"):
        memset(from_numpy(np.zeros((4, 4), np.float32), "gm"), 0.0)


def test_tensor_copy_partition_rule():
    a = from_numpy(np.zeros((128, 64), np.float32), "sbuf")
    with raises_code("APK311"):
        tensor_copy(ndarray((64, 128), "float32", "sbuf"), a)
    with raises_code("APK311"):
        tensor_copy(ndarray((128, 32), "float32", "sbuf"), a)


def test_iota_pattern_must_cover_partition():
    t = ndarray((128, 64), "int32", "sbuf")
    with raises_code("APK313") as info:
        iota(t, [[1, 32]], 0, 64)
    assert "32" in info.value.message and "64" in info.value.message


def test_nc_matmul_rules():
    f32 = lambda shape, buf="sbuf": from_numpy(np.ones(shape, np.float32), buf)  # noqa: E731
    bf = lambda shape: from_numpy(np.ones(shape, np.float32), "sbuf", dtype="bfloat16")  # noqa: E731
    with raises_code("APK314") as info:
        nc_matmul(ndarray((128, 1024), "float32", "psum"), bf((128, 128)), bf((128, 1024)))
    assert "1024" in info.value.message and "512" in info.value.message
    with raises_code("APK315"):
        nc_matmul(ndarray((128, 512), "float32", "sbuf"), f32((128, 128)), f32((128, 512)))
    with raises_code("APK315"):
        nc_matmul(ndarray((128, 512), "bfloat16", "psum"), f32((128, 128)), f32((128, 512)))
    with raises_code("APK309"):
        nc_matmul(ndarray((128, 512), "float32", "psum"), f32((128, 128), "hbm"),
                  f32((128, 512)))
    with raises_code("APK317"):
        nc_matmul(ndarray((128, 512), "float32", "psum"), f32((128, 128)), bf((128, 512)))
    with raises_code("APK318"):
        nc_matmul(ndarray((64, 512), "float32", "psum"), f32((128, 64)), f32((64, 512)))
    with raises_code("APK318"):
        nc_matmul(ndarray((64, 256), "float32", "psum"), f32((128, 64)), f32((128, 512)))


@pytest.mark.parametrize("tname", ["trn1", "trn2"])
def test_nc_matmul_psum_bank(tname):
    with targets.target(tname):
        a = from_numpy(np.ones((16, 8), np.float32), "sbuf")
        b = from_numpy(np.ones((16, 512), np.float32), "sbuf")
        c = ndarray((8, 1024), "float32", "psum")
        with raises_code("APK316") as info:
            nc_matmul(c[:, 256:768], a, b)
        assert "bank" in info.value.message
        nc_matmul(c[:, 512:1024], a, b)  # the second bank exactly
        np.testing.assert_array_equal(c[:, 512:].numpy(), np.full((8, 512), 16.0))
    with targets.target("trn3"):
        c3 = ndarray((8, 1024), "float32", "psum")
        nc_matmul(c3[:, 256:768], from_numpy(np.ones((16, 8), np.float32), "sbuf"),
                  from_numpy(np.ones((16, 512), np.float32), "sbuf"))


@pytest.mark.parametrize("tname,sbuf_kib", [("trn1", 192), ("trn2", 224), ("trn3", 256)])
def test_capacity_errors_at_allocation(tname, sbuf_kib):
    with targets.target(tname):
        fits = ndarray((128, sbuf_kib * 256), "float32", "sbuf")  # exactly the partition
        del fits
        with pytest.raises(TargetError) as info:
            ndarray((128, sbuf_kib * 256 + 1), "float32", "sbuf")
        assert info.value.code == "APK302"
        with pytest.raises(TargetError) as info:
            ndarray((128, 4097), "float32", "psum")  # 16 KiB a partition
        assert info.value.code == "APK302"
        with pytest.raises(TargetError) as info:
            ndarray((129, 4), "float32", "sbuf")
        assert info.value.code == "APK301"


# -- tracing -----------------------------------------------------------------------------------

def test_trace_records_lowered_operands_with_location_and_name():
    A = from_numpy(np.zeros((128, 512), np.float32))
    t = ndarray((64, 512), "float32", "sbuf", name="tile")
    with trace.tracing() as tr:
        trace.set_location("k.apk", 7)
        dma_copy(t, A[0:128:2, :], name="load")
        memset(t, 1.0)
    assert [r.op for r in tr] == ["dma_copy", "memset"]
    rec = tr.records[0]
    assert rec.name == "load" and rec.location == ("k.apk", 7)
    assert rec.operands["dst"][0].tensor == "tile"
    assert rec.operands["dst"][0].pattern == [[512, 64], [1, 512]]
    assert rec.operands["src"][0].pattern == [[1024, 64], [1, 512]]
    js = rec.to_json()
    assert js[0]["op"] == "dma_copy" and js[0]["file"] == "k.apk" and js[0]["line"] == 7
    assert js[0]["operands"]["dst"]["pattern"] == [[512, 64], [1, 512]]
    # nothing is recorded outside a tracing block
    dma_copy(t, A[0:64, :])
    assert len(tr) == 2


def test_free_entry_limit_enforced_even_without_tracing():
    t = from_numpy(np.zeros((128, 2, 2, 2, 2, 2), np.float32), "sbuf")
    o = ndarray((128, 2, 2, 2, 2, 2), "float32", "sbuf")
    with raises_code("APK304") as info:
        tensor_copy(o, t.permute((0, 5, 4, 3, 2, 1)))
    assert "5" in info.value.message and "4" in info.value.message
    tensor_copy(o, t)  # coalesces to one free entry


# -- catalogue ---------------------------------------------------------------------------------

def test_catalogue_covers_runtime_and_target_codes():
    codes = {e.code for e in runtime_catalogue.ENTRIES} | {e.code for e in
                                                           targets_catalogue.ENTRIES}
    mine = {"APK401", "APK402", "APK403", "APK404", "APK405", "APK406", "APK407", "APK408",
            "APK410", "APK411", "APK420", "APK421", "APK450"}
    mine |= {f"APK3{n:02d}" for n in range(1, 20)}
    assert mine <= codes
    for e in runtime_catalogue.ENTRIES + targets_catalogue.ENTRIES:
        assert e.title and e.explanation and e.example


# -- check mode ----------------------------------------------------------------------------------

def test_check_mode_validates_without_reading_or_moving_data():
    A = from_numpy(np.zeros((4, 128, 64), np.float32))
    idx = ndarray((1, 1), "int32", "sbuf")  # never written: check mode must not read it
    out = ndarray((128, 64), "float32", "hbm")
    t = ndarray((128, 64), "float32", "sbuf")
    with options(execute=False), trace.tracing() as tr:
        dma_copy(out, A.select(0, idx))
        dma_copy(out, t)  # t is unwritten: no APK404 without execution
        memset(t, 1.0)
        iota(ndarray((128, 64), "int32", "sbuf"), [[1, 64]])
        nc_matmul(ndarray((64, 64), "float32", "psum"), t, t)
        with raises_code("APK306"):
            dma_copy(ndarray((128, 32), "float32", "hbm"), t)
        with raises_code("APK401"):
            tensor_copy(t, t.ap([[64, 128], [1, 64]], offset=1))
        with raises_code("APK304"):
            u = ndarray((128, 2, 2, 2, 2, 2), "float32", "sbuf")
            tensor_copy(u, u.permute((0, 5, 4, 3, 2, 1)))
        with raises_code("APK316"):
            c = ndarray((64, 1024), "float32", "psum")
            nc_matmul(c[:, 256:768], t, ndarray((128, 512), "float32", "sbuf"))
    assert [r.op for r in tr] == ["dma_copy", "dma_copy", "memset", "iota", "nc_matmul"]
    assert not out.storage.all_written and not t.storage.all_written
    with raises_code("APK404"):
        out.numpy()


def test_check_mode_reports_vector_offset_warning():
    A = from_numpy(np.zeros((128, 512), np.float32))
    idx = ndarray((64, 1), "int32", "sbuf")
    out = ndarray((64, 512), "float32", "sbuf")
    with options(execute=False), trace.collect_warnings() as got:
        dma_copy(out, A.ap([[1024, 64], [1, 512]], 0, vector_offset=idx, indirect_dim=0))
    assert [w.code for w in got] == ["APK450"]


def test_narrow_float_sources_saturate_at_wide_integer_bounds():
    src = from_numpy(np.array([[3e38, -3e38, 2.5, np.nan]], np.float32), dtype="bfloat16")
    out = ndarray((1, 4), "int32", "hbm")
    dma_copy(out, src)
    assert out.numpy().tolist() == [[2**31 - 1, -2**31, 2, 0]]
    out_u = ndarray((1, 4), "uint32", "hbm")
    dma_copy(out_u, src)
    assert out_u.numpy().tolist() == [[2**32 - 1, 0, 2, 0]]


def test_trace_json_splits_an_operand_of_several_pieces():
    a = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)
    A = from_numpy(a)
    part = A.rearrange("b c h -> (b h) c").slice(0, 3, 17)  # not one access pattern
    n = len(part.layout.pieces())
    out = ndarray(part.shape, "float32", "hbm")
    with trace.tracing() as tr:
        trace.set_location("k.apk", 3)
        dma_copy(out, part, name="gather")
    objs = tr.records[0].to_json()
    assert len(objs) == n > 1
    assert [o["piece"] for o in objs] == [[i, n] for i in range(n)]
    # the contiguous dst is cut with the src: each piece moves the next run of rows
    starts = np.cumsum([0] + [int(np.prod(p.shape)) for p in part.layout.pieces()])
    assert [o["operands"]["dst"]["offset"] for o in objs] == starts[:-1].tolist()
    assert [o["operands"]["dst"]["pattern"] for o in objs] == [
        [[1, int(b - a)]] for a, b in zip(starts, starts[1:])]
    # each piece's AP, evaluated on the storage, gives that piece's box of the view
    flat = a.reshape(-1)
    got = []
    for o, p in zip(objs, part.layout.pieces()):
        ap = o["operands"]["src"]
        idx = np.full((), ap["offset"], np.int64)
        for k, (s, c) in enumerate(ap["pattern"]):
            idx = idx + (np.arange(c) * s).reshape((c,) + (1,) * (len(ap["pattern"]) - k - 1))
        got.append((p, flat[idx]))
    expect = einops.rearrange(a, "b c h -> (b h) c")[3:17]
    for p, vals in got:
        box = tuple(slice(s, s + n) for s, n in zip(p.start, p.shape))
        np.testing.assert_array_equal(vals.reshape(p.shape), expect[box])
