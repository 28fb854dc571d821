"""nc_transpose and dma_transpose against NumPy (`np.transpose`), and every refusal the NKI isa
reference gives them (docs/facts/nki_isa.md 3.8, 3.9)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.core import trace
from apdsl.runtime.instructions import dma_copy, dma_transpose, nc_matmul, nc_transpose
from apdsl.tensor import targets
from apdsl.tensor.view import from_numpy, ndarray

RNG = np.random.default_rng(11)


def onchip(values: np.ndarray, buffer: str = "sbuf") -> apdsl.Tensor:
    """An on-chip tile holding `values` (loaded by DMA, or through SBUF for PSUM)."""
    t = ndarray(values.shape, values.dtype.name if values.dtype != np.float32 else "float32",
                "sbuf")
    dma_copy(t, from_numpy(values))
    if buffer == "psum":
        p = ndarray(values.shape, t.dtype.name, "psum")
        apdsl.tensor_copy(p, t)
        return p
    return t


def engine_of_last(op: str) -> str | None:
    with trace.tracing() as tr:
        op()
    return tr.records[-1].engine


# -- nc_transpose -----------------------------------------------------------------------------

@given(p=st.integers(1, 128), f=st.integers(1, 128))
def test_tensor_engine_transpose_is_numpy_transpose(p, f):
    a = RNG.standard_normal((p, f)).astype(np.float32)
    x = onchip(a)
    y = ndarray((f, p), "float32", "psum")
    nc_transpose(y, x, engine="tensor")
    np.testing.assert_array_equal(y.numpy(), a.T)


@given(p=st.integers(1, 32), f1=st.integers(1, 8), f2=st.integers(1, 4),
       src_buf=st.sampled_from(["sbuf", "psum"]), dst_buf=st.sampled_from(["sbuf", "psum"]))
def test_vector_engine_flattens_free_axes(p, f1, f2, src_buf, dst_buf):
    a = RNG.integers(-100, 100, (p, f1, f2)).astype(np.float32)
    x = onchip(a, src_buf)
    y = ndarray((f1 * f2, p), "float32", dst_buf)
    nc_transpose(y, x, engine="vector")
    np.testing.assert_array_equal(y.numpy(), a.reshape(p, -1).T)


def test_integer_and_bf16_tiles_move_bits_exactly():
    a = RNG.integers(-2**31, 2**31 - 1, (16, 24)).astype(np.int32)
    y = ndarray((24, 16), "int32", "psum")
    nc_transpose(y, onchip(a))
    np.testing.assert_array_equal(y.numpy(), a.T)
    b = np.array([[np.nan, -0.0], [np.inf, 1.5]], np.float32)
    z = ndarray((2, 2), "float32", "sbuf")
    nc_transpose(z, onchip(b))
    assert np.array_equal(z.numpy(), b.T, equal_nan=True)
    assert np.signbit(z.numpy()[1, 0])


def test_default_engine_is_vector_when_the_tile_fits_else_tensor():
    small = onchip(np.ones((32, 32), np.float32))
    big = onchip(np.ones((33, 8), np.float32))
    assert engine_of_last(lambda: nc_transpose(ndarray((32, 32), "float32", "psum"),
                                               small)) == "vector"
    assert engine_of_last(lambda: nc_transpose(ndarray((8, 33), "float32", "psum"),
                                               big)) == "tensor"
    assert engine_of_last(lambda: nc_transpose(ndarray((32, 32), "float32", "psum"), small,
                                               engine="tensor")) == "tensor"


def test_trn1_tensor_engine_is_a_float32_matmul_with_identity():
    a = np.array([[1.0, 2.0], [np.inf, 3.0], [4.0, 5.0]], np.float32)  # (3, 2)
    with targets.target("trn1"):
        x = onchip(a)
        y = ndarray((2, 3), "float32", "psum")
        nc_transpose(y, x, engine="tensor")
        # the docs' warning: the Inf spreads along its output row (Inf * 0 = NaN)
        with np.errstate(invalid="ignore"):
            expect = a.T @ np.eye(3, dtype=np.float32)
        assert np.array_equal(y.numpy(), expect, equal_nan=True)
        assert np.isnan(y.numpy()[0, 0]) and y.numpy()[0, 1] == np.inf
        v = ndarray((2, 3), "float32", "psum")
        nc_transpose(v, x, engine="vector")  # the Vector Engine moves bits
        np.testing.assert_array_equal(v.numpy(), a.T)
        with raises_code("APK391"):
            nc_transpose(ndarray((2, 3), "int32", "psum"), onchip(np.ones((3, 2), np.int32)),
                         engine="tensor")


def test_tensor_engine_transpose_overwrites_psum_like_a_transpose_matmul():
    a = RNG.standard_normal((8, 8)).astype(np.float32)
    x = onchip(a)
    y = ndarray((8, 8), "float32", "psum")
    nc_transpose(y, x, engine="tensor")
    # accumulate=None after a transpose: fresh, so the matmul overwrites
    nc_matmul(y, x, x)
    # float32 sums in another order than NumPy's: within the dot product's error bound,
    # n * eps * sum |a_ki a_kj| (a cancelling sum near 0 is off by more than rtol says)
    bound = 8 * np.finfo(np.float32).eps * (np.abs(a).T @ np.abs(a))
    error = np.abs(y.numpy() - a.T.astype(np.float64) @ a)
    assert (error <= bound).all(), (error / bound).max()


def test_nc_transpose_refusals():
    x = onchip(np.ones((64, 64), np.float32))
    with raises_code("APK391"):  # too large for the Vector Engine, Tensor needs PSUM dst
        nc_transpose(ndarray((64, 64), "float32", "sbuf"), x)
    with raises_code("APK391"):
        nc_transpose(ndarray((64, 64), "float32", "psum"), x, engine="vector")
    with raises_code("APK390"):  # Tensor Engine reads SBUF, writes PSUM
        nc_transpose(ndarray((64, 64), "float32", "sbuf"), x, engine="tensor")
    with raises_code("APK392"):
        nc_transpose(ndarray((64, 32), "float32", "psum"), x)
    with raises_code("APK393"):
        nc_transpose(ndarray((64, 64), "bfloat16", "psum"), x)
    with raises_code("APK309"):
        nc_transpose(ndarray((4, 4), "float32", "psum"), from_numpy(np.ones((4, 4), np.float32)))
    with raises_code("APK348"):  # GpSimd cannot run it
        nc_transpose(ndarray((64, 64), "float32", "psum"), x, engine="gpsimd")
    with raises_code("APK461"):
        nc_transpose(ndarray((4, 4), "int64", "psum"), ndarray((4, 4), "int64", "sbuf"))
    with raises_code("APK343"), targets.target("trn1"):
        t = ndarray((64, 8), "float32", "sbuf")
        nc_transpose(ndarray((8, 16), "float32", "psum"), t[16:32])


# -- dma_transpose ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axes", [((16, 40), (1, 0)), ((3, 5, 7), (2, 1, 0)),
                                        ((2, 3, 4, 5), (3, 1, 2, 0))])
@pytest.mark.parametrize("src_buf", ["hbm", "sbuf"])
def test_dma_transpose_is_np_transpose(shape, axes, src_buf):
    a = RNG.standard_normal(shape).astype(np.float32)
    src = from_numpy(a) if src_buf == "hbm" else onchip(a)
    want = np.transpose(a, axes)
    dst = ndarray(want.shape, "float32", "sbuf")
    dma_transpose(dst, src)  # axes default to the rank's permutation
    np.testing.assert_array_equal(dst.numpy(), want)
    dst2 = ndarray(want.shape, "float32", "sbuf")
    dma_transpose(dst2, src, axes=axes)
    np.testing.assert_array_equal(dst2.numpy(), want)


@given(rows=st.sampled_from([1, 2, 4, 8, 16]), k=st.integers(1, 4), last=st.integers(1, 128))
def test_hwdge_3d_transposes_within_the_rules(rows, k, last):
    mid = k * (16 // rows)  # so (rows * mid) % 16 == 0
    a = RNG.standard_normal((rows, mid, last)).astype(np.float16)
    dst = ndarray((last, mid, rows), "float16", "sbuf")
    dma_transpose(dst, from_numpy(a), dge_mode="hwdge")
    np.testing.assert_array_equal(dst.numpy(), np.transpose(a, (2, 1, 0)))


def test_hwdge_rules_apply_only_with_hwdge():
    a = from_numpy(RNG.standard_normal((8, 100)).astype(np.float32))
    dst = ndarray((100, 8), "float32", "sbuf")
    dma_transpose(dst, a)  # 4-byte, shape[0] 8: fine without hwdge
    np.testing.assert_array_equal(dst.numpy(), a.numpy().T)
    # (src.shape[-1] <= 128 always holds: it is dst's partition count)
    for shape, dtype in [((8, 64), "float16"), ((16, 64), "float32"), ((16, 64), "int8")]:
        with raises_code("APK396"):
            dma_transpose(ndarray(shape[::-1], dtype, "sbuf"),
                          ndarray(shape, dtype, "hbm"), dge_mode="hwdge")
    with raises_code("APK396"):  # 3-d: (shape[0] * shape[-2]) % 16
        dma_transpose(ndarray((8, 3, 2), "float16", "sbuf"), ndarray((2, 3, 8), "float16", "hbm"),
                      dge_mode="hwdge")
    with raises_code("APK396"):  # 3-d: shape[0] in {1, 2, 4, 8, 16}
        dma_transpose(ndarray((8, 16, 3), "float16", "sbuf"),
                      ndarray((3, 16, 8), "float16", "hbm"), dge_mode="hwdge")


def test_dma_transpose_refusals():
    a = from_numpy(np.ones((16, 32), np.float16))
    with raises_code("APK394"), targets.target("trn1"):
        dma_transpose(ndarray((32, 16), "float16", "sbuf"), a)
    with raises_code("APK395"):
        dma_transpose(ndarray((16, 32), "float16", "sbuf"), a, axes=(0, 1))
    with raises_code("APK395"):
        dma_transpose(ndarray((32, 16), "float16", "sbuf"), a, axes=(2, 1, 0))
    with raises_code("APK395"):  # 5-d has no DMA transpose
        dma_transpose(ndarray((2,) * 5, "float16", "sbuf"), ndarray((2,) * 5, "float16", "hbm"))
    with raises_code("APK392"):
        dma_transpose(ndarray((16, 32), "float16", "sbuf"), a)
    with raises_code("APK392"):  # the rank must match too
        dma_transpose(ndarray((32, 16, 1), "float16", "sbuf"), a)
    with raises_code("APK393"):
        dma_transpose(ndarray((32, 16), "float32", "sbuf"), a)
    with raises_code("APK309"):  # dst is SBUF only
        dma_transpose(ndarray((32, 16), "float16", "hbm"), a)
    with raises_code("APK390"):
        dma_transpose(ndarray((32, 16), "float16", "sbuf"), ndarray((16, 32), "float16", "psum"))
    with raises_code("APK397"):
        dma_transpose(ndarray((32, 16), "float16", "sbuf"), a, dge_mode="swdge")
    with raises_code("APK397"):
        dma_transpose(ndarray((32, 16), "float16", "sbuf"), a, oob_mode="skip")
    with raises_code("APK347"):  # priority is trn3 only
        dma_transpose(ndarray((32, 16), "float16", "sbuf"), a, priority=1)


@pytest.mark.parametrize("mode", ["none", 3, "hwdge", "unknown"])
def test_a_static_dma_transpose_takes_dge_mode_none_hwdge_or_unknown(mode):
    # the NKI DGE guide's table: a static transpose takes none, hwdge or the compiler's
    # choice (nki-library passes none as the number 3); the data is np.transpose's whatever
    # builds the descriptors
    a = RNG.standard_normal((16, 32)).astype(np.float16)
    t = ndarray((32, 16), "float16", "sbuf")
    dma_transpose(t, from_numpy(a), dge_mode=mode)
    np.testing.assert_array_equal(t.numpy(), a.T)


def test_a_dma_transpose_with_a_scalar_offset_takes_any_dge_mode():
    # (the DGE guide's table); the transpose moves rows 5..20 of the table
    table = RNG.standard_normal((40, 32)).astype(np.float16)
    at = onchip(np.array([[5]], np.int32))
    for mode in ("swdge", "none", "hwdge", "unknown"):
        t = ndarray((32, 16), "float16", "sbuf")
        src = from_numpy(table).ap([[32, 16], [1, 32]], offset=0, scalar_offset=at,
                                   indirect_dim=0)
        dma_transpose(t, src, dge_mode=mode)
        np.testing.assert_array_equal(t.numpy(), table[5:21].T)


def test_indirect_transpose_gathers_rows_then_transposes():
    table = RNG.standard_normal((64, 32)).astype(np.float16)
    rows = RNG.integers(0, 64, 32).astype(np.uint32)
    idx = onchip(rows.reshape(32, 1))
    src = from_numpy(table).ap([[32, 32], [1, 32]], vector_offset=idx, indirect_dim=0)
    dst = ndarray((32, 32), "float16", "sbuf")
    dma_transpose(dst, src, axes=(1, 0))
    np.testing.assert_array_equal(dst.numpy(), table[rows].T)
    with raises_code("APK398"):  # 4-byte gather-transpose
        dma_transpose(ndarray((32, 32), "float32", "sbuf"),
                      from_numpy(table.astype(np.float32)).ap([[32, 32], [1, 32]],
                                                              vector_offset=idx, indirect_dim=0))
    with raises_code("APK398"):  # int32 indices
        i32 = onchip(rows.astype(np.int32).reshape(32, 1))
        dma_transpose(dst, from_numpy(table).ap([[32, 32], [1, 32]], vector_offset=i32,
                                                indirect_dim=0))
    with raises_code("APK495"):  # a gather needs software DGE
        dma_transpose(dst, src, dge_mode="hwdge")
    with raises_code("APK398"):  # two index columns need 128 index rows
        i2 = onchip(np.zeros((16, 2), np.uint32))
        dma_transpose(dst, from_numpy(table).ap([[32, 32], [1, 32]], vector_offset=i2,
                                                indirect_dim=0))


@given(cols=st.integers(1, 3), d1=st.integers(1, 3), d3=st.integers(1, 16))
def test_gather_transpose_reads_2d_indices_column_first(cols, d1, d3):
    rows = 128 if cols > 1 else 16 * d1
    n = rows * cols  # rows gathered: every index
    table = RNG.standard_normal((50, d1, 1, d3)).astype(np.float16)
    indices = RNG.integers(0, 50, (rows, cols)).astype(np.uint32)
    idx = onchip(indices)
    src = from_numpy(table).ap([[d1 * d3, n], [d3, d1], [d3, 1], [1, d3]], vector_offset=idx,
                               indirect_dim=0)
    dst = ndarray((d3, d1, 1, n), "float16", "sbuf")
    dma_transpose(dst, src, axes=(3, 1, 2, 0))
    flat = indices.T.flatten()[:n]  # the docstring's NumPy statement
    np.testing.assert_array_equal(dst.numpy(), np.transpose(table[flat], (3, 1, 2, 0)))


def test_gather_transpose_index_out_of_range_is_an_error_without_skip():
    table = from_numpy(np.ones((20, 16), np.float16))
    idx = onchip(np.array([[3]] * 15 + [[20]], np.uint32))
    src = table.ap([[16, 16], [1, 16]], vector_offset=idx, indirect_dim=0)
    with raises_code("APK403") as err:
        dma_transpose(ndarray((16, 16), "float16", "sbuf"), src)
    assert "[15, 0] = 20" in err.value.message
    sel = table.vector_select(0, idx)
    with raises_code("APK402"):
        dma_transpose(ndarray((16, 16), "float16", "sbuf"), sel)


def test_check_mode_checks_transposes_without_data(tmp_path):
    from apdsl.semantics.program import Program
    path = tmp_path / "t.apk"
    path.write_text("a: f16[16, 32] @ hbm = 1.0\nt: f16[16, 32] @ sbuf\n"
                    "dma_transpose(t, a)\n")
    errors = Program.from_path(str(path)).check()
    assert [e.code for e in errors] == ["APK392"]
    path.write_text("A: f16[64, 16] @ hbm = 1.0\ni: u32[128, 2] @ sbuf = 0\n"
                    "t: f16[16, 256] @ sbuf\n"
                    "dma_transpose(t, A.ap([[16, 256], [1, 16]], vector_offset=i, "
                    "indirect_dim=0))\n"
                    "u: f16[16, 200] @ sbuf\n"
                    "dma_transpose(u, A.ap([[16, 256], [1, 16]], vector_offset=i, "
                    "indirect_dim=0))\n")
    errors = Program.from_path(str(path)).check()
    assert [(e.code, e.span.line) for e in errors] == [("APK392", 6)]
