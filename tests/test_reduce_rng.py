"""dropout, rng, rand2 and set_rng_seed (SPEC 11): the documented seeded NumPy generator
(`Generator(PCG64(seed))` per engine and device, row-major draws), the docs' rules, and that
the state is the device's, not the process's.  rand_set_state and rand_get_state (SPEC 16):
after them an engine draws from per-lane XORWOW generators, checked against a pure-Python
XORWOW written here; set -> get and save -> draw -> restore -> draw; every docstring rule
refused with its code."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.instructions import (
    dropout,
    memset,
    rand2,
    rand_get_state,
    rand_set_state,
    rng,
    set_rng_seed,
    tensor_copy,
)
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


# -- rand_set_state / rand_get_state (SPEC 16): per-lane XORWOW, save and restore -----------------

M32 = 0xFFFFFFFF


def xorwow(state: list[int], n: int) -> list[int]:
    """Marsaglia's XORWOW as cuRAND steps it (x, y, z, w, v and the Weyl counter d): `n`
    outputs, advancing `state` in place.  Written here, independent of apdsl's vectorised one."""
    x, y, z, w, v, d = state
    out = []
    for _ in range(n):
        t = x ^ (x >> 2)
        x, y, z, w = y, z, w, v
        v = (v ^ (v << 4) ^ t ^ (t << 1)) & M32
        d = (d + 362437) & M32
        out.append((v + d) & M32)
    state[:] = [x, y, z, w, v, d]
    return out


def lane_words(states: list[list[int]], n: int) -> list[int]:
    """`n` words of one lane holding `states` (1 on GpSimd, 4 on Vector): element i from
    state i % len(states)."""
    k = len(states)
    per = [xorwow(s, -(-(n - j) // k)) if j < n else [] for j, s in enumerate(states)]
    return [per[i % k][i // k] for i in range(n)]


def u32_tile(values: np.ndarray, buffer: str = "sbuf") -> apdsl.Tensor:
    return from_numpy(np.asarray(values, np.uint32), buffer)


def seeds_for(parts: int, engine: str, seed: int) -> np.ndarray:
    width = 6 if engine == "gpsimd" else 24
    return np.random.default_rng(seed).integers(0, 2**32, (parts, width), dtype=np.uint32)


def states_of(row: np.ndarray) -> list[list[int]]:
    return [[int(v) for v in row[j:j + 6]] for j in range(0, len(row), 6)]


CASES = [("trn2", "gpsimd"), ("trn3", "gpsimd"), ("trn3", "vector")]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(CASES), st.integers(1, 128), st.integers(1, 11),
       st.sampled_from(["uint32", "int32", "uint16", "int8"]), st.integers(0, 2**32 - 1))
def test_rng_after_rand_set_state_is_each_lanes_xorwow(case, parts, free, dtype, seed):
    target, engine = case
    with Machine().active(), apdsl.target(target):
        words = seeds_for(parts, engine, seed)
        rand_set_state(u32_tile(words), engine=engine)
        states = [states_of(row) for row in words]
        for _ in range(2):  # a second draw continues each lane
            r = ndarray((parts, free), dtype, "sbuf")
            rng(r, engine=engine)
            want = np.array([lane_words(s, free) for s in states], np.uint64)
            width = np.dtype(dtype).itemsize * 8
            want = (want % (1 << width)).astype(f"uint{width}").view(dtype)
            np.testing.assert_array_equal(r.numpy(), want)
        got = ndarray((parts, words.shape[1]), "uint32", "sbuf")
        rand_get_state(got, engine=engine)  # the states the draws advanced
        assert got.numpy().tolist() == [sum(s, []) for s in states]


def test_set_then_get_gives_back_the_words_exactly():
    words = np.array([[0, M32, 1, 2**31, 12345, 7]] * 3, np.uint32)
    words[:, 4] += np.arange(3, dtype=np.uint32)
    rand_set_state(u32_tile(words))
    got = ndarray((3, 6), "uint32", "sbuf")
    rand_get_state(got)
    np.testing.assert_array_equal(got.numpy(), words)
    with apdsl.target("trn3"):
        w24 = seeds_for(5, "vector", 1)
        rand_set_state(u32_tile(w24), engine="vector")
        for buffer in ("sbuf", "psum"):  # trn3's Vector Engine stores to PSUM too
            g = ndarray((5, 24), "uint32", buffer)
            rand_get_state(g, engine="vector")
            np.testing.assert_array_equal(g.numpy(), w24)


def test_lanes_are_physical_partitions():
    # lanes 16..23 set from a tile at partitions 16..23, then lanes 0..15 from another:
    # a draw into partitions 16..23 uses the first seeds, wherever the tile starts
    seeds = seeds_for(24, "gpsimd", 3)
    big = u32_tile(np.zeros((24, 6)))
    tensor_copy(big[16:24, :], u32_tile(seeds[16:24]))
    rand_set_state(big[16:24, :])
    rand_set_state(u32_tile(seeds[0:16]))
    r = ndarray((24, 4), "uint32", "sbuf")
    rng(r[16:24, :], engine="gpsimd")
    want = [lane_words(states_of(row), 4) for row in seeds[16:24]]
    assert r[16:24, :].numpy().tolist() == want
    g = ndarray((24, 6), "uint32", "sbuf")
    rand_get_state(g)
    assert g[0:16, :].numpy().tolist() == seeds[0:16].tolist()


@pytest.mark.parametrize("target,engine", CASES)
def test_get_draw_set_saved_draw_repeats_the_draws(target, engine):
    with apdsl.target(target):
        width = 6 if engine == "gpsimd" else 24
        rand_set_state(u32_tile(seeds_for(8, engine, 11)), engine=engine)
        warm = ndarray((8, 3), "uint32", "sbuf")
        rng(warm, engine=engine)
        saved = ndarray((8, width), "uint32", "sbuf")
        rand_get_state(saved, engine=engine)
        draws = []
        for _ in range(2):
            a, b = ndarray((8, 13), "uint32", "sbuf"), ndarray((8, 5), "uint32", "sbuf")
            rng(a, engine=engine)
            rng(b, engine=engine)
            draws.append((a.numpy().copy(), b.numpy().copy()))
            rand_set_state(saved, engine=engine)
        np.testing.assert_array_equal(draws[0][0], draws[1][0])
        np.testing.assert_array_equal(draws[0][1], draws[1][1])
        assert not (draws[0][0] == warm.numpy()[:, :1]).all()


def test_the_vector_engines_dropout_and_rand2_draw_from_its_lanes_on_trn3():
    with apdsl.target("trn3"):
        words = seeds_for(4, "vector", 5)
        rand_set_state(u32_tile(words), engine="vector")
        states = [states_of(row) for row in words]

        def floats(n):
            w = np.array([lane_words(s, n) for s in states], np.uint32)
            return (w >> 8).astype(np.float32) * np.float32(2.0 ** -24)

        x = from_numpy(np.arange(1, 4 * 30 + 1, dtype=np.float32).reshape(4, 30), "sbuf")
        d = ndarray((4, 30), "float32", "sbuf")
        dropout(d, x, 0.5)
        np.testing.assert_array_equal(d.numpy(), np.where(floats(30) < 0.5, 0, x.numpy()))
        r = ndarray((4, 9), "float32", "sbuf")
        rand2(r, -2.0, 6.0)
        np.testing.assert_array_equal(r.numpy(), np.float32(-2.0) + np.float32(8.0) * floats(9))
        # GpSimd stays in seeded mode: its generator is untouched
        g = ndarray((2, 4), "uint32", "sbuf")
        rng(g, engine="gpsimd")
        assert g.numpy().reshape(-1).tolist() == oracle(0).integers(
            0, 2**32, size=8, dtype=np.uint32).tolist()


def test_set_rng_seed_returns_the_vector_engine_to_the_seeded_numbers():
    with apdsl.target("trn3"):
        rand_set_state(u32_tile(seeds_for(2, "vector", 9)), engine="vector")
        set_rng_seed(seed_tile(7))
        r = ndarray((4, 8), "uint32", "sbuf")
        rng(r)  # partitions 2, 3 were never set: no matter, the engine is seeded again
        fresh = Machine()
        with fresh.active(), apdsl.target("trn3"):
            set_rng_seed(seed_tile(7))
            f = ndarray((4, 8), "uint32", "sbuf")
            rng(f)
            want = f.numpy()
        np.testing.assert_array_equal(r.numpy(), want)
        with raises_code("APK386"):  # and it holds no XORWOW state to store
            rand_get_state(ndarray((2, 24), "uint32", "sbuf"), engine="vector")


def test_without_rand_set_state_nothing_changes():
    r = ndarray((3, 5), "uint32", "sbuf")
    rng(r, engine="gpsimd")
    assert r.numpy().reshape(-1).tolist() == oracle(0).integers(
        0, 2**32, size=15, dtype=np.uint32).tolist()


def _refused(fn, code):
    with raises_code(code) as err:
        fn()
    return err


@pytest.mark.parametrize("target,call,code", [
    ("trn2", lambda: rand_set_state(from_numpy(np.ones((2, 6), np.int32), "sbuf")), "APK461"),
    ("trn2", lambda: rand_get_state(ndarray((2, 6), "float32", "sbuf")), "APK461"),
    ("trn2", lambda: rand_set_state(u32_tile(np.ones((2, 6)), "psum")), "APK309"),
    ("trn3", lambda: rand_set_state(u32_tile(np.ones((2, 24)), "psum"), engine="vector"),
     "APK309"),
    ("trn2", lambda: rand_get_state(ndarray((2, 6), "uint32", "psum")), "APK348"),
    ("trn3", lambda: rand_get_state(ndarray((2, 6), "uint32", "psum")), "APK348"),
    ("trn3", lambda: rand_get_state(ndarray((2, 6), "uint32", "psum"), engine="gpsimd"),
     "APK348"),
    ("trn2", lambda: rand_get_state(ndarray((2, 24), "uint32", "psum"), engine="vector"),
     "APK380"),
    ("trn2", lambda: rand_set_state(u32_tile(np.ones((2, 24))), engine="vector"), "APK380"),
    ("trn2", lambda: rand_get_state(ndarray((2, 24), "uint32", "sbuf"), engine="vector"),
     "APK380"),
    ("trn1", lambda: rand_set_state(u32_tile(np.ones((2, 6)))), "APK380"),
    ("trn1", lambda: rand_get_state(ndarray((2, 6), "uint32", "sbuf")), "APK380"),
    ("trn2", lambda: rand_set_state(u32_tile(np.ones((2, 6))), engine="scalar"), "APK348"),
    ("trn2", lambda: rand_set_state(u32_tile(np.ones((2, 24)))), "APK385"),
    ("trn3", lambda: rand_set_state(u32_tile(np.ones((2, 6))), engine="vector"), "APK385"),
    ("trn2", lambda: rand_get_state(ndarray((2, 7), "uint32", "sbuf")), "APK385"),
    ("trn2", lambda: rand_set_state(u32_tile(np.ones((2, 2, 3)))), "APK385"),
    ("trn2", lambda: rand_get_state(ndarray((2, 3, 2), "uint32", "sbuf")), "APK385"),
    ("trn2", lambda: rand_get_state(ndarray((2, 6), "uint32", "sbuf")), "APK386"),
])
def test_rand_state_refusals(target, call, code):
    with apdsl.target(target):
        _refused(call, code)


def test_draws_from_a_lane_never_set_are_refused_naming_lane_and_engine():
    rand_set_state(u32_tile(seeds_for(4, "gpsimd", 2)))
    r = ndarray((6, 8), "uint32", "sbuf")
    err = _refused(lambda: rng(r, engine="gpsimd"), "APK386")
    assert "lane 4" in str(err.value) and "GpSimd" in str(err.value)
    assert r.storage.mask.sum() == 0  # nothing written
    rng(r)  # the Vector Engine is still seeded
    with apdsl.target("trn3"):
        rand_set_state(u32_tile(seeds_for(2, "vector", 2)), engine="vector")
        err = _refused(lambda: dropout(ndarray((3, 4), "float32", "sbuf"),
                                       from_numpy(np.ones((3, 4), np.float32), "sbuf"), 0.5),
                       "APK386")
        assert "lane 2" in str(err.value) and "Vector" in str(err.value)
        _refused(lambda: rand2(ndarray((3, 4), "float32", "sbuf"), 0.0, 1.0), "APK386")
        _refused(lambda: rand_get_state(ndarray((3, 24), "uint32", "sbuf"), engine="vector"),
                 "APK386")


RAND_STATE_PROGRAM = """\
kernel k(S: u32[8, 6] @ hbm) -> u32[8, 20] @ hbm:
    s: u32[8, 6] @ sbuf
    dma_copy(s, S)
    nisa.rand_set_state(src_seeds=s)
    saved: u32[8, 6] @ sbuf
    nisa.rand_get_state(dst=saved)
    r: u32[8, 20] @ sbuf
    nisa.rng(dst=r[:, 0:10], engine=nisa.engine.gpsimd)
    nisa.rand_set_state(src_seeds=saved, engine=nisa.engine.gpsimd)
    nisa.rng(dst=r[:, 10:20], engine=nisa.engine.gpsimd)
    o: u32[8, 20] @ hbm
    dma_copy(o, r)
    return o
"""


def test_a_program_run_lower_and_profile(tmp_path):
    import subprocess
    import sys
    seeds = seeds_for(8, "gpsimd", 4)
    out = apdsl.run(RAND_STATE_PROGRAM, inputs={"S": seeds})
    want = [lane_words(states_of(row), 10) for row in seeds]
    assert out[:, 0:10].tolist() == want and out[:, 10:20].tolist() == want
    f = tmp_path / "r.apk"
    f.write_text('s: u32[4, 24] @ sbuf = 1\nnisa.rand_set_state(s[:, 0:6])\n'
                 'nisa.rand_get_state(dst=s[:, 6:12], engine="gpsimd")\n'
                 'set_target("trn3")\n'
                 't: u32[4, 24] @ sbuf = 1\nnisa.rand_set_state(t, engine="vector")\n')
    res = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    heads = [ln for ln in lines if ln.startswith(str(f))]
    assert heads == [f"{f}:2  rand_set_state", f"{f}:3  rand_get_state",
                     f"{f}:6  rand_set_state  engine=vector"]
    k = lines.index(heads[1])
    assert lines[k + 1].split()[:2] == ["dst", "s"] and "[[24, 4], [1, 6]]" in lines[k + 1]
    p = apdsl.profile(RAND_STATE_PROGRAM, inputs={"S": seeds})
    costed = {s.op: s for s in p.slots}
    assert costed["rand_set_state"].track == costed["rand_get_state"].track == "GpSimd"
    assert costed["rand_set_state"].end > costed["rand_set_state"].start


def test_through_nki_jit_as_users_write_it():
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(seeds):
        s = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=seeds)
        nisa.rand_set_state(src_seeds=s, engine=nisa.engine.vector)
        saved = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.psum)
        nisa.rand_get_state(dst=saved, engine=nisa.engine.vector)
        r = nl.ndarray((seeds.shape[0], 16), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rng(dst=r)
        back = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=back, src=saved)
        nisa.rand_set_state(src_seeds=back, engine=nisa.engine.vector)
        again = nl.ndarray((seeds.shape[0], 16), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rng(dst=again)
        out = nl.ndarray((seeds.shape[0], 32), dtype=nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[:, 0:16], src=r)
        nisa.dma_copy(dst=out[:, 16:32], src=again)
        return out

    seeds = seeds_for(16, "vector", 8)
    want = [lane_words(states_of(row), 16) for row in seeds]
    for plans in (True, False):
        with apdsl.options(plans=plans), apdsl.target("trn3"):
            got = kernel(seeds)
        assert got[:, 0:16].tolist() == want and got[:, 16:32].tolist() == want


def test_each_program_of_an_lnc_launch_has_its_own_engines_state():
    """Each NeuronCore of an LNC=2 pair has its own engines: program 0's rand_set_state sets
    its own lanes only, and program 1's lanes, never set, are refused when it reads them."""
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl
    from apdsl.errors import ApdslError

    def make(program_1_sets: bool):
        @nki.jit
        def kernel(seeds):
            me = nl.program_id(0)
            s = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=seeds)
            if me == 0 or program_1_sets:
                nisa.rand_set_state(src_seeds=s)
            got = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
            nisa.rand_get_state(dst=got)
            out = nl.ndarray((2, *seeds.shape), dtype=nl.uint32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out[me], src=got)
            return out
        return kernel

    seeds = seeds_for(8, "gpsimd", 3)
    with apdsl.target("trn2"):
        got = make(True)[2](seeds)
        assert got[0].tolist() == got[1].tolist() == seeds.tolist()
        with pytest.raises(ApdslError) as e:
            make(False)[2](seeds)
    assert e.value.code == "APK386", e.value
