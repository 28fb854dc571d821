"""activation and activation_reduce (SPEC 11; NKI isa): op(data * scale + bias) in float32 cast
to dst against NumPy, the reduce_regs state across instructions (reduce_cmd), kept per device,
and every refusal."""

from __future__ import annotations

import math
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
from apdsl.runtime.instructions import activation, activation_reduce, memset, tensor_copy
from apdsl.runtime.table.operators import OPERATORS as nl
from apdsl.tensor.machine import Machine
from apdsl.tensor.view import from_numpy, ndarray

# independent NumPy meanings (float64, then compared with a float32 tolerance)
ORACLES = {
    "exp": np.exp,
    "tanh": np.tanh,
    "square": np.square,
    "copy": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "abs": np.abs,
    "sign": np.sign,
}


def sb(values, dtype: str = "float32", buffer: str = "sbuf") -> apdsl.Tensor:
    t = from_numpy(np.asarray(values, np.float32), "sbuf")
    if dtype == "float32" and buffer == "sbuf":
        return t
    out = ndarray(t.shape, dtype, buffer)
    tensor_copy(out, t)
    return out


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(ORACLES)), st.integers(1, 128), st.integers(1, 48),
       st.integers(0, 2**31 - 1), st.sampled_from(["none", "scalar", "vector"]),
       st.sampled_from(["scalar", "vector"]), st.sampled_from(["sbuf", "psum"]))
def test_values_are_numpys_op_of_data_times_scale_plus_bias(fname, parts, free, seed, bias_kind,
                                                            scale_kind, buffer):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, (parts, free)).astype(np.float32)
    sc = rng.uniform(-2, 2, (parts, 1)).astype(np.float32)
    bi = rng.uniform(-1, 1, (parts, 1)).astype(np.float32)
    scale = sb(sc) if scale_kind == "vector" else 1.5
    bias = {"none": None, "scalar": -0.25, "vector": sb(bi)}[bias_kind]
    dst = ndarray((parts, free), "float32", buffer)
    activation(dst, nl[fname], sb(x, buffer=buffer), bias=bias, scale=scale)
    s = sc.astype(np.float64) if scale_kind == "vector" else 1.5
    b = {"none": 0.0, "scalar": -0.25, "vector": bi.astype(np.float64)}[bias_kind]
    want = ORACLES[fname](x.astype(np.float64) * s + b)
    np.testing.assert_allclose(dst.numpy(), want, rtol=2e-5, atol=2e-6)


def test_the_docs_example_square_with_vector_bias_cast_to_bfloat16():
    rng = np.random.default_rng(0)
    b = (rng.random((128, 512)) * 100).astype(np.float32)
    c = (rng.random((128, 1)) * 100).astype(np.float32)
    dst = ndarray((128, 512), "bfloat16", "sbuf")
    activation(dst, nl["square"], sb(b), bias=sb(c), scale=2.0)
    want = np.square(b * np.float32(2) + c).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(dst.numpy(), want)


def test_integer_data_and_bias_of_other_dtypes_read_as_float32():
    x = sb(np.array([[1, -2, 3]]), "int32")
    bias = sb(np.array([[0.5]]), "bfloat16")
    dst = ndarray((1, 3), "int16", "sbuf")
    activation(dst, nl["copy"], x, bias=bias, scale=3.0)
    assert dst.numpy().tolist() == [[4, -6, 10]]  # 3.5 -> 4, -5.5 -> -6, 9.5 -> 10 (even)


def test_reduce_regs_accumulate_across_instructions():
    rng = np.random.default_rng(4)
    chunks = [rng.uniform(-1, 1, (16, 32)).astype(np.float32) for _ in range(3)]
    out = ndarray((16, 32), "float32", "sbuf")
    res = ndarray((16, 1), "float32", "sbuf")
    activation(out, nl["exp"], sb(chunks[0]), reduce_op=nl["add"], reduce_cmd="reset_reduce")
    activation(out, nl["exp"], sb(chunks[1]), reduce_op=nl["add"], reduce_cmd="reduce")
    activation(out, nl["exp"], sb(chunks[2]), reduce_op=nl["add"], reduce_cmd="reduce",
               reduce_res=res)
    want = sum(np.exp(c.astype(np.float64)).sum(axis=1) for c in chunks)
    np.testing.assert_allclose(res.numpy()[:, 0], want, rtol=1e-5)
    # idle leaves the registers alone; reading them out again gives the same sums
    again = ndarray((16, 1), "float32", "sbuf")
    activation(out, nl["exp"], sb(chunks[0]), reduce_cmd="idle", reduce_res=again)
    np.testing.assert_array_equal(again.numpy(), res.numpy())
    # reset clears them without accumulating
    activation(out, nl["exp"], sb(chunks[0]), reduce_cmd="reset", reduce_res=again)
    assert (again.numpy() == 0).all()


def test_enum_members_are_taken_by_name():
    class Member:  # what nisa.reduce_cmd.reset_reduce looks like: an object with a name
        name = "reset_reduce"
    res = ndarray((2, 1), "float32", "sbuf")
    activation(ndarray((2, 2), "float32", "sbuf"), nl["copy"], sb(np.ones((2, 2))),
               reduce_op=nl["add"], reduce_cmd=Member(), reduce_res=res)
    assert res.numpy().tolist() == [[2.0], [2.0]]


def test_the_sum_is_of_float32_outputs_before_the_cast_to_dst():
    x = sb(np.full((1, 4), 0.4))
    dst = ndarray((1, 4), "int32", "sbuf")
    res = ndarray((1, 1), "float32", "sbuf")
    activation_reduce(dst, nl["copy"], x, nl["add"], res)
    assert dst.numpy().tolist() == [[0, 0, 0, 0]]
    assert res.numpy()[0, 0] == pytest.approx(1.6)


def test_activation_reduce_resets_first():
    res = ndarray((4, 1), "float32", "sbuf")
    out = ndarray((4, 3), "float32", "sbuf")
    activation(out, nl["copy"], sb(np.full((4, 3), 5.0)), reduce_op=nl["add"],
               reduce_cmd="reset_reduce")
    activation_reduce(out, nl["square"], sb(np.full((4, 3), 2.0)), nl["add"], res, scale=0.5)
    assert res.numpy()[:, 0].tolist() == [3.0] * 4  # not 15 + 3


def test_lanes_past_the_data_keep_their_values():
    out8, res8 = ndarray((8, 2), "float32", "sbuf"), ndarray((8, 1), "float32", "sbuf")
    activation(out8, nl["copy"], sb(np.ones((8, 2))), reduce_op=nl["add"],
               reduce_cmd="reset_reduce")
    activation(ndarray((4, 2), "float32", "sbuf"), nl["copy"], sb(np.ones((4, 2))),
               reduce_op=nl["add"], reduce_cmd="reduce")
    activation(out8, nl["copy"], sb(np.ones((8, 2))), reduce_res=res8)
    assert res8.numpy()[:, 0].tolist() == [4.0] * 4 + [2.0] * 4


def test_unset_registers_are_an_error_unless_init_check_is_off():
    out, res = ndarray((4, 2), "float32", "sbuf"), ndarray((4, 1), "float32", "sbuf")
    x = sb(np.ones((4, 2)))
    with raises_code("APK382") as err:
        activation(out, nl["copy"], x, reduce_op=nl["add"], reduce_cmd="reduce")
    assert "lane 0" in err.value.message
    with raises_code("APK382"):
        activation(out, nl["copy"], x, reduce_res=res)
    assert out.storage.mask.sum() == 0 and res.storage.mask.sum() == 0
    with apdsl.options(init_check=False):
        activation(out, nl["copy"], x, reduce_op=nl["add"], reduce_cmd="reduce",
                   reduce_res=res)
    assert res.numpy()[:, 0].tolist() == [2.0] * 4


def test_reduce_regs_are_per_device():
    a, b = Machine(), Machine()
    with a.active():
        activation(ndarray((2, 2), "float32", "sbuf"), nl["copy"], sb(np.ones((2, 2))),
                   reduce_op=nl["add"], reduce_cmd="reset_reduce")
    with b.active():
        with raises_code("APK382"):
            activation(ndarray((2, 2), "float32", "sbuf"), nl["copy"], sb(np.ones((2, 2))),
                       reduce_res=ndarray((2, 1), "float32", "sbuf"))
    with a.active():
        res = ndarray((2, 1), "float32", "sbuf")
        activation(ndarray((2, 2), "float32", "sbuf"), nl["copy"], sb(np.ones((2, 2))),
                   reduce_res=res)
        assert res.numpy().tolist() == [[2.0], [2.0]]


def test_a_program_run_starts_with_fresh_registers():
    source = """\
a: f32[2, 2] @ sbuf = 1.0
o: f32[2, 2] @ sbuf
r: f32[2, 1] @ sbuf
nisa.activation(o, nl.exp, a, reduce_res=r)
"""
    activation(ndarray((2, 2), "float32", "sbuf"), nl["copy"], sb(np.ones((2, 2))),
               reduce_op=nl["add"], reduce_cmd="reset_reduce")  # the caller's device
    with raises_code("APK382"):
        apdsl.run(source)


def test_invalid_input_ranges_are_refused():
    with raises_code("APK463") as err:
        activation(ndarray((2, 3), "float32", "sbuf"), nl["log"], sb([[1, 2, 0], [1, 1, 1]]))
    assert err.value.facts["partition"] == 0 and err.value.facts["element"] == 2
    with raises_code("APK463"):
        activation(ndarray((1, 1), "float32", "sbuf"), nl["sin"], sb([[9.0]]))
    out = ndarray((1, 2), "float32", "sbuf")
    activation(out, nl["sqrt"], sb([[4.0, 9.0]]), bias=-3.0, scale=1.0)  # 1, 6
    np.testing.assert_allclose(out.numpy(), [[1.0, math.sqrt(6.0)]], rtol=1e-6)


def test_refusals():
    x, out = sb(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
    with raises_code("APK350"):
        activation(out, "exp", x)
    with raises_code("APK351"):
        activation(out, nl["maximum"], x)  # an ALU operator, not an activation function
    with raises_code("APK351"):
        activation(out, nl["exp"], x, reduce_op=nl["maximum"], reduce_cmd="reset_reduce")
    with raises_code("APK376"):
        activation(out, nl["exp"], x, reduce_cmd="reduce")  # no reduce_op
    with raises_code("APK376"):
        activation(out, nl["exp"], x, reduce_op=nl["add"], reduce_cmd="load_reduce")
    with raises_code("APK376"):
        activation(out, nl["exp"], x, reduce_cmd="sometimes")
    with raises_code("APK376"):
        activation_reduce(out, nl["exp"], x, None, ndarray((4, 1), "float32", "sbuf"))
    with raises_code("APK461"):
        activation(out, nl["exp"], x, scale=sb(np.ones((4, 1)), "bfloat16"))
    with raises_code("APK461"):
        activation(out, nl["exp"], x, bias=ndarray((4, 1), "tfloat32", "sbuf"))
    with raises_code("APK370"):
        activation(out, nl["exp"], x, bias=sb(np.ones((2, 1))))
    with raises_code("APK371"):
        activation(out, nl["exp"], x, scale=sb(np.ones((4, 2))))
    with raises_code("APK371"):
        activation(out, nl["exp"], x, reduce_res=ndarray((4, 2), "float32", "sbuf"))
    with raises_code("APK371"):
        activation(ndarray((4, 7), "float32", "sbuf"), nl["exp"], x)
    with raises_code("APK370"):
        activation(ndarray((2, 16), "float32", "sbuf"), nl["exp"], x)
    with raises_code("APK359"):
        activation(out, nl["exp"], x, scale="two")
    with raises_code("APK309"):
        activation(out, nl["exp"], from_numpy(np.ones((4, 8), np.float32), "hbm"))
    with raises_code("APK462"):
        activation(ndarray((16, 16), "float32", "ub"), nl["exp"], ndarray((16, 16), "float32",
                                                                           "ub"))
    assert out.storage.mask.sum() == 0


def test_bias_scalars_need_trn2():
    with apdsl.target("trn1"):
        x, out = sb(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
        with raises_code("APK378"):
            activation(out, nl["exp"], x, bias=0.5)
        b = ndarray((4, 1), "float32", "sbuf")
        memset(b, 0.5)
        activation(out, nl["copy"], x, bias=b)
        assert (out.numpy() == 1.5).all()


def test_trace_names_the_scalar_engine_and_lower_shows_the_operands(tmp_path):
    with trace.tracing() as tr:
        activation(ndarray((4, 8), "float32", "sbuf"), nl["exp"], sb(np.ones((4, 8))))
    assert (tr.records[-1].op, tr.records[-1].engine) == ("activation", "scalar")
    f = tmp_path / "a.apk"
    f.write_text("""\
a: f32[4, 8] @ sbuf = 1.0
s: f32[4, 1] @ sbuf = 2.0
b: bf16[4, 1] @ sbuf = 0.5
o: f32[4, 8] @ psum
r: f32[4, 1] @ sbuf
nisa.activation(dst=o, op=nl.exp, data=a, bias=b, scale=s, reduce_op=nl.add, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce, name="act")
""".replace("nisa.reduce_cmd.reset_reduce", "\"reset_reduce\""))
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    k = lower_header(lines, f"{f}:6  activation act")
    assert [ln.split()[:3] for ln in lines[k + 1:k + 6]] == [
        ["dst", "o", "psum"], ["data", "a", "sbuf"], ["scale", "s", "sbuf"],
        ["bias", "b", "sbuf"], ["reduce_res", "r", "sbuf"]]


def test_check_reports_shape_rules_but_not_register_state():
    bad = "a: f32[4, 8] @ sbuf = 1.0\no: f32[4, 8] @ sbuf\nr: f32[4, 2] @ sbuf\n" \
          "activation(o, exp, a, reduce_res=r)\n"
    assert [e.code for e in apdsl.check(bad)] == ["APK371"]
    unset = "a: f32[4, 8] @ sbuf = 1.0\no: f32[4, 8] @ sbuf\nr: f32[4, 1] @ sbuf\n" \
            "activation(o, exp, a, reduce_res=r)\n"
    assert apdsl.check(unset) == []


def test_the_softmax_example_is_numpys_softmax():
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "examples" / "softmax.apk"
    x = np.random.default_rng(11).standard_normal((128, 1024)).astype(np.float32) * 4
    got = apdsl.run(path.read_text(), inputs={"X": x})
    z = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, z / z.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-9)
