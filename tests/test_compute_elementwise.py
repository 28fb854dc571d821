"""`nisa.tensor_tensor`, `nisa.tensor_scalar`, `nisa.scalar_tensor_tensor` (SPEC 11): values
against NumPy (float32 math cast to dst, bit-vector operators on the bits, GpSimd's exact
int32 arithmetic), every refusal, engines in the trace, and `lower` showing every operand."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import apdsl_in_process, lower_header, raises_code

import apdsl
from apdsl.runtime.core import trace
from apdsl.runtime.instructions import scalar_tensor_tensor, tensor_scalar, tensor_tensor
from apdsl.runtime.table.operators import OPERATORS
from apdsl.tensor.view import from_numpy, ndarray

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
      "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
      "int32": np.int32, "uint32": np.uint32}
FLOATS = ("float32", "float16", "bfloat16")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
ARITH2 = sorted(n for n, o in OPERATORS.items()
                if o.alu and o.arity == 2 and not o.bitvec and o.targets is None)
BITVEC2 = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
op = OPERATORS.__getitem__


def tile(values, dtype="float32", buffer="sbuf"):
    return from_numpy(np.asarray(values), buffer, dtype=dtype)


def f32(values, dtype):
    """What a tile of `dtype` holds for `values` (SPEC 4's cast), as the engines read it."""
    return cast(values, dtype).astype(np.float32)


def cast(values32, dtype):
    from apdsl.tensor.dtypes import DTYPES, cast_array
    return cast_array(np.asarray(values32, np.float32), DTYPES[dtype])


def same(got, want):
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64),
                                  np.asarray(want).astype(np.float64))


# -- tensor_tensor: values -----------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ARITH2), st.sampled_from(FLOATS), st.sampled_from(FLOATS),
       st.sampled_from(FLOATS + ("int32", "int8")), st.integers(1, 128), st.integers(1, 24),
       st.sampled_from([("sbuf", "sbuf"), ("sbuf", "psum"), ("psum", "sbuf")]),
       st.sampled_from(["sbuf", "psum"]), st.integers(0, 2**31 - 1))
def test_tensor_tensor_is_float32_math_cast_to_dst(name, dt1, dt2, dst_dt, parts, free, bufs,
                                                  dst_buf, seed):
    if name == "power":  # GpSimd: no PSUM
        bufs, dst_buf = ("sbuf", "sbuf"), "sbuf"
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.25, 4, (parts, free)).astype(np.float32)
    b = rng.uniform(-3, 3, (parts, free)).astype(np.float32).round()
    d = ndarray((parts, free), dst_dt, dst_buf)
    tensor_tensor(d, tile(a, dt1, bufs[0]), tile(b, dt2, bufs[1]), op(name))
    with np.errstate(all="ignore"):
        want = op(name).fn(f32(a, dt1), f32(b, dt2))
    same(d.numpy(), cast(want, dst_dt))


def test_tensor_tensor_named_arguments_and_free_shapes():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = ndarray((4, 2, 3), "float32", "sbuf")
    tensor_tensor(dst=d, data1=tile(a), data2=tile(a[:, ::-1].copy()), op=op("subtract"))
    same(d.numpy().reshape(4, 6), a - a[:, ::-1])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BITVEC2), st.sampled_from(INTS), st.integers(1, 16), st.integers(1, 8),
       st.data())
def test_tensor_tensor_bitvec_works_on_the_bits(name, dtype, parts, free, data):
    info = np.iinfo(dtype)
    shape = (parts, free)
    a = np.asarray(data.draw(st.lists(st.integers(info.min, info.max), min_size=parts * free,
                                      max_size=parts * free)), dtype).reshape(shape)
    if name in ("left_shift", "right_shift"):
        b = np.asarray(data.draw(st.lists(st.integers(0, info.bits - 1), min_size=parts * free,
                                          max_size=parts * free)), dtype).reshape(shape)
    else:
        b = np.asarray(data.draw(st.lists(st.integers(info.min, info.max),
                                          min_size=parts * free, max_size=parts * free)),
                       dtype).reshape(shape)
    d = ndarray(shape, dtype, "sbuf")
    tensor_tensor(d, tile(a, dtype), tile(b, dtype, "psum"), op(name))
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    ua, ub = a.view(u), b.view(u)
    want = {"bitwise_and": ua & ub, "bitwise_or": ua | ub, "bitwise_xor": ua ^ ub,
            "left_shift": ua << ub, "right_shift": ua >> ub}[name].astype(u).view(dtype)
    assert d.numpy().dtype == np.dtype(dtype)
    np.testing.assert_array_equal(d.numpy(), want)


def test_bitvec_mixes_signedness_of_one_width_as_bits():
    a = tile(np.array([[-1, 5]], np.int32), "int32")
    b = tile(np.array([[0xF0F0F0F0, 3]], np.uint32), "uint32")
    d = ndarray((1, 2), "uint32", "sbuf")
    tensor_tensor(d, a, b, op("bitwise_and"))
    assert d.numpy().tolist() == [[0xF0F0F0F0, 1]]


def test_int32_tiles_default_to_gpsimd_exact_integer_math():
    big = 2**30 + 1  # float32 cannot hold it: the float path would round
    a = tile(np.array([[big, -7]], np.int32), "int32")
    b = tile(np.array([[2**30 - 2, 3]], np.int32), "int32")
    with trace.tracing() as tr:
        d = ndarray((1, 2), "int32", "sbuf")
        tensor_tensor(d, a, b, op("add"))
        assert d.numpy().tolist() == [[2**31 - 1, -4]]
        v = ndarray((1, 2), "int32", "sbuf")
        tensor_tensor(v, a, b, op("add"), engine="vector")  # float32 math
        m = ndarray((1, 2), "int32", "sbuf")
        small = tile(np.array([[2**15 + 1, 3]], np.int32), "int32")
        tensor_tensor(m, small, small, op("multiply"), engine="gpsimd")
    want_v = cast(np.float32(big) + np.float32(2**30 - 2), "int32")
    assert v.numpy().tolist() == [[int(want_v), -4]]
    assert m.numpy().tolist() == [[(2**15 + 1) ** 2, 9]]  # float32 would round the first
    assert [r.engine for r in tr if r.op == "tensor_tensor"] == ["gpsimd", "vector", "gpsimd"]


def test_exact_integer_results_past_the_destination_are_refused():
    a = tile(np.array([[2**31 - 1]], np.int32), "int32")
    d = ndarray((1, 1), "int32", "sbuf")
    with raises_code("APK358") as err:
        tensor_tensor(d, a, a, op("add"))
    assert "cannot hold" in err.value.message
    with raises_code("APK358"):
        tensor_tensor(d, tile(np.array([[2]], np.int32), "int32"),
                      tile(np.array([[-1]], np.int32), "int32"), op("power"))
    p = ndarray((1, 1), "int32", "sbuf")
    tensor_tensor(p, tile(np.array([[3]], np.int32), "int32"),
                  tile(np.array([[4]], np.int32), "int32"), op("power"))
    assert p.numpy().tolist() == [[81]]


def test_int32_with_a_psum_operand_falls_back_to_vector():
    a = tile(np.array([[2**30 + 1]], np.int32), "int32", "psum")
    b = tile(np.array([[0]], np.int32), "int32")
    with trace.tracing() as tr:
        d = ndarray((1, 1), "int32", "sbuf")
        tensor_tensor(d, a, b, op("add"))
    assert [r.engine for r in tr if r.op == "tensor_tensor"] == ["vector"]
    assert d.numpy().tolist() == [[int(np.float32(2**30 + 1))]]


def test_power_runs_on_gpsimd_without_psum():
    a, b = tile(np.full((2, 2), 2.0)), tile(np.full((2, 2), 3.0))
    with trace.tracing() as tr:
        d = ndarray((2, 2), "float32", "sbuf")
        tensor_tensor(d, a, b, op("power"))
    assert d.numpy().tolist() == [[8.0, 8.0]] * 2
    assert [r.engine for r in tr if r.op == "tensor_tensor"] == ["gpsimd"]
    with raises_code("APK356"):
        tensor_tensor(ndarray((2, 2), "float32", "psum"), a, b, op("power"))
    with raises_code("APK356"):
        tensor_tensor(d, a, b, op("power"), engine="vector")


def test_abs_max_is_trn3_only():
    a, b = tile(np.array([[-5.0, 1.0]])), tile(np.array([[3.0, -1.0]]))
    with raises_code("APK352"):
        tensor_tensor(ndarray((1, 2), "float32", "sbuf"), a, b, op("abs_max"))
    with apdsl.target("trn3"):
        a, b = tile(np.array([[-5.0, 1.0]])), tile(np.array([[3.0, -1.0]]))
        d = ndarray((1, 2), "float32", "sbuf")
        tensor_tensor(d, a, b, op("abs_max"))
        assert d.numpy().tolist() == [[-5.0, -1.0]]


# -- tensor_tensor: refusals ---------------------------------------------------------------------

def test_tensor_tensor_refusals():
    a, d = tile(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
    pa = tile(np.ones((4, 8)), buffer="psum")
    with raises_code("APK353") as err:
        tensor_tensor(d, pa, tile(np.ones((4, 8)), buffer="psum"), op("add"))
    assert "both in PSUM" in err.value.message
    with raises_code("APK350"):
        tensor_tensor(d, a, a, "add")
    with raises_code("APK350"):
        tensor_tensor(d, a, a, len)
    summed = ndarray((4, 8), "float32", "sbuf")
    tensor_tensor(summed, a, a, np.add)  # the legacy API's NumPy functions are the operators
    np.testing.assert_array_equal(summed.numpy(), np.full((4, 8), 2.0, np.float32))
    for unary in ("exp", "abs", "reciprocal"):
        with raises_code("APK351"):
            tensor_tensor(d, a, a, op(unary))
    with raises_code("APK183") as err:  # the compiler's refusal, with the working form
        tensor_tensor(d, a, a, op("divide"))
    assert "rejects divide" in err.value.message and "nl.reciprocal" in err.value.help
    with raises_code("APK354") as err:
        tensor_tensor(d, a, a, op("bitwise_and"))
    assert "integer tiles only" in err.value.message
    with raises_code("APK355"):
        tensor_tensor(ndarray((1, 2), "int32", "sbuf"), tile(np.ones((1, 2)), "int16"),
                      tile(np.ones((1, 2)), "int32"), op("bitwise_or"))
    with raises_code("APK348"):
        tensor_tensor(d, pa, a, op("add"), engine="gpsimd")
    with raises_code("APK348"):
        tensor_tensor(d, a, a, op("add"), engine="scalar")
    with raises_code("APK460"):
        tensor_tensor(d, a, tile(np.ones((4, 9))), op("add"))
    with raises_code("APK460"):
        tensor_tensor(d, a, tile(np.ones((8, 4))), op("add"))
    with raises_code("APK309"):
        tensor_tensor(d, a, from_numpy(np.ones((4, 8), np.float32)), op("add"))
    with raises_code("APK461"):
        tensor_tensor(ndarray((4, 8), "int64", "sbuf"), a, a, op("add"))
    with apdsl.options(init_check="strict"), raises_code("APK404"):  # unwritten input
        tensor_tensor(d, a, ndarray((4, 8), "float32", "sbuf"), op("add"))
    assert d.storage.mask.sum() == 0


def test_shift_amounts_past_the_width_are_refused():
    a = tile(np.array([[1, 1]], np.int16), "int16")
    s = tile(np.array([[3, 16]], np.int16), "int16")
    d = ndarray((1, 2), "int16", "sbuf")
    with raises_code("APK364") as err:
        tensor_tensor(d, a, s, op("left_shift"))
    assert err.value.facts["coord"] == (0, 1)
    assert d.storage.mask.sum() == 0


# -- tensor_scalar -------------------------------------------------------------------------------

TS_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "greater", "less_equal",
          "logical_or", "power", "abs", "square", "relu", "rsqrt", "reciprocal")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TS_OPS), st.sampled_from((None,) + TS_OPS), st.booleans(),
       st.booleans(), st.booleans(), st.booleans(), st.sampled_from(FLOATS),
       st.sampled_from(FLOATS), st.integers(1, 128), st.integers(1, 16),
       st.integers(0, 2**31 - 1))
def test_tensor_scalar_values(op0, op1, rev0, rev1, col0, col1, dt, dst_dt, parts, free, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 3, (parts, free)).astype(np.float32)
    c0 = rng.uniform(0.5, 2, (parts, 1)).astype(np.float32)
    c1 = rng.uniform(0.5, 2, (parts, 1)).astype(np.float32)

    def operand(name, col, c):
        if OPERATORS[name].arity == 1:
            return None, None
        return (tile(c), c) if col else (1.25, np.float32(1.25))

    o0, v0 = operand(op0, col0, c0)
    o1, v1 = operand(op1, col1, c1) if op1 else (None, None)
    d = ndarray((parts, free), dst_dt, "sbuf")
    tensor_scalar(d, tile(x, dt), op(op0), o0, reverse0=rev0,
                  op1=op(op1) if op1 else None, operand1=o1, reverse1=rev1)

    def stage(name, v, c, rev):
        fn = OPERATORS[name].fn
        with np.errstate(all="ignore"):
            if OPERATORS[name].arity == 1:
                return fn(v)
            return fn(np.broadcast_to(c, v.shape).astype(np.float32), v) if rev else \
                fn(v, np.broadcast_to(c, v.shape).astype(np.float32))

    t = stage(op0, f32(x, dt), v0, rev0)
    if op1:
        t = stage(op1, t, v1, rev1)
    same(d.numpy(), cast(t, dst_dt))


def test_tensor_scalar_reverse_puts_the_operand_first():
    x = tile(np.full((2, 3), 8.0))
    d = ndarray((2, 3), "float32", "psum")
    tensor_scalar(d, x, op("subtract"), 2.0, reverse0=False, op1=op("subtract"),
                  operand1=100.0, reverse1=True)
    assert d.numpy().tolist() == [[94.0] * 3] * 2  # 100 - (8 - 2)
    tensor_scalar(d, x, op("subtract"), 2.0, reverse0=True)
    assert d.numpy().tolist() == [[-6.0] * 3] * 2


def test_tensor_scalar_bitvec_on_the_bits():
    x = tile(np.array([[-1, 0x1234, 7]], np.int32), "int32")
    d = ndarray((1, 3), "int32", "sbuf")
    tensor_scalar(d, x, op("right_shift"), 4, op1=op("bitwise_and"), operand1=0xFF)
    assert d.numpy().tolist() == [[0xFF, 0x23, 0]]  # logical shift: zeros come in
    m = tile(np.array([[0xF], [0xF0]], np.int32), "int32")
    x2 = tile(np.array([[0xFF, 0x0F], [0xFF, 0x0F]], np.int32), "int32")
    d2 = ndarray((2, 2), "uint32", "sbuf")
    tensor_scalar(d2, x2, op("bitwise_xor"), m)
    assert d2.numpy().tolist() == [[0xF0, 0x00], [0x0F, 0xFF]]
    with raises_code("APK364"):  # 1 << data: 0xFF is past the width
        tensor_scalar(d2, x2, op("left_shift"), 1, reverse0=True)
    sh = tile(np.array([[3, 5]], np.int32), "int32")
    d3 = ndarray((1, 2), "int32", "sbuf")
    tensor_scalar(d3, sh, op("left_shift"), 1, reverse0=True)
    assert d3.numpy().tolist() == [[8, 32]]
    x3 = tile(np.array([[1]], np.uint8), "uint8")
    d4 = ndarray((1, 1), "uint8", "sbuf")
    tensor_scalar(d4, x3, op("bitwise_or"), -128)  # -128 as 8 bits is 0x80
    assert d4.numpy().tolist() == [[0x81]]
    tensor_scalar(d4, x3, op("invert"), None)
    assert d4.numpy().tolist() == [[0xFE]]


def test_tensor_scalar_refusals():
    x, d = tile(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
    i = tile(np.ones((4, 8)), "int32")
    di = ndarray((4, 8), "int32", "sbuf")
    with raises_code("APK363"):
        tensor_scalar(di, i, op("add"), 1, op1=op("bitwise_and"), operand1=1)
    with raises_code("APK362"):
        tensor_scalar(d, x, op("abs"), 2.0)
    with raises_code("APK362"):
        tensor_scalar(d, x, op("add"), None)
    with raises_code("APK362"):
        tensor_scalar(d, x, op("add"), 1.0, operand1=2.0)
    with raises_code("APK362"):
        tensor_scalar(d, x, op("add"), 1.0, op1=op("multiply"))
    with raises_code("APK359"):
        tensor_scalar(d, x, op("add"), "1.0")
    with raises_code("APK359"):
        tensor_scalar(d, x, op("add"), [1.0])
    with raises_code("APK361"):
        tensor_scalar(d, x, op("add"), tile(np.ones((4, 1)), "bfloat16"))
    with raises_code("APK460") as err:
        tensor_scalar(d, x, op("add"), tile(np.ones((4, 2))))
    assert "one element" in err.value.message
    with raises_code("APK460"):
        tensor_scalar(d, x, op("add"), tile(np.ones((2, 1))))
    with raises_code("APK351"):
        tensor_scalar(d, x, op("exp"), None)
    with raises_code("APK354"):
        tensor_scalar(d, x, op("bitwise_and"), 1)
    with raises_code("APK356"):
        tensor_scalar(di, i, op("bitwise_and"), 1, engine="scalar")
    with raises_code("APK365"):
        tensor_scalar(di, i, op("bitwise_and"), 1.5)
    with raises_code("APK365"):
        tensor_scalar(di, i, op("bitwise_and"), 2**32)
    with raises_code("APK364"):
        tensor_scalar(di, i, op("left_shift"), 32)
    with raises_code("APK348"):
        tensor_scalar(d, tile(np.ones((4, 8)), buffer="psum"), op("add"), 1.0, engine="gpsimd")
    with raises_code("APK352"):
        tensor_scalar(d, x, op("abs_max"), 1.0)


def test_scalar_engine_operator_pairs_on_trn2():
    x, d = tile(np.full((2, 2), 3.0)), ndarray((2, 2), "float32", "sbuf")
    tensor_scalar(d, x, op("multiply"), 2.0, op1=op("add"), operand1=1.0, engine="scalar")
    assert d.numpy().tolist() == [[7.0, 7.0]] * 2
    tensor_scalar(d, x, op("add"), 2.0, engine="scalar")
    with raises_code("APK357"):
        tensor_scalar(d, x, op("subtract"), 2.0, engine="scalar")
    with raises_code("APK357"):
        tensor_scalar(d, x, op("add"), 2.0, op1=op("multiply"), operand1=1.0, engine="scalar")
    with apdsl.target("trn3"):  # the docs' list is trn2's
        x3, d3 = tile(np.full((2, 2), 3.0)), ndarray((2, 2), "float32", "sbuf")
        tensor_scalar(d3, x3, op("subtract"), 2.0, engine="scalar")
        assert d3.numpy().tolist() == [[1.0, 1.0]] * 2


# -- scalar_tensor_tensor ------------------------------------------------------------------------

STT_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "greater", "logical_and",
           "power")


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(STT_OPS), st.sampled_from(STT_OPS), st.booleans(), st.booleans(),
       st.booleans(), st.sampled_from(FLOATS + ("int8",)), st.sampled_from(FLOATS),
       st.integers(1, 128), st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_scalar_tensor_tensor_values(op0, op1, rev0, rev1, col, dt, dst_dt, parts, free,
                                     seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 3, (parts, free)).astype(np.float32).round(1)
    y = rng.uniform(0.5, 3, (parts, free)).astype(np.float32)
    c = rng.uniform(0.5, 2, (parts, 1)).astype(np.float32)
    d = ndarray((parts, free), dst_dt, "sbuf")
    scalar_tensor_tensor(d, tile(x, dt, "psum"), op(op0), tile(c, dt) if col else 1.5,
                         op(op1), tile(y), reverse0=rev0, reverse1=rev1)
    c0 = np.broadcast_to(f32(c, dt) if col else np.float32(1.5), x.shape)
    with np.errstate(all="ignore"):
        xs = f32(x, dt)
        t = OPERATORS[op0].fn(c0, xs) if rev0 else OPERATORS[op0].fn(xs, c0)
        t = OPERATORS[op1].fn(y, t) if rev1 else OPERATORS[op1].fn(t, y)
    same(d.numpy(), cast(t, dst_dt))


def test_scalar_tensor_tensor_refusals():
    x, d = tile(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
    px = tile(np.ones((4, 8)), buffer="psum")
    with raises_code("APK353"):
        scalar_tensor_tensor(d, px, op("add"), 1.0, op("add"), px)
    with raises_code("APK351"):
        scalar_tensor_tensor(d, x, op("bitwise_and"), 1, op("add"), x)
    with raises_code("APK351"):
        scalar_tensor_tensor(d, x, op("add"), 1.0, op("exp"), x)
    with raises_code("APK348"):
        scalar_tensor_tensor(d, x, op("add"), 1.0, op("add"), x, engine="gpsimd")
    with raises_code("APK420"):
        scalar_tensor_tensor(d, x, op("add"), 1.0, op("add"), 2.0)
    with raises_code("APK460"):
        scalar_tensor_tensor(d, x, op("add"), tile(np.ones((4, 8))), op("add"), x)
    with raises_code("APK359"):
        scalar_tensor_tensor(d, x, op("add"), None, op("add"), x)


# -- the language, check mode and lower ----------------------------------------------------------

KERNEL = """\
kernel k(a: f32[128, 64] @ hbm, b: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    x: f32[128, 64] @ sbuf
    y: f32[128, 64] @ sbuf
    dma_copy(x, a)
    dma_copy(y, b)
    s: f32[128, 64] @ psum
    nisa.tensor_tensor(dst=s, data1=x, data2=y, op=nl.add, name="sum")
    c: f32[128, 1] @ sbuf
    memset(c, 3.0)
    z: bf16[128, 64] @ sbuf
    nisa.tensor_scalar(z, s, nl.multiply, c, op1=nl.subtract, operand1=1.0, reverse1=True)
    w: f32[128, 64] @ sbuf
    nisa.scalar_tensor_tensor(dst=w, data=z, op0=nl.maximum, operand0=c, op1=nl.add,
                              operand1=s)
    o: f32[128, 64] @ hbm
    dma_copy(o, w)
    return o
"""


def _oracle(a, b):
    s = a + b
    z = (np.float32(1) - s * np.float32(3)).astype(ml_dtypes.bfloat16).astype(np.float32)
    return np.maximum(z, np.float32(3)) + s


def test_the_apk_language_runs_them():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((128, 64)).astype(np.float32) for _ in range(2))
    got = apdsl.run(KERNEL, inputs={"a": a, "b": b})
    np.testing.assert_array_equal(got, _oracle(a, b))


def test_the_python_frontend_runs_them():
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a, b):
        x = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        y = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        nisa.dma_copy(dst=y, src=b)
        nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.maximum)
        nisa.tensor_scalar(dst=x, data=x, op0=nl.add, operand0=1.0)
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        return out

    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((128, 64)).astype(np.float32) for _ in range(2))
    np.testing.assert_array_equal(kernel(a, b), np.maximum(a, b) + np.float32(1))


def test_check_reports_the_rules():
    both = ("a: f32[4, 8] @ psum = 1.0\nb: f32[4, 8] @ psum = 1.0\nc: f32[4, 8] @ sbuf\n"
            "tensor_tensor(c, a, b, nl.add)\n")
    assert [e.code for e in apdsl.check(both)] == ["APK353"]
    col = ("a: f32[4, 8] @ sbuf = 1.0\nk: f32[4, 2] @ sbuf = 1.0\nc: f32[4, 8] @ sbuf\n"
           "tensor_scalar(c, a, nl.add, k)\n")
    assert [e.code for e in apdsl.check(col)] == ["APK460"]
    good = ("a: f32[4, 8] @ sbuf = 1.0\nc: f32[4, 8] @ sbuf\n"
            "tensor_scalar(c, a, nl.add, 1.0)\n")
    assert apdsl.check(good) == []


def test_lower_shows_every_operand(tmp_path):
    f = tmp_path / "k.apk"
    f.write_text(KERNEL)
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    k = lower_header(lines, f"{f}:7  tensor_tensor sum")
    assert [ln.split()[:4] for ln in lines[k + 1:k + 4]] == [
        ["dst", "s", "psum", "float32"], ["data1", "x", "sbuf", "float32"],
        ["data2", "y", "sbuf", "float32"]]
    k = lower_header(lines, f"{f}:11  tensor_scalar")
    assert [ln.split()[:4] for ln in lines[k + 1:k + 4]] == [
        ["dst", "z", "sbuf", "bfloat16"], ["data", "s", "psum", "float32"],
        ["operand0", "c", "sbuf", "float32"]]
    assert lines[k + 3].split()[-2:] == ["[[1,", "128]]"]
    k = lower_header(lines, f"{f}:13  scalar_tensor_tensor")
    assert [ln.split()[0] for ln in lines[k + 1:k + 5]] == ["dst", "data", "operand0",
                                                            "operand1"]


@pytest.mark.parametrize("code", ["APK351", "APK353", "APK354", "APK356", "APK362", "APK364"])
def test_cli_errors_are_located(tmp_path, code):
    programs = {
        "APK351": "tensor_tensor(c, a, a, nl.exp)",
        "APK353": "tensor_tensor(c, p, p, nl.add)",
        "APK354": "tensor_tensor(c, a, a, nl.bitwise_or)",
        "APK356": "tensor_tensor(p, a, a, nl.power)",
        "APK362": "tensor_scalar(c, a, nl.square, 1.0)",
        "APK364": "tensor_scalar(i, i, nl.right_shift, 40)",
    }
    f = tmp_path / "bad.apk"
    f.write_text("a: f32[4, 8] @ sbuf = 1.0\np: f32[4, 8] @ psum = 1.0\n"
                 "i: i32[4, 8] @ sbuf = 1\nc: f32[4, 8] @ sbuf\n" + programs[code] + "\n")
    out = apdsl_in_process("run", str(f))  # what `run` reports (lower's test is a real process)
    assert out.returncode == 1
    assert f"{f}:5:1: error[{code}]" in out.stderr and "help:" in out.stderr
    assert "Traceback" not in out.stderr


def test_in_place_and_overlapping_operands_read_before_they_are_written():
    x = np.arange(20, dtype=np.float32).reshape(2, 10)
    t = tile(x)
    tensor_tensor(t[:, 1:10], t[:, 0:9], t[:, 0:9], op("add"))  # overlapping, shifted
    want = x.copy()
    want[:, 1:] = x[:, :-1] + x[:, :-1]
    same(t.numpy(), want)
    p = tile(x, buffer="psum")
    tensor_tensor(p, p, tile(x), op("multiply"))  # in place, a PSUM input
    same(p.numpy(), x * x)


def test_lower_json_records_the_engine_hint(tmp_path):
    import json
    f = tmp_path / "k.apk"
    f.write_text("a: i32[4, 8] @ sbuf = 3\nc: i32[4, 8] @ sbuf\n"
                 "tensor_tensor(c, a, a, nl.add, engine=nisa.engine.vector)\n"
                 "tensor_tensor(c, a, a, nl.add)\n")
    out = apdsl_in_process("lower", str(f), "--json")
    assert out.returncode == 0, out.stderr
    recs = [json.loads(line) for line in out.stdout.splitlines()]
    tt = [r for r in recs if r["op"] == "tensor_tensor"]
    assert tt[0]["hints"] == {"engine": "vector"} and "hints" not in tt[1]
    assert set(tt[0]["operands"]) == {"dst", "data1", "data2"}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                        "right_shift", "invert")),
       st.sampled_from((None, "bitwise_and", "bitwise_or", "right_shift")),
       st.booleans(), st.booleans(), st.sampled_from(INTS), st.integers(1, 8), st.data())
def test_tensor_scalar_bitvec_against_python_ints(op0, op1, col, rev1, dtype, parts, data):
    info = np.iinfo(dtype)
    bits = info.bits
    mask = (1 << bits) - 1
    free = 4
    x = np.asarray(data.draw(st.lists(st.integers(info.min, info.max), min_size=parts * free,
                                      max_size=parts * free)), dtype).reshape(parts, free)

    def amount(name):  # a shift amount or a bit pattern
        return data.draw(st.integers(0, bits - 1) if "shift" in name else
                         st.integers(info.min, info.max))

    def pattern(v):
        return int(v) & mask

    def apply(name, a, b):
        if name == "invert":
            return ~a & mask
        return {"bitwise_and": lambda: a & b, "bitwise_or": lambda: a | b,
                "bitwise_xor": lambda: a ^ b, "left_shift": lambda: (a << b) & mask,
                "right_shift": lambda: a >> b}[name]()

    s0 = None if op0 == "invert" else amount(op0)
    o0 = None if s0 is None else (tile(np.full((parts, 1), s0), dtype) if col else s0)
    s1 = amount(op1) if op1 else None
    d = ndarray((parts, free), dtype, "sbuf")
    rev1 = rev1 and op1 != "right_shift"  # a reversed shift shifts by the data: not in range
    tensor_scalar(d, tile(x, dtype), op(op0), o0, op1=op(op1) if op1 else None, operand1=s1,
                  reverse1=rev1)
    want = []
    for v in x.reshape(-1):
        t = apply(op0, pattern(v), None if s0 is None else (s0 if "shift" in op0
                                                            else pattern(s0)))
        if op1:
            rhs = s1 if "shift" in op1 else pattern(s1)
            t = apply(op1, pattern(rhs), t) if rev1 else apply(op1, t, rhs)
        want.append(t)
    got = d.numpy().reshape(-1).astype(np.int64) & mask
    assert got.tolist() == want


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("add", "subtract", "multiply", "maximum", "minimum", "equal",
                        "less", "logical_or")),
       st.sampled_from(("int32", "uint32")), st.data())
def test_int32_tensor_tensor_on_gpsimd_is_exact(name, dtype, data):
    info = np.iinfo(dtype)
    xs = data.draw(st.lists(st.integers(info.min, info.max), min_size=1, max_size=8))
    ys = data.draw(st.lists(st.integers(info.min, info.max), min_size=len(xs),
                            max_size=len(xs)))
    fns = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
           "multiply": lambda a, b: a * b, "maximum": max, "minimum": min,
           "equal": lambda a, b: int(a == b), "less": lambda a, b: int(a < b),
           "logical_or": lambda a, b: int(bool(a) or bool(b))}
    want = [fns[name](a, b) for a, b in zip(xs, ys)]
    d = ndarray((1, len(xs)), dtype, "sbuf")
    a, b = tile([xs], dtype), tile([ys], dtype)
    if all(info.min <= w <= info.max for w in want):
        tensor_tensor(d, a, b, op(name))
        assert d.numpy()[0].tolist() == want
    else:
        with raises_code("APK358"):
            tensor_tensor(d, a, b, op(name))
