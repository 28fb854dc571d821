"""tensor_reduce (trailing free axes, negate, keepdims; arithmetic in float32, bit-vector
operators on integer bits) and tensor_partition_reduce (across partitions on GpSimd), against
NumPy, with every refusal."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.core import trace
from apdsl.runtime.instructions import tensor_copy, tensor_partition_reduce, tensor_reduce
from apdsl.runtime.table.operators import OPERATORS as nl
from apdsl.tensor.view import from_numpy, ndarray

NUMPY = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min,
         "logical_and": lambda x, axis: np.all(x != 0, axis=axis),
         "logical_or": lambda x, axis: np.any(x != 0, axis=axis),
         "logical_xor": lambda x, axis: np.count_nonzero(x, axis=axis) % 2 == 1}
BITS = {"bitwise_and": np.bitwise_and.reduce, "bitwise_or": np.bitwise_or.reduce,
        "bitwise_xor": np.bitwise_xor.reduce}


def on_chip(values: np.ndarray, buffer: str = "sbuf") -> apdsl.Tensor:
    t = from_numpy(values, "sbuf")
    if buffer == "sbuf":
        return t
    p = ndarray(t.shape, t.dtype.name, buffer)
    tensor_copy(p, t)
    return p


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(NUMPY)), st.integers(1, 64),
       st.lists(st.integers(1, 6), min_size=1, max_size=3), st.data(),
       st.booleans(), st.booleans(), st.sampled_from(["sbuf", "psum"]), st.integers(0, 2**31))
def test_arithmetic_reductions_are_numpys(opname, parts, free, data, negate, keepdims, buffer,
                                          seed):
    shape = (parts, *free)
    first = data.draw(st.integers(1, len(free)))
    axes = tuple(range(first, len(shape)))
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(np.float32)  # exact in float32 for every op here
    kept = shape[:first] + ((1,) * len(axes) if keepdims else ())
    dst = ndarray(kept if len(kept) > 1 else (parts, 1), "float32", buffer)
    tensor_reduce(dst, nl[opname], on_chip(x, buffer), axis=list(axes), negate=negate,
                  keepdims=keepdims)
    want = np.asarray(NUMPY[opname](x.astype(np.float64), axis=axes), np.float64)
    want = -want if negate else want
    np.testing.assert_array_equal(dst.numpy().reshape(-1), want.reshape(-1))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(BITS)), st.sampled_from(["int32", "uint32", "int16", "uint8"]),
       st.integers(1, 32), st.integers(1, 20), st.integers(0, 2**31))
def test_bit_vector_reductions_work_on_the_bits(opname, dtype, parts, free, seed):
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, info.max, (parts, free), dtype=dtype,
                                             endpoint=True)
    dst = ndarray((parts, 1), dtype, "sbuf")
    tensor_reduce(dst, nl[opname], on_chip(x), axis=1)
    np.testing.assert_array_equal(dst.numpy()[:, 0], BITS[opname](x, axis=1))


def test_bits_are_kept_between_dtypes_of_one_width():
    x = np.array([[-1, -1]], np.int32)
    dst = ndarray((1, 1), "uint32", "sbuf")
    tensor_reduce(dst, nl["bitwise_and"], on_chip(x), axis=(1,))
    assert dst.numpy().tolist() == [[0xFFFFFFFF]]  # not saturated to 0


def test_the_docs_example_and_a_cast_to_dst():
    rng = np.random.default_rng(0)
    a = (rng.random((128, 512)) * 100).astype(np.float32)
    b = ndarray((128, 1), "float32", "sbuf")
    tensor_reduce(b, nl["add"], on_chip(a), axis=[1])
    np.testing.assert_allclose(b.numpy(), a.sum(axis=1, keepdims=True), rtol=1e-5)
    h = ndarray((128, 1, 1), "bfloat16", "sbuf")  # one element a partition, any free shape
    tensor_reduce(h, nl["maximum"], on_chip(a), axis=-1)
    np.testing.assert_array_equal(h.numpy().reshape(-1).astype(np.float32),
                                  a.max(axis=1).astype(h.numpy().dtype).astype(np.float32))


@pytest.mark.parametrize("axis", [0, (0, 1), (1,), (1, 3), (2, 2), 4, "1", (), 1.0])
def test_axes_that_are_not_the_trailing_free_dims(axis):
    x = on_chip(np.ones((4, 2, 3, 5), np.float32))
    with raises_code("APK373"):
        tensor_reduce(ndarray((4, 6), "float32", "sbuf"), nl["add"], x, axis=axis)


def test_refusals():
    x = on_chip(np.ones((4, 2, 3), np.float32))
    with raises_code("APK371"):
        tensor_reduce(ndarray((4, 3), "float32", "sbuf"), nl["add"], x, axis=(2,))
    with raises_code("APK370"):
        tensor_reduce(ndarray((2, 2), "float32", "sbuf"), nl["add"], x, axis=(2,))
    with raises_code("APK351"):  # the docs give no fold order for a subtract reduction
        tensor_reduce(ndarray((4, 2), "float32", "sbuf"), nl["subtract"], x, axis=(2,))
    with raises_code("APK351"):
        tensor_reduce(ndarray((4, 2), "float32", "sbuf"), nl["exp"], x, axis=(2,))
    with raises_code("APK351"):
        tensor_reduce(ndarray((4, 2), "float32", "sbuf"), nl["equal"], x, axis=(2,))
    with raises_code("APK350"):  # a Python function is not an operator (np.add is nl.add)
        tensor_reduce(ndarray((4, 2), "float32", "sbuf"), lambda a, b: a + b, x, axis=(2,))
    with raises_code("APK375"):
        tensor_reduce(ndarray((4, 2), "int32", "sbuf"), nl["bitwise_or"], x, axis=(2,))
    xi = on_chip(np.ones((4, 3), np.int32))
    with raises_code("APK375"):
        tensor_reduce(ndarray((4, 1), "int32", "sbuf"), nl["bitwise_or"], xi, axis=1,
                      negate=True)
    with raises_code("APK375"):
        tensor_reduce(ndarray((4, 1), "int16", "sbuf"), nl["bitwise_or"], xi, axis=1)
    with raises_code("APK420"):
        tensor_reduce(ndarray((4, 1), "float32", "sbuf"), nl["add"], xi, axis=1, negate=1)
    with raises_code("APK309"):
        tensor_reduce(ndarray((4, 1), "float32", "sbuf"), nl["add"],
                      from_numpy(np.ones((4, 3), np.float32), "hbm"), axis=1)


def test_negate_of_a_logical_reduction_and_integer_data_through_float32():
    x = on_chip(np.array([[1, 0, 2], [3, 4, 5]], np.int32))
    d = ndarray((2, 1), "float32", "sbuf")
    tensor_reduce(d, nl["logical_and"], x, axis=1, negate=True)
    assert d.numpy().tolist() == [[-0.0], [-1.0]]
    big = on_chip(np.array([[16777217, 0]], np.int32))  # 2**24 + 1 is not a float32
    s = ndarray((1, 1), "int32", "sbuf")
    tensor_reduce(s, nl["add"], big, axis=1)
    assert s.numpy().tolist() == [[16777216]]


# -- tensor_partition_reduce ------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["add", "average", "maximum"]), st.integers(1, 128),
       st.lists(st.integers(1, 8), min_size=1, max_size=2), st.integers(0, 2**31))
def test_partition_reduce_is_numpys_over_axis_0(opname, parts, free, seed):
    x = np.random.default_rng(seed).integers(-8, 9, (parts, *free)).astype(np.float32)
    dst = ndarray((1, *free), "float32", "sbuf")
    tensor_partition_reduce(dst, nl[opname], on_chip(x))
    fn = {"add": np.sum, "average": np.mean, "maximum": np.max}[opname]
    np.testing.assert_allclose(dst.numpy(), fn(x.astype(np.float64), axis=0, keepdims=True),
                               rtol=1e-6)


def test_partition_reduce_the_docs_example_and_bitwise():
    rng = np.random.default_rng(2)
    a = (rng.random((128, 32, 4)) * 100).astype(np.float32)
    b = ndarray((1, 32, 4), "float32", "sbuf")
    tensor_partition_reduce(b, nl["add"], on_chip(a))
    np.testing.assert_allclose(b.numpy(), np.sum(a, axis=0, keepdims=True), rtol=1e-5)
    bits = rng.integers(0, 2**31, (16, 8)).astype(np.int32)
    o = ndarray((1, 8), "int32", "sbuf")
    tensor_partition_reduce(o, nl["bitwise_or"], on_chip(bits))
    assert o.numpy()[0].tolist() == np.bitwise_or.reduce(bits, axis=0).tolist()


def test_partition_reduce_refusals():
    x = on_chip(np.ones((8, 4), np.float32))
    with raises_code("APK371"):
        tensor_partition_reduce(ndarray((2, 4), "float32", "sbuf"), nl["add"], x)
    with raises_code("APK371"):
        tensor_partition_reduce(ndarray((1, 5), "float32", "sbuf"), nl["add"], x)
    with raises_code("APK351"):
        tensor_partition_reduce(ndarray((1, 4), "float32", "sbuf"), nl["multiply"], x)
    with raises_code("APK309"):  # GpSimd cannot access PSUM
        tensor_partition_reduce(ndarray((1, 4), "float32", "psum"), nl["add"], x)
    with raises_code("APK375"):
        tensor_partition_reduce(ndarray((1, 4), "float32", "sbuf"), nl["bitwise_and"], x)


def test_engines_in_the_trace():
    with trace.tracing() as tr:
        x = on_chip(np.ones((8, 4), np.float32))
        tensor_reduce(ndarray((8, 1), "float32", "sbuf"), nl["add"], x, axis=1)
        tensor_partition_reduce(ndarray((1, 4), "float32", "sbuf"), nl["add"], x)
    assert [(r.op, r.engine) for r in tr][-2:] == [("tensor_reduce", "vector"),
                                                  ("tensor_partition_reduce", "gpsimd")]


def test_in_the_language():
    source = """\
kernel k(a: f32[8, 4, 16] @ hbm) -> f32[8, 4] @ hbm:
    t: f32[8, 4, 16] @ sbuf
    dma_copy(t, a)
    m: f32[8, 4] @ sbuf
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=(2,), negate=True)
    o: f32[8, 4] @ hbm
    dma_copy(o, m)
    return o
"""
    a = np.random.default_rng(5).random((8, 4, 16)).astype(np.float32)
    np.testing.assert_array_equal(apdsl.run(source, inputs={"a": a}), -a.max(axis=2))
    bad = "a: f32[8, 4, 16] @ sbuf = 1.0\nm: f32[8, 4] @ sbuf\n" \
          "tensor_reduce(m, maximum, a, axis=(1,))\n"
    assert [e.code for e in apdsl.check(bad)] == ["APK373"]


# -- Tensor Indirection (trn3): dst and data of tensor_reduce and activation only -------------

def _gathered(data: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    i = np.arange(n)
    return data[:, index[i % 16, i // 16]]  # SPEC 4: group 16 on the Vector/Scalar engines


def test_indirect_data_of_tensor_reduce_and_activation_on_trn3():
    rng = np.random.default_rng(8)
    data = rng.integers(-4, 5, (32, 40)).astype(np.float32)
    index = rng.integers(0, 40, (32, 2)).astype(np.int32)
    with apdsl.target("trn3"):
        t, idx = from_numpy(data, "sbuf"), from_numpy(index, "sbuf")
        s = ndarray((32, 1), "float32", "sbuf")
        tensor_reduce(s, nl["add"], t.indirect(idx, num_elem=32), axis=1)
        np.testing.assert_array_equal(s.numpy()[:, 0], _gathered(data, index, 32).sum(axis=1))
        from apdsl.runtime.instructions import activation
        o = ndarray((32, 32), "float32", "sbuf")
        activation(o, nl["square"], t.indirect(idx, num_elem=32))
        np.testing.assert_array_equal(o.numpy(), _gathered(data, index, 32) ** 2)
        with raises_code("APK383"):  # a scattered dst of the Scalar Engine is not in PSUM
            activation(ndarray((32, 40), "float32", "psum").indirect(idx, num_elem=32),
                       nl["square"], o)
        with raises_code("APK383"):  # bias takes no indirection
            activation(o, nl["square"], o, bias=t.indirect(idx, num_elem=1))
        from apdsl.runtime.instructions import max8
        with raises_code("APK383"):  # max8's docs list no Tensor Indirection
            max8(ndarray((32, 8), "float32", "sbuf"), t.indirect(idx, num_elem=32))
        with raises_code("APK345"):  # data and its index start on different partitions
            tensor_reduce(s[0:32], nl["add"], t[0:32].indirect(
                from_numpy(np.zeros((64, 2), np.int32), "sbuf")[32:64], num_elem=32), axis=1)
