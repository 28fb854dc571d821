"""bn_stats, bn_aggr, max8, nc_find_index8 and nc_match_replace8 (SPEC 11; NKI isa
docstrings): values against NumPy and hand-written oracles, dtypes, every refusal, lowering."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import lower_header, raises_code

import apdsl
from apdsl.runtime.core import trace
from apdsl.runtime.instructions import (
    bn_aggr,
    bn_stats,
    max8,
    nc_find_index8,
    nc_match_replace8,
    tensor_copy,
)
from apdsl.tensor.view import from_numpy, ndarray


def sb(values: np.ndarray, dtype: str = "float32", buffer: str = "sbuf") -> apdsl.Tensor:
    t = from_numpy(np.asarray(values, np.float32), "sbuf")
    if dtype == "float32" and buffer == "sbuf":
        return t
    out = ndarray(t.shape, dtype, buffer)
    tensor_copy(out, t)
    return out


# -- bn_stats / bn_aggr -----------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 128), st.integers(2, 512), st.integers(0, 2**31 - 1),
       st.sampled_from(["sbuf", "psum"]))
def test_bn_stats_then_bn_aggr_is_numpys_mean_and_var(parts, free, seed, buffer):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((parts, free)) * 10 + 3).astype(np.float32)
    s = ndarray((parts, 6), "float32", buffer)
    bn_stats(s, sb(x, buffer=buffer))
    mv = ndarray((parts, 2), "float32", "sbuf")
    bn_aggr(mv, s)
    got = mv.numpy()
    np.testing.assert_allclose(got[:, 0], x.astype(np.float64).mean(axis=1), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(got[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-3,
                               atol=1e-3)


def test_bn_stats_splits_even_and_odd_elements_of_the_flattened_free_dims():
    x = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5) ** 1.5
    s = ndarray((2, 6), "float32", "sbuf")
    bn_stats(s, sb(x))
    flat = x.reshape(2, -1).astype(np.float64)
    for p in range(2):
        even, odd = flat[p, 0::2], flat[p, 1::2]
        want = [even.size, even.mean(), even.var() * even.size,
                odd.size, odd.mean(), odd.var() * odd.size]
        np.testing.assert_allclose(s.numpy()[p], want, rtol=1e-5)


def test_bn_aggr_aggregates_several_bn_stats_tiles_of_a_wide_row():
    # the docs' Example 2: 1024 elements a partition in two 512-element bn_stats tiles
    rng = np.random.default_rng(7)
    x = (rng.random((128, 1024)) * 100).astype(np.float32)
    a = sb(x)
    stats = ndarray((128, 12), "float32", "sbuf")
    for i in range(2):
        bn_stats(stats[:, i * 6:(i + 1) * 6], a[:, i * 512:(i + 1) * 512])
    mv = ndarray((128, 2), "float32", "sbuf")
    bn_aggr(mv, stats)
    np.testing.assert_allclose(mv.numpy()[:, 0], x.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(mv.numpy()[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-4)


def test_bn_stats_of_one_element_leaves_the_odd_half_empty():
    s = ndarray((2, 6), "float32", "sbuf")
    bn_stats(s, sb(np.array([[4.0], [-2.0]])))
    assert s.numpy().tolist() == [[1, 4, 0, 0, 0, 0], [1, -2, 0, 0, 0, 0]]
    mv = ndarray((2, 2), "float32", "sbuf")
    bn_aggr(mv, s)
    assert mv.numpy().tolist() == [[4, 0], [-2, 0]]


def test_bn_results_are_cast_to_dst_and_inputs_of_any_dtype_read_as_float32():
    x = np.array([[1, 2, 3, 4, 5, 6, 7, 100]], np.float32)
    s = ndarray((1, 6), "bfloat16", "sbuf")
    bn_stats(s, sb(x, "int32"))
    even, odd = x[0, 0::2], x[0, 1::2]
    want = np.array([4, even.mean(), even.var() * 4, 4, odd.mean(), odd.var() * 4], np.float32)
    np.testing.assert_array_equal(s.numpy(), want.astype(ml_dtypes.bfloat16)[None])


def test_bn_refusals():
    with raises_code("APK372") as err:
        bn_stats(ndarray((4, 6), "float32", "sbuf"), sb(np.ones((4, 513))), name="st")
    assert err.value.message.startswith("bn_stats 'st': data ")
    with raises_code("APK371"):
        bn_stats(ndarray((4, 5), "float32", "sbuf"), sb(np.ones((4, 8))))
    with raises_code("APK370"):
        bn_stats(ndarray((2, 6), "float32", "sbuf"), sb(np.ones((4, 8))))
    with raises_code("APK372"):
        bn_aggr(ndarray((4, 2), "float32", "sbuf"), sb(np.ones((4, 7))))
    with raises_code("APK371"):
        bn_aggr(ndarray((4, 3), "float32", "sbuf"), sb(np.ones((4, 6))))
    with raises_code("APK309"):
        bn_stats(ndarray((4, 6), "float32", "sbuf"), from_numpy(np.ones((4, 8), np.float32),
                                                                 "hbm"))
    with raises_code("APK461"):
        bn_stats(ndarray((4, 6), "int64", "sbuf"), sb(np.ones((4, 8))))
    with raises_code("APK462"):
        bn_stats(ndarray((16, 6), "float32", "ub"), ndarray((16, 8), "float32", "ub"))
    with apdsl.options(init_check="strict"), raises_code("APK404"):
        bn_stats(ndarray((4, 6), "float32", "sbuf"), ndarray((4, 8), "float32", "sbuf"))


def test_bn_stats_start_partition_rule_on_trn1():
    with apdsl.target("trn1"):
        a = sb(np.ones((128, 8)))
        with raises_code("APK343"):
            bn_stats(ndarray((120, 6), "float32", "sbuf"), a[8:128])


# -- max8 ------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 128), st.sampled_from([(8,), (13,), (4, 5), (3, 7), (16384,)]),
       st.integers(0, 2**31 - 1), st.booleans())
def test_max8_is_the_eight_largest_descending(parts, free, seed, ties):
    rng = np.random.default_rng(seed)
    shape = (parts,) + free
    x = rng.integers(-5, 5, shape) if ties else rng.standard_normal(shape)
    x = x.astype(np.float32)
    dst = ndarray((parts, 8), "float32", "sbuf")
    max8(dst, sb(x))
    want = [sorted(row.tolist(), reverse=True)[:8] for row in x.reshape(parts, -1)]
    assert dst.numpy().tolist() == want


def test_max8_casts_to_dst():
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(1, 16) + 0.3
    dst = ndarray((1, 8), "int32", "sbuf")
    max8(dst, sb(x))
    assert dst.numpy().tolist() == [np.rint(sorted(x[0], reverse=True)[:8]).astype(int).tolist()]


def test_max8_refusals():
    with raises_code("APK372"):
        max8(ndarray((4, 8), "float32", "sbuf"), sb(np.ones((4, 7))))
    with raises_code("APK372"):
        max8(ndarray((4, 8), "float32", "sbuf"), sb(np.ones((4, 2, 2, 4))))
    with raises_code("APK372"):
        max8(ndarray((1, 8), "float32", "sbuf"), sb(np.ones((1, 16385))))
    with raises_code("APK371"):
        max8(ndarray((4, 2, 4), "float32", "sbuf"), sb(np.ones((4, 16))))
    with raises_code("APK371"):
        max8(ndarray((4, 9), "float32", "sbuf"), sb(np.ones((4, 16))))
    with raises_code("APK370"):
        max8(ndarray((3, 8), "float32", "sbuf"), sb(np.ones((4, 16))))


# -- nc_find_index8 --------------------------------------------------------------------------

def _find_oracle(data: list[float], vals: list[float], missing: int) -> list[int]:
    used: list[int] = []
    out = []
    for v in vals:
        pos = next((i for i, d in enumerate(data) if d == v and i not in used), None)
        if pos is None:
            out.append(missing)
        else:
            used.append(pos)
            out.append(pos)
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 32), st.integers(8, 64), st.integers(0, 2**31 - 1),
       st.sampled_from(["uint32", "uint16"]))
def test_find_index8_against_a_loop(parts, free, seed, dtype):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 6, (parts, free)).astype(np.float32)
    vals = rng.integers(0, 8, (parts, 8)).astype(np.float32)  # 6 and 7 are never found
    dst = ndarray((parts, 8), dtype, "sbuf")
    nc_find_index8(dst, sb(data), sb(vals))
    missing = 0xFFFF if dtype == "uint16" else 0xFFFFFFFF
    want = [_find_oracle(d.tolist(), v.tolist(), missing) for d, v in zip(data, vals)]
    assert dst.numpy().tolist() == want


def test_find_index8_of_max8_points_at_the_maxima():
    rng = np.random.default_rng(3)
    data = sb(rng.random((32, 128)).astype(np.float32))
    m = ndarray((32, 8), "float32", "sbuf")
    max8(m, data)
    idx = ndarray((32, 8), "uint32", "sbuf")
    nc_find_index8(idx, data, m)
    got = np.take_along_axis(data.numpy(), idx.numpy().astype(np.int64), axis=1)
    np.testing.assert_array_equal(got, m.numpy())


def test_find_index8_refusals():
    data, vals = sb(np.ones((4, 16))), sb(np.ones((4, 8)))
    with raises_code("APK461"):
        nc_find_index8(ndarray((4, 8), "int32", "sbuf"), data, vals)
    with raises_code("APK371"):
        nc_find_index8(ndarray((4, 8), "uint32", "sbuf"), data, sb(np.ones((4, 9))))
    with raises_code("APK372"):
        nc_find_index8(ndarray((4, 8), "uint32", "sbuf"), sb(np.ones((4, 4))), vals)
    with raises_code("APK370"):
        nc_find_index8(ndarray((4, 8), "uint32", "sbuf"), data, sb(np.ones((2, 8))))


# -- nc_match_replace8 -----------------------------------------------------------------------

def test_match_replace8_the_docs_example():
    data = sb(np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]]))
    vals = sb(np.array([[3, 8, 8, 8, 8, 8, 8, 8]]))
    out, idx = ndarray((1, 11), "float32", "sbuf"), ndarray((1, 8), "uint32", "sbuf")
    nc_match_replace8(out, data, vals, float("-inf"), dst_idx=idx)
    assert idx.numpy().tolist() == [[2, 10, 9, 8, 7, 6, 5, 4]]
    assert out.numpy().tolist() == [[1, 2, -np.inf, 4] + [-np.inf] * 7]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 16), st.integers(8, 40), st.integers(0, 2**31 - 1))
def test_match_replace8_of_max8_against_a_loop(parts, free, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, (parts, 2, free)).astype(np.float32)  # many ties, 3-D data
    data = sb(x)
    m = ndarray((parts, 8), "float32", "sbuf")
    max8(m, data)
    out, idx = ndarray((parts, 2, free), "float32", "sbuf"), ndarray((parts, 8), "int32", "sbuf")
    nc_match_replace8(out, data, m, -1.0, dst_idx=idx)
    flat = x.reshape(parts, -1)
    for p in range(parts):
        row, vals = flat[p].tolist(), m.numpy()[p].tolist()
        want_idx = [0] * 8
        used: set[int] = set()
        for i in reversed(range(8)):
            pos = next(k for k, d in enumerate(row) if d == vals[i] and k not in used)
            used.add(pos)
            want_idx[i] = pos
        want = [-1.0 if k in used else d for k, d in enumerate(row)]
        assert idx.numpy()[p].tolist() == want_idx
        assert out.numpy().reshape(parts, -1)[p].tolist() == want


def test_match_replace8_unmatched_values():
    data = sb(np.arange(16, dtype=np.float32).reshape(1, 16))
    vals = sb(np.array([[3, 99, 5, 5, 1, 2, 0, 4]]))
    out = ndarray((1, 16), "float32", "sbuf")
    nc_match_replace8(out, data, vals, 0.5)  # 99 and the second 5 replace nothing
    want = np.arange(16, dtype=np.float32)
    want[[0, 1, 2, 3, 4, 5]] = 0.5
    assert out.numpy()[0].tolist() == want.tolist()
    with raises_code("APK377") as err:
        nc_match_replace8(ndarray((1, 16), "float32", "sbuf"), data, vals, 0.5,
                          dst_idx=ndarray((1, 8), "uint32", "sbuf"))
    assert "vals[0, 1] = 99.0" in err.value.message and "nowhere" in err.value.message
    twice = sb(np.array([[3, 6, 5, 5, 1, 2, 0, 4]]))
    with raises_code("APK377") as err:
        nc_match_replace8(ndarray((1, 16), "float32", "sbuf"), data, twice, 0.5,
                          dst_idx=ndarray((1, 8), "uint32", "sbuf"))
    assert "vals[0, 2] = 5.0" in err.value.message and "taken" in err.value.message


def test_match_replace8_refusals_write_nothing():
    data, vals = sb(np.ones((4, 16))), sb(np.ones((4, 8)))
    out = ndarray((4, 16), "float32", "sbuf")
    with raises_code("APK371"):
        nc_match_replace8(ndarray((4, 15), "float32", "sbuf"), data, vals, 0.0)
    with raises_code("APK371"):
        nc_match_replace8(out, data, vals, 0.0, dst_idx=ndarray((4, 7), "uint32", "sbuf"))
    with raises_code("APK461"):
        nc_match_replace8(out, data, vals, 0.0, dst_idx=ndarray((4, 8), "float32", "sbuf"))
    with raises_code("APK420"):
        nc_match_replace8(out, data, vals, "zero")
    with raises_code("APK405"):  # a broadcast dst_idx would write one element twice
        nc_match_replace8(out, data, vals, 0.0,
                          dst_idx=ndarray((4, 1), "uint32", "sbuf").ap([[1, 4], [0, 8]]))
    assert out.storage.mask.sum() == 0


# -- the language, check mode, lower ----------------------------------------------------------

def test_the_language_runs_them_with_nki_names():
    source = """\
kernel k(a: f32[8, 64] @ hbm) -> f32[8, 2] @ hbm:
    t: f32[8, 64] @ sbuf
    dma_copy(t, a)
    s: f32[8, 12] @ sbuf
    nisa.bn_stats(dst=s[:, 0:6], data=t[:, 0:32])
    nisa.bn_stats(dst=s[:, 6:12], data=t[:, 32:64])
    mv: f32[8, 2] @ sbuf
    nisa.bn_aggr(dst=mv, data=s)
    o: f32[8, 2] @ hbm
    dma_copy(o, mv)
    return o
"""
    a = np.random.default_rng(1).random((8, 64)).astype(np.float32)
    got = apdsl.run(source, inputs={"a": a})
    np.testing.assert_allclose(got, np.stack([a.mean(1), a.var(1)], 1), rtol=1e-5)


def test_check_reports_shape_rules_without_data():
    bad = "a: f32[4, 8] @ sbuf = 1.0\nm: f32[4, 7] @ sbuf\nmax8(m, a)\n"
    assert [e.code for e in apdsl.check(bad)] == ["APK371"]


def test_trace_names_the_vector_engine():
    with trace.tracing() as tr:
        x = sb(np.ones((4, 16)))
        max8(ndarray((4, 8), "float32", "sbuf"), x)
    assert [(r.op, r.engine) for r in tr][-1] == ("max8", "vector")


def test_lower_shows_every_operand(tmp_path):
    f = tmp_path / "m.apk"
    f.write_text("""\
a: f32[4, 16] @ sbuf = 1.0
v: f32[4, 8] @ sbuf
max8(v, a)
o: f32[4, 16] @ sbuf
i: u32[4, 8] @ sbuf
nisa.nc_match_replace8(o, a, v, 0.0, dst_idx=i, name="mr")
""")
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    k = lower_header(lines, f"{f}:6  nc_match_replace8 mr")
    assert [ln.split()[:2] for ln in lines[k + 1:k + 5]] == [
        ["dst", "o"], ["data", "a"], ["vals", "v"], ["dst_idx", "i"]]


@pytest.mark.parametrize("buffer", ["sbuf", "psum"])
def test_psum_operands(buffer):
    x = sb(np.arange(32, dtype=np.float32).reshape(2, 16), buffer=buffer)
    m = ndarray((2, 8), "float32", buffer)
    max8(m, x)
    assert m.numpy()[1].tolist() == list(range(31, 23, -1))
