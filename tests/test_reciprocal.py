"""`nisa.reciprocal` (SPEC 11), the worked example of the instruction table: values against
NumPy, dtypes, refusals, lowering and the trace record's engine."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime import table
from apdsl.runtime.core import trace
from apdsl.runtime.instructions import dma_copy, memset, reciprocal, tensor_copy
from apdsl.semantics.builtins import INSTRUCTIONS
from apdsl.tensor.view import from_numpy, ndarray

FLOATS = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def on_chip(values: np.ndarray, dtype: str = "float32", buffer: str = "sbuf") -> apdsl.Tensor:
    t = ndarray(values.shape, dtype, "sbuf")
    dma_copy(t, from_numpy(values.astype(np.float32)))
    if buffer == "sbuf":
        return t
    p = ndarray(values.shape, dtype, buffer)
    tensor_copy(p, t)
    return p


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(FLOATS)), st.sampled_from(sorted(FLOATS)),
       st.integers(1, 128), st.integers(1, 40), st.integers(0, 2**31 - 1),
       st.sampled_from(["sbuf", "psum"]))
def test_values_are_numpys_float32_reciprocal_cast_to_dst(src_dt, dst_dt, parts, free, seed,
                                                          buffer):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.05, 4.0, (parts, free)) * rng.choice([-1, 1], (parts, free))
    x = x.astype(FLOATS[src_dt])  # what the source tile holds
    src = on_chip(x.astype(np.float32), src_dt, buffer)
    dst = ndarray((parts, free), dst_dt, "sbuf")
    reciprocal(dst, src)
    expect = (np.float32(1) / x.astype(np.float32)).astype(FLOATS[dst_dt])
    got = dst.numpy()
    assert got.dtype == FLOATS[dst_dt]
    np.testing.assert_array_equal(got.astype(np.float32), expect.astype(np.float32))


def test_integer_source_and_destination_go_through_float32():
    src = from_numpy(np.array([[1, 2, 4, -8]], np.int32), "sbuf")
    dst = ndarray((1, 4), "int32", "sbuf")
    reciprocal(dst, src)
    # 1/1, 1/2, 1/4, -1/8 in float32, then rounded to nearest even into int32
    assert dst.numpy().tolist() == [[1, 0, 0, 0]]
    out = ndarray((1, 4), "float32", "sbuf")
    reciprocal(out, src)
    assert out.numpy().tolist() == [[1.0, 0.5, 0.25, -0.125]]


def test_free_shapes_may_differ_within_a_partition():
    x = np.arange(1, 25, dtype=np.float32).reshape(4, 6)
    src = on_chip(x)
    dst = ndarray((4, 2, 3), "float32", "psum")
    reciprocal(dst=dst, data=src)
    np.testing.assert_array_equal(dst.numpy().reshape(4, 6), np.float32(1) / x)


def test_views_with_strides_read_and_write_only_their_elements():
    x = np.arange(1, 65, dtype=np.float32).reshape(8, 8)
    src = on_chip(x)
    dst = ndarray((8, 8), "float32", "sbuf")
    memset(dst, 7.0)
    reciprocal(dst[:, 0:8:2], src[:, 1:8:2])
    expect = np.full((8, 8), 7.0, np.float32)
    expect[:, 0::2] = np.float32(1) / x[:, 1::2]
    np.testing.assert_array_equal(dst.numpy(), expect)


@pytest.mark.parametrize("buffer", ["hbm", "shared_hbm"])
def test_operands_must_be_on_chip(buffer):
    hbm = from_numpy(np.ones((4, 8), np.float32), buffer)
    sb = ndarray((4, 8), "float32", "sbuf")
    with raises_code("APK309") as err:
        reciprocal(sb, hbm)
    assert err.value.message.startswith("reciprocal: data ")
    with raises_code("APK309"):
        reciprocal(hbm, on_chip(np.ones((4, 8))))


def test_partitions_and_elements_per_partition_must_agree():
    src = on_chip(np.ones((4, 8)))
    with raises_code("APK460") as err:
        reciprocal(ndarray((8, 4), "float32", "sbuf"), src, name="inv")
    assert err.value.message.startswith("reciprocal 'inv': dst has 8 partitions")
    with raises_code("APK460"):
        reciprocal(ndarray((4, 9), "float32", "sbuf"), src)


@pytest.mark.parametrize("dtype", ["int64", "tfloat32", "int4"])
def test_dtypes_the_engines_do_not_take_are_refused(dtype):
    bad = ndarray((4, 8), dtype, "sbuf")
    with raises_code("APK461"):
        reciprocal(bad, on_chip(np.ones((4, 8))))


def test_float8_e4m3fn_is_trn3_only():
    with raises_code("APK461"):
        reciprocal(ndarray((4, 8), "float8_e4m3fn", "sbuf"), on_chip(np.ones((4, 8))))
    with apdsl.target("trn3"):
        dst = ndarray((4, 8), "float8_e4m3fn", "sbuf")
        reciprocal(dst, on_chip(np.full((4, 8), 0.5)))
        assert dst.numpy().astype(np.float32).tolist() == [[2.0] * 8] * 4


def test_ascend_buffers_are_not_operands():
    u = ndarray((16, 16), "float32", "ub")
    with raises_code("APK462"):
        reciprocal(u, u)


def test_zero_is_outside_the_domain_and_named():
    x = np.ones((4, 8), np.float32)
    x[2, 5] = 0
    dst = ndarray((4, 8), "float32", "sbuf")
    with raises_code("APK463") as err:
        reciprocal(dst, on_chip(x))
    assert err.value.facts["coord"] == (2, 5) and "[2, 5]" in err.value.message
    assert dst.storage.mask.sum() == 0  # nothing was written


def test_unwritten_data_is_the_init_check_error():
    with apdsl.options(init_check="strict"), raises_code("APK404"):
        reciprocal(ndarray((4, 8), "float32", "sbuf"), ndarray((4, 8), "float32", "sbuf"))


def test_engine_hint_vector_only():
    src, dst = on_chip(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
    reciprocal(dst, src, engine="vector")
    with raises_code("APK348"):
        reciprocal(dst, src, engine="gpsimd")


def test_trace_records_the_engine_from_the_table():
    with trace.tracing() as tr:
        src = on_chip(np.ones((4, 8)))
        reciprocal(ndarray((4, 8), "float32", "sbuf"), src)
        g = from_numpy(np.ones((16, 16), np.float16), "gm")
        l1 = ndarray((16, 16), "float16", "l1")
        dma_copy(l1, g)
    assert [(r.op, r.engine) for r in tr] == [("dma_copy", "dma"), ("reciprocal", "vector"),
                                              ("dma_copy", "MTE2")]


def test_the_language_takes_its_instructions_from_the_table():
    assert INSTRUCTIONS == table.NAMES and "reciprocal" in INSTRUCTIONS
    assert table.implementation("reciprocal") is reciprocal is apdsl.reciprocal
    source = """\
kernel k(a: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:
    t: f32[4, 8] @ sbuf
    dma_copy(t, a)
    nisa.reciprocal(dst=t, data=t)
    o: f32[4, 8] @ hbm
    dma_copy(o, t)
    return o
"""
    a = np.arange(1, 33, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(apdsl.run(source, inputs={"a": a}), np.float32(1) / a)


def test_check_reports_the_shape_rule_but_not_data(tmp_path):
    bad = "a: f32[4, 8] @ sbuf = 1.0\nb: f32[8, 4] @ sbuf\nreciprocal(b, a)\n"
    assert [e.code for e in apdsl.check(bad)] == ["APK460"]
    zero = "a: f32[4, 8] @ sbuf = 0.0\nb: f32[4, 8] @ sbuf\nreciprocal(b, a)\n"
    assert apdsl.check(zero) == []


def test_lower_shows_reciprocal(tmp_path):
    f = tmp_path / "r.apk"
    f.write_text("""\
kernel k(a: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:
    t: f32[4, 8] @ sbuf
    dma_copy(t, a)
    r: bf16[4, 8] @ sbuf
    nisa.reciprocal(r, t[:, 0:8], name="inv")
    o: f32[4, 8] @ hbm
    dma_copy(o, r)
    return o
""")
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    k = lines.index(f"{f}:5  reciprocal inv")
    assert lines[k + 1].split()[:4] == ["dst", "r", "sbuf", "bfloat16"]
    assert lines[k + 2].split()[:4] == ["data", "t", "sbuf", "float32"]
