"""The Ascend copy and memset rules of SPEC section 4: Nd2Nz into ZN from a column-major source,
dtypes (only Fixpipe converts), LoadData and Load2D moving whole fractals with their written
state, memset where AscendC has it, int4 mmad, and the lifetime of tiles bound with
`layout_base`.  Oracles: the CATLASS Nd2Nz parameter formula and the fractal layouts written
out in NumPy, NumPy matmul, NumPy/bit-level round-to-nearest-even."""

from __future__ import annotations

import gc
import weakref

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
from apdsl.semantics.program import Program
from apdsl.tensor.tla import make_tensor_like, tile_view
from apdsl.tensor.view import from_numpy, ndarray

NP = {"float16": np.float16, "int8": np.int8, "float32": np.float32}
C0 = {"float16": 16, "int8": 32, "float32": 8, "int4": 64}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def data(shape, dt="float16", seed=0):
    return np.random.default_rng(seed).integers(-8, 8, shape).astype(NP[dt])


def raw(t) -> np.ndarray:
    return t.storage.elements(t.storage.dtype).copy()


def written(t) -> np.ndarray:
    return t.storage.mask.copy()


# ---------------------------------------------------------------------------- Nd2Nz

def nd2nz(rows: np.ndarray, c0: int, c0_stride: int, size: int):
    """CATLASS's Nd2Nz (ndNum 1, dstNzNStride 1): row r, column d of the ND source goes to
    storage element (d // c0) * c0_stride * c0 + r * c0 + d % c0; every row's tail up to a
    multiple of c0 is zero; rows past nValue are not written.  Returns (storage, written)."""
    n_value, d_value = rows.shape
    out = np.zeros(size, rows.dtype)
    mask = np.zeros(size, bool)
    d = np.arange(cdiv(d_value, c0) * c0)
    r = np.arange(n_value)[:, None]
    offs = (d // c0) * c0_stride * c0 + r * c0 + d % c0
    values = np.zeros((n_value, d.size), rows.dtype)
    values[:, :d_value] = rows
    out[offs] = values
    mask[offs] = True
    return out, mask


def _col_major_source(b: np.ndarray, how: str):
    k, n = b.shape
    if how == "COLUMN_MAJOR":
        t = ndarray((k, n), str(b.dtype), "gm", "COLUMN_MAJOR")
        execute.write_view(t, b)
        return t
    if how == "transposed":
        return from_numpy(np.ascontiguousarray(b.T), "gm").permute((1, 0))
    # a tile reaching past the matrix: its valid extent is the matrix
    whole = from_numpy(np.ascontiguousarray(b.T), "gm").permute((1, 0))
    return apdsl.get_tile(whole, (0, 0), (k + 9, n + 3))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 70), st.integers(1, 40), st.sampled_from(["float16", "int8", "float32"]),
       st.sampled_from(["COLUMN_MAJOR", "transposed", "tile"]))
def test_gm_column_major_into_zn_zero_fills_each_columns_k_tail(k, n, dt, how):
    """SPEC: into ZN from a column-major source the K tail of each written column is zeroed up
    to the fractal, columns past the valid N are not written (CATLASS ColumnMajor -> nZ: Nd2Nz
    of the source's columns, dValue = K, dstNzC0Stride = N1 * 16)."""
    b = data((k, n), dt, seed=k * 100 + n)
    src = _col_major_source(b, how)
    dst = make_tensor_like("l1", src, "ZN") if how == "tile" else ndarray((k, n), dt, "l1", "ZN")
    apdsl.dma_copy(dst, src)
    c0 = C0[dt]
    size = cdiv(k, c0) * cdiv(n, 16) * 16 * c0
    want, want_written = nd2nz(b.T, c0, cdiv(n, 16) * 16, size)
    np.testing.assert_array_equal(written(dst), want_written)
    np.testing.assert_array_equal(raw(dst)[want_written], want[want_written])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.sampled_from(["float16", "int8", "float32"]))
def test_gm_row_major_into_nz_is_nd2nz(m, k, dt):
    """CATLASS RowMajor -> zN: Nd2Nz of the rows, dValue = K, dstNzC0Stride = M1 * 16."""
    a = data((m, k), dt, seed=m + 7 * k)
    dst = ndarray((m, k), dt, "l1", "NZ")
    apdsl.dma_copy(dst, from_numpy(a, "gm"))
    c0 = C0[dt]
    want, want_written = nd2nz(a, c0, cdiv(m, 16) * 16, cdiv(m, 16) * 16 * cdiv(k, c0) * c0)
    np.testing.assert_array_equal(written(dst), want_written)
    np.testing.assert_array_equal(raw(dst)[want_written], want[want_written])


# ---------------------------------------------------------------------------- dtypes

def test_only_fixpipe_converts():
    x = from_numpy(np.ones((16, 16), np.float32), "gm")
    with raises_code("APK540") as err:
        apdsl.dma_copy(ndarray((16, 16), "float16", "l1"), x)
    assert "float32" in err.value.message and "float16" in err.value.message
    with raises_code("APK540"):
        apdsl.dma_copy(ndarray((16, 16), "float16", "ub"), x)
    u = from_numpy(np.ones((16, 16), np.float32), "gm")
    ub = ndarray((16, 16), "float32", "ub")
    apdsl.dma_copy(ub, u)
    for dst in (ndarray((16, 16), "float16", "gm"), ndarray((16, 16), "bfloat16", "ub")):
        with raises_code("APK540"):
            apdsl.dma_copy(dst, ub)
    l1 = ndarray((16, 16), "float16", "l1", "NZ")
    apdsl.memset(l1, 1.0)
    with raises_code("APK540"):
        apdsl.dma_copy(ndarray((16, 16), "bfloat16", "l0a", "ZZ"), l1)


def _bf16_rne(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 rounding to nearest even, on the bits."""
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.view(ml_dtypes.bfloat16)


@pytest.mark.parametrize("to", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("dst_buffer", ["gm", "l1"])
def test_fixpipe_converts_float32_rounding_to_nearest_even(to, dst_buffer):
    # ties and near-ties of both targets' mantissas, plus ordinary values
    one = np.float32(1)
    ties = [one + np.float32(2.0 ** -11), one + np.float32(3 * 2.0 ** -11),
            one + np.float32(2.0 ** -8), one + np.float32(3 * 2.0 ** -8),
            np.float32(1 + 2.0 ** -8 + 2.0 ** -20)]
    x = np.resize(np.array(ties + list(np.linspace(-5, 5, 11)), np.float32), (16, 16))
    c = ndarray((16, 16), "float32", "l0c", "NZ")
    execute.write_view(c, x)
    out = ndarray((16, 16), to, dst_buffer)
    apdsl.dma_copy(out, c)
    got = out.numpy()
    want = {"float16": x.astype(np.float16), "bfloat16": _bf16_rne(x), "float32": x}[to]
    np.testing.assert_array_equal(got.view(np.uint8), np.asarray(want).view(np.uint8))


def test_fixpipe_moves_int32_and_refuses_quantisation():
    v = np.arange(-128, 128, dtype=np.int32).reshape(16, 16) * 65537
    c = ndarray((16, 16), "int32", "l0c", "NZ")
    execute.write_view(c, v)
    out = ndarray((16, 16), "int32", "gm")
    apdsl.dma_copy(out, c)
    np.testing.assert_array_equal(out.numpy(), v)
    for to in ("int8", "float16", "float32"):
        with raises_code("APK541"):
            apdsl.dma_copy(ndarray((16, 16), to, "gm"), c)
    f = ndarray((16, 16), "float32", "l0c", "NZ")
    for to in ("int32", "int8"):
        with raises_code("APK541"):
            apdsl.dma_copy(ndarray((16, 16), to, "gm"), f)


# ---------------------------------------------------------------------------- LoadData

def nz_logical(storage: np.ndarray, rows: int, cols: int, c0: int) -> np.ndarray:
    """A whole NZ storage (N1, M1, 16, C0) as its padded logical matrix."""
    m1, n1 = rows // 16, cols // c0
    return storage.reshape(n1, m1, 16, c0).transpose(1, 2, 0, 3).reshape(rows, cols)


def zz_storage(logical: np.ndarray, c0: int) -> np.ndarray:
    rows, cols = logical.shape
    return logical.reshape(rows // 16, 16, cols // c0, c0).transpose(0, 2, 1, 3).reshape(-1)


def zn_storage(logical: np.ndarray, c0: int) -> np.ndarray:
    rows, cols = logical.shape
    return logical.reshape(rows // c0, c0, cols // 16, 16).transpose(0, 2, 3, 1).reshape(-1)


@pytest.mark.parametrize("m,k", [(20, 28), (16, 16), (1, 1), (33, 40)])
def test_loaddata_moves_whole_fractals_with_their_written_state(m, k):
    a = data((m, k))
    A = from_numpy(a, "gm")
    a1 = make_tensor_like("l1", A, "NZ")
    apdsl.dma_copy(a1, A)                       # Nd2Nz: row tails zero, rows past m unwritten
    a0 = ndarray((48, 48), "float16", "l0a", "ZZ")
    apdsl.memset(a0, 7.0)                       # stale contents, all written
    tile = make_tensor_like(a0, a1, "ZZ")       # bound: starts unwritten
    apdsl.dma_copy(tile, a1)                    # no init-check error for the padding rows
    rows, cols = a1.shape
    l1 = nz_logical(raw(a1), rows, cols, 16)
    l1_written = nz_logical(written(a1), rows, cols, 16)
    got = raw(tile)[:rows * cols]
    got_written = written(tile)[:rows * cols]
    np.testing.assert_array_equal(got_written, zz_storage(l1_written, 16))
    np.testing.assert_array_equal(got[got_written], zz_storage(l1, 16)[got_written])
    # every written L1 byte reached L0, padding zeros included
    assert got_written.sum() == l1_written.sum() == m * cdiv(k, 16) * 16


def test_loaddata_into_zn_and_strict_padding_sees_unwritten_rows():
    b = data((20, 30))
    B = from_numpy(b, "gm")
    b1 = make_tensor_like("l1", B, "NZ")        # rows 20..31 of B's K padding: unwritten
    apdsl.dma_copy(b1, B)
    b0 = make_tensor_like("l0b", b1, "ZN")
    apdsl.dma_copy(b0, b1)
    l1 = nz_logical(raw(b1), 32, 32, 16)
    l1_written = nz_logical(written(b1), 32, 32, 16)
    np.testing.assert_array_equal(written(b0), zn_storage(l1_written, 16))
    np.testing.assert_array_equal(raw(b0)[written(b0)], zn_storage(l1, 16)[written(b0)])
    a = data((16, 20), seed=1)
    A = from_numpy(a, "gm")
    a1 = make_tensor_like("l1", A, "NZ")
    apdsl.dma_copy(a1, A)
    a0 = make_tensor_like("l0a", a1, "ZZ")
    apdsl.dma_copy(a0, a1)
    c = make_tensor_like("l0c", ndarray((16, 30), "float32", "gm"), "NZ")
    mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.float32) @ b.astype(np.float32))
    with options(strict_padding=True), raises_code("APK404") as err:
        mmad(c, a0, b0)                         # A's K padding is Nd2Nz's zeros; B's is not
    assert "b reads" in err.value.message


def test_loaddata_needs_fractal_operands_on_fractal_boundaries():
    nd = ndarray((16, 16), "float16", "l1")
    apdsl.memset(nd, 1.0)
    with raises_code("APK544"):
        apdsl.dma_copy(ndarray((16, 16), "float16", "l0a", "ZZ"), nd)
    nz = ndarray((32, 32), "float16", "l1", "NZ")
    apdsl.memset(nz, 1.0)
    with raises_code("APK545"):
        apdsl.dma_copy(ndarray((16, 16), "float16", "l0a", "ZZ"), nz[8:24, 0:16])


BASIC_MATMUL = """
def basic_matmul(A, Bt, C, TM, TN, TK, TK1):
    # CATLASS 00_basic_matmul, literally: A row-major, B column-major (Bt is B^T, row-major),
    # L1 tiles with the full tile layout, no memset anywhere
    B = Bt.permute((1, 0))
    M = A.shape[0]
    K = A.shape[1]
    N = Bt.shape[0]
    l1_a = ndarray((TM, TK1), A.dtype, l1, "NZ")
    l1_b = ndarray((TK1, TN), A.dtype, l1, "ZN")
    l0_a = ndarray((TM, TK), A.dtype, l0a, "ZZ")
    l0_b = ndarray((TK, TN), A.dtype, l0b, "ZN")
    l0_c = ndarray((TM, TN), C.dtype, l0c, "NZ")
    # single-buffered, with CATLASS's events (SPEC 13): the "free" flags start set
    set_flag("MTE1_MTE2", 0)
    set_flag("M_MTE1", 0)
    set_flag("FIX_M", 0)
    for m in range(cdiv(M, TM)):
        for n in range(cdiv(N, TN)):
            c_tile = tile_view(C, (m, n), (TM, TN))
            acc = make_tensor_like(l0_c, c_tile, "NZ")
            wait_flag("FIX_M", 0)
            for k1 in range(cdiv(K, TK1)):
                a_tile = tile_view(A, (m, k1), (TM, TK1))
                b_tile = tile_view(B, (k1, n), (TK1, TN))
                a1 = make_tensor_like(l1_a, a_tile, "NZ", layout_base=l1_a)
                b1 = make_tensor_like(l1_b, b_tile, "ZN", layout_base=l1_b)
                wait_flag("MTE1_MTE2", 0)
                dma_copy(a1, a_tile)
                dma_copy(b1, b_tile)
                set_flag("MTE2_MTE1", 0)
                wait_flag("MTE2_MTE1", 0)
                for k0 in range(cdiv(a1.origin_shape[1], TK)):
                    a_sub = tile_view(a1, (0, k0), (TM, TK))
                    b_sub = tile_view(b1, (k0, 0), (TK, TN))
                    a0 = make_tensor_like(l0_a, a_sub, "ZZ")
                    b0 = make_tensor_like(l0_b, b_sub, "ZN")
                    wait_flag("M_MTE1", 0)
                    dma_copy(a0, a_sub)
                    dma_copy(b0, b_sub)
                    set_flag("MTE1_M", 0)
                    wait_flag("MTE1_M", 0)
                    mmad(acc, a0, b0, accumulate=k1 > 0 or k0 > 0)
                    set_flag("M_MTE1", 0)
                set_flag("MTE1_MTE2", 0)
            set_flag("M_FIX", 0)
            wait_flag("M_FIX", 0)
            dma_copy(c_tile, acc)
            set_flag("FIX_M", 0)
    wait_flag("MTE1_MTE2", 0)
    wait_flag("M_MTE1", 0)
    wait_flag("FIX_M", 0)
    return C


kernel matmul(A: {dt}[M, K] @ gm, Bt: {dt}[N, K] @ gm) -> {acc}[M, N] @ gm:
    C = ndarray((A.shape[0], Bt.shape[0]), {acc}, gm)
    return basic_matmul(A, Bt, C, 32, 32, 32, 64)
"""


@pytest.mark.parametrize("m,k,n", [(40, 50, 30), (17, 100, 33), (64, 64, 64), (1, 5, 1)])
@pytest.mark.parametrize("dt", ["float16", "int8"])
def test_literal_catlass_basic_matmul_passes_strict_padding(m, k, n, dt):
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-8, 8, (m, k)).astype(NP[dt])
    b = rng.integers(-8, 8, (k, n)).astype(NP[dt])
    short = {"float16": "f16", "int8": "i8"}[dt]
    acc = {"float16": "f32", "int8": "i32"}[dt]
    src = BASIC_MATMUL.replace("{dt}", short).replace("{acc}", acc)
    with options(strict_padding=True):
        got = Program(src, "basic_matmul.apk").run(
            "matmul", {"A": a, "Bt": np.ascontiguousarray(b.T)}).value.numpy()
    want = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(got, want.astype(got.dtype))


# ---------------------------------------------------------------------------- Load2D

def test_load2d_moves_fractals_from_gm_already_in_the_l0_format():
    m, k, n = 20, 40, 24
    a, b = data((m, k), seed=2), data((k, n), seed=3)
    # the host arranges GM in the fractal formats, padding zeroed (formats.convert)
    A = ndarray((m, k), "float16", "gm", "ZZ")
    B = ndarray((k, n), "float16", "gm", "ZN")
    for t, x, fmt in ((A, a, "ZZ"), (B, b, "ZN")):
        whole = t.ap([[1, t.storage.elements_total]])
        execute.write_view(whole, apdsl.formats.convert(x, "ND", fmt).reshape(-1))
    a0 = ndarray((m, k), "float16", "l0a", "ZZ")
    b0 = ndarray((k, n), "float16", "l0b", "ZN")
    apdsl.dma_copy(a0, A)
    apdsl.dma_copy(b0, B)
    np.testing.assert_array_equal(raw(a0), raw(A))          # whole fractals, padding included
    np.testing.assert_array_equal(raw(b0), raw(B))
    assert a0.storage.all_written and b0.storage.all_written
    c = ndarray((m, n), "float32", "l0c", "NZ")
    with options(strict_padding=True):
        mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.float32) @ b.astype(np.float32))


def test_a_tiled_gemm_through_load2d_with_tails():
    """Tiles of GM tensors already in ZZ/ZN go straight to L0 (Load2D), tails included: the
    host zeroed the GM padding, and the loads carry it to L0 for the strict K reads."""
    m, k, n = 40, 70, 50
    a, b = data((m, k), seed=4), data((k, n), seed=5)
    A = ndarray((m, k), "float16", "gm", "ZZ")
    B = ndarray((k, n), "float16", "gm", "ZN")
    for t, x, fmt in ((A, a, "ZZ"), (B, b, "ZN")):
        whole = t.ap([[1, t.storage.elements_total]])
        execute.write_view(whole, apdsl.formats.convert(x, "ND", fmt).reshape(-1))
    C = ndarray((m, n), "float32", "gm")
    l0a, l0b = ndarray((16, 32), "float16", "l0a", "ZZ"), ndarray((32, 32), "float16", "l0b", "ZN")
    l0c = ndarray((16, 32), "float32", "l0c", "NZ")
    for i in range(cdiv(m, 16)):
        for j in range(cdiv(n, 32)):
            c_tile = tile_view(C, (i, j), (16, 32))
            acc = make_tensor_like(l0c, c_tile, "NZ")
            for kk in range(cdiv(k, 32)):
                a_tile, b_tile = tile_view(A, (i, kk), (16, 32)), tile_view(B, (kk, j), (32, 32))
                a0, b0 = make_tensor_like(l0a, a_tile, "ZZ"), make_tensor_like(l0b, b_tile, "ZN")
                apdsl.dma_copy(a0, a_tile)
                apdsl.dma_copy(b0, b_tile)
                with options(strict_padding=True):
                    mmad(acc, a0, b0, accumulate=kk > 0)
            apdsl.dma_copy(c_tile, acc)
    np.testing.assert_array_equal(C.numpy(), a.astype(np.float32) @ b.astype(np.float32))


def test_load2d_needs_the_destination_format_and_no_int4():
    with raises_code("APK542"):
        apdsl.dma_copy(ndarray((16, 16), "float16", "l0a", "ZZ"),
                       from_numpy(data((16, 16)), "gm"))
    nz = ndarray((16, 16), "float16", "gm", "NZ")
    with raises_code("APK542") as err:
        apdsl.dma_copy(ndarray((16, 16), "float16", "l0a", "ZZ"), nz)
    assert "ZZ" in err.value.help
    with raises_code("APK543"):
        apdsl.dma_copy(ndarray((16, 128), "int4", "l0b", "ZN"),
                       ndarray((16, 128), "int4", "gm", "ZN"))


# ---------------------------------------------------------------------------- memset

def test_memset_where_ascendc_has_it():
    with raises_code("APK546") as err:
        apdsl.memset(ndarray((16, 16), "float32", "l0c", "NZ"), 0)
    assert "accumulate=False" in err.value.help
    for buffer in ("l1", "l0a", "ub"):
        for dt in ("int8", "uint8", "int4"):
            with raises_code("APK547"):
                apdsl.memset(ndarray((16, 64), dt, buffer), 0)
    for dt in ("float16", "bfloat16", "int16", "uint16", "float32", "int32", "uint32"):
        for buffer, fmt in (("ub", "ND"), ("l1", "NZ"), ("l0a", "ZZ"), ("l0b", "ZN")):
            t = ndarray((16, 16), dt, buffer, fmt)
            apdsl.memset(t, 3)
            assert (t.numpy() == 3).all()
    with raises_code("APK312"):
        apdsl.memset(ndarray((16, 16), "float16", "gm"), 0)


@pytest.mark.parametrize("buffer,fmt,shape", [("l0a", "ZZ", (20, 20)), ("l0b", "ZN", (20, 20)),
                                              ("l1", "NZ", (5, 37)), ("l1", "ZN", (33, 1))])
def test_memset_of_a_fractal_tensor_writes_its_padding(buffer, fmt, shape):
    t = ndarray(shape, "float16", buffer, fmt)
    apdsl.memset(t, 2.0)
    assert t.storage.all_written                      # padding included
    assert (raw(t) == 2).all() and raw(t).size == t.storage.elements_total
    # a fractal-aligned sub-view writes its whole fractals only
    u = ndarray((32, 32), "float16", buffer, fmt)
    apdsl.memset(u[0:16, 0:16], 1.0)
    assert written(u).sum() == 256 and (u[0:16, 0:16].numpy() == 1).all()


# ---------------------------------------------------------------------------- int4 mmad

@pytest.mark.parametrize("m,k,n", [(20, 100, 30), (16, 64, 16), (3, 130, 70)])
def test_int4_mmad_accumulates_in_int32(m, k, n):
    rng = np.random.default_rng(m * k)
    a = rng.integers(-8, 8, (m, k)).astype(np.int8)
    b = rng.integers(-8, 8, (k, n)).astype(np.int8)
    A, B = from_numpy(a, "gm", dtype="int4"), from_numpy(b, "gm", dtype="int4")
    a1 = make_tensor_like("l1", A, "NZ")
    # B's K in whole L0B fractals (64 int4), zeroed through 16-bit words (no int4 memset)
    b1 = make_tensor_like("l1", B, "NZ", layout_base=(cdiv(k, 64) * 64, cdiv(n, 64) * 64))
    apdsl.memset(b1.ap([[1, b1.storage.nbytes // 2]], dtype="int16"), 0)
    apdsl.dma_copy(a1, A)
    apdsl.dma_copy(b1, B)
    a0, b0 = make_tensor_like("l0a", a1, "ZZ"), make_tensor_like("l0b", b1, "ZN")
    apdsl.dma_copy(a0, a1)
    apdsl.dma_copy(b0, b1)
    c = make_tensor_like("l0c", ndarray((m, n), "int32", "gm"), "NZ")
    with options(strict_padding=True):
        mmad(c, a0, b0)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int32) @ b.astype(np.int32))
    with raises_code("APK521"):
        mmad(ndarray((m, n), "float32", "l0c", "NZ"), a0, b0)


# ---------------------------------------------------------------------------- lifetimes

HELPER = """
def load(A):
    # a 384 KiB L1 buffer, bound with the buffer itself as layout_base
    buf = ndarray((128, 1536), f16, l1, "NZ")
    t = tile_view(A, (0, 0), (128, 1536))
    l1t = make_tensor_like(buf, t, "NZ", layout_base=buf)
    dma_copy(l1t, t)
    return 0


kernel twice(A: f16[128, 1536] @ gm) -> f16[128, 1536] @ gm:
    load(A)
    load(A)
    return A
"""


def test_a_buffer_bound_with_itself_as_layout_base_is_freed():
    a = data((128, 1536))
    got = Program(HELPER, "helper.apk").run("twice", {"A": a}).value.numpy()
    np.testing.assert_array_equal(got, a)
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    tile = make_tensor_like(buf, ndarray((64, 64), "float16", "gm"), "NZ", layout_base=buf)
    assert tile.storage is buf.storage
    alive = weakref.ref(buf.storage)
    del buf, tile
    gc.collect()
    assert alive() is None


# ---------------------------------------------------------------------------- the stdlib GEMM

GEMM_KERNEL = """
from gemm import gemm

kernel matmul(A: {dt}[M, K] @ gm, B: {dt}[K, N] @ gm) -> {acc}[M, N] @ gm:
    C = ndarray((A.shape[0], B.shape[1]), {acc}, gm)
    gemm(A, B, C, 32, 32, 32, 64)
    return C
"""


@pytest.mark.parametrize("dt", ["f32", "bf16", "i8"])
@pytest.mark.parametrize("m,k,n", [(40, 50, 30), (33, 100, 65), (1, 17, 1)])
def test_stdlib_gemm_under_strict_padding_for_every_input_dtype(dt, m, k, n):
    """B's K tail is zeroed in L1 (through 16-bit words, as InitConstValue takes them), A's by
    Nd2Nz; LoadData carries both to L0, so strict mmad reads only written padding."""
    npdt = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "i8": np.int8}[dt]
    acc = "i32" if dt == "i8" else "f32"
    rng = np.random.default_rng(m + n)
    a = rng.integers(-4, 5, (m, k)).astype(npdt)
    b = rng.integers(-4, 5, (k, n)).astype(npdt)
    src = GEMM_KERNEL.replace("{dt}", dt).replace("{acc}", acc)
    with options(strict_padding=True):
        got = Program(src, "gemm.apk").run("matmul", {"A": a, "B": b}).value.numpy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(got, want.astype(got.dtype))
