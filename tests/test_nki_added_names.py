"""The instructions and `nl` functions added for the published kernels, each against NumPy
as its docstring defines it: `tensor_scalar_reduce`, `tensor_scalar_cumulative`,
`exponential` (the Vector Engine's shared accumulators), `nonzero_with_count`,
`nl.broadcast_to`, `nl.shared_constant`, `nl.shared_identity_matrix`, `nl.device_print`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl import from_numpy, ndarray
from apdsl.errors import ApdslError
from apdsl.runtime.nki.nonzero import nonzero_with_count
from apdsl.runtime.nki.vector_reduce import (
    exponential,
    tensor_scalar_cumulative,
    tensor_scalar_reduce,
)
from apdsl.runtime.table.operators import OPERATORS

NP = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
      "subtract": np.subtract}
IDENTITY = {"add": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf,
            "subtract": 0.0}


def _sbuf(a: np.ndarray) -> apdsl.Tensor:
    return from_numpy(np.asarray(a, np.float32), "sbuf")


def _codes(fn) -> str:
    with pytest.raises(ApdslError) as e:
        fn()
    return e.value.code


# -- tensor_scalar_reduce ------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(1, 128), st.integers(1, 40), st.sampled_from(["multiply", "add", "subtract",
                                                                  "maximum"]),
       st.sampled_from(["add", "multiply", "maximum", "minimum"]), st.booleans(),
       st.integers(0, 2**31 - 1))
def test_tensor_scalar_reduce_against_numpy(parts, free, op0, red, column, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, (parts, free)).astype(np.float32)
    operand = rng.uniform(-1, 1, (parts, 1)).astype(np.float32) if column else np.float32(0.75)
    d = ndarray((parts, free), "float32", "sbuf")
    r = ndarray((parts, 1), "float32", "sbuf")
    tensor_scalar_reduce(d, _sbuf(x), OPERATORS[op0], _sbuf(operand) if column else 0.75,
                         OPERATORS[red], reduce_res=r)
    want = NP[op0](x, operand).astype(np.float32)
    np.testing.assert_array_equal(d.numpy(), want)
    np.testing.assert_allclose(r.numpy()[:, 0], NP[red].reduce(want.astype(np.float64), axis=1),
                               rtol=1e-5, atol=1e-5)


def test_tensor_scalar_reduce_accumulates_across_tiles_and_loads_and_negates():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 30)).astype(np.float32)
    r = ndarray((8, 1), "float32", "sbuf")
    for k, cmd in enumerate(["reset_reduce", "reduce", "reduce"]):
        part = x[:, 10 * k:10 * (k + 1)]
        tensor_scalar_reduce(ndarray((8, 10), "float32", "sbuf"), _sbuf(part),
                             OPERATORS["multiply"], 2.0, OPERATORS["add"], reduce_res=r,
                             reduce_cmd=cmd)
    np.testing.assert_allclose(r.numpy()[:, 0], (2 * x).sum(1), rtol=1e-5, atol=1e-5)
    init = rng.standard_normal((8, 1)).astype(np.float32)
    tensor_scalar_reduce(ndarray((8, 10), "float32", "sbuf"), _sbuf(x[:, :10]),
                         OPERATORS["add"], 0.0, OPERATORS["maximum"], reduce_res=r,
                         reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=_sbuf(init),
                         reduce_res_negate=True)
    np.testing.assert_array_equal(r.numpy()[:, 0], -np.maximum(init[:, 0], x[:, :10].max(1)))


def test_tensor_scalar_reduce_refusals():
    x = _sbuf(np.ones((4, 4)))
    d = ndarray((4, 4), "float32", "sbuf")
    assert _codes(lambda: tensor_scalar_reduce(d, x, OPERATORS["add"], 1.0, OPERATORS["add"],
                                               reduce_cmd="reduce")) == "APK465"
    assert _codes(lambda: tensor_scalar_reduce(d, x, OPERATORS["add"], 1.0,
                                               OPERATORS["subtract"])) == "APK351"
    assert _codes(lambda: tensor_scalar_reduce(d, x, OPERATORS["add"], 1.0, OPERATORS["add"],
                                               reduce_cmd="load_reduce")) == "APK924"
    assert _codes(lambda: tensor_scalar_reduce(d, x, OPERATORS["add"], 1.0, OPERATORS["add"],
                                               reduce_cmd="idle")) == "APK464"


# -- tensor_scalar_cumulative ----------------------------------------------------------------------

def _scan(x: np.ndarray, imm0, op0: str, op1: str, start: np.ndarray) -> np.ndarray:
    """The docstring's pseudocode, element by element (float32 at every step)."""
    reg = start.astype(np.float32).copy()
    out = np.empty_like(x)
    for i in range(x.shape[1]):
        reg = NP[op1](NP[op0](x[:, i], np.asarray(imm0, np.float32).reshape(-1)),
                      reg).astype(np.float32)
        out[:, i] = reg
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 64), st.integers(1, 24), st.sampled_from(["add", "multiply", "maximum"]),
       st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum"]),
       st.integers(0, 2**31 - 1))
def test_tensor_scalar_cumulative_against_the_pseudocode(parts, free, op0, op1, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.2, 1.2, (parts, free)).astype(np.float32)
    d = ndarray((parts, free), "float32", "sbuf")
    tensor_scalar_cumulative(d, _sbuf(x), OPERATORS[op0], OPERATORS[op1], 0.5)
    want = _scan(x, 0.5, op0, op1, np.full(parts, IDENTITY[op1], np.float32))
    np.testing.assert_allclose(d.numpy(), want, rtol=1e-6, atol=1e-6)


def test_a_cumulative_sum_in_chunks_continues_from_the_lanes_and_equals_np_cumsum():
    x = np.random.default_rng(5).standard_normal((16, 48)).astype(np.float32)
    out = np.empty_like(x)
    for k, cmd in enumerate(["reset_reduce", "reduce", "reduce"]):
        d = ndarray((16, 16), "float32", "sbuf")
        tensor_scalar_cumulative(d, _sbuf(x[:, 16 * k:16 * (k + 1)]), OPERATORS["multiply"],
                                 OPERATORS["add"], 1.0, reduce_cmd=cmd)
        out[:, 16 * k:16 * (k + 1)] = d.numpy()
    np.testing.assert_allclose(out, np.cumsum(x.astype(np.float64), axis=1), rtol=1e-5,
                               atol=1e-5)
    init = np.arange(16, dtype=np.float32).reshape(16, 1)
    d = ndarray((16, 4), "float32", "sbuf")
    tensor_scalar_cumulative(d, _sbuf(x[:, :4]), OPERATORS["add"], OPERATORS["maximum"], 0.0,
                             imm1=_sbuf(init), reduce_cmd="load_reduce")
    np.testing.assert_array_equal(d.numpy(), _scan(x[:, :4], 0.0, "add", "maximum", init[:, 0]))


def test_tensor_scalar_cumulative_refuses_int32_and_other_reductions():
    x = from_numpy(np.ones((2, 3), np.int32), "sbuf")
    assert _codes(lambda: tensor_scalar_cumulative(ndarray((2, 3), "int32", "sbuf"), x,
                                                   OPERATORS["add"], OPERATORS["add"],
                                                   1.0)) == "APK461"
    y = _sbuf(np.ones((2, 3)))
    assert _codes(lambda: tensor_scalar_cumulative(ndarray((2, 3), "float32", "sbuf"), y,
                                                   OPERATORS["add"], OPERATORS["power"],
                                                   1.0)) == "APK351"


# -- exponential ----------------------------------------------------------------------------------

def test_exponential_and_its_running_sum_on_trn3():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((32, 20)).astype(np.float32)
    m = x.max(1, keepdims=True)
    with apdsl.target("trn3"):
        r = ndarray((32, 1), "float32", "sbuf")
        total = np.zeros(32)
        for k, cmd in enumerate(["reset_reduce", "reduce"]):
            d = ndarray((32, 10), "bfloat16", "sbuf")
            part = x[:, 10 * k:10 * (k + 1)]
            exponential(d, _sbuf(part), max_value=_sbuf(m), reduce_res=r, reduce_cmd=cmd)
            want = np.exp(part.astype(np.float64) - m)
            np.testing.assert_allclose(d.numpy().astype(np.float64), want, rtol=1e-2)
            total += want.sum(1)
        np.testing.assert_allclose(r.numpy()[:, 0], total, rtol=1e-5)
        d = ndarray((32, 10), "float32", "sbuf")
        exponential(d, _sbuf(x[:, :10]), max_value=1.0)  # idle: no reduction
        np.testing.assert_allclose(d.numpy(), np.exp(x[:, :10] - 1.0), rtol=1e-6)


def test_exponential_needs_trn3():
    assert _codes(lambda: exponential(ndarray((2, 2), "float32", "sbuf"),
                                      _sbuf(np.zeros((2, 2))))) == "APK924"


# -- nonzero_with_count ---------------------------------------------------------------------------

def test_nonzero_with_count_follows_the_docstring_on_partitions_0_16_and_up():
    rng = np.random.default_rng(11)
    x = (rng.random((128, 40)) > 0.7).astype(np.float32) * rng.standard_normal((128, 40))
    x = x.astype(np.float32)
    d = ndarray((128, 41), "int32", "sbuf")
    apdsl.memset(d, 5)
    nonzero_with_count(d, _sbuf(x), index_offset=100, padding_val=-7)
    got = d.numpy()
    for p in range(128):
        if p % 16:
            assert (got[p] == 5).all()
            continue
        idx = np.flatnonzero(x[p]) + 100
        want = np.concatenate([idx, np.full(40 - idx.size, -7), [idx.size]])
        np.testing.assert_array_equal(got[p], want)


def test_the_docstring_example_of_nonzero_with_count():
    x = from_numpy(np.array([[0, 1, 1, 0, 0, 1, 0, 0]], np.int32), "sbuf")
    d = ndarray((1, 9), "int32", "sbuf")
    nonzero_with_count(d, x, index_offset=16, padding_val=-1)
    assert d.numpy()[0].tolist() == [17, 18, 21, -1, -1, -1, -1, -1, 3]


@nki.jit
def _nonzero_of_row0(x, store_row):
    """Load x (1, T) into partition 0 of a 128-partition tile nothing else writes, find its
    non-zeros, store row `store_row` of the result."""
    t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[0, :], src=x[0, :])
    d = nl.ndarray((128, x.shape[1] + 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.nonzero_with_count(dst=d, src=t, index_offset=3, padding_val=-1)
    out = nl.ndarray((1, x.shape[1] + 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[0, :], src=d[store_row, :])
    return out


def test_nonzero_with_count_reads_only_partitions_0_16_and_up():
    # the docstring: only partitions 0, 16, ..., 112 are read; rows 1..15 (unwritten here)
    # are not, and row 0's result is the docstring's, whatever rows 16, 32, ... hold
    x = np.array([[0, 2, 0, -1, 0, 0, 5, 0]], np.float32)
    got = _nonzero_of_row0(x, 0)
    assert got[0].tolist() == [4, 6, 9, -1, -1, -1, -1, -1, 3]


def test_a_nonzero_row_found_in_unwritten_data_is_unwritten():
    # row 16 of src is read but nothing wrote it: row 16 of dst holds garbage (as on
    # hardware), an error only when it is stored
    with pytest.raises(ApdslError) as e:
        _nonzero_of_row0(np.ones((1, 8), np.float32), 16)
    assert e.value.code == "APK412", e.value.message
    assert "t[16, 0] was never written when nonzero_with_count" in e.value.message


def test_nonzero_with_count_on_a_tile_at_partition_16():
    # partitions are counted physically: a tile placed at partition 16 has its row 0 read
    x = (np.arange(32 * 6).reshape(32, 6) % 4 == 1).astype(np.float32)
    big = ndarray((48, 6), "float32", "sbuf")
    apdsl.dma_copy(big[16:48, :], from_numpy(x))
    d = ndarray((48, 7), "int32", "sbuf")
    nonzero_with_count(d[16:48, :], big[16:48, :], padding_val=-1)
    for p in (16, 32):
        idx = np.flatnonzero(x[p - 16])
        assert d[p:p + 1, :].numpy()[0].tolist() == [*idx, *[-1] * (6 - idx.size), idx.size]
    assert _codes(lambda: nonzero_with_count(d[0:32, :], big[16:48, :])) == "APK925"


def test_nonzero_with_count_refusals():
    x = _sbuf(np.ones((16, 8)))
    assert _codes(lambda: nonzero_with_count(ndarray((16, 8), "int32", "sbuf"), x)) == "APK371"
    assert _codes(lambda: nonzero_with_count(ndarray((16, 9), "float32", "sbuf"),
                                             x)) == "APK461"


# -- nl.broadcast_to, nl.shared_constant, nl.shared_identity_matrix, nl.device_print ---------------

@nki.jit
def _broadcasts(row, col, block):
    out_row = nl.ndarray((128, row.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    out_col = nl.ndarray((col.shape[0], 24), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    out_block = nl.ndarray((64, 12), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out_row, nl.broadcast_to(nl.load(row), (128, row.shape[1])))
    nl.store(out_col, nl.broadcast_to(nl.load(col), (col.shape[0], 24), dtype=nl.bfloat16))
    nl.store(out_block, nl.broadcast_to(nl.load(block), (64, 12)))
    return out_row, out_col, out_block


@pytest.mark.parametrize("width", [7, 512, 1300])
def test_broadcast_to_is_numpys_broadcast(width):
    rng = np.random.default_rng(width)
    row = rng.standard_normal((1, width)).astype(np.float32)
    col = rng.standard_normal((96, 1)).astype(np.float32)
    block = rng.standard_normal((1, 1)).astype(np.float32)
    got_row, got_col, got_block = _broadcasts(row, col, block)
    np.testing.assert_array_equal(got_row, np.broadcast_to(row, (128, width)))
    np.testing.assert_array_equal(got_col.astype(np.float32),
                                  np.broadcast_to(col, (96, 24)).astype(
                                      got_col.dtype).astype(np.float32))
    np.testing.assert_array_equal(got_block, np.broadcast_to(block, (64, 12)))


def test_broadcast_to_refusals():
    @nki.jit
    def bad_shape(a):
        nl.broadcast_to(nl.load(a), (128, 3, 2))
        return a

    assert _codes(lambda: bad_shape(np.ones((2, 3), np.float32))) == "APK926"


@nki.jit
def _int_broadcast(row, block):
    out_row = nl.ndarray((128, row.shape[1]), dtype=row.dtype, buffer=nl.shared_hbm)
    out_block = nl.ndarray((32, 3, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out_row, nl.broadcast_to(nl.load(row), (128, row.shape[1])))
    nl.store(out_block, nl.broadcast_to(nl.load(block), (32, 3, 4), dtype=nl.float32))
    return out_row, out_block


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int16", "uint16", "int8", "uint8"])
def test_an_integer_tile_broadcasts_across_partitions_bit_for_bit(dtype):
    # the docs' own broadcast_to example broadcasts an int32 [1, 64] tile to 128 partitions;
    # values past 2**24 (where float32 stops holding every integer) and negative ones included
    info = np.iinfo(dtype)
    rng = np.random.default_rng(len(dtype))
    row = rng.integers(info.min, info.max, (1, 700), dtype=dtype, endpoint=True)
    row[0, :4] = [info.min, info.max, 0, info.max - 1]
    block = rng.integers(info.min, info.max, (1, 3, 1), dtype=dtype, endpoint=True)
    got_row, got_block = _int_broadcast(row, block)
    assert got_row.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got_row, np.broadcast_to(row, (128, 700)))
    np.testing.assert_array_equal(got_block, np.broadcast_to(block, (32, 3, 4)).astype(
        np.float32))


@nki.jit
def _constants(a):
    ident = nl.shared_identity_matrix(a.shape[0], dtype=nl.float32)
    table = nl.shared_constant(np.linspace(0, 1, a.shape[0] * a.shape[1]).reshape(a.shape),
                               dtype=nl.float32)
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    prod = nl.matmul(ident, nl.load(a), transpose_x=True)     # I.T @ a == a
    nl.device_print("identity times a:", prod)
    nl.store(out, nl.add(nl.copy(prod), nl.load(table)))
    return out


def test_shared_constants_and_device_print(capsys):
    a = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float32)
    got = _constants(a)
    want = a + np.linspace(0, 1, a.size).reshape(a.shape).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    printed = capsys.readouterr().out
    assert printed.startswith("identity times a: [[")


def test_shared_constant_from_an_npy_file_and_identity_into_dst(tmp_path):
    np.save(tmp_path / "c.npy", np.arange(12, dtype=np.int32).reshape(3, 4))

    @nki.jit
    def k(a):
        c = nl.shared_constant(str(tmp_path / "c.npy"))
        ident = nl.ndarray((4, 4), dtype=nl.uint8, buffer=nl.sbuf)
        nl.shared_identity_matrix(4, dst=ident)
        out = nl.ndarray((3, 4), dtype=nl.int32, buffer=nl.shared_hbm)
        eye = nl.ndarray((4, 4), dtype=nl.uint8, buffer=nl.shared_hbm)
        nl.store(out, nl.load(c))
        nl.store(eye, ident)
        return out, eye

    out, eye = k(np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(out, np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(eye, np.eye(4, dtype=np.uint8))
