"""The one cast of SPEC section 4 (integers saturate, never wrap; floats go through float32,
round to nearest even, NaN -> 0), through every door: memset, inputs (`from_numpy`, `-i`),
declaration initialisers and instructions.  The oracle is exact Python arithmetic."""

from __future__ import annotations

import math
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.runtime.instructions import dma_copy, memset, tensor_copy
from apdsl.tensor.dtypes import cast_array
from apdsl.tensor.dtypes import dtype as to_dtype
from apdsl.tensor.view import from_numpy, ndarray

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT_TARGETS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "int4"]
FLOAT_TARGETS = ["float32", "float16", "bfloat16", "float8_e5m2"]
INT_SOURCES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_SOURCES = [np.float16, np.float32, np.float64]


def bounds(name: str) -> tuple[int, int]:
    if name == "int4":
        return -8, 7
    bits = int("".join(c for c in name if c.isdigit()))
    return (0, 2**bits - 1) if name.startswith("u") else (-2**(bits - 1), 2**(bits - 1) - 1)


def int_oracle(v: int, name: str) -> int:
    """Exact Python ints clipped to the target's bounds."""
    lo, hi = bounds(name)
    return min(max(v, lo), hi)


def float_to_int_oracle(x: float, name: str) -> int:
    """Through float32, round half to even (Python's round), saturate, NaN -> 0."""
    with np.errstate(over="ignore"):
        f = float(np.float32(x))
    if math.isnan(f):
        return 0
    lo, hi = bounds(name)
    if math.isinf(f):
        return hi if f > 0 else lo
    return min(max(round(f), lo), hi)


def int_to_f32_oracle(v: int) -> float:
    """The float32 nearest to the exact int v (ties to an even significand)."""
    c = np.float32(float(v)) if abs(v) < 2**127 else np.float32(math.copysign(2**127, v))
    best = None
    for cand in (np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))):
        if not np.isfinite(cand):
            continue
        err = abs(int(cand) - v)
        even = (np.float32(cand).view(np.uint32) & 1) == 0
        key = (err, not even)
        if best is None or key < best[0]:
            best = (key, cand)
    return float(best[1])


ints = st.one_of(st.integers(-2**70, 2**70), st.sampled_from(
    [2**64 - 1, 2**63, 2**63 - 1, -2**63, -2**63 - 1, 2**31, 2**31 - 1, -2**31 - 1, 255, 256,
     -129, 7, 8, -9, 0]))


@FAST
@given(ints, st.sampled_from(INT_TARGETS))
def test_python_ints_saturate(v, name):
    got = cast_array(v, to_dtype(name))
    assert int(np.asarray(got).astype(np.int64) if name != "uint64" else got) == \
        int_oracle(v, name)


@FAST
@given(st.data(), st.sampled_from(INT_SOURCES), st.sampled_from(INT_TARGETS))
def test_numpy_ints_saturate(data, src, name):
    info = np.iinfo(src)
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1,
                                max_size=8))
    got = cast_array(np.array(values, dtype=src), to_dtype(name))
    assert [int(x) for x in np.asarray(got).astype(np.int64)] == \
        [int_oracle(v, name) for v in values]


@FAST
@given(st.data(), st.sampled_from(FLOAT_SOURCES), st.sampled_from(INT_TARGETS))
def test_floats_to_ints_round_even_and_saturate(data, src, name):
    width = 16 if src is np.float16 else 32 if src is np.float32 else 64
    values = data.draw(st.lists(st.one_of(
        st.floats(width=width, allow_nan=True, allow_infinity=True),
        st.sampled_from([0.5, 1.5, 2.5, -0.5, -2.5, 2.0**31, 2.0**63, -2.0**63, 2.0**64])),
        min_size=1, max_size=8))
    with np.errstate(over="ignore"):
        arr = np.array(values, dtype=src)
    got = cast_array(arr, to_dtype(name))
    assert [int(x) for x in np.asarray(got).astype(np.int64)] == \
        [float_to_int_oracle(float(x), name) for x in arr]


@FAST
@given(ints)
def test_ints_to_float32_round_once(v):
    got = float(cast_array(v, to_dtype("float32")))
    assert got == int_to_f32_oracle(v)


@FAST
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=8),
       st.sampled_from(FLOAT_TARGETS))
def test_float64_goes_through_float32(values, name):
    arr = np.array(values, np.float64)
    target = to_dtype(name)
    with np.errstate(over="ignore"):
        expect = arr.astype(np.float32).astype(target.np)
    got = cast_array(arr, target)
    np.testing.assert_array_equal(got.astype(np.float64), expect.astype(np.float64))


# -- every door uses it -----------------------------------------------------------------------

@pytest.mark.parametrize("value,dt,expect", [
    (2**64 - 1, "int32", 2**31 - 1), (2**63, "int64", 2**63 - 1), (-2**63 - 1, "int64", -2**63),
    (2**64 - 1, "uint32", 2**32 - 1), (-1, "uint8", 0), (float("nan"), "int32", 0),
    (2.5, "int16", 2), (3.5, "int16", 4), (1e30, "int64", 2**63 - 1)])
def test_memset_saturates(value, dt, expect):
    t = ndarray((4, 4), dt, "sbuf")
    memset(t, value)
    assert (t.numpy().astype(np.int64) == expect).all()


def test_inputs_saturate():
    big = np.array([[2**64 - 1, 2**40, 5, 2**31]], np.uint64)
    t = from_numpy(big, "hbm", dtype="int32")
    np.testing.assert_array_equal(t.numpy(), [[2**31 - 1, 2**31 - 1, 5, 2**31 - 1]])
    neg = from_numpy(np.array([[-2**63, -1, 2**62]], np.int64), "hbm", dtype="uint32")
    np.testing.assert_array_equal(neg.numpy(), [[0, 0, 2**32 - 1]])


def test_instructions_saturate():
    src = from_numpy(np.array([[3e9, -3e9, np.nan, 2.5, -1.5, 70000.0]], np.float32), "sbuf")
    out = ndarray((1, 6), "int32", "sbuf")
    tensor_copy(out, src)
    np.testing.assert_array_equal(out.numpy(), [[2**31 - 1, -2**31, 0, 2, -2, 70000]])
    h = ndarray((1, 6), "int16", "hbm")
    dma_copy(h, out)
    np.testing.assert_array_equal(h.numpy(), [[32767, -32768, 0, 2, -2, 32767]])


def test_declaration_initialisers_saturate():
    src = """
a: i32[1, 2] @ sbuf = 18446744073709551615
b: int64[1, 2] @ sbuf = 9223372036854775808
c: u8[1, 2] @ sbuf = -5
d: i32[1, 2] @ sbuf = 1e20
e: bf16[1, 2] @ sbuf = 2**70 + 1
kernel k() -> i32[1, 2] @ hbm:
    assert equal(host(a), host(a) * 0 + 2147483647)
    assert equal(host(b), host(b) * 0 + 9223372036854775807)
    assert equal(host(c), host(c) * 0)
    assert equal(host(d), host(a))
    assert equal(host(e).astype(f32), host(e).astype(f32) * 0 + 2.0**70)
    o = ndarray((1, 2), int32, hbm)
    dma_copy(dst=o, src=a)
    return o
"""
    np.testing.assert_array_equal(apdsl.run(src), [[2**31 - 1, 2**31 - 1]])


def test_cli_uint64_input_into_int32_parameter(tmp_path):
    prog = tmp_path / "k.apk"
    prog.write_text("kernel k(x: i32[2, 3] @ hbm) -> i32[2, 3] @ hbm:\n    return x\n")
    np.save(tmp_path / "x.npy", np.array([[2**64 - 1, 2**63, 7], [0, 2**31, 2**31 - 1]],
                                         np.uint64))
    np.save(tmp_path / "n.npy", np.array([[np.nan, np.inf, -np.inf], [2.5, -2.5, 1e10]],
                                         np.float32))
    out = tmp_path / "out.npy"
    for name, expect in (("x.npy", [[2**31 - 1, 2**31 - 1, 7], [0, 2**31 - 1, 2**31 - 1]]),
                         ("n.npy", [[0, 2**31 - 1, -2**31], [2, -2, 2**31 - 1]])):
        r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(prog), "-i",
                            f"x={tmp_path / name}", "-o", str(out)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        np.testing.assert_array_equal(np.load(out), expect)


def test_same_dtype_is_bit_exact():
    bits = np.array([0x7FC1, 0xFF80, 0x0001, 0x8000], np.uint16).view(ml_dtypes.bfloat16)
    assert cast_array(bits, to_dtype("bfloat16")).view(np.uint16).tolist() == \
        [0x7FC1, 0xFF80, 0x0001, 0x8000]


def test_bfloat16_widens_to_float32_exactly_for_every_bit_pattern():
    """`widen_float32` (the tensor engine's float32 read of a bfloat16) against ml_dtypes'
    own cast, bit for bit, over all 65536 patterns, NaNs included, contiguous and strided."""
    from apdsl.tensor.dtypes import widen_float32
    bits = np.arange(1 << 16, dtype=np.uint16)
    src = bits.view(ml_dtypes.bfloat16).reshape(256, 256)
    want = src.astype(np.float32)
    for view, expect in ((src, want), (src[:, ::2], want[:, ::2]), (src.T, want.T)):
        out = np.empty(view.shape, np.float32)
        widen_float32(view, out)
        assert np.array_equal(out.view(np.uint32), expect.view(np.uint32))
    # the format's definition: a bfloat16 is the upper 16 bits of a float32
    out = np.empty(bits.shape, np.float32)
    widen_float32(bits.view(ml_dtypes.bfloat16), out)
    assert [int(b) << 16 for b in bits[::4099]] == [int(x) for x in out.view(np.uint32)[::4099]]
    halves = np.linspace(-3, 3, 12, dtype=np.float16)
    out16 = np.empty(halves.shape, np.float32)
    widen_float32(halves, out16)
    assert np.array_equal(out16, halves.astype(np.float32))


def test_nc_matmul_reads_bfloat16_tiles_as_float32():
    """nc_matmul of bfloat16 tiles (one a strided view) equals NumPy's product of the same
    tiles cast to float32."""
    from apdsl.runtime.instructions import nc_matmul
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, 96)).astype(ml_dtypes.bfloat16)
    a[0, 0], b[1, 1] = np.inf, -0.0
    A = from_numpy(a, "sbuf")
    B = from_numpy(np.concatenate([b, b], axis=1), "sbuf")
    out = ndarray((32, 96), "float32", "psum")
    nc_matmul(out, A, B[:, 0:96])  # (a view whose rows are 192 apart)
    want = a.astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
