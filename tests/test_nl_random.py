"""The random `nl` functions of the NKI language reference (SPEC 11): `nl.random_seed`,
`nl.rand`, `nl.dropout`, against the documented generator (`Generator(PCG64(seed))` of the
Vector Engine, `apdsl.runtime.nki.rng.state`), in `.apk` and through the Python frontend; the
instructions each issues (as `lower` records them) and their refusals."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.semantics.program import Program


def oracle(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed & 0xFFFFFFFF))


def run(source: str, inputs: dict | None = None):
    result = Program(source, "<nl>").run(None, inputs or {}, trace=True)
    value = result.value
    ops = [r.op for r in result.trace.records]
    if isinstance(value, tuple):
        return tuple(v.numpy() for v in value), ops
    return value.numpy(), ops


RAND = """
kernel k() -> f32[{p}, {f}] @ {buffer}:
    seed = nl.full((1, 1), {seed}, dtype=nl.int32, buffer=nl.sbuf)
    nl.random_seed(seed)
    a = nl.rand(({p}, {f}), dtype=nl.float32, buffer=nl.{buffer})
    assert a.buffer == "{buffer}" and a.dtype == nl.float32
    return a
"""


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(-2**31, 2**31 - 1), p=st.integers(1, 128), f=st.integers(1, 64),
       buffer=st.sampled_from(["sbuf", "psum"]))
def test_rand_is_the_seeded_generators_uniform_float32(seed, p, f, buffer):
    value, ops = run(RAND.format(seed=seed, p=p, f=f, buffer=buffer))
    want = oracle(seed).random(p * f, dtype=np.float32).reshape(p, f)
    np.testing.assert_array_equal(value, want)
    assert ops == ["memset", "set_rng_seed", "rng", "tensor_scalar", "tensor_scalar"]


def test_same_seed_same_numbers_other_seed_others_and_the_draws_advance():
    src = """
kernel k() -> (f32[128, 512] @ sbuf, f32[128, 512] @ sbuf, f32[128, 512] @ sbuf,
               f32[128, 512] @ sbuf):
    s = nl.full((1, 1), 7, dtype=nl.int32, buffer=nl.sbuf)
    t = nl.full((1, 1), 8, dtype=nl.int32, buffer=nl.sbuf)
    nl.random_seed(s)
    a = nl.rand((128, 512), dtype=nl.float32)
    b = nl.rand((128, 512), dtype=nl.float32)
    nl.random_seed(s)
    c = nl.rand((128, 512), dtype=nl.float32)
    nl.random_seed(t)
    d = nl.rand((128, 512), dtype=nl.float32)
    return a, b, c, d
"""
    (a, b, c, d), _ = run(src)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b) and not np.array_equal(a, d)
    again, _ = run(src)  # a run is deterministic
    np.testing.assert_array_equal(again[1], b)


def test_rand_distribution_is_uniform_in_0_1():
    value, _ = run(RAND.format(seed=123, p=128, f=512, buffer="sbuf"))
    n = value.size
    assert value.min() >= 0 and value.max() < 1
    assert abs(value.mean() - 0.5) < 4 * np.sqrt(1 / 12 / n)
    assert abs(value.var() - 1 / 12) < 0.003
    counts = np.histogram(value, bins=16, range=(0, 1))[0]
    chi2 = ((counts - n / 16) ** 2 / (n / 16)).sum()
    assert chi2 < 50  # 15 degrees of freedom: p < 1e-5 above 50
    # every value is k / 2**24 (the top 24 random bits)
    k = value.astype(np.float64) * 2**24
    np.testing.assert_array_equal(k, np.round(k))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_rand_of_a_narrow_float_is_the_float32_draw_cast(dtype):
    src = f"""
kernel k() -> f32[16, 40] @ sbuf:
    nl.random_seed(nl.full((1, 1), 5, dtype=nl.int32, buffer=nl.sbuf))
    a = nl.rand((16, 40), dtype=nl.{dtype})
    assert a.dtype == nl.{dtype}
    return nl.copy(a, dtype=nl.float32)
"""
    from apdsl.tensor.dtypes import cast_array
    from apdsl.tensor.dtypes import dtype as to_dtype
    value, _ = run(src)
    want = cast_array(oracle(5).random(640, dtype=np.float32).reshape(16, 40), to_dtype(dtype))
    np.testing.assert_array_equal(value, want.astype(np.float32))


DROPOUT = """
kernel k(X: f32[{p}, {f}] @ hbm) -> f32[{p}, {f}] @ sbuf:
    nl.random_seed(nl.full((1, 1), {seed}, dtype=nl.int32, buffer=nl.sbuf))
    x = nl.load(X)
    y = nl.dropout(x, {rate})
    assert y.buffer == "sbuf" and y.dtype == nl.float32
    return y
"""


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(1, 128), f=st.integers(1, 64),
       rate=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]))
def test_dropout_zeroes_each_element_with_probability_rate(seed, p, f, rate):
    x = np.arange(1, p * f + 1, dtype=np.float32).reshape(p, f)  # no zero to start with
    value, ops = run(DROPOUT.format(seed=seed, p=p, f=f, rate=rate), {"X": x})
    u = oracle(seed).random(p * f, dtype=np.float32).reshape(p, f)
    np.testing.assert_array_equal(value, np.where(u < np.float32(rate), 0, x))
    assert ops[-1] == "dropout"


def test_dropout_rate_is_the_fraction_zeroed_and_survivors_are_not_rescaled():
    x = np.full((128, 512), 3.0, np.float32)
    for rate in (0.1, 0.5, 0.8):
        value, _ = run(DROPOUT.format(seed=9, p=128, f=512, rate=rate), {"X": x})
        zeroed = (value == 0).mean()
        assert abs(zeroed - rate) < 4 * np.sqrt(rate * (1 - rate) / x.size)
        assert set(np.unique(value)) <= {0.0, 3.0}  # kept as they were, not 3 / (1 - rate)


def test_dropout_with_a_per_partition_rate_tile_and_an_output_dtype():
    src = """
kernel k(X: f32[4, 256] @ hbm, R: f32[4, 1] @ hbm) -> f32[4, 256] @ sbuf:
    x = nl.load(X)
    y = nl.dropout(x, nl.load(R), dtype=nl.bfloat16)
    assert y.dtype == nl.bfloat16
    return nl.copy(y, dtype=nl.float32)
"""
    x = np.full((4, 256), 1.5, np.float32)
    rates = np.array([[0.0], [1.0], [0.5], [0.25]], np.float32)
    value, ops = run(src, {"X": x, "R": rates})
    u = oracle(0).random(4 * 256, dtype=np.float32).reshape(4, 256)
    np.testing.assert_array_equal(value, np.where(u < rates, 0, x))
    assert (value[0] == 1.5).all() and (value[1] == 0).all()
    assert ops[-3:] == ["dropout", "tensor_copy", "tensor_copy"]


def test_the_python_frontend_draws_the_same_numbers():
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a):
        seed = nl.full((1, 1), 42, dtype=nl.int32, buffer=nl.sbuf)
        nl.random_seed(seed)
        r = nl.rand((64, 32), dtype=nl.float32)
        y = nl.dropout(nl.load(a), 0.5)
        out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.add(y, r))
        return out

    a = np.arange(1, 64 * 32 + 1, dtype=np.float32).reshape(64, 32)
    g = oracle(42)
    r = g.random(64 * 32, dtype=np.float32).reshape(64, 32)
    u = g.random(64 * 32, dtype=np.float32).reshape(64, 32)
    np.testing.assert_array_equal(kernel(a), np.where(u < 0.5, 0, a) + r)


@pytest.mark.parametrize("body,code", [
    ("nl.random_seed(42)", "APK580"),
    ("r = nl.rand((8, 8), dtype=nl.int32)", "APK581"),
    ("r = nl.rand((8, 8), dtype=nl.uint8)", "APK581"),
    ("r = nl.rand((8, 8), nl.float32, buffer=nl.hbm)", "APK151"),
    ("y = nl.dropout(nl.load(X), 1.5)", "APK582"),
    ("y = nl.dropout(nl.load(X), -0.1)", "APK582"),
    ("y = nl.dropout(nl.load(X), True)", "APK582"),
    ("y = nl.dropout(nl.load(X), 'half')", "APK582"),
    ("y = nl.dropout(X, 0.5)", "APK151"),
    ("y = nl.dropout(3.0, 0.5)", "APK152"),
    ("s = nl.full((2, 2), 1, dtype=nl.int32, buffer=nl.sbuf)\n    nl.random_seed(s)", "APK381"),
])
def test_refusals_are_coded(body, code):
    src = f"kernel k(X: f32[8, 8] @ hbm):\n    {body}\n"
    with raises_code(code):
        Program(src, "<nl>").run(None, {"X": np.ones((8, 8), np.float32)})


def test_cli_check_and_lower_show_the_instructions_and_locate_errors(tmp_path):
    good = tmp_path / "r.apk"
    good.write_text("kernel k() -> f32[8, 8] @ sbuf:\n"
                    "    nl.random_seed(nl.full((1, 1), 3, dtype=nl.int32, buffer=nl.sbuf))\n"
                    "    return nl.dropout(nl.rand((8, 8), dtype=nl.float32), 0.5)\n")
    cmd = [sys.executable, "-m", "apdsl"]
    assert subprocess.run([*cmd, "check", str(good)], capture_output=True).returncode == 0
    out = subprocess.run([*cmd, "lower", str(good)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    heads = [line.split()[1] for line in out.stdout.splitlines() if not line.startswith(" ")]
    assert heads == ["memset", "set_rng_seed", "rng", "tensor_scalar", "tensor_scalar",
                     "dropout"]
    bad = tmp_path / "bad.apk"
    bad.write_text("kernel k():\n    nl.random_seed(7)\n")
    for verb in ("run", "check"):
        res = subprocess.run([*cmd, verb, str(bad)], capture_output=True, text=True)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert f"{bad}:2:" in res.stderr and "error[APK580]" in res.stderr
