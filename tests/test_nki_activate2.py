"""`nisa.activate2` (NeuronCore-v4, trn3): the tensor-scalar stage `(data op0 imm0) op1 imm1`
with its six operator pairs and reversals, the activation function (`nl.prelu` with
`relu_param`), and the reduction into the Scalar Engine registers `activation` shares, each
`reduce_op` reset to its identity.  NumPy on the docstring's pseudo-code is the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.tensor.view import from_numpy, ndarray
from tests.support import raises_code

PAIRS = [("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"),
         ("add", "bypass"), ("subtract", "bypass"), ("bypass", "bypass")]
NP = {"multiply": np.multiply, "add": np.add, "subtract": np.subtract}
FUNCS = {"exp": np.exp, "tanh": np.tanh, "square": np.square, "copy": lambda v: v,
         "relu": lambda v: np.maximum(v, 0)}


def _oracle(x, imm0, imm1, pair, rev, func, slope=None):
    v = x.astype(np.float32)
    for name, imm, r in zip(pair, (imm0, imm1), rev):
        if name != "bypass":
            v = NP[name](imm, v) if r else NP[name](v, imm)
            v = v.astype(np.float32)
    if slope is not None:
        return np.where(v > 0, v, np.float32(slope) * v)
    return FUNCS[func](v.astype(np.float64))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(pair=st.sampled_from(PAIRS), rev=st.tuples(st.booleans(), st.booleans()),
       func=st.sampled_from(sorted(FUNCS)), tiles=st.booleans(), seed=st.integers(0, 99))
def test_the_tensor_scalar_stage_then_the_function(pair, rev, func, tiles, seed):
    rev = tuple(r and name != "bypass" for r, name in zip(rev, pair))
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, (16, 24)).astype(np.float32)
    i0 = rng.uniform(0.5, 1.5, (16, 1)).astype(np.float32)
    i1 = rng.uniform(-1, 1, (16, 1)).astype(np.float32)
    with apdsl.target("trn3"):
        imm0 = from_numpy(i0, "sbuf") if tiles else float(i0[0, 0])
        imm1 = from_numpy(i1, "sbuf") if tiles else float(i1[0, 0])
        d = ndarray((16, 24), "float32", "sbuf")
        nisa.activate2(d, getattr(nl, func), from_numpy(x, "sbuf"), imm0, imm1,
                       getattr(nl, pair[0]), getattr(nl, pair[1]), reverse0=rev[0],
                       reverse1=rev[1])
        want = _oracle(x, i0 if tiles else i0[0, 0], i1 if tiles else i1[0, 0], pair, rev,
                       func)
        np.testing.assert_allclose(d.numpy(), want, rtol=2e-6, atol=1e-6)


def test_prelu_takes_relu_param_as_its_slope():
    x = np.linspace(-2, 2, 8 * 10, dtype=np.float32).reshape(8, 10)
    slopes = np.linspace(0.1, 0.8, 8, dtype=np.float32).reshape(8, 1)
    with apdsl.target("trn3"):
        for slope in (0.25, from_numpy(slopes, "sbuf")):
            d = ndarray((8, 10), "float32", "sbuf")
            nisa.activate2(d, nl.prelu, from_numpy(x, "sbuf"), 3.0, 0.0, nl.multiply,
                           nl.bypass, relu_param=slope)
            s = 0.25 if isinstance(slope, float) else slopes
            np.testing.assert_array_equal(d.numpy(), np.where(3 * x > 0, 3 * x, s * (3 * x)))


@pytest.mark.parametrize("reducer, fold", [
    ("add", lambda rows: rows.sum(1)), ("maximum", lambda rows: rows.max(1)),
    ("minimum", lambda rows: rows.min(1)),
    ("abs_max", lambda rows: rows[np.arange(len(rows)), np.abs(rows).argmax(1)]),
    ("abs_min", lambda rows: rows[np.arange(len(rows)), np.abs(rows).argmin(1)]),
])
def test_the_reduction_accumulates_over_instructions_from_its_identity(reducer, fold):
    """reset_reduce starts at reduce_op's identity, reduce continues, idle leaves the
    registers; the result read out at the end is the reduction over every row given."""
    rng = np.random.default_rng(3)
    parts = [rng.standard_normal((32, 12)).astype(np.float32) for _ in range(3)]
    with apdsl.target("trn3"):
        r = ndarray((32, 1), "float32", "sbuf")
        for k, (x, cmd) in enumerate(zip(parts, ("reset_reduce", "idle", "reduce"))):
            d = ndarray((32, 12), "float32", "sbuf")
            nisa.activate2(d, nl.copy, from_numpy(x, "sbuf"), -1.0, 0.5, nl.multiply, nl.add,
                           reduce_op=getattr(nl, reducer), reduce_cmd=cmd,
                           reduce_res=r if k == 2 else None)
    used = np.concatenate([-parts[0] + 0.5, -parts[2] + 0.5], axis=1).astype(np.float32)
    np.testing.assert_allclose(r.numpy()[:, 0], fold(used), rtol=1e-6)


def test_a_reset_sets_the_identity_and_activation_shares_the_registers():
    x = -np.abs(np.random.default_rng(4).standard_normal((8, 6))).astype(np.float32) - 1
    with apdsl.target("trn3"):
        r = ndarray((8, 1), "float32", "sbuf")
        d = ndarray((8, 6), "float32", "sbuf")
        # a max over negative numbers: a reset to 0 instead of -inf would give 0
        nisa.activate2(d, nl.copy, from_numpy(x, "sbuf"), 1.0, 0.0, nl.bypass, nl.bypass,
                       reduce_op=nl.maximum, reduce_cmd=nisa.reduce_cmd.reset_reduce,
                       reduce_res=r)
        np.testing.assert_array_equal(r.numpy()[:, 0], x.max(1))
        # activation's reduce adds onto the same registers
        nisa.activation(d, nl.copy, from_numpy(x, "sbuf"), reduce_op=nl.add,
                        reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=r)
        np.testing.assert_allclose(r.numpy()[:, 0], x.max(1) + x.sum(1), rtol=1e-6)


def test_in_a_kernel_with_the_docstrings_example():
    @nki.jit(platform_target="trn3")
    def activate2_scale_bias_kernel(data_tensor):
        out = nl.ndarray(data_tensor.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(data_tensor.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=data_tensor)
        result = nl.ndarray(data_tensor.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activate2(dst=result, op=nl.gelu, data=x, imm0=2.0, imm1=0.5, op0=nl.multiply,
                       op1=nl.add)
        nisa.dma_copy(dst=out, src=result)
        return out

    from math import erf
    a = np.linspace(-3, 3, 128 * 16, dtype=np.float32).reshape(128, 16)
    got = activate2_scale_bias_kernel(a)
    v = (a * np.float32(2.0) + np.float32(0.5)).astype(np.float64)
    want = 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, said", [
    (lambda x, d: nisa.activate2(d, nl.exp, x, 1.0, 1.0, nl.add, nl.add),
     "(op0, op1) = (nl.add, nl.add) is not one of the tensor-scalar stage's pairs"),
    (lambda x, d: nisa.activate2(d, nl.exp, x, 1.0, 1.0, nl.bypass, nl.bypass, reverse0=True),
     "reverse0=True needs op0 set; it is nl.bypass"),
    (lambda x, d: nisa.activate2(d, nl.exp, x, from_numpy(np.ones((4, 1), np.float32), "sbuf"),
                                 from_numpy(np.ones((4, 1), np.float16), "sbuf"), nl.multiply,
                                 nl.add),
     "imm0 is float32 and imm1 float16; two tensor immediates have one dtype"),
])
def test_what_the_docs_rule_out_is_apk384(call, said):
    with apdsl.target("trn3"):
        x = from_numpy(np.ones((4, 8), np.float32), "sbuf")
        with raises_code("APK384") as err:
            call(x, ndarray((4, 8), "float32", "sbuf"))
    assert said in err.value.message


def test_activate2_needs_trn3_and_a_reduce_op_from_its_list():
    x = from_numpy(np.ones((4, 8), np.float32), "sbuf")
    with raises_code("APK384") as err:
        nisa.activate2(ndarray((4, 8), "float32", "sbuf"), nl.exp, x, 1.0, 0.0, nl.multiply,
                       nl.add)
    assert "needs NeuronCore-v4 (trn3); the target is trn2" in err.value.message
    with apdsl.target("trn3"):
        x = from_numpy(np.ones((4, 8), np.float32), "sbuf")
        with raises_code("APK351"):
            nisa.activate2(ndarray((4, 8), "float32", "sbuf"), nl.exp, x, 1.0, 0.0,
                           nl.multiply, nl.add, reduce_op=nl.multiply,
                           reduce_cmd="reset_reduce")
