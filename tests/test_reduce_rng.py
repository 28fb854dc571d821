"""dropout, rng, rand2 and set_rng_seed (SPEC 11): the documented seeded NumPy generator
(`Generator(PCG64(seed))` per engine and device, row-major draws), the docs' rules, and that
the state is the device's, not the process's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.instructions import dropout, memset, rand2, rng, set_rng_seed, tensor_copy
from apdsl.tensor.machine import Machine
from apdsl.tensor.view import from_numpy, ndarray


def seed_tile(value: int, dtype: str = "int32") -> apdsl.Tensor:
    s = ndarray((1, 1), dtype, "sbuf")
    memset(s, value)
    return s


def oracle(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed & 0xFFFFFFFF))


@settings(max_examples=30, deadline=None)
@given(st.integers(-2**31, 2**31 - 1), st.integers(1, 128), st.integers(1, 64),
       st.sampled_from(["int8", "int16", "int32", "uint8", "uint16", "uint32"]))
def test_rng_is_the_seeded_generators_low_bits(seed, parts, free, dtype):
    set_rng_seed(seed_tile(seed))
    dst = ndarray((parts, free), dtype, "sbuf")
    rng(dst)
    words = oracle(seed).integers(0, 2**32, size=parts * free, dtype=np.uint32)
    width = np.dtype(dtype).itemsize * 8
    want = (words.astype(np.uint64) % (1 << width)).astype(f"uint{width}").view(dtype)
    np.testing.assert_array_equal(dst.numpy().reshape(-1), want)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 64), st.integers(1, 100),
       st.sampled_from(["scalar", "tile"]))
def test_dropout_drops_where_the_uniform_draw_is_below_prob(seed, parts, free, kind):
    x = (np.arange(parts * free, dtype=np.float32).reshape(parts, free) + 1)
    probs = np.linspace(0, 1, parts, dtype=np.float32).reshape(parts, 1)
    set_rng_seed(seed_tile(seed, "uint32"))
    dst = ndarray((parts, free), "float32", "sbuf")
    prob = from_numpy(probs, "sbuf") if kind == "tile" else 0.3
    dropout(dst, from_numpy(x, "sbuf"), prob)
    u = oracle(seed).random(parts * free, dtype=np.float32).reshape(parts, free)
    p = probs if kind == "tile" else np.float32(0.3)
    np.testing.assert_array_equal(dst.numpy(), np.where(u < p, 0, x))


def test_dropout_probability_one_drops_all_and_zero_none():
    x = from_numpy(np.full((4, 50), 3, np.int32), "sbuf")
    dst = ndarray((4, 50), "int32", "sbuf")
    dropout(dst, x, 1.0)
    assert (dst.numpy() == 0).all()
    probs = from_numpy(np.array([[0], [1], [0], [1]], np.float32), "sbuf")
    dropout(dst, x, probs)
    assert dst.numpy()[:, 0].tolist() == [3, 0, 3, 0] and (dst.numpy()[0] == 3).all()


def test_integer_data_keep_their_exact_values():
    big = np.array([[2**31 - 1, -2**31, 16777217, 5]], np.int32)  # not exact in float32
    dst = ndarray((1, 4), "int32", "sbuf")
    dropout(dst, from_numpy(big, "sbuf"), 0.0)
    assert dst.numpy().tolist() == big.tolist()


def test_a_fresh_device_starts_at_seed_0_and_each_device_keeps_its_own_state():
    a, b = Machine(), Machine()
    with a.active():
        first = ndarray((2, 8), "uint32", "sbuf")
        rng(first)
    want = oracle(0).integers(0, 2**32, size=16, dtype=np.uint32)
    assert first.numpy().reshape(-1).tolist() == want.tolist()
    with b.active():
        other = ndarray((2, 8), "uint32", "sbuf")
        rng(other)  # b's draws do not continue a's
    assert other.numpy().tolist() == first.numpy().tolist()
    with a.active():
        second = ndarray((2, 8), "uint32", "sbuf")
        rng(second)  # a's continue
    assert second.numpy().reshape(-1).tolist() == oracle(0).integers(
        0, 2**32, size=32, dtype=np.uint32)[16:].tolist()


def test_program_runs_are_deterministic_and_leave_the_caller_alone():
    source = """\
kernel k(a: f32[4, 32] @ hbm) -> f32[4, 32] @ hbm:
    t: f32[4, 32] @ sbuf
    dma_copy(t, a)
    s = nl.ndarray((1, 1), nl.int32, nl.sbuf)
    nisa.memset(s, 42)
    nisa.set_rng_seed(s)
    d: f32[4, 32] @ sbuf
    nisa.dropout(d, t, prob=0.5)
    o: f32[4, 32] @ hbm
    dma_copy(o, d)
    return o
"""
    a = np.ones((4, 32), np.float32)
    before = ndarray((1, 4), "uint32", "sbuf")
    one, two = apdsl.run(source, inputs={"a": a}), apdsl.run(source, inputs={"a": a})
    np.testing.assert_array_equal(one, two)
    u = oracle(42).random(128, dtype=np.float32).reshape(4, 32)
    np.testing.assert_array_equal(one, np.where(u < 0.5, 0, 1))
    rng(before)  # the session's generator is untouched by the runs: still at seed 0
    assert before.numpy().reshape(-1).tolist() == oracle(0).integers(
        0, 2**32, size=4, dtype=np.uint32).tolist()


def test_gpsimd_has_its_own_generator_and_no_psum():
    set_rng_seed(seed_tile(9))
    g = ndarray((2, 4), "uint32", "sbuf")
    rng(g, engine="gpsimd")
    assert g.numpy().reshape(-1).tolist() == oracle(0).integers(
        0, 2**32, size=8, dtype=np.uint32).tolist()
    with raises_code("APK348"):
        rng(ndarray((2, 4), "uint32", "psum"), engine="gpsimd")
    with raises_code("APK348"):
        rng(g, engine="scalar")
    with apdsl.target("trn1"):
        with raises_code("APK380"):
            rng(ndarray((2, 4), "uint32", "sbuf"), engine="gpsimd")


def test_float_seeds_are_taken_by_their_bits():
    s = from_numpy(np.array([[1.5]], np.float32), "sbuf")
    set_rng_seed(s)
    r = ndarray((1, 4), "uint32", "sbuf")
    rng(r)
    bits = int(np.array(1.5, np.float32).view(np.uint32))
    assert r.numpy()[0].tolist() == oracle(bits).integers(0, 2**32, 4, np.uint32).tolist()


def test_rand2_is_uniform_in_min_max_on_trn3():
    with apdsl.target("trn3"):
        set_rng_seed(seed_tile(5))
        lo = from_numpy(np.array([[-1.0], [10.0]], np.float32), "sbuf")
        r = ndarray((2, 1000), "float32", "sbuf")
        rand2(r, lo, 20.0)
        u = oracle(5).random(2000, dtype=np.float32).reshape(2, 1000)
        want = np.array([[-1.0], [10.0]], np.float32)
        want = want + (np.float32(20.0) - want) * u
        np.testing.assert_array_equal(r.numpy(), want)
        assert r.numpy()[0].min() >= -1 and r.numpy()[1].min() >= 10
        h = ndarray((2, 8), "bfloat16", "psum")
        rand2(h, 0.0, 1.0)  # cast to dst
        assert h.numpy().dtype.name == "bfloat16"


def test_rand2_refusals():
    with raises_code("APK380"):
        rand2(ndarray((2, 8), "float32", "sbuf"), 0.0, 1.0)  # trn2
    with apdsl.target("trn3"):
        r = ndarray((2, 8), "float32", "sbuf")
        with raises_code("APK380"):
            rand2(r, 1.0, 1.0)
        with raises_code("APK380"):
            rand2(r, from_numpy(np.array([[0.0], [3.0]], np.float32), "sbuf"), 2.0)
        with raises_code("APK461"):
            rand2(r, from_numpy(np.zeros((2, 1), np.int32), "sbuf"), 2.0)
        with raises_code("APK371"):
            rand2(r, from_numpy(np.zeros((2, 2), np.float32), "sbuf"), 2.0)
        with raises_code("APK359"):
            rand2(r, "zero", 2.0)
        assert r.storage.mask.sum() == 0


def test_dropout_refusals():
    x = from_numpy(np.ones((4, 8), np.float32), "sbuf")
    with raises_code("APK379"):
        dropout(ndarray((4, 8), "float16", "sbuf"), x, 0.5)
    xi = from_numpy(np.ones((4, 8), np.int32), "sbuf")
    bf = ndarray((4, 1), "bfloat16", "sbuf")
    memset(bf, 0.5)
    with raises_code("APK379"):
        dropout(ndarray((4, 8), "int32", "sbuf"), xi, bf)
    dropout(ndarray((4, 8), "float32", "sbuf"), x, bf)  # float data: any float prob
    with raises_code("APK379"):
        dropout(ndarray((4, 8), "float32", "sbuf"), x, from_numpy(np.ones((4, 1), np.int32),
                                                                   "sbuf"))
    with raises_code("APK370"):
        dropout(ndarray((4, 8), "float32", "sbuf"), x, from_numpy(np.ones((2, 1), np.float32),
                                                                   "sbuf"))
    with raises_code("APK371"):
        dropout(ndarray((4, 7), "float32", "sbuf"), x, 0.5)
    with raises_code("APK359"):
        dropout(ndarray((4, 8), "float32", "sbuf"), x, None)
    with raises_code("APK309"):
        dropout(ndarray((4, 8), "float32", "sbuf"), from_numpy(np.ones((4, 8), np.float32),
                                                               "hbm"), 0.5)


@pytest.mark.parametrize("shape,dtype,code", [((2, 1), "int32", "APK381"),
                                              ((1, 1), "int16", "APK461"),
                                              ((1, 1), "float16", "APK461")])
def test_set_rng_seed_refusals(shape, dtype, code):
    s = ndarray(shape, dtype, "sbuf")
    memset(s, 1)
    with raises_code(code):
        set_rng_seed(s)


def test_set_rng_seed_from_psum_and_rng_into_psum():
    p = ndarray((1, 1), "int32", "psum")
    tensor_copy(p, seed_tile(3))
    set_rng_seed(p)
    r = ndarray((1, 4), "uint16", "psum")
    rng(r)
    assert r.numpy()[0].tolist() == (oracle(3).integers(0, 2**32, 4, np.uint32)
                                     & 0xFFFF).tolist()


def test_lower_shows_rngs_engine_hint(tmp_path):
    import subprocess
    import sys
    f = tmp_path / "r.apk"
    f.write_text('r: u32[4, 8] @ sbuf\nnisa.rng(r)\nnisa.rng(r, engine="gpsimd")\n')
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    heads = [ln for ln in out.stdout.splitlines() if ln.startswith(str(f))]
    assert heads == [f"{f}:2  rng", f"{f}:3  rng  engine=gpsimd"]
