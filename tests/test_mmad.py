"""mmad: the cube unit's `dst (+)= a @ b` over fractal operands, valid extents and strict K
padding.  Oracles: NumPy matmul in float64 (exact for the small integer-valued data used), and
`formats.convert` for the fractal storage of the result."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.ascend.mmad import mmad
from apdsl.runtime.core import execute
from apdsl.runtime.core.options import options
from apdsl.tensor import formats
from apdsl.tensor.tla import get_tile, make_tensor_like, tile_view
from apdsl.tensor.view import from_numpy, ndarray

ACC = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "int8": "int32"}
NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
      "int8": np.int8}




def ints(shape, dt, seed):
    """Small integers: every product and sum is exact in float16 inputs and float32 sums."""
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(NP[dt])


def operands(m, k, n, dt, seed=0):
    """GM data and on-chip tiles (whole fractals, valid extent m, k, n) loaded the CATLASS way."""
    a, b = ints((m, k), dt, seed), ints((k, n), dt, seed + 1)
    A, B = from_numpy(a, "gm"), from_numpy(b, "gm")
    # B's L1 tile holds K in whole fractals of L0B too (32 rows for int8, more than NZ's 16),
    # as CATLASS's L1 tiles do: LoadData moves every L0B fractal the valid extent touches
    c0 = formats.c0_for(dt)
    kb = max(16, c0)
    a1 = make_tensor_like("l1", A, "NZ")
    b1 = make_tensor_like("l1", B, "NZ", layout_base=(-(-k // kb) * kb, -(-n // c0) * c0))
    # B's K padding (rows past K), which the cube unit reads in strict mode and no copy writes
    # (A's is zeroed by Nd2Nz; LoadData moves both as they are)
    apdsl.memset(b1.ap([[1, b1.storage.nbytes // 2]], dtype="int16"), 0)
    apdsl.dma_copy(a1, A)
    apdsl.dma_copy(b1, B)
    a0, b0 = make_tensor_like("l0a", a1, "ZZ"), make_tensor_like("l0b", b1, "ZN")
    apdsl.dma_copy(a0, a1)
    apdsl.dma_copy(b0, b1)
    c = make_tensor_like("l0c", ndarray((m, n), ACC[dt], "gm"), "NZ")
    return a, b, a0, b0, c


def expect(a, b, dt):
    out = a.astype(np.float64) @ b.astype(np.float64)
    return out.astype(np.int32) if dt == "int8" else out.astype(np.float32)


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "int8"])
@pytest.mark.parametrize("strict", [False, True])
def test_mmad_matches_numpy_with_tails(dt, strict):
    a, b, a0, b0, c = operands(20, 37, 9, dt)
    with options(strict_padding=strict):
        mmad(c, a0, b0)
    got = c.numpy()
    assert got.dtype == np.dtype(ACC[dt]) and got.shape == (20, 9)
    np.testing.assert_array_equal(got, expect(a, b, dt))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.integers(1, 40),
       st.sampled_from(["float16", "int8", "float32"]), st.booleans())
def test_mmad_any_shape(m, k, n, dt, strict):
    a, b, a0, b0, c = operands(m, k, n, dt, seed=m * 7 + k)
    with options(strict_padding=strict):
        mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), expect(a, b, dt))


def test_accumulate_adds_to_dst_and_the_result_is_nz_storage():
    a, b, a0, b0, c = operands(32, 48, 32, "float16")
    mmad(c, a0, b0)
    mmad(c, a0, b0, accumulate=True)
    want = 2 * expect(a, b, "float16")
    np.testing.assert_array_equal(c.numpy(), want)
    # L0C holds 16 x 16 fractals of float32: the storage is formats.convert's NZ with c0=16
    raw = c.storage.elements(c.dtype)
    np.testing.assert_array_equal(raw, formats.convert(want, "ND", "NZ", c0=16).reshape(-1))


def test_int32_accumulator_wraps():
    a0 = ndarray((16, 32), "int8", "l0a", "ZZ")
    b0 = ndarray((32, 16), "int8", "l0b", "ZN")
    c = ndarray((16, 16), "int32", "l0c", "NZ")
    execute.write_view(a0, np.full((16, 32), 127, np.int8))
    execute.write_view(b0, np.full((32, 16), 127, np.int8))
    execute.write_view(c, np.full((16, 16), 2**31 - 100, np.int32))
    mmad(c, a0, b0, accumulate=True)
    want = (np.int64(2**31 - 100) + 32 * 127 * 127 + 2**31) % 2**32 - 2**31
    assert (c.numpy() == want).all()


def test_mmad_on_aligned_sub_tiles_of_bigger_buffers():
    a = ints((64, 64), "float16", 5)
    b = ints((64, 64), "float16", 6)
    a0 = ndarray((64, 64), "float16", "l0a", "ZZ")
    b0 = ndarray((64, 64), "float16", "l0b", "ZN")
    execute.write_view(a0, a)
    execute.write_view(b0, b)
    c = ndarray((64, 64), "float32", "l0c", "NZ")
    sub = get_tile(c, (16, 32), (32, 16))
    mmad(sub, get_tile(a0, (16, 16), (32, 48)), get_tile(b0, (16, 32), (48, 16)))
    np.testing.assert_array_equal(sub.numpy(), expect(a[16:48, 16:64], b[16:64, 32:48],
                                                      "float16"))


def test_only_the_valid_extent_is_read_and_written():
    # rows of a past M and columns of b past N are never written: mmad must not read them
    m, k, n = 5, 16, 3
    a0 = make_tensor_like("l0a", ndarray((m, k), "float16", "gm"), "ZZ")
    b0 = make_tensor_like("l0b", ndarray((k, n), "float16", "gm"), "ZN")
    a, b = ints((m, k), "float16", 1), ints((k, n), "float16", 2)
    execute.write_view(a0[0:m, 0:k], a)
    execute.write_view(b0[0:k, 0:n], b)
    c = make_tensor_like("l0c", ndarray((m, n), "float32", "gm"), "NZ")
    with options(strict_padding=True):  # K = 16 is whole fractals: nothing else to read
        mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), expect(a, b, "float16"))
    written = c.storage.mask.reshape(16, 16)
    assert written.sum() == m * n and written[:m, :n].all()


# ---------------------------------------------------------------------------- strict padding

def _unpadded(k: int):
    """Operands whose K padding nothing wrote (copies move only the valid extent)."""
    a, b = ints((16, k), "float16", 3), ints((k, 16), "float16", 4)
    a0 = make_tensor_like("l0a", ndarray((16, k), "float16", "gm"), "ZZ")
    b0 = make_tensor_like("l0b", ndarray((k, 16), "float16", "gm"), "ZN")
    execute.write_view(a0[:, 0:k], a)
    execute.write_view(b0[0:k, :], b)
    c = make_tensor_like("l0c", ndarray((16, 16), "float32", "gm"), "NZ")
    return a, b, a0, b0, c


def test_strict_padding_reports_k_padding_nothing_wrote():
    a, b, a0, b0, c = _unpadded(20)
    mmad(c, a0, b0)  # the valid extent is all written
    np.testing.assert_array_equal(c.numpy(), expect(a, b, "float16"))
    with options(strict_padding=True), raises_code("APK404") as err:
        mmad(c, a0, b0)
    assert "mmad" in err.value.message and "before anything wrote it" in err.value.message
    assert err.value.facts["coord"] == (0, 20)  # the first K padding element of a
    with options(strict_padding=True, init_check=False):  # unwritten reads as 0
        mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), expect(a, b, "float16"))


def test_strict_padding_reads_what_the_padding_holds():
    a, b, a0, b0, c = _unpadded(20)
    execute.write_view(a0[:, 20:32], np.ones((16, 12), np.float16))
    execute.write_view(b0[20:32, :], np.full((12, 16), 2, np.float16))
    mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), expect(a, b, "float16"))
    with options(strict_padding=True):
        mmad(c, a0, b0)  # hardware multiplies the padding too: 12 extra ones * twos
    np.testing.assert_array_equal(c.numpy(), expect(a, b, "float16") + 24)


def test_strict_padding_on_plain_tensors_reads_their_storage_padding():
    a0 = ndarray((16, 20), "float16", "l0a", "ZZ")
    b0 = ndarray((20, 16), "float16", "l0b", "ZN")
    c = ndarray((16, 16), "float32", "l0c", "NZ")
    execute.write_view(a0, np.ones((16, 20), np.float16))
    execute.write_view(b0, np.ones((20, 16), np.float16))
    with options(strict_padding=True), raises_code("APK404"):
        mmad(c, a0, b0)
    apdsl.memset(a0.ap([[1, a0.storage.elements_total]]), 0)
    apdsl.memset(b0.ap([[1, b0.storage.elements_total]]), 0)
    execute.write_view(a0, np.ones((16, 20), np.float16))
    execute.write_view(b0, np.ones((20, 16), np.float16))
    with options(strict_padding=True):
        mmad(c, a0, b0)
    assert (c.numpy() == 20).all()


def test_padding_out_of_reach():
    a = ndarray((16, 32), "float16", "l0a", "ZZ")[:, 0:1]
    b = ndarray((32, 16), "float16", "l0b", "ZN")[0:1, :]
    c = ndarray((16, 16), "float32", "l0c", "NZ")
    apdsl.memset(a, 1.0)
    apdsl.memset(b, 1.0)
    mmad(c, a, b)
    assert (c.numpy() == 1).all()
    with options(strict_padding=True), raises_code("APK526"):
        mmad(c, a, b)


# ---------------------------------------------------------------------------- rules

def _ok():
    return (ndarray((16, 32), "float16", "l0a", "ZZ"), ndarray((32, 16), "float16", "l0b", "ZN"),
            ndarray((16, 16), "float32", "l0c", "NZ"))


@pytest.mark.parametrize("role,bad", [
    ("a", ("l1", "NZ")), ("a", ("l0a", "ND")), ("b", ("l0b", "ND")), ("b", ("l1", "ZN")),
    ("dst", ("l0c", "ND")), ("dst", ("gm", "NZ"))])
def test_operand_buffers_and_formats(role, bad):
    a, b, c = _ok()
    shapes = {"a": (16, 32), "b": (32, 16), "dst": (16, 16)}
    dts = {"a": "float16", "b": "float16", "dst": "float32"}
    wrong = ndarray(shapes[role], dts[role], *bad)
    args = {"a": a, "b": b, "dst": c, role: wrong}
    with raises_code("APK520") as err:
        mmad(args["dst"], args["a"], args["b"])
    assert err.value.facts["role"] == role


def test_operands_are_matrices():
    a, b, c = _ok()
    with raises_code("APK520"):
        mmad(c, ndarray((2, 16, 32), "float16", "l0a", "ZZ"), b)


@pytest.mark.parametrize("da,db,dc", [("float16", "bfloat16", "float32"),
                                      ("float16", "float16", "float16"),
                                      ("int8", "int8", "float32"),
                                      ("int16", "int16", "int32"),
                                      ("float32", "float16", "float32")])
def test_dtypes(da, db, dc):
    a = ndarray((16, 32), da, "l0a", "ZZ")
    b = ndarray((32, 16), db, "l0b", "ZN")
    c = ndarray((16, 16), dc, "l0c", "NZ")
    with raises_code("APK521"):
        mmad(c, a, b)


@pytest.mark.parametrize("sa,sb,sc", [((16, 32), (16, 16), (16, 16)),
                                      ((16, 32), (32, 16), (32, 16)),
                                      ((16, 32), (32, 32), (16, 16))])
def test_shapes(sa, sb, sc):
    with raises_code("APK522"):
        mmad(ndarray(sc, "float32", "l0c", "NZ"), ndarray(sa, "float16", "l0a", "ZZ"),
             ndarray(sb, "float16", "l0b", "ZN"))


def test_valid_extents_must_agree():
    A = ndarray((40, 40), "float16", "gm")
    a0 = make_tensor_like("l0a", tile_view(A, (1, 0), (32, 32)), "ZZ")  # valid (8, 32)
    b0 = make_tensor_like("l0b", tile_view(A, (0, 1), (32, 32)), "ZN")  # valid (32, 8)
    c = make_tensor_like("l0c", tile_view(A, (1, 0), (32, 32)), "NZ", "float32")  # (8, 32)
    with raises_code("APK522") as err:
        mmad(c, a0, b0)
    assert "N: b 8, dst 32" in err.value.notes[1]


@pytest.mark.parametrize("role", ["a", "b", "dst"])
def test_operands_start_on_a_fractal_boundary(role):
    a0 = ndarray((32, 32), "float16", "l0a", "ZZ")
    b0 = ndarray((32, 32), "float16", "l0b", "ZN")
    c0 = ndarray((32, 32), "float32", "l0c", "NZ")
    a, b, c = a0[0:16, 0:16], b0[0:16, 0:16], c0[0:16, 0:16]
    if role == "a":
        a = a0[8:24, 0:16]
    elif role == "b":
        b = b0[0:16, 8:24]
    else:
        c = c0[0:16, 4:20]
    with raises_code("APK523"):
        mmad(c, a, b)


def test_argument_kinds():
    a, b, c = _ok()
    with raises_code("APK420"):
        mmad(c, a, "b")
    with raises_code("APK420"):
        mmad(c, a, b, accumulate=1)


def test_check_mode_validates_without_data():
    a, b, c = _ok()  # nothing written: executing would be APK404
    with options(execute=False):
        mmad(c, a, b, accumulate=True)
        with raises_code("APK522"):
            mmad(ndarray((32, 16), "float32", "l0c", "NZ"), a, b)
    assert not c.storage.all_written and c.storage.mask.sum() == 0


def test_mmad_is_traced():
    from apdsl.runtime.core import trace
    a, b, c = _ok()
    with options(execute=False), trace.tracing() as tr:
        mmad(c, a, b, name="mm0")
    (rec,) = tr.records
    assert rec.op == "mmad" and rec.name == "mm0" and set(rec.operands) == {"dst", "a", "b"}
    (ap,) = rec.operands["a"]
    assert ap.format == "ZZ" and ap.buffer == "l0a"


@pytest.mark.parametrize("m, k, n", [(128, 64, 256), (1, 16, 32), (17, 128, 48), (40, 100, 16),
                                     (128, 129, 64), (16, 512, 32)])
def test_nz_product_in_blocks_is_the_whole_product_bit_for_bit(m, k, n):
    # An NZ destination's product is made as its 16-column blocks, in its memory order: the
    # same float32 values, bit for bit, as one product of random (not integer) data; past
    # one K block of the BLAS kernel (K > blas.MAX_K) it is the one product itself
    from apdsl.runtime.ascend.mmad import leaf_product
    from apdsl.runtime.core.blas import product
    rng = np.random.default_rng(m * 1000 + k + n)
    left = rng.standard_normal((m, k)).astype(np.float32)
    right = rng.standard_normal((k, n)).astype(np.float32)
    got = leaf_product(left, right, (m, n // 16, 16))
    assert got.shape == (m, n // 16, 16)
    np.testing.assert_array_equal(got, product(left, right).reshape(m, n // 16, 16))
    if k <= 128:  # laid out as L0C stores it: 16-column blocks one after another
        assert got.transpose(1, 0, 2).flags.c_contiguous


def test_mmad_of_random_floats_is_the_same_with_plans_off():
    # float16 data whose sums round: the planned mmad (blocked product) against the general
    # path with every plan off, accumulating, bit for bit, and near the float64 product
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((96, 48)).astype(np.float16)
    results = []
    for plans in (True, False):
        with options(plans=plans):
            A, B = from_numpy(a, "gm"), from_numpy(b, "gm")
            a1, b1 = make_tensor_like("l1", A, "NZ"), make_tensor_like("l1", B, "NZ")
            apdsl.dma_copy(a1, A)
            apdsl.dma_copy(b1, B)
            a0, b0 = make_tensor_like("l0a", a1, "ZZ"), make_tensor_like("l0b", b1, "ZN")
            apdsl.dma_copy(a0, a1)
            apdsl.dma_copy(b0, b1)
            c = ndarray((64, 48), "float32", "l0c", "NZ")
            for i in range(3):  # (the second call on is the planned one)
                mmad(c, a0, b0, accumulate=i > 0)
            results.append(c.numpy())
    np.testing.assert_array_equal(results[0], results[1])
    want = 3 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(results[0], want, rtol=1e-5, atol=1e-4)
